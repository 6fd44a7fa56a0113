/** Demo provisioning against the real server's admin API (test/support/server-fixture.ts). */
import assert from 'node:assert/strict';
import { readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { startTestServer } from '../../test/support/server-fixture.js';
import { DEMO_FILE, provisionDemo, SIMULATOR_FILE, websocketEndpoint } from './demo.js';
import type { SimulatorLogger } from './simulator.js';

const quiet: SimulatorLogger = { debug() {}, info() {}, warn() {}, error() {} };

test('creates, reuses and repairs the demo and simulator accounts', { timeout: 30_000 }, async () => {
  const t = await startTestServer();
  try {
    const url = `${t.url}/v1`;
    const first = await provisionDemo(t.admin, t.dataDir, quiet, { url });
    assert.equal(first.created, true);
    assert.equal(first.makers.length, 2);
    assert.equal(first.takers.length, 3);

    const demoFile = join(t.dataDir, DEMO_FILE);
    const simFile = join(t.dataDir, SIMULATOR_FILE);
    for (const file of [demoFile, simFile]) assert.equal(statSync(file).mode & 0o777, 0o600, file);
    const written = JSON.parse(readFileSync(demoFile, 'utf8')) as Record<string, unknown>;
    assert.deepEqual(written, {
      url,
      api_key: first.demo.apiKey,
      api_secret: first.demo.apiSecret,
      user_id: first.demo.userId,
    });

    // Funded in every asset of the catalogue; simulator accounts with ten times as much.
    const balances = async (userId: number) =>
      Object.fromEntries(
        (
          (await t.admin('GET', `/users/${userId}/balances`)).body as {
            data: Array<{ asset: string; total: string }>;
          }
        ).data.map((b) => [b.asset, b.total]),
      );
    const demoBalances = await balances(first.demo.userId);
    assert.deepEqual(Object.keys(demoBalances).sort(), ['BTC', 'ETH', 'EUR', 'USD', 'USDT']);
    assert.equal(Number(demoBalances.BTC), 10);
    assert.equal(Number((await balances(first.makers[0]!.userId)).EUR), 1_000_000);

    // A second start reuses everything.
    const second = await provisionDemo(t.admin, t.dataDir, quiet, { url });
    assert.equal(second.created, false);
    assert.deepEqual(second.demo, first.demo);
    assert.deepEqual(second.makers, first.makers);
    assert.deepEqual(second.takers, first.takers);

    // A revoked maker key is replaced; a drained taker is topped up; a new URL is written.
    assert.equal((await t.admin('DELETE', `/api-keys/${first.makers[1]!.apiKey}`)).status, 200);
    const taker = first.takers[0]!;
    await t.admin('POST', `/users/${taker.userId}/withdrawals`, { asset: 'EUR', amount: '900000' });
    const third = await provisionDemo(t.admin, t.dataDir, quiet, { url: 'http://example.test/v1' });
    assert.equal(third.created, true);
    assert.deepEqual(third.makers[0], first.makers[0]);
    assert.notEqual(third.makers[1]!.userId, first.makers[1]!.userId);
    assert.equal(Number((await balances(taker.userId)).EUR), 1_100_000);
    assert.equal(
      (JSON.parse(readFileSync(demoFile, 'utf8')) as { url: string }).url,
      'http://example.test/v1',
    );
    const sims = JSON.parse(readFileSync(simFile, 'utf8')) as { makers: Array<{ user_id: number }> };
    assert.equal(sims.makers[1]!.user_id, third.makers[1]!.userId);

    // A damaged file is replaced, not trusted.
    writeFileSync(demoFile, '{not json');
    const fourth = await provisionDemo(t.admin, t.dataDir, quiet);
    assert.notEqual(fourth.demo.userId, first.demo.userId);
    assert.equal(statSync(demoFile).mode & 0o777, 0o600);
  } finally {
    await t.close();
  }
});

test('the WebSocket endpoint in demo-credentials.json follows the public origin', () => {
  assert.deepEqual(websocketEndpoint('https://api.example.com', 'k'), {
    appKey: 'k',
    host: 'api.example.com',
    port: 443,
    tls: true,
  });
  assert.deepEqual(websocketEndpoint('http://127.0.0.1:8080', 'openspot-key'), {
    appKey: 'openspot-key',
    host: '127.0.0.1',
    port: 8080,
    tls: false,
  });
  assert.deepEqual(websocketEndpoint('http://[::1]:9000', 'k'), {
    appKey: 'k',
    host: '::1',
    port: 9000,
    tls: false,
  });
});
