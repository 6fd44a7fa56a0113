import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { type Harness, limit, startHarness, type Trader } from '../testing/harness.js';

interface OrderJson {
  id: number;
  user_id: number;
  status: string;
  reason: string | null;
  close_time: string | null;
  price: { amount: string; currency: string };
  volume_executed: { amount: string };
  cost: { amount: string } | null;
  fee: { amount: string } | null;
  pair: string;
  trades: { id: number; price: { currency: string } }[];
}
interface ListJson {
  success: boolean;
  message: string;
  code: number;
  data: OrderJson[];
  meta?: Record<string, unknown>;
}

const order = (over: Record<string, unknown> = {}) => ({
  order_direction: 'buy',
  order_type: 'limit',
  pair: 'BTC/EUR',
  volume: '0.01',
  price: '20000.0',
  ...over,
});

describe('orders', () => {
  let h: Harness;
  let alice: Trader;
  let bob: Trader;
  before(async () => {
    h = await startHarness({ publicUrl: 'https://api.example.test/' });
    alice = await h.trader();
    bob = await h.trader();
  });
  after(() => h.close());

  const create = async (as: Trader, body: unknown) => {
    const r = await h.request('POST', '/v1/orders', { as, body });
    assert.equal(r.status, 201, r.text);
    assert.deepEqual(r.json, { success: true, message: 'Order created successfully.', code: 201 });
    const location = String(r.headers.location);
    assert.match(location, /^\/v1\/orders\/\d+$/);
    return Number(location.split('/').pop());
  };
  const get = async (as: Trader, id: number | string) => h.request('GET', `/v1/orders/${id}`, { as });

  test('create a limit order, read it back', async () => {
    const id = await create(alice, order());
    const r = await get(alice, id);
    assert.equal(r.status, 200);
    const body = r.json as { success: boolean; code: number; message: string; data: OrderJson };
    assert.equal(body.success, true);
    assert.equal(body.code, 200);
    assert.equal(body.data.id, id);
    assert.equal(body.data.user_id, alice.userId);
    assert.equal(body.data.status, 'open');
    assert.deepEqual(body.data.price, { amount: '20000.0', currency: 'EUR' });
    assert.equal(body.data.fee, null);
    assert.equal(body.data.cost, null);
    assert.deepEqual(body.data.trades, []);
  });

  test('create: Laravel 422 bodies (shape D)', async () => {
    const r = await h.request('POST', '/v1/orders', { as: alice, body: order({ price: undefined }) });
    assert.equal(r.status, 422);
    assert.deepEqual(r.json, {
      message: 'The price field is required unless order type is in market.',
      errors: { price: ['The price field is required unless order type is in market.'] },
    });
    const many = await h.request('POST', '/v1/orders', {
      as: alice,
      body: { order_direction: 'hold', volume: 1 },
    });
    assert.equal(many.status, 422);
    assert.deepEqual(many.json, {
      message: 'The selected order direction is invalid. (and 4 more errors)',
      errors: {
        order_direction: ['The selected order direction is invalid.'],
        order_type: ['The order type field is required.'],
        pair: ['The pair field is required.'],
        volume: ['The volume field must be a string.'],
        price: ['The price field is required unless order type is in market.'],
      },
    });
    const empty = await h.request('POST', '/v1/orders', { as: alice });
    assert.equal(empty.status, 422);
    assert.equal(Object.keys((empty.json as { errors: object }).errors).length, 5);
    for (const [field, value, message] of [
      ['volume', '1e-2', 'The volume field must be a number.'],
      ['volume', '-1', 'The volume field must be greater than 0.'],
      ['volume', '0.00001', 'The volume field must be at least 0.00010000.'],
      ['price', '0', 'The price field must be greater than 0.'],
      ['price', '20000.05', 'The price field must have 0-1 decimal places.'],
      ['pair', 'btc/eur', 'The selected pair is invalid.'],
    ] as const) {
      const bad = await h.request('POST', '/v1/orders', { as: alice, body: order({ [field]: value }) });
      assert.equal(bad.status, 422, `${field}=${value}`);
      assert.deepEqual(bad.json, { message, errors: { [field]: [message] } });
    }
  });

  test('a signed body that repeats a key is refused (422 shape D) and changes nothing', async () => {
    const openBefore = await h.request('GET', '/v1/open-orders', { as: alice });
    const buyThenSell =
      '{"order_direction":"buy","order_type":"limit","pair":"BTC/EUR","volume":"0.01","price":"20000.0","order_direction":"sell"}';
    const r = await h.request('POST', '/v1/orders', { as: alice, body: buyThenSell });
    assert.equal(r.status, 422);
    const message = 'The order direction field appears more than once.';
    assert.deepEqual(r.json, { message, errors: { order_direction: [message] } });
    // Escaped spellings of one key are the same key.
    const escaped = await h.request('POST', '/v1/orders', {
      as: alice,
      body: '{"pair":"BTC/EUR","p\\u0061ir":"ETH/EUR","order_direction":"buy","order_type":"market","volume":"0.01"}',
    });
    assert.equal(escaped.status, 422);
    assert.deepEqual(Object.keys((escaped.json as { errors: object }).errors), ['pair']);
    // A cancel body too: its order id must be read one way only.
    const id = await create(alice, order());
    const cancel = await h.request('DELETE', `/v1/orders/${id}`, {
      as: alice,
      body: `{"order_id":${id},"order_id":${id + 1}}`,
    });
    assert.equal(cancel.status, 422);
    assert.deepEqual(Object.keys((cancel.json as { errors: object }).errors), ['order_id']);
    assert.equal(((await get(alice, id)).json as { data: OrderJson }).data.status, 'open');
    // Without a valid signature the caller learns nothing about the body: Invalid Signature first.
    const unsigned = await h.request('POST', '/v1/orders', {
      as: alice,
      body: buyThenSell,
      signBody: '{}',
    });
    assert.equal(unsigned.status, 422);
    assert.deepEqual(unsigned.json, { error: 'Invalid Signature' });
    const openAfter = await h.request('GET', '/v1/open-orders', { as: alice });
    assert.equal(
      (openAfter.json as ListJson).data.length,
      (openBefore.json as ListJson).data.length + 1,
      'only the order placed to be cancelled is open',
    );
    assert.equal((await h.request('DELETE', `/v1/orders/${id}`, { as: alice })).status, 200);
  });

  test('create: the engine refusing for funds is a 422 on volume', async () => {
    const poor = await h.trader({ EUR: '10' });
    const r = await h.request('POST', '/v1/orders', { as: poor, body: order({ volume: '1' }) });
    assert.equal(r.status, 422);
    assert.deepEqual(r.json, { message: 'Insufficient funds.', errors: { volume: ['Insufficient funds.'] } });
  });

  test('create: the joined pair name is accepted too; a market order fills at the average price', async () => {
    await h.submit(limit(bob.userId, h.btceur, 'sell', 300_000, 10_000_000)); // 0.1 @ 30000.0
    await h.submit(limit(bob.userId, h.btceur, 'sell', 300_100, 10_000_000)); // 0.1 @ 30010.0
    const id = await create(alice, {
      order_direction: 'buy',
      order_type: 'market',
      pair: 'BTCEUR',
      volume: '0.15',
    });
    const data = ((await get(alice, id)).json as { data: OrderJson }).data;
    assert.equal(data.status, 'closed');
    assert.deepEqual(data.volume_executed, { amount: '0.15000000', currency: 'BTC' });
    // (0.1 × 30000.0 + 0.05 × 30010.0) / 0.15 = 30003.33.. -> 30003.3
    assert.deepEqual(data.price, { amount: '30003.3', currency: 'EUR' });
    assert.deepEqual(data.cost, { amount: '4500.50', currency: 'EUR' });
    // 0.2 % of 3000.00 is 6.00, of 1500.50 is 3.001: the order's exact fee 9.001, rounded up.
    assert.deepEqual(data.fee, { amount: '9.01', currency: 'EUR' });
    assert.deepEqual(
      data.trades.map((t) => t.price.currency),
      ['BTC/EUR', 'BTC/EUR'],
    );
    assert.notEqual(data.close_time, null);
  });

  test('create: a market buy whose funds buy less than ordermin is a 422 on volume naming ordermin', async () => {
    await h.submit(limit(bob.userId, h.btceur, 'sell', 290_000, 1_000_000)); // 0.01 @ 29000.0
    const poor = await h.trader({ EUR: '1' }); // 1.00 EUR buys 0.00003448 BTC (0.99 + 0.01 fee)
    const r = await h.request('POST', '/v1/orders', {
      as: poor,
      body: order({ order_type: 'market', volume: '0.01', price: undefined }),
    });
    assert.equal(r.status, 422, r.text);
    const message =
      'Your available funds buy only 0.00003448 BTC at the current prices, below the minimum order volume (ordermin) of 0.00010000 BTC.';
    assert.deepEqual(r.json, { message, errors: { volume: [message] } });
    for (const list of ['/v1/open-orders', '/v1/closed-orders']) {
      const orders = await h.request('GET', list, { as: poor });
      assert.deepEqual((orders.json as ListJson).data, [], `no order was created (${list})`);
    }
    // Funds that reach ordermin buy what they can: the rest of the book is untouched by the refusal.
    const rich = await h.trader({ EUR: '3.10' }); // 3.09 + 0.01 fee buy 0.00010689 BTC
    await create(rich, order({ order_type: 'market', volume: '0.01', price: undefined }));
    const [bought] = ((await h.request('GET', '/v1/closed-orders', { as: rich })).json as ListJson).data;
    assert.equal(bought?.status, 'closed');
    assert.deepEqual(bought?.volume_executed, { amount: '0.00010689', currency: 'BTC' });
  });

  test("another user's order, an unknown id, a non-numeric id: 404 shape C", async () => {
    const id = await create(alice, order());
    for (const [as, ref] of [
      [bob, id],
      [alice, 999_999],
      [alice, 'abc'],
      [alice, '99999999999999999999'],
      [alice, '0'],
    ] as const) {
      const r = await get(as, ref);
      assert.equal(r.status, 404, String(ref));
      assert.deepEqual(r.json, {
        success: false,
        message: 'Order not found',
        error: { message: 'Order not found', code: 404 },
      });
    }
  });

  test('cancel: own open order; then 409; others 404; bad id 400', async () => {
    const id = await create(alice, order({ price: '10000.0' }));
    const stranger = await h.request('DELETE', `/v1/orders/${id}`, { as: bob });
    assert.equal(stranger.status, 404);
    assert.equal((stranger.json as { success: boolean }).success, false);
    const r = await h.request('DELETE', `/v1/orders/${id}`, { as: alice });
    assert.equal(r.status, 200);
    assert.deepEqual(r.json, { success: true, message: 'Order canceled successfully.', code: 200 });
    const data = ((await get(alice, id)).json as { data: OrderJson }).data;
    assert.equal(data.status, 'canceled');
    assert.equal(typeof data.reason, 'string');
    assert.match(String(data.close_time), /^\d+\.\d{4}$/);
    assert.deepEqual(data.volume_executed, { amount: '0.00000000', currency: 'BTC' });
    const again = await h.request('DELETE', `/v1/orders/${id}`, { as: alice });
    assert.deepEqual([again.status, again.json], [409, { error: 'Order is not open (status: canceled).' }]);
    const bad = await h.request('DELETE', '/v1/orders/12abc', { as: alice });
    assert.deepEqual([bad.status, bad.json], [400, { error: 'Invalid request' }]);
    const missing = await h.request('DELETE', '/v1/orders/424242', { as: alice });
    assert.equal(missing.status, 404);
  });

  test('lists: newest first, own orders only, whole list without page-size, pages with meta', async () => {
    const carol = await h.trader();
    const ids: number[] = [];
    for (let i = 0; i < 5; i++) ids.push(await create(carol, order({ price: `${1000 + i}.0` })));
    await create(alice, order());
    const whole = await h.request('GET', '/v1/open-orders', { as: carol });
    assert.equal(whole.status, 200);
    assert.match(String(whole.headers['content-type']), /^application\/json/);
    const body = whole.json as ListJson;
    assert.deepEqual(
      body.data.map((o) => o.id),
      [...ids].reverse(),
    );
    assert.equal(body.meta, undefined);
    assert.equal(body.code, 200);
    assert.equal(body.message, 'Open orders retrieved successfully.');

    const page2 = (await h.request('GET', '/v1/open-orders?page-size=2&page=2', { as: carol }))
      .json as ListJson;
    assert.deepEqual(
      page2.data.map((o) => o.id),
      [ids[2], ids[1]],
    );
    assert.deepEqual(page2.meta, {
      current_page: 2,
      from: 3,
      to: 4,
      path: 'https://api.example.test/v1/open-orders',
      per_page: 2,
      total: 5,
      last_page: 3,
    });
    // Paged records equal the streamed ones (two serialization paths, one format).
    assert.deepEqual(page2.data, body.data.slice(2, 4));

    const beyond = (await h.request('GET', '/v1/open-orders?page-size=2&page=9', { as: carol }))
      .json as ListJson;
    assert.deepEqual(beyond.data, []);
    assert.equal(beyond.meta?.from, null);
    assert.equal(beyond.meta?.to, null);

    const none = (await h.request('GET', '/v1/closed-orders?page-size=10', { as: carol })).json as ListJson;
    assert.deepEqual(none.meta, {
      current_page: 1,
      from: null,
      to: null,
      path: 'https://api.example.test/v1/closed-orders',
      per_page: 10,
      total: 0,
      last_page: 1,
    });
    const emptyStream = (await h.request('GET', '/v1/closed-orders', { as: carol })).json as ListJson;
    assert.deepEqual(emptyStream, {
      success: true,
      message: 'Closed orders retrieved successfully.',
      data: [],
      code: 200,
    });

    for (const q of [
      'page-size=0',
      'page-size=501',
      'page-size=x',
      'page-size=2&page=0',
      'pair=NOPE',
      'page-size=1&page-size=2',
    ]) {
      const r = await h.request('GET', `/v1/open-orders?${q}`, { as: carol });
      assert.deepEqual([r.status, r.json], [400, { error: 'Invalid request' }], q);
    }
    const ethOnly = (await h.request('GET', '/v1/open-orders?pair=ETH/BTC', { as: carol })).json as ListJson;
    assert.deepEqual(ethOnly.data, []);
  });

  test('closed orders carry their executions', async () => {
    const dave = await h.trader();
    await h.submit(limit(bob.userId, h.btceur, 'sell', 250_000, 1_000_000));
    const id = await create(dave, order({ price: '25000.0', volume: '0.01' }));
    const closed = (await h.request('GET', '/v1/closed-orders', { as: dave })).json as ListJson;
    assert.deepEqual(
      closed.data.map((o) => [o.id, o.status, o.trades.length]),
      [[id, 'closed', 1]],
    );
    const paged = (await h.request('GET', '/v1/closed-orders?page-size=5&pair=BTCEUR', { as: dave }))
      .json as ListJson;
    assert.deepEqual(paged.data, closed.data);
  });

  test('a long unpaginated list streams completely and parses', async () => {
    const erin = await h.trader({ EUR: '100000' });
    for (let i = 0; i < 450; i++) await h.submit(limit(erin.userId, h.btceur, 'buy', 1000 + i, 10_000));
    const r = await h.request('GET', '/v1/open-orders', { as: erin });
    const body = r.json as ListJson;
    assert.equal(body.data.length, 450);
    assert.equal(new Set(body.data.map((o) => o.id)).size, 450);
    assert.ok(body.data.every((o, i, all) => i === 0 || all[i - 1]!.id > o.id));

    // The same bytes as one page holding everything (what the list was before it was streamed).
    const paged = await h.request('GET', '/v1/open-orders?page-size=500', { as: erin });
    const { meta: _meta, ...pagedBody } = paged.json as ListJson;
    assert.equal(r.text, JSON.stringify(pagedBody));

    // Other work runs while it is produced: a chain of setImmediate callbacks advances between
    // its batches (450 orders: 5 batches, 4 pauses), where one long synchronous pass would hold it still.
    let turns = 0;
    let ticking = true;
    const tick = () => {
      turns += 1;
      if (ticking) setImmediate(tick);
    };
    setImmediate(tick);
    const again = await h.request('GET', '/v1/open-orders', { as: erin });
    ticking = false;
    assert.equal(again.text, r.text);
    assert.ok(turns >= 4, `${turns} turns of the event loop while 450 orders were listed`);
  });
});
