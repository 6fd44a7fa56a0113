/**
 * Access control over real HTTP: scopes, key options through the admin API and the CLI,
 * revocation (HTTP and private WebSocket subscriptions), and the configuration variables.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { after, before, describe, test } from 'node:test';
import { promisify } from 'node:util';
import { ConfigError, loadConfig } from '../../src/config/config.js';
import { startTestServer, type TestServer, type Trader } from '../support/server-fixture.js';
import { broadcastingAuthBody, FrameLog, wsUrl } from '../ws/helpers.js';
import {
  type Answer,
  type Credentials,
  call,
  createKey,
  limitOrder,
  openOrderIds,
  orderIdOf,
  send,
  signed,
} from './support.js';

const run = promisify(execFile);
let t: TestServer;

before(async () => {
  t = await startTestServer();
});
after(async () => {
  await t.close();
});

describe('scopes', () => {
  let trader: Trader;
  let reader: { apiKey: string; apiSecret: string };
  let orderId: number;

  before(async () => {
    trader = await t.trader();
    reader = await createKey(t, trader.userId, { scopes: ['read'] });
    const placed = await call(t, trader, 'POST', '/v1/orders', limitOrder('20000'));
    assert.equal(placed.status, 201, JSON.stringify(placed.body));
    orderId = orderIdOf(placed);
  });

  test('a read-only key gets 403 Access Denied on order creation, and no order is created', async () => {
    const before = await openOrderIds(t, trader);
    const refused = await call(t, reader, 'POST', '/v1/orders', limitOrder('20001'));
    assert.equal(refused.status, 403);
    assert.deepEqual(refused.body, { error: 'Access Denied' });
    assert.deepEqual(await openOrderIds(t, trader), before);
  });

  test('a read-only key gets 403 Access Denied on cancellation, and the order stays open', async () => {
    const refused = await call(t, reader, 'DELETE', `/v1/orders/${orderId}`);
    assert.equal(refused.status, 403);
    assert.deepEqual(refused.body, { error: 'Access Denied' });
    assert.ok((await openOrderIds(t, trader)).includes(orderId));
  });

  test('a read-only key reads: wallets, order lists, the order, trades', async () => {
    for (const path of [
      '/v1/spot-wallet',
      '/v1/trade-wallet',
      '/v1/open-orders',
      '/v1/closed-orders',
      `/v1/orders/${orderId}`,
      '/v1/trades',
    ]) {
      const r = await call(t, reader, 'GET', path);
      assert.equal(r.status, 200, `${path}: ${JSON.stringify(r.body)}`);
    }
  });

  test('a key holding both scopes cancels', async () => {
    const r = await call(t, trader, 'DELETE', `/v1/orders/${orderId}`);
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.ok(!(await openOrderIds(t, trader)).includes(orderId));
  });

  test('an order body with an extra `nonce` field is accepted for any key (unknown fields are ignored)', async () => {
    const r = await call(t, trader, 'POST', '/v1/orders', limitOrder('20002', { nonce: '42' }));
    assert.equal(r.status, 201, JSON.stringify(r.body));
  });
});

/** The scope table of docs/security.md: endpoint → expected status per scope set (column). */
function scopeTable(): { columns: string[][]; rows: { endpoint: string; expected: number[] }[] } {
  const page = readFileSync(new URL('../../docs/security.md', import.meta.url), 'utf8');
  const block = /<!-- scope-table -->\n([\s\S]*?)<!-- \/scope-table -->/.exec(page);
  if (block === null) throw new Error('docs/security.md has no scope table');
  const cells = block[1]!
    .trim()
    .split('\n')
    .map((line) =>
      line
        .split('|')
        .slice(1, -1)
        .map((cell) => cell.trim().replaceAll('`', '')),
    );
  const [header, , ...body] = cells;
  return {
    columns: header!.slice(1).map((column) => column.split('+').map((scope) => scope.trim())),
    rows: body.map((row) => ({ endpoint: row[0]!, expected: row.slice(1).map(Number) })),
  };
}

