/**
 * What makes a retry safe survives a restart of the server process: a deposit or withdrawal
 * retried with its reference is answered 200 `duplicate: true` and changes nothing (not applied
 * again, not a 503 from the store's unique reference), its reuse for another amount is still a 409,
 * and an order retried with its Idempotency-Key gets the original 201 and Location.
 *
 * "Restart" is a new OS process on the same data (SIGKILL, then `node src/main.ts` again), on both
 * stores: an in-process restart keeps every module-level value of the first server and can hide
 * state that only lived in memory.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type TestContext, test } from 'node:test';
import { signRequest } from '../../src/client/sign.js';
import { admin, request } from '../crash/http-client.js';
import { type ServerProcess, startServerProcess } from '../crash/server-process.js';
import { freshDatabase, postgresSuite } from '../support/postgres.js';

const STORES = [
  { name: 'SQLite', suite: () => ({}), env: async (): Promise<Record<string, string>> => ({}) },
  {
    name: 'PostgreSQL',
    suite: postgresSuite,
    env: async (t: TestContext): Promise<Record<string, string>> => ({
      DATABASE_URL: await freshDatabase(t),
    }),
  },
] as const;

const ORDER = JSON.stringify({
  order_direction: 'buy',
  order_type: 'limit',
  pair: 'BTC/EUR',
  volume: '0.01',
  price: '20000',
});

for (const store of STORES) {
  test(`references and Idempotency-Keys survive a new server process (${store.name})`, {
    // Two process starts (tsx compiles the server each time) on a shared, loaded machine.
    timeout: 120_000,
    ...store.suite(),
  }, async (t) => {
    const dataDir = mkdtempSync(join(tmpdir(), 'openspot-restart-'));
    t.after(() => rmSync(dataDir, { recursive: true, force: true }));
    const env = await store.env(t);
    const servers: ServerProcess[] = [];
    const start = async () => {
      const server = await startServerProcess({ dataDir, env });
      servers.push(server);
      return server;
    };
    try {
      const first = await start();
      const user = await admin(first.url, 'POST', '/users', {});
      const userId = (user.body as { id: number }).id;
      const key = await admin(first.url, 'POST', `/users/${userId}/api-keys`, { scopes: ['read', 'trade'] });
      const { api_key: apiKey, api_secret: apiSecret } = key.body as { api_key: string; api_secret: string };
      const deposit = { asset: 'EUR', amount: '1000', reference: 'wire-2024-001' };
      const withdrawal = { asset: 'EUR', amount: '250', reference: 'payout-2024-001' };
      const ledger = (url: string, kind: 'deposits' | 'withdrawals', body: object) =>
        admin(url, 'POST', `/users/${userId}/${kind}`, body);
      const placeOnce = (url: string) =>
        request(`${url}/v1/orders`, {
          method: 'POST',
          headers: {
            'content-type': 'application/json',
            'x-api-key': apiKey,
            'x-api-sign': signRequest('POST', ORDER, apiSecret),
            'idempotency-key': 'restart-order-1',
          },
          body: ORDER,
        });
      const balances = async (url: string) => (await admin(url, 'GET', `/users/${userId}/balances`)).body;

      const deposited = await ledger(first.url, 'deposits', deposit);
      assert.equal(deposited.status, 201, JSON.stringify(deposited.body));
      const withdrawn = await ledger(first.url, 'withdrawals', withdrawal);
      assert.equal(withdrawn.status, 201, JSON.stringify(withdrawn.body));
      const placed = await placeOnce(first.url);
      assert.equal(placed?.status, 201, placed?.text);
      const location = placed.headers.get('location');
      const before = await balances(first.url);
      await first.kill();

      const second = await start();
      assert.notEqual(second.pid, first.pid);
      for (const [kind, body, original] of [
        ['deposits', deposit, deposited],
        ['withdrawals', withdrawal, withdrawn],
      ] as const) {
        const retried = await ledger(second.url, kind, body);
        assert.equal(retried.status, 200, `${kind}: ${JSON.stringify(retried.body)}`);
        const { duplicate, time, amount, reference } = retried.body as Record<string, unknown>;
        const first = original.body as Record<string, unknown>;
        assert.deepEqual(
          { duplicate, time, amount, reference },
          { duplicate: true, time: first.time, amount: first.amount, reference: first.reference },
          kind,
        );
        const conflict = await ledger(second.url, kind, { ...body, amount: '1' });
        assert.equal(conflict.status, 409, `${kind}: ${JSON.stringify(conflict.body)}`);
      }
      const replayed = await placeOnce(second.url);
      assert.equal(replayed?.status, 201, replayed?.text);
      assert.equal(replayed.headers.get('location'), location);
      assert.deepEqual(await balances(second.url), before, 'the retries changed no balance');
    } finally {
      for (const server of servers) await server.kill();
    }
  });
}
