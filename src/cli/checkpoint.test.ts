/** `openspot checkpoint save|list|restore|delete` and `openspot reset` against a running venue. */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { promisify } from 'node:util';
import { startTestVenue, type TestVenue } from '../testing/index.js';

const TSX = import.meta.resolve('tsx');
const CLI = join(import.meta.dirname, 'main.ts');
const run = promisify(execFile);

let venue: TestVenue;
before(async () => {
  venue = await startTestVenue();
});
after(() => venue.close());

const cli = async (...args: string[]) =>
  (
    await run(
      process.execPath,
      ['--import', TSX, CLI, '--url', venue.url, '--token', venue.admin.token, ...args],
      {
        env: { ...process.env, ADMIN_TOKEN: '', OPENSPOT_URL: '' },
      },
    )
  ).stdout;

const eur = async () =>
  (await venue.admin.balances(venue.accounts[0]!)).find((b) => b.asset === 'EUR')?.total;

test('save, list, restore, delete and reset from the command line', async () => {
  assert.match(await cli('checkpoint', 'save', 'cli-one'), /saved checkpoint cli-one \(\d+ bytes\)/);
  await venue.admin.deposit(venue.accounts[0]!, 'EUR', '5');
  assert.equal(await eur(), '100005.0000');

  const listed = JSON.parse(await cli('--json', 'checkpoint', 'list')) as { data: Array<{ name: string }> };
  assert.deepEqual(
    listed.data.map((c) => c.name),
    ['cli-one', 'initial'],
  );
  const restored = await cli('checkpoint', 'restore', 'cli-one');
  assert.match(restored, /restored checkpoint cli-one/);
  assert.match(restored, /ledger check: ok/);
  assert.equal(await eur(), '100000.0000');

  await venue.admin.deposit(venue.accounts[0]!, 'EUR', '7');
  const reset = JSON.parse(await cli('--json', 'reset')) as { restored: string; ledger: { ok: boolean } };
  assert.deepEqual([reset.restored, reset.ledger.ok], ['initial', true]);
  assert.equal(await eur(), '100000.0000');

  assert.match(await cli('checkpoint', 'delete', 'cli-one'), /deleted checkpoint cli-one/);
  await assert.rejects(cli('checkpoint', 'restore', 'cli-one'), (error: { code: number; stderr: string }) => {
    assert.equal(error.code, 1);
    assert.match(error.stderr, /No checkpoint named cli-one/);
    return true;
  });
});