describe('scopes: every cell of the table in docs/security.md', () => {
  const table = scopeTable();
  let owner: Trader;
  let orderId: number;
  let tradeId: number;
  let clientIds = 0;

  before(async () => {
    owner = await t.trader();
    const counterparty = await t.trader();
    const sell = await call(t, owner, 'POST', '/v1/orders', {
      ...limitOrder('30000'),
      order_direction: 'sell',
    });
    assert.equal(sell.status, 201, JSON.stringify(sell.body));
    orderId = orderIdOf(sell);
    const buy = await call(t, counterparty, 'POST', '/v1/orders', limitOrder('30000'));
    assert.equal(buy.status, 201, JSON.stringify(buy.body));
    const trades = await call(t, owner, 'GET', '/v1/trades');
    tradeId = (trades.body as { data: { id: number }[] }).data[0]!.id;
  });

  /** One request of the endpoint as the given key; the resources it needs are made with the owner's full key. */
  async function exercise(endpoint: string, key: Credentials): Promise<Answer> {
    const [method, path] = endpoint.split(' ') as [string, string];
    if (endpoint === 'POST /v1/orders') return call(t, key, method, path, limitOrder('20000'));
    if (endpoint === 'DELETE /v1/orders/:id' || endpoint === 'PATCH /v1/orders/:id') {
      const placed = await call(t, owner, 'POST', '/v1/orders', limitOrder('20000'));
      const body = method === 'PATCH' ? { price: '19999.0' } : undefined;
      return call(t, key, method, path.replace(':id', String(orderIdOf(placed))), body);
    }
    if (path.includes(':client_order_id')) {
      const clientOrderId = `scope-${++clientIds}`;
      await call(t, owner, 'POST', '/v1/orders', limitOrder('20000', { client_order_id: clientOrderId }));
      return call(t, key, method, path.replace(':client_order_id', clientOrderId));
    }
    if (endpoint === 'POST /v1/orders/cancel-all-after') return call(t, key, method, path, { timeout: 0 });
    if (endpoint === 'POST /v1/orders/batch')
      return call(t, key, method, path, { orders: [limitOrder('20000')] });
    if (endpoint === 'POST /v1/broadcasting/auth') {
      const { log, socketId } = await FrameLog.open(wsUrl(t));
      try {
        const body = broadcastingAuthBody(socketId, `private-order-executed.${owner.userId}`);
        return await send(t, signed(key, method, path, body));
      } finally {
        log.close();
      }
    }
    const id = path.startsWith('/v1/trades/') ? tradeId : orderId;
    return call(t, key, method, path.replace(':id', String(id)));
  }

  test('the table covers every private endpoint, for read, trade and both', () => {
    assert.deepEqual(table.columns, [['read'], ['trade'], ['read', 'trade']]);
    assert.equal(table.rows.length, 16);
  });

  for (const [column, scopes] of table.columns.entries()) {
    test(`a key with ${scopes.join(' + ')}`, async () => {
      const key = await createKey(t, owner.userId, { scopes });
      for (const { endpoint, expected } of table.rows) {
        const answer = await exercise(endpoint, key);
        assert.equal(answer.status, expected[column], `${endpoint}: ${JSON.stringify(answer.body)}`);
        if (answer.status === 403) assert.deepEqual(answer.body, { error: 'Access Denied' }, endpoint);
      }
    });
  }
});

describe('key options through the admin API', () => {
  let userId: number;
  before(async () => {
    userId = ((await t.admin('POST', '/users', {})).body as { id: number }).id;
  });

  test('ip_allowlist and nonce_required are stored and shown (never the secret)', async () => {
    const created = await t.admin('POST', `/users/${userId}/api-keys`, {
      scopes: ['read'],
      ip_allowlist: ['10.0.0.0/8', ' 2001:DB8::/32', '127.0.0.1', '10.0.0.0/8'],
      nonce_required: true,
    });
    assert.equal(created.status, 201);
    const view = created.body as Record<string, unknown>;
    assert.deepEqual(view.ip_allowlist, ['10.0.0.0/8', '2001:db8::/32', '127.0.0.1']);
    assert.equal(view.nonce_required, true);
    assert.equal(typeof view.api_secret, 'string');

    const listed = (await t.admin('GET', `/users/${userId}/api-keys`)).body as {
      data: Record<string, unknown>[];
    };
    const mine = listed.data.find((k) => k.api_key === view.api_key);
    assert.deepEqual(mine?.ip_allowlist, ['10.0.0.0/8', '2001:db8::/32', '127.0.0.1']);
    assert.equal(mine?.nonce_required, true);
    assert.ok(!JSON.stringify(listed).includes(String(view.api_secret)));

    const plain = await t.admin('POST', `/users/${userId}/api-keys`, {});
    assert.equal((plain.body as Record<string, unknown>).ip_allowlist, null);
    assert.equal((plain.body as Record<string, unknown>).nonce_required, false);
    const revoked = await t.admin('DELETE', `/api-keys/${String(view.api_key)}`);
    assert.deepEqual((revoked.body as Record<string, unknown>).ip_allowlist, [
      '10.0.0.0/8',
      '2001:db8::/32',
      '127.0.0.1',
    ]);
  });

  test('bad options: 422 naming the field, and no key is created', async () => {
    const count = async () =>
      ((await t.admin('GET', `/users/${userId}/api-keys`)).body as { data: unknown[] }).data.length;
    const before = await count();
    for (const [field, body] of [
      ['ip_allowlist', { ip_allowlist: [] }],
      ['ip_allowlist', { ip_allowlist: '10.0.0.1' }],
      ['ip_allowlist', { ip_allowlist: ['10.0.0.1', 'example.com'] }],
      ['ip_allowlist', { ip_allowlist: ['10.1.2.3/8'] }],
      ['ip_allowlist', { ip_allowlist: ['10.0.0.0/33'] }],
      ['ip_allowlist', { ip_allowlist: ['fe80::1%eth0'] }],
      ['ip_allowlist', { ip_allowlist: [7] }],
      ['ip_allowlist', { ip_allowlist: Array(65).fill('10.0.0.1') }],
      ['nonce_required', { nonce_required: 'yes' }],
      ['nonce_required', { nonce_required: 1 }],
    ] as const) {
      const r = await t.admin('POST', `/users/${userId}/api-keys`, body);
      assert.equal(r.status, 422, JSON.stringify(body));
      assert.equal((r.body as { error: { field: string } }).error.field, field, JSON.stringify(body));
    }
    assert.equal(await count(), before);
  });

  test('the CLI: keys create --ip and --nonce', async () => {
    const { stdout } = await run(process.execPath, [
      '--import',
      'tsx',
      'src/cli/main.ts',
      '--url',
      t.url,
      '--token',
      t.server.adminToken,
      '--json',
      'keys',
      'create',
      String(userId),
      '--scopes',
      'read',
      '--ip',
      '127.0.0.1/32, ::1',
      '--nonce',
    ]);
    const key = JSON.parse(stdout) as Record<string, unknown>;
    assert.deepEqual(key.ip_allowlist, ['127.0.0.1/32', '::1']);
    assert.equal(key.nonce_required, true);
    assert.deepEqual(key.scopes, ['read']);
  });
});

