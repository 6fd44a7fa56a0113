/** `openspot` admin commands as an operator runs them: their tables, and a server that is not there. */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { promisify } from 'node:util';
import { startTestVenue, type TestVenue } from '../testing/index.js';

const TSX = import.meta.resolve('tsx');
const CLI = join(import.meta.dirname, 'main.ts');
const run = promisify(execFile);
const ENV = { ...process.env, ADMIN_TOKEN: '', OPENSPOT_URL: '', PORT: '' };

let venue: TestVenue;
before(async () => {
  venue = await startTestVenue();
});
after(() => venue.close());

const cli = async (...args: string[]) =>
  (await run(process.execPath, ['--import', TSX, CLI, '--token', venue.admin.token, ...args], { env: ENV }))
    .stdout;

/** A port nothing listens on: bound, then released. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

test('deposit prints the balance after it as amounts, not as JSON', async () => {
  const user = venue.accounts[0]!.userId;
  const out = await cli(
    '--url',
    venue.url,
    'deposit',
    String(user),
    'EUR',
    '12.5',
    '--reference',
    'cli-table',
  );
  const [header, , row] = out.trimEnd().split('\n');
  assert.match(
    header!,
    /^USER_ID\s+ASSET\s+AMOUNT\s+REFERENCE\s+DUPLICATE\s+TIME\s+BALANCE\s+AVAILABLE\s+RESERVED$/,
  );
  assert.doesNotMatch(row!, /[{}"]/);
  const cells = row!.split(/\s{2,}/);
  assert.deepEqual(cells.slice(0, 5), [String(user), 'EUR', '12.5000', 'cli-table', 'false']);
  assert.deepEqual(cells.slice(6), ['100012.5000', '100012.5000', '0.0000']);
});

test('an unreachable server is named, with how to choose another', async () => {
  const url = `http://127.0.0.1:${await closedPort()}`;
  for (const args of [
    ['users', 'create', '--email', 'nobody@example.com'],
    ['markets', '--pair', 'BTC/EUR'],
  ]) {
    await assert.rejects(cli('--url', url, ...args), (error: { code: number; stderr: string }) => {
      assert.equal(error.code, 1);
      assert.ok(error.stderr.includes(url), error.stderr);
      assert.match(error.stderr, /ECONNREFUSED/);
      assert.match(error.stderr, /--url URL or set OPENSPOT_URL/);
      return true;
    });
  }
});
