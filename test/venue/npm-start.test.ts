/**
 * `npm start` as a supervisor (systemd, `docker stop`, a process manager) runs it: the signal goes
 * to the top process only, which is npm. SIGTERM to npm must stop the server cleanly and leave no
 * process of the tree behind — no orphaned server still listening (and trading). And in production
 * `npm start` runs the build that is there: it does not rebuild on every start.
 *
 * Linux only: the process tree is read from /proc.
 */
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { after, before, test } from 'node:test';
import { groupMembers, PROC_SKIP, processes, within } from '../support/process-group.js';

const REPO_ROOT = join(import.meta.dirname, '..', '..');
const skip = PROC_SKIP;

let dir: string;
const started: ChildProcess[] = [];

before(() => {
  dir = mkdtempSync(join(tmpdir(), 'openspot-npm-start-'));
});

after(() => {
  // Whatever the outcome, nothing of ours survives the test: kill each started group.
  for (const child of started) {
    try {
      if (child.pid !== undefined) process.kill(-child.pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
  rmSync(dir, { recursive: true, force: true });
});

function descendants(root: number): number[] {
  const all = processes();
  const found: number[] = [];
  const queue = [root];
  while (queue.length > 0) {
    const parent = queue.shift()!;
    for (const p of all)
      if (p.ppid === parent) {
        found.push(p.pid);
        queue.push(p.pid);
      }
  }
  return found;
}

function alive(pid: number): boolean {
  return processes().some((p) => p.pid === pid);
}

interface NpmStart {
  readonly child: ChildProcess;
  readonly dataDir: string;
  readonly url: string;
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  output(): string;
}

/** `npm start` in the repository, in its own process group, until the server answers /readyz. */
async function npmStart(env: Record<string, string>): Promise<NpmStart> {
  const dataDir = mkdtempSync(join(dir, 'data-'));
  const child = spawn('npm', ['start'], {
    cwd: REPO_ROOT,
    env: {
      PATH: process.env.PATH ?? '',
      HOME: dir,
      // npm itself stays offline: no update check against the registry.
      npm_config_update_notifier: 'false',
      PORT: '0',
      DATA_DIR: dataDir,
      SIMULATOR: 'off',
      DEMO: 'off',
      LOG_LEVEL: 'info',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
    // Its own group, so the test can find and (afterwards) clean up the whole tree; the signal
    // under test still goes to npm's pid alone.
    detached: true,
  });
  started.push(child);
  const lines: string[] = [];
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('exit', (code, signal) => resolve({ code, signal })),
  );
  child.stderr!.on('data', (chunk: Buffer) => lines.push(String(chunk)));
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`npm start: no server within 60 s\n${lines.join('\n')}`)),
      60_000,
    );
    createInterface({ input: child.stdout! }).on('line', (line) => {
      lines.push(line);
      if (!line.startsWith('{')) return; // npm's own "> openspot@… start" header
      const entry = JSON.parse(line) as { msg?: string; url?: string };
      if (entry.msg === 'OpenSpot is listening' && entry.url !== undefined) {
        clearTimeout(timer);
        resolve(entry.url);
      }
    });
    void exited.then(({ code, signal }) => {
      clearTimeout(timer);
      reject(new Error(`npm start exited (${code ?? signal}) before serving\n${lines.join('\n')}`));
    });
  });
  const ready = await fetch(`${url}/readyz`);
  assert.equal(ready.status, 200, 'the server is ready');
  return { child, dataDir, url, exited, output: () => lines.slice(-30).join('\n') };
}

/** SIGTERM to npm's pid only; then npm exits 0, no process of its tree remains, the port is closed. */
async function sigtermLeavesNothing(run: NpmStart): Promise<void> {
  const npmPid = run.child.pid!;
  const tree = descendants(npmPid);
  assert.ok(tree.length > 0, 'npm started the server as a child process');

  process.kill(npmPid, 'SIGTERM');
  const { code, signal } = await within(15_000, 'npm did not exit after SIGTERM', run.exited);

  const deadline = Date.now() + 10_000;
  let left = tree.filter(alive);
  while (left.length > 0 && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 100));
    left = tree.filter(alive);
  }
  assert.deepEqual(left, [], `processes of npm start's tree still running after SIGTERM:\n${run.output()}`);
  assert.deepEqual(
    processes().filter((p) => p.pgid === npmPid),
    [],
    'nothing left in the process group',
  );
  await assert.rejects(fetch(`${run.url}/readyz`), 'the port no longer answers');
  assert.equal(code, 0, `npm start exited with ${code ?? signal}:\n${run.output()}`);
  assert.match(run.output(), /stopped cleanly/, 'the server shut down through its SIGTERM handler');
}

test('SIGTERM to the `npm start` process stops the server cleanly and leaves no process', {
  skip,
  timeout: 120_000,
}, async () => {
  // In development `npm start` builds first: dist/ is written anew even when it already exists.
  const main = join(REPO_ROOT, 'dist', 'src', 'main.js');
  const startedAt = Date.now();
  const run = await npmStart({});
  assert.ok(statSync(main).mtimeMs >= startedAt - 1000, `npm start did not rebuild dist/:\n${run.output()}`);
  // The web pages are part of the build: the terminal answers at the address npm start prints.
  const page = await fetch(`${run.url}/`);
  assert.equal(page.status, 200, `npm start serves the trading terminal at /:\n${run.output()}`);
  assert.match(await page.text(), /<script type="module"[^>]* src="\/assets\//);
  await sigtermLeavesNothing(run);
});

test('NODE_ENV=production `npm start` runs the existing build without rebuilding; SIGTERM as above', {
  skip,
  timeout: 120_000,
}, async () => {
  // The first test built dist/; a production start must leave it untouched.
  const main = join(REPO_ROOT, 'dist', 'src', 'main.js');
  const before = statSync(main).mtimeMs;
  const run = await npmStart({ NODE_ENV: 'production' });
  assert.equal(statSync(main).mtimeMs, before, 'dist/ was rebuilt by a production start');
  await sigtermLeavesNothing(run);
});

test('Ctrl-C (SIGINT to the process group) of `npm start` stops the server cleanly; npm exits 0', {
  skip,
  timeout: 120_000,
}, async () => {
  // One Ctrl-C, and yet the server gets SIGINT twice: from the terminal, and forwarded by npm.
  // The existing build (rebuilt by the first test) is run as it stands.
  const run = await npmStart({ NODE_ENV: 'production' });
  const group = run.child.pid!;
  process.kill(-group, 'SIGINT');
  const { code, signal } = await within(15_000, 'npm did not exit after Ctrl-C', run.exited);
  assert.match(
    run.output(),
    /stopped cleanly/,
    `the server was cut short by the second SIGINT:\n${run.output()}`,
  );
  assert.equal(code, 0, `npm start exited with ${code ?? signal}:\n${run.output()}`);
  assert.deepEqual(groupMembers(group), [], 'nothing left in the process group');
  assert.deepEqual(
    readdirSync(run.dataDir).filter((name) => /-(wal|shm)$/.test(name)),
    [],
    'the store was closed: no -wal or -shm file left',
  );
});