describe('revocation', () => {
  test('takes effect on the next request: 422 Invalid Signature', async () => {
    const trader = await t.trader();
    const request = signed(trader, 'GET', '/v1/spot-wallet');
    assert.equal((await send(t, request)).status, 200);
    assert.equal((await t.admin('DELETE', `/api-keys/${trader.apiKey}`)).status, 200);
    const after = await send(t, request);
    assert.equal(after.status, 422);
    assert.deepEqual(after.body, { error: 'Invalid Signature' });
    const order = await call(t, trader, 'POST', '/v1/orders', limitOrder('20000'));
    assert.equal(order.status, 422);
  });

  test("closes that user's private WebSocket subscription (403), keeps the connection", async () => {
    const trader = await t.trader();
    const channel = `private-order-executed.${trader.userId}`;
    const { log, socketId } = await FrameLog.open(wsUrl(t));
    try {
      const auth = await send(
        t,
        signed(trader, 'POST', '/v1/broadcasting/auth', broadcastingAuthBody(socketId, channel)),
      );
      assert.equal(auth.status, 200, JSON.stringify(auth.body));
      log.subscribe(channel, (auth.body as { auth: string }).auth);
      await log.next((f) => f.event === 'pusher_internal:subscription_succeeded' && f.channel === channel);
      assert.equal((await t.admin('DELETE', `/api-keys/${trader.apiKey}`)).status, 200);
      const error = await log.next((f) => f.event === 'pusher:subscription_error' && f.channel === channel);
      assert.deepEqual(error.data, { type: 'AuthError', error: 'Authorization revoked', status: 403 });
      log.send({ event: 'pusher:ping', data: {} });
      await log.next((f) => f.event === 'pusher:pong');
      assert.equal(log.closed, false);
    } finally {
      log.close();
    }
  });
});

describe('configuration', () => {
  test('defaults', () => {
    const config = loadConfig({});
    assert.deepEqual(config.rateLimit, { ipPerSecond: 200, ipBurst: 400, keyPerSecond: 100, keyBurst: 200 });
    assert.equal(config.ws.maxFramesPerSecond, 50);
  });

  test('rates, bursts, 0 to disable', () => {
    const config = loadConfig({
      RATE_LIMIT_IP_PER_SECOND: '0',
      RATE_LIMIT_KEY_PER_SECOND: '7',
      RATE_LIMIT_KEY_BURST: '3',
      WS_MAX_FRAMES_PER_SECOND: '0',
    });
    assert.deepEqual(config.rateLimit, { ipPerSecond: 0, ipBurst: 1, keyPerSecond: 7, keyBurst: 3 });
    assert.equal(config.ws.maxFramesPerSecond, 0);
    assert.equal(loadConfig({ RATE_LIMIT_IP_PER_SECOND: '10' }).rateLimit.ipBurst, 20);
  });

  test('invalid values stop the start with a message naming the variable', () => {
    for (const [name, value] of [
      ['RATE_LIMIT_IP_PER_SECOND', 'fast'],
      ['RATE_LIMIT_IP_PER_SECOND', '-1'],
      ['RATE_LIMIT_IP_PER_SECOND', '1.5'],
      ['RATE_LIMIT_IP_BURST', '0'],
      ['RATE_LIMIT_KEY_PER_SECOND', '99999999'],
      ['RATE_LIMIT_KEY_BURST', 'x'],
      ['WS_MAX_FRAMES_PER_SECOND', '1e3'],
    ] as const) {
      assert.throws(
        () => loadConfig({ [name]: value }),
        (error: unknown) => error instanceof ConfigError && error.message.includes(name),
        `${name}=${value}`,
      );
    }
  });
});
