/** The operator's admin API and CLI, driven over HTTP against the real server. */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { statSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { promisify } from 'node:util';
import { startTestServer, type TestServer } from '../support/server-fixture.js';

const run = promisify(execFile);
let t: TestServer;

before(async () => {
  t = await startTestServer();
});
after(async () => {
  await t.close();
});

describe('admin API', () => {
  test('refuses requests without the bearer token', async () => {
    const response = await fetch(`${t.url}/admin/v1/assets`);
    assert.equal(response.status, 401);
    const wrong = await fetch(`${t.url}/admin/v1/assets`, { headers: { authorization: 'Bearer nope' } });
    assert.equal(wrong.status, 401);
  });

  test('a generated token is stored with mode 0600', () => {
    assert.equal(statSync(join(t.dataDir, 'admin-token')).mode & 0o777, 0o600);
  });

  test('the default catalogue exists on first start', async () => {
    const { body } = await t.admin('GET', '/markets');
    const names = (body as { data: { altname: string }[] }).data.map((m) => m.altname);
    assert.ok(names.includes('BTCEUR'));
  });

  test('creates an asset and a market with default fees', async () => {
    const asset = await t.admin('POST', '/assets', {
      code: 'SOL',
      name: 'Solana',
      type: 'crypto',
      decimals: 9,
    });
    assert.equal(asset.status, 201);
    const market = await t.admin('POST', '/markets', {
      base: 'SOL',
      quote: 'EUR',
      pair_decimals: 2,
      lot_decimals: 6,
      ordermin: '0.1',
    });
    assert.equal(market.status, 201);
    assert.deepEqual(market.body, {
      id: (market.body as { id: number }).id,
      base: 'SOL',
      quote: 'EUR',
      altname: 'SOLEUR',
      wsname: 'SOL/EUR',
      pair_decimals: 2,
      lot_decimals: 6,
      ordermin: '0.100000',
      maker_fee: '0.00160000',
      taker_fee: '0.00260000',
    });
    const again = await t.admin('POST', '/markets', {
      base: 'SOL',
      quote: 'EUR',
      pair_decimals: 2,
      lot_decimals: 6,
      ordermin: '0.1',
    });
    assert.equal(again.status, 409);
  });

  test('rejects bad input with a 4xx naming the field, and changes nothing', async () => {
    const before = await t.admin('GET', '/assets');
    const bad = await t.admin('POST', '/assets', { code: 'x', name: 'X', type: 'crypto', decimals: 2 });
    assert.equal(bad.status, 422);
    assert.equal((bad.body as { error: { field: string } }).error.field, 'code');
    const negative = await t.admin('POST', '/users/1/deposits', { asset: 'EUR', amount: '-5' });
    assert.ok(negative.status === 422 || negative.status === 404);
    assert.deepEqual(await t.admin('GET', '/assets'), before);
  });

  test('an asset precision that leaves an absurdly small exact range is refused with the cap', async () => {
    const before = await t.admin('GET', '/assets');
    const refused = await t.admin('POST', '/assets', {
      code: 'WEI',
      name: 'Token',
      type: 'crypto',
      decimals: 18,
    });
    assert.equal(refused.status, 422);
    const error = (refused.body as { error: { code: string; field: string; message: string } }).error;
    assert.equal(error.code, 'invalid_input');
    assert.equal(error.field, 'decimals');
    assert.match(error.message, /capped at 0\.009007199254740991 units/);
    assert.deepEqual(await t.admin('GET', '/assets'), before);
  });

  test('deposits are idempotent on their reference; withdrawals cannot exceed the balance', async () => {
    const user = (await t.admin('POST', '/users', { email: 'ops@example.com' })).body as { id: number };
    const first = await t.admin('POST', `/users/${user.id}/deposits`, {
      asset: 'EUR',
      amount: '100.5',
      reference: 'wire-1',
    });
    assert.equal(first.status, 201);
    const replay = await t.admin('POST', `/users/${user.id}/deposits`, {
      asset: 'EUR',
      amount: '100.5',
      reference: 'wire-1',
    });
    assert.equal(replay.status, 200);
    assert.equal((replay.body as { duplicate: boolean }).duplicate, true);
    const balances = (await t.admin('GET', `/users/${user.id}/balances`)).body as {
      data: { asset: string; available: string }[];
    };
    assert.equal(balances.data.find((b) => b.asset === 'EUR')?.available, '100.5000');
    const tooMuch = await t.admin('POST', `/users/${user.id}/withdrawals`, {
      asset: 'EUR',
      amount: '100.5001',
    });
    assert.equal(tooMuch.status, 422);
    const fine = await t.admin('POST', `/users/${user.id}/withdrawals`, {
      asset: 'EUR',
      amount: '0.5',
      reference: 'out-1',
    });
    assert.equal(fine.status, 201);
  });

  test('a reference reused with another amount or asset is a 409 with the recorded entry, and changes nothing', async () => {
    const user = (await t.admin('POST', '/users', {})).body as { id: number };
    const path = `/users/${user.id}/deposits`;
    const first = await t.admin('POST', path, { asset: 'EUR', amount: '100.5', reference: 'wire-9' });
    assert.equal(first.status, 201);
    const recorded = {
      kind: 'deposit',
      asset: 'EUR',
      amount: '100.5000',
      reference: 'wire-9',
      time: (first.body as { time: string }).time,
    };
    assert.match(recorded.time, /^\d{4}-\d\d-\d\dT/);
    for (const body of [
      { asset: 'EUR', amount: '250', reference: 'wire-9' },
      { asset: 'BTC', amount: '100.5', reference: 'wire-9' },
    ]) {
      const conflict = await t.admin('POST', path, body);
      assert.equal(conflict.status, 409, JSON.stringify(body));
      assert.deepEqual(conflict.body, {
        error: {
          code: 'reference_conflict',
          message: 'The reference was already used for another deposit (100.5000 EUR); nothing was changed.',
          field: 'reference',
          recorded,
        },
      });
    }
    // The same asset and amount (in any spelling) is still the harmless repeat, echoing what was applied.
    const replay = await t.admin('POST', path, { asset: 'EUR', amount: '100.50', reference: 'wire-9' });
    assert.equal(replay.status, 200);
    assert.equal((replay.body as { duplicate: boolean }).duplicate, true);
    assert.equal((replay.body as { amount: string }).amount, '100.5000');
    assert.equal((replay.body as { time: string }).time, recorded.time);
    const balances = (await t.admin('GET', `/users/${user.id}/balances`)).body as {
      data: { asset: string; total: string }[];
    };
    assert.equal(balances.data.find((b) => b.asset === 'EUR')?.total, '100.5000');
    assert.equal(balances.data.find((b) => b.asset === 'BTC')?.total, '0.0000000000');

    // Withdrawals: the same rule, on their own references.
    const out = `/users/${user.id}/withdrawals`;
    assert.equal((await t.admin('POST', out, { asset: 'EUR', amount: '1', reference: 'out-9' })).status, 201);
    const outConflict = await t.admin('POST', out, { asset: 'EUR', amount: '2', reference: 'out-9' });
    assert.equal(outConflict.status, 409);
    assert.equal(
      (outConflict.body as { error: { recorded: { kind: string; amount: string } } }).error.recorded.amount,
      '1.0000',
    );
    assert.equal(
      (outConflict.body as { error: { recorded: { kind: string } } }).error.recorded.kind,
      'withdrawal',
    );
    const after = (await t.admin('GET', `/users/${user.id}/balances`)).body as {
      data: { asset: string; total: string }[];
    };
    assert.equal(after.data.find((b) => b.asset === 'EUR')?.total, '99.5000');
    assert.equal(((await t.admin('GET', '/ledger/check')).body as { ok: boolean }).ok, true);
  });

  test('API keys: the secret is shown once, never listed, and revocation is immediate', async () => {
    const user = (await t.admin('POST', '/users', {})).body as { id: number };
    const created = await t.admin('POST', `/users/${user.id}/api-keys`, {});
    assert.equal(created.status, 201);
    const { api_key, api_secret } = created.body as { api_key: string; api_secret: string };
    assert.ok(Buffer.from(api_secret, 'base64').length >= 32);
    const listed = JSON.stringify((await t.admin('GET', `/users/${user.id}/api-keys`)).body);
    assert.ok(listed.includes(api_key) && !listed.includes(api_secret));
    const revoked = await t.admin('DELETE', `/api-keys/${api_key}`);
    assert.equal(revoked.status, 200);
    assert.notEqual((revoked.body as { revoked_at: string | null }).revoked_at, null);
  });

  test('the ledger check balances per asset', async () => {
    const { status, body } = await t.admin('GET', '/ledger/check');
    assert.equal(status, 200);
    assert.equal((body as { ok: boolean }).ok, true);
  });
});

describe('openspot CLI', () => {
  const cli = (...args: string[]) =>
    run(process.execPath, [
      '--import',
      'tsx',
      'src/cli/main.ts',
      '--url',
      t.url,
      '--token',
      t.server.adminToken,
      ...args,
    ]);

  test('lists markets as JSON and as a table', async () => {
    const json = JSON.parse((await cli('--json', 'markets', 'list')).stdout) as { data: unknown[] };
    assert.ok(json.data.length >= 5);
    const text = (await cli('markets', 'list')).stdout;
    assert.match(text, /ALTNAME/);
    assert.match(text, /BTCEUR/);
  });

  test('creates a user, funds it and checks the ledger', async () => {
    const user = JSON.parse((await cli('--json', 'users', 'create')).stdout) as { id: number };
    await cli('deposit', String(user.id), 'BTC', '1.25', '--reference', 'cli-1');
    const balances = JSON.parse((await cli('--json', 'users', 'balances', String(user.id))).stdout) as {
      data: { asset: string; total: string }[];
    };
    assert.equal(balances.data.find((b) => b.asset === 'BTC')?.total, '1.2500000000');
    const check = JSON.parse((await cli('--json', 'ledger-check')).stdout) as { ok: boolean };
    assert.equal(check.ok, true);
  });

  test('a reference reused with another amount prints the conflict and the recorded entry', async () => {
    const user = JSON.parse((await cli('--json', 'users', 'create')).stdout) as { id: number };
    await cli('deposit', String(user.id), 'EUR', '10', '--reference', 'cli-conflict');
    await assert.rejects(
      cli('deposit', String(user.id), 'EUR', '11', '--reference', 'cli-conflict'),
      (error: { code: number; stderr: string }) => {
        assert.equal(error.code, 1);
        assert.match(error.stderr, /already used for another deposit/);
        assert.match(error.stderr, /recorded: deposit of 10\.0000 EUR, reference cli-conflict, at \d{4}-/);
        return true;
      },
    );
  });

  test('reports API errors on stderr with a non-zero exit', async () => {
    await assert.rejects(cli('users', 'balances', '999999'), (error: { code: number; stderr: string }) => {
      assert.equal(error.code, 1);
      assert.match(error.stderr, /User not found/);
      return true;
    });
  });
});
