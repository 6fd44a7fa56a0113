/**
 * POST /v1/orders with an Idempotency-Key: a retry returns the original 201 and places nothing;
 * the same key for another order is refused; concurrent duplicates place once; records expire
 * after 24 hours and survive a restart.
 */
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { after, before, describe, test } from 'node:test';
import { startTestServer } from '../../../test/support/server-fixture.js';
import { OpenSpotClient } from '../../client/client.js';
import type { AssetCode } from '../../domain/types.js';
import { type Harness, START, startHarness, type Trader } from '../testing/harness.js';

const DAY = 24 * 3600 * 1_000_000;

const order = (over: Record<string, unknown> = {}) => ({
  order_direction: 'buy',
  order_type: 'limit',
  pair: 'BTC/EUR',
  volume: '0.01',
  price: '20000.0',
  ...over,
});

const CREATED = { success: true, message: 'Order created successfully.', code: 201 };
const KEY_REUSED = 'The Idempotency-Key was already used for a different order.';

describe('Idempotency-Key on POST /v1/orders', () => {
  let h: Harness;
  let alice: Trader;
  let bob: Trader;
  before(async () => {
    h = await startHarness();
    alice = await h.trader();
    bob = await h.trader();
  });
  after(() => h.close());

  const post = (as: Trader, body: unknown, key?: string) =>
    h.request('POST', '/v1/orders', {
      as,
      body,
      ...(key === undefined ? {} : { headers: { 'idempotency-key': key } }),
    });
  const openIds = async (as: Trader) => {
    const r = await h.request('GET', '/v1/open-orders', { as });
    return (r.json as { data: { id: number }[] }).data.map((o) => o.id).sort((a, b) => a - b);
  };
  const eur = (as: Trader) => h.exchange.balances(as.userId).find((b) => b.asset === 'EUR');

  test('a retry with the same key and body returns the original 201 and places nothing', async () => {
    const first = await post(alice, order(), 'retry-1');
    assert.equal(first.status, 201, first.text);
    assert.deepEqual(first.json, CREATED);
    const location = String(first.headers.location);
    assert.match(location, /^\/v1\/orders\/\d+$/);
    const orders = await openIds(alice);
    const balance = eur(alice);

    // The same order, another spelling of the pair and another key order: the same request.
    const retry = await post(
      alice,
      { price: '20000.0', volume: '0.01', pair: 'BTCEUR', order_type: 'limit', order_direction: 'buy' },
      'retry-1',
    );
    assert.equal(retry.status, 201, retry.text);
    assert.deepEqual(retry.json, CREATED);
    assert.equal(retry.headers.location, location);
    assert.deepEqual(await openIds(alice), orders);
    assert.deepEqual(eur(alice), balance);

    // Keys are per user: Bob's "retry-1" is his own.
    const other = await post(bob, order(), 'retry-1');
    assert.equal(other.status, 201);
    assert.notEqual(other.headers.location, location);
  });

  test('the same key with another order is a 422 on Idempotency-Key and places nothing', async () => {
    assert.equal((await post(alice, order(), 'mismatch-1')).status, 201);
    const orders = await openIds(alice);
    const r = await post(alice, order({ volume: '0.02' }), 'mismatch-1');
    assert.equal(r.status, 422);
    const message = KEY_REUSED;
    assert.deepEqual(r.json, { message, errors: { 'Idempotency-Key': [message] } });
    assert.equal(r.headers.location, undefined);
    assert.deepEqual(await openIds(alice), orders);
  });

  /**
   * Every field of the order is part of the request a key names: changing any one of them under a
   * used key is another order, refused, never a replay of the first order's 201. One row per field
   * of the order body; a field added to POST /v1/orders gets its row here.
   *
   * An order control's row starts from an order that already uses a control (`base`): an order
   * with none has its own fingerprint, so only a change between two controlled orders shows that
   * this one field is part of it.
   */
  // Past the two days the later tests move the clock, so the order does not expire under them.
  const inAMonth = String(START / 1_000_000 + 30 * 86_400);
  const aDayLater = String(START / 1_000_000 + 31 * 86_400);
  const EACH_FIELD_CHANGED: ReadonlyArray<{
    readonly field: string;
    readonly base?: Record<string, unknown>;
    readonly change: Record<string, unknown>;
  }> = [
    { field: 'order_direction', change: { order_direction: 'sell' } },
    // ETH/EUR has BTC/EUR's precisions: the same text is the same ticks and lots on another market.
    { field: 'pair', change: { pair: 'ETH/EUR' } },
    { field: 'order_type', change: { order_type: 'market', price: undefined } },
    { field: 'price', change: { price: '20000.1' } },
    { field: 'volume', change: { volume: '0.02' } },
    // An IOC or FOK buy with no seller rests nowhere: the first order is canceled, the key stays used.
    { field: 'time_in_force', base: { time_in_force: 'IOC' }, change: { time_in_force: 'FOK' } },
    { field: 'post_only', base: { stp: 'cancel-newest' }, change: { post_only: true } },
    {
      field: 'client_order_id',
      base: { client_order_id: 'idem-first' },
      change: { client_order_id: 'idem-second' },
    },
    { field: 'stp', base: { stp: 'cancel-newest' }, change: { stp: 'cancel-both' } },
    {
      field: 'expire_time',
      base: { time_in_force: 'GTD', expire_time: inAMonth },
      change: { expire_time: aDayLater },
    },
  ];

  test('the same key with any one field of the order changed is a 422, each field in turn', async () => {
    await h.submit({
      kind: 'createMarket',
      base: 'ETH' as AssetCode,
      quote: 'EUR' as AssetCode,
      pairDecimals: h.btceur.pairDecimals,
      lotDecimals: h.btceur.lotDecimals,
      ordermin: h.btceur.ordermin,
      makerFee: h.btceur.makerFee,
      takerFee: h.btceur.takerFee,
    });
    for (const { field, base = {}, change } of EACH_FIELD_CHANGED) {
      const key = `field-${field}`;
      assert.equal((await post(alice, order(base), key)).status, 201, field);
      const orders = await openIds(alice);
      const balances = h.exchange.balances(alice.userId);
      const r = await post(alice, order({ ...base, ...change }), key);
      assert.equal(r.status, 422, `${field}: ${r.text}`);
      assert.deepEqual(r.json, { message: KEY_REUSED, errors: { 'Idempotency-Key': [KEY_REUSED] } }, field);
      assert.equal(r.headers.location, undefined, field);
      assert.deepEqual(await openIds(alice), orders, field);
      assert.deepEqual(h.exchange.balances(alice.userId), balances, field);
    }
  });

  test('a malformed key is a 422 on Idempotency-Key, reported with the body errors', async () => {
    const orders = await openIds(alice);
    const message = 'The Idempotency-Key header must be 1 to 255 printable ASCII characters.';
    for (const key of ['x'.repeat(256), 'caf\u00e9', 'tab\there']) {
      const r = await h.request('POST', '/v1/orders', {
        as: alice,
        body: order(),
        headers: { 'idempotency-key': Buffer.from(key, 'latin1').toString('latin1') },
      });
      assert.equal(r.status, 422, key);
      assert.deepEqual(r.json, { message, errors: { 'Idempotency-Key': [message] } });
    }
    const both = await post(alice, order({ volume: undefined }), 'y'.repeat(300));
    assert.equal(both.status, 422);
    assert.deepEqual(Object.keys((both.json as { errors: object }).errors), ['volume', 'Idempotency-Key']);
    assert.deepEqual(await openIds(alice), orders);
    // The draft's structured-field form ("…") names the same key as the bare form.
    const quoted = await post(alice, order({ price: '20001.0' }), '"sf-1"');
    assert.equal(quoted.status, 201);
    const bare = await post(alice, order({ price: '20001.0' }), 'sf-1');
    assert.equal(bare.headers.location, quoted.headers.location);
  });

  test('duplicates sent together (one batch) place once and all get the same 201', async () => {
    const orders = await openIds(alice);
    const replies = await Promise.all(
      [1, 2, 3].map(() => post(alice, order({ price: '19000.0' }), 'burst-1')),
    );
    for (const r of replies) assert.equal(r.status, 201, r.text);
    assert.equal(new Set(replies.map((r) => r.headers.location)).size, 1);
    assert.equal((await openIds(alice)).length, orders.length + 1);
    // Another order under a key still in flight is refused, not queued.
    const [a, b] = await Promise.all([
      post(alice, order({ price: '18000.0' }), 'burst-2'),
      post(alice, order({ price: '18001.0' }), 'burst-2'),
    ]);
    assert.deepEqual([a!.status, b!.status], [201, 422]);
    assert.equal((await openIds(alice)).length, orders.length + 2);
  });

  test('a retry after the order was canceled still gets the original 201', async () => {
    const first = await post(alice, order({ price: '17000.0' }), 'cancel-1');
    const id = String(first.headers.location).split('/').pop();
    assert.equal((await h.request('DELETE', `/v1/orders/${id}`, { as: alice })).status, 200);
    const orders = await openIds(alice);
    const retry = await post(alice, order({ price: '17000.0' }), 'cancel-1');
    assert.equal(retry.status, 201);
    assert.equal(retry.headers.location, first.headers.location);
    assert.deepEqual(await openIds(alice), orders);
  });

  test('a refused order is not recorded: a retry runs again', async () => {
    const poor = await h.trader({ EUR: '10' });
    const refused = await post(poor, order(), 'poor-1');
    assert.equal(refused.status, 422);
    await h.submit({
      kind: 'deposit',
      userId: poor.userId,
      asset: 'EUR' as never,
      amount: 100_000_00 as never,
    });
    const retry = await post(poor, order(), 'poor-1');
    assert.equal(retry.status, 201, retry.text);
    assert.equal((await openIds(poor)).length, 1);
  });

  test('a record lasts 24 hours: after that the key places a new order', async () => {
    const first = await post(alice, order({ price: '16000.0' }), 'day-1');
    h.advance(DAY - 1);
    const within = await post(alice, order({ price: '16000.0' }), 'day-1');
    assert.equal(within.headers.location, first.headers.location);
    h.advance(1);
    const orders = await openIds(alice);
    const later = await post(alice, order({ price: '16000.0' }), 'day-1');
    assert.equal(later.status, 201);
    assert.notEqual(later.headers.location, first.headers.location);
    assert.equal((await openIds(alice)).length, orders.length + 1);
    // The new order now owns the key.
    const again = await post(alice, order({ price: '16000.0' }), 'day-1');
    assert.equal(again.headers.location, later.headers.location);
  });

  test('expired records are pruned by later commits', async () => {
    await post(alice, order({ price: '15000.0' }), 'prune-1');
    assert.notEqual(await h.exchange.store.findIdempotencyRecord(alice.userId, 'prune-1'), undefined);
    h.advance(DAY + 1);
    await post(alice, order({ price: '15001.0' }));
    assert.equal(await h.exchange.store.findIdempotencyRecord(alice.userId, 'prune-1'), undefined);
  });
});

test('a key survives a restart of the server', { timeout: 60_000 }, async () => {
  const first = await startTestServer();
  const { dataDir } = first;
  const trader = await first.trader();
  const client = (url: string) =>
    new OpenSpotClient({ baseUrl: `${url}/v1`, apiKey: trader.apiKey, apiSecret: trader.apiSecret });
  const params = {
    pair: 'BTC/EUR',
    direction: 'buy',
    type: 'limit',
    volume: '0.01',
    price: '20000',
    idempotencyKey: 'restart-1',
  } as const;
  let id: number | undefined;
  try {
    id = (await client(first.url).createOrder(params)).id;
  } finally {
    await first.server.close();
  }
  const second = await startTestServer({}, dataDir);
  try {
    const c = client(second.url);
    const before = (await c.openOrders()).data.length;
    assert.equal((await c.createOrder(params)).id, id);
    assert.equal((await c.openOrders()).data.length, before);
  } finally {
    await second.close();
    rmSync(dataDir, { recursive: true, force: true });
  }
});
