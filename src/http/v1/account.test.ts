import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { type Harness, limit, startHarness, type Trader, WS_APP } from '../testing/harness.js';

interface TradeJson {
  id: number;
  type: string;
  order_id: number;
  order_type: string;
  pair: string;
  fee: { amount: string; currency: string };
}

describe('wallet, trades and channel authorization', () => {
  let h: Harness;
  let maker: Trader;
  let taker: Trader;
  before(async () => {
    h = await startHarness();
    maker = await h.trader({ BTC: '2' });
    taker = await h.trader({ EUR: '50000' });
    await h.submit(limit(maker.userId, h.btceur, 'sell', 300_000, 100_000_000)); // 1 BTC @ 30000.0 (order 1)
    await h.submit(limit(taker.userId, h.btceur, 'buy', 300_000, 25_000_000)); // trade 1 (order 2)
    await h.submit({
      kind: 'placeOrder',
      userId: taker.userId,
      marketId: h.btceur.id,
      side: 'buy',
      type: 'market',
      price: 0 as never,
      volume: 5_000_000 as never,
    }); // trade 2 (order 3)
  });
  after(() => h.close());

  test('GET /spot-wallet: totals include what open orders hold; pending is that held part', async () => {
    const r = await h.request('GET', '/v1/spot-wallet', { as: maker });
    assert.equal(r.status, 200);
    const body = r.json as { success: boolean; code: number; data: Record<string, unknown>[] };
    assert.equal(body.code, 200);
    assert.deepEqual(
      body.data.map((e) => e.asset_id),
      ['BTC', 'EUR', 'ETH'],
    );
    assert.deepEqual(body.data[0], {
      asset_id: 'BTC',
      asset_name: 'Bitcoin',
      type: 'crypto',
      balance: { balance_total: '1.70000000', balance_total_in_fiat: '51000.00' },
      pending: { has_pending: true, balance_pending: '0.70000000', balance_pending_in_fiat: '21000.00' },
      balance_currency: 'EUR',
    });
    // 0.3 BTC × 30000 = 9000 EUR minus the 0.1 % maker fee.
    assert.deepEqual((body.data[1] as { balance: unknown }).balance, {
      balance_total: '8991.00',
      balance_total_in_fiat: '8991.00',
    });
  });

  test('GET /trade-wallet: same data, marked deprecated with a link to /spot-wallet', async () => {
    const spot = await h.request('GET', '/v1/spot-wallet', { as: maker });
    const trade = await h.request('GET', '/v1/trade-wallet', { as: maker });
    assert.equal(trade.status, 200);
    assert.deepEqual(trade.json, spot.json);
    assert.match(String(trade.headers.deprecation), /^@\d+$/);
    assert.equal(trade.headers.link, '</v1/spot-wallet>; rel="successor-version"');
    assert.equal(spot.headers.deprecation, undefined);
  });

  test('GET /trades: own trades newest first, from each side', async () => {
    const mine = (await h.request('GET', '/v1/trades', { as: taker })).json as { data: TradeJson[] };
    assert.deepEqual(
      mine.data.map((t) => [t.id, t.type, t.order_id, t.order_type, t.pair]),
      [
        [2, 'buy', 3, 'market', 'BTC/EUR'],
        [1, 'buy', 2, 'limit', 'BTC/EUR'],
      ],
    );
    const theirs = (await h.request('GET', '/v1/trades?page-size=1', { as: maker })).json as {
      data: TradeJson[];
      meta: { total: number; last_page: number };
    };
    assert.deepEqual(
      theirs.data.map((t) => [t.id, t.type, t.order_id, t.order_type]),
      [[2, 'sell', 1, 'limit']],
    );
    assert.equal(theirs.meta.total, 2);
    assert.equal(theirs.meta.last_page, 2);
    // Maker fee 0.1 % of 1500.00 EUR.
    assert.deepEqual(theirs.data[0]!.fee, { amount: '1.50', currency: 'EUR' });
  });

  test('GET /trades: pairs[] filters in the PHP spellings; an unknown pair is 400', async () => {
    for (const q of [
      'pairs[]=BTC/EUR',
      'pairs[]=BTC%2FEUR&pairs[]=ETH/BTC',
      'pairs[0]=BTCEUR',
      'pairs=BTC/EUR',
    ]) {
      const r = (await h.request('GET', `/v1/trades?${q}`, { as: taker })).json as { data: unknown[] };
      assert.equal(r.data.length, 2, q);
    }
    const none = (await h.request('GET', '/v1/trades?pairs[]=ETH/BTC', { as: taker })).json as {
      data: unknown[];
    };
    assert.deepEqual(none.data, []);
    const bad = await h.request('GET', '/v1/trades?pairs[]=NOPE', { as: taker });
    assert.deepEqual([bad.status, bad.json], [400, { error: 'Invalid request' }]);
  });

  test('GET /trades/:trade_id: own trade; someone else’s or unknown is 404 shape C', async () => {
    const r = await h.request('GET', '/v1/trades/1', { as: taker });
    assert.equal(r.status, 200);
    assert.equal((r.json as { data: TradeJson }).data.id, 1);
    const outsider = await h.trader();
    for (const [as, id] of [
      [outsider, '1'],
      [taker, '77'],
      [taker, 'x'],
    ] as const) {
      const miss = await h.request('GET', `/v1/trades/${id}`, { as });
      assert.equal(miss.status, 404);
      assert.deepEqual(miss.json, {
        success: false,
        message: 'Trade not found',
        error: { message: 'Trade not found', code: 404 },
      });
    }
  });

  test('POST /broadcasting/auth: own private channel only', async () => {
    const channel = `private-order-executed.${taker.userId}`;
    const expected = (socketId: string) =>
      `${WS_APP.appKey}:${createHmac('sha256', WS_APP.appSecret).update(`${socketId}:${channel}`).digest('hex')}`;
    const asString = await h.request('POST', '/v1/broadcasting/auth', {
      as: taker,
      body: { socket_id: '1234.56789', channel_name: channel },
    });
    assert.deepEqual([asString.status, asString.json], [200, { auth: expected('1234.56789') }]);
    const asNumber = await h.request('POST', '/v1/broadcasting/auth', {
      as: taker,
      body: `{"socket_id":1234.56789,"channel_name":"${channel}"}`,
    });
    assert.deepEqual(asNumber.json, { auth: expected('1234.56789') });
    const form = await h.request('POST', '/v1/broadcasting/auth', {
      as: taker,
      body: `socket_id=1234.56789&channel_name=${encodeURIComponent(channel)}`,
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    });
    assert.deepEqual(form.json, { auth: expected('1234.56789') });

    for (const other of [
      `private-order-executed.${maker.userId}`,
      'presence-room',
      'private-other',
      `${channel}x`,
    ]) {
      const denied = await h.request('POST', '/v1/broadcasting/auth', {
        as: taker,
        body: { socket_id: '1.2', channel_name: other },
      });
      assert.deepEqual([denied.status, denied.json], [403, { error: 'Access Denied' }], other);
    }
    for (const body of [
      {},
      { socket_id: '1.2' },
      { socket_id: 'abc', channel_name: channel },
      { socket_id: 5, channel_name: channel },
      { socket_id: '1.2', channel_name: 7 },
      '{"socket_id":',
      '[]',
    ]) {
      const bad = await h.request('POST', '/v1/broadcasting/auth', { as: taker, body });
      assert.deepEqual([bad.status, bad.json], [400, { error: 'Invalid request' }], JSON.stringify(body));
    }
    const unsigned = await h.request('POST', '/v1/broadcasting/auth', {
      body: { socket_id: '1.2', channel_name: channel },
    });
    assert.deepEqual([unsigned.status, unsigned.json], [422, { error: 'Invalid Signature' }]);
  });
});

