/**
 * A configuration error stops the process with exit status 2 (the systemd units restart on any
 * other failure but not on 2) before it writes anything: no DATA_DIR, no database, no key file.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';

const ROOT = join(import.meta.dirname, '..', '..');
const EXAMPLE_ADMIN_TOKEN = 'change-me-to-a-long-random-admin-token';

/** `openspot <args>` from source with `env` only; its exit status and stderr. */
function run(
  args: readonly string[],
  env: Record<string, string>,
): Promise<{ status: number | null; stderr: string }> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/cli/main.ts', ...args], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '', PORT: '0', ENGINE_PORT: '0', ...env },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  // A process that accepted its configuration would run on: stopped, and counted as a failure.
  const timer = setTimeout(() => child.kill('SIGKILL'), 90_000);
  return new Promise((resolve) =>
    child.once('exit', (status) => {
      clearTimeout(timer);
      resolve({ status, stderr });
    }),
  );
}

const CASES: ReadonlyArray<{ what: string; args: string[]; env: Record<string, string>; says: RegExp }> = [
  {
    what: 'a SECRETS_KEY that is not 32 bytes of base64',
    args: ['serve'],
    env: { SECRETS_KEY: 'change-me-base64-of-32-random-bytes' },
    says: /SECRETS_KEY must be the base64 encoding of exactly 32 bytes/,
  },
  {
    what: 'HOST=0.0.0.0 without ADMIN_TOKEN',
    args: ['serve'],
    env: { HOST: '0.0.0.0' },
    says: /ADMIN_TOKEN must be set when HOST is not a loopback address/,
  },
  {
    what: 'a CATALOGUE_FILE that does not exist',
    args: ['serve'],
    env: { CATALOGUE_FILE: '/nonexistent/catalogue.json' },
    says: /CATALOGUE_FILE .*ENOENT/,
  },
  {
    what: "production with the example's ADMIN_TOKEN",
    args: ['serve'],
    env: { NODE_ENV: 'production', ADMIN_TOKEN: EXAMPLE_ADMIN_TOKEN },
    says: /ADMIN_TOKEN: still the example value/,
  },
  {
    what: "production with the example's WS_APP_SECRET",
    args: ['serve'],
    env: { NODE_ENV: 'production', WS_APP_SECRET: 'change-me-to-a-long-random-ws-secret' },
    says: /WS_APP_SECRET: still the example value/,
  },
  {
    what: "an engine with the example's secrets",
    args: ['engine'],
    env: {
      NODE_ENV: 'production',
      HOST: '10.0.0.10',
      ADMIN_TOKEN: EXAMPLE_ADMIN_TOKEN,
      DATABASE_URL: 'postgres://openspot:change-me@127.0.0.1:1/openspot',
    },
    says: /ADMIN_TOKEN, DATABASE_URL \(its password\): still the example value/,
  },
  {
    what: 'a gateway on a network address without ADMIN_TOKEN',
    args: ['gateway'],
    env: { HOST: '0.0.0.0', DATABASE_URL: 'postgres://openspot@127.0.0.1:1/openspot' },
    says: /ADMIN_TOKEN must be set/,
  },
];

test('each configuration error exits with status 2 and writes nothing', { timeout: 600_000 }, async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'openspot-config-errors-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  // Two at a time: each is a whole Node start (tsx included) on a machine that may be busy.
  const queue = CASES.map((item, index) => ({ ...item, index }));
  const lane = async () => {
    for (let next = queue.shift(); next !== undefined; next = queue.shift()) {
      const { what, args, env, says, index } = next;
      const dataDir = join(dir, `data-${index}`);
      const { status, stderr } = await run(args, { ...env, DATA_DIR: dataDir });
      assert.equal(status, 2, `${what}: exit status ${status}\n${stderr}`);
      assert.match(stderr, /^Configuration error: /, what);
      assert.match(stderr, says, what);
      assert.equal(existsSync(dataDir), false, `${what}: DATA_DIR was created`);
    }
  };
  await Promise.all([lane(), lane()]);
});
