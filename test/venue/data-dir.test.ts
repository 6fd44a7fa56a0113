/**
 * The data directory at start: one process per DATA_DIR (a second server is refused, naming the
 * first, which goes on serving), and a directory found open to others (mkdir's 0755) narrowed
 * to 0700, as the files in it are.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { chmodSync, mkdirSync, mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type TestContext, test } from 'node:test';
import { LOCAL_VENUE_ENV } from '../support/local-venue-env.js';
import { type GroupProcess, startInGroup, within } from '../support/process-group.js';

const ROOT = join(import.meta.dirname, '..', '..');
const CLI = ['--import', 'tsx', 'src/cli/main.ts'];
const env = (dataDir: string) => ({
  PATH: process.env.PATH ?? '',
  ...LOCAL_VENUE_ENV,
  PORT: '0',
  DATA_DIR: dataDir,
});

async function serve(t: TestContext, dataDir: string): Promise<{ server: GroupProcess; url: string }> {
  const server = await startInGroup(process.execPath, [...CLI, 'serve'], {
    cwd: ROOT,
    env: env(dataDir),
    ready: /"url":"(http:[^"]+)","msg":"OpenSpot is listening"/,
  });
  t.after(() => server.kill());
  const url = /"url":"(http:[^"]+)","msg":"OpenSpot is listening"/.exec(server.output())![1]!;
  return { server, url };
}

test('a second server on the same DATA_DIR is refused, naming the first; a 0755 DATA_DIR is narrowed to 0700', {
  timeout: 120_000,
}, async (t) => {
  const root = mkdtempSync(join(tmpdir(), 'openspot-data-dir-'));
  t.after(() => rmSync(root, { recursive: true, force: true }));
  const dataDir = join(root, 'data');
  mkdirSync(dataDir);
  chmodSync(dataDir, 0o755); // as `mkdir data` with the usual umask makes it

  const { server, url } = await serve(t, dataDir);
  assert.equal(statSync(dataDir).mode & 0o777, 0o700, 'DATA_DIR narrowed at start');
  const before = readdirSync(dataDir).sort();

  const second = spawn(process.execPath, [...CLI, 'serve'], {
    cwd: ROOT,
    env: env(dataDir),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  second.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  const timer = setTimeout(() => second.kill('SIGKILL'), 60_000);
  const [code] = (await once(second, 'exit')) as [number | null];
  clearTimeout(timer);
  assert.equal(code, 1, `the second server was not refused:\n${stderr}`);
  assert.match(stderr, new RegExp(`in use by another OpenSpot process \\(pid ${server.child.pid}\\)`));

  // The first one is untouched: still ready, the directory as it was.
  assert.equal((await fetch(`${url}/readyz`)).status, 200);
  assert.deepEqual(readdirSync(dataDir).sort(), before);
  server.child.kill('SIGTERM');
  await within(20_000, 'the first server did not stop', server.exited);
});