describe('GET /account and GET /fees', () => {
  let h: Harness;
  let trader: Trader;
  let reader: Trader;
  before(async () => {
    h = await startHarness({ rateLimit: { keyPerSecond: 7, keyBurst: 9 } });
    trader = await h.trader();
    reader = await h.trader({}, ['read']);
  });
  after(() => h.close());

  test('GET /account: the signing key’s user, scopes and limits', async () => {
    const r = await h.request('GET', '/v1/account', { as: trader });
    assert.equal(r.status, 200);
    assert.deepEqual(r.json, {
      success: true,
      message: 'Account retrieved successfully.',
      data: {
        user_id: trader.userId,
        scopes: ['read', 'trade'],
        nonce_required: false,
        rate_limit: { per_second: 7, burst: 9 },
      },
      code: 200,
    });
    const read = (await h.request('GET', '/v1/account', { as: reader })).json as { data: object };
    assert.deepEqual(read.data, {
      user_id: reader.userId,
      scopes: ['read'],
      nonce_required: false,
      rate_limit: { per_second: 7, burst: 9 },
    });
  });

  test('GET /fees: each market’s maker and taker rates, exactly', async () => {
    const r = await h.request('GET', '/v1/fees', { as: reader });
    assert.equal(r.status, 200);
    assert.deepEqual(r.json, {
      success: true,
      message: 'Fees retrieved successfully.',
      data: {
        BTCEUR: { wsname: 'BTC/EUR', maker_fee: '0.00100000', taker_fee: '0.00200000' },
        ETHBTC: { wsname: 'ETH/BTC', maker_fee: '0.00100000', taker_fee: '0.00200000' },
      },
      code: 200,
    });
  });

  test('both are private: unsigned or badly signed is 422 Invalid Signature', async () => {
    for (const path of ['/v1/account', '/v1/fees']) {
      const unsigned = await h.request('GET', path);
      assert.equal(unsigned.status, 422, path);
      assert.deepEqual(unsigned.json, { error: 'Invalid Signature' });
      const forged = await h.request('GET', path, { as: { ...trader, apiSecret: reader.apiSecret } });
      assert.deepEqual(forged.json, { error: 'Invalid Signature' });
    }
  });
});

describe('GET /account without a per-key limit', () => {
  test('rate_limit is null', async () => {
    const h = await startHarness();
    try {
      const trader = await h.trader();
      const r = (await h.request('GET', '/v1/account', { as: trader })).json as {
        data: { rate_limit: unknown };
      };
      assert.equal(r.data.rate_limit, null);
    } finally {
      await h.close();
    }
  });
});
