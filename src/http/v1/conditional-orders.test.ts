/**
 * Conditional orders over real HTTP (issue 22), on the server `npm start` runs (and, with
 * TEST_STORE=postgres, on PostgreSQL): the request rules and their 422s in shape D, the Order
 * record of waiting, trailing and fired orders, a stop that a later trade triggers and whose
 * trades are its own, amends of the trigger, batches, idempotent retries, and what a restart
 * keeps (waiting stops, trailing state, the last trade price that refuses a trigger).
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { type Answer, type Credentials, call, send, signed } from '../../../test/access/support.js';
import { startTestServer, type TestServer } from '../../../test/support/server-fixture.js';

interface Money {
  amount: string;
  currency: string;
}
interface OrderJson {
  id: number;
  status: string;
  reason: string | null;
  order_type: string;
  price: Money;
  secondary_price: Money | null;
  limit_price: Money | null;
  trigger_conditions: string;
  description: { order: string; price: string; orderType: string; secondaryPrice: string | null };
  volume_executed: Money;
  trades: { id: number; price: Money; volume: Money }[];
}
interface ErrorD {
  success: false;
  message: string;
  errors: Record<string, string[]>;
}

const idOf = (a: Answer): number => {
  assert.equal(a.status, 201, JSON.stringify(a.body));
  return Number(String(a.location).split('/').pop());
};
const dataOf = <T>(a: Answer): T => (a.body as { data: T }).data;
const errorsOf = (a: Answer): Record<string, string[]> => {
  assert.equal(a.status, 422, JSON.stringify(a.body));
  return (a.body as ErrorD).errors;
};

/** Every conditional order of these tests: a sell of 0.01 on `pair` unless told otherwise. */
const stop = (pair: string, over: Record<string, unknown>) => ({
  order_direction: 'sell',
  pair,
  volume: '0.01',
  ...over,
});

describe('conditional orders over HTTP', () => {
  let t: TestServer;
  /** Makes the market: rests the orders the trades below meet. */
  let maker: Credentials;
  /** Takes: the trades that set each market's last price. */
  let taker: Credentials;
  before(async () => {
    t = await startTestServer();
    maker = await t.trader({ EUR: '1000000', BTC: '10', ETH: '100', USD: '1000000' });
    taker = await t.trader({ EUR: '1000000', BTC: '10', ETH: '100', USD: '1000000' });
  });
  after(() => t.close());

  const place = (as: Credentials, body: unknown, headers: Record<string, string> = {}) => {
    const request = signed(as, 'POST', '/v1/orders', body);
    return send(t, { ...request, headers: { ...request.headers, ...headers } });
  };
  const get = async (as: Credentials, id: number) =>
    dataOf<OrderJson>(await call(t, as, 'GET', `/v1/orders/${id}`));
  /** One trade of 0.01 at `price` between the maker and the taker: the market's last price. */
  const tradeAt = async (pair: string, price: string) => {
    idOf(await place(maker, { order_direction: 'sell', order_type: 'limit', pair, volume: '0.01', price }));
    const taken = idOf(
      await place(taker, {
        order_direction: 'buy',
        order_type: 'limit',
        pair,
        volume: '0.01',
        price,
        time_in_force: 'IOC',
      }),
    );
    assert.equal((await get(taker, taken)).status, 'closed', `a trade at ${price}`);
  };
  const book = async (pair: string) => {
    const r = await fetch(`${t.url}/v1/orderbook?ticker_id=${encodeURIComponent(pair)}&depth=0`);
    const [first] = (await r.json()) as { bids: string[][]; asks: string[][] }[];
    return first!;
  };

  test('each rule of the request is a 422 in shape D on its own field', async () => {
    const sam = await t.trader();
    const pair = 'ETH/EUR';
    assert.deepEqual(errorsOf(await place(sam, stop(pair, { order_type: 'stop-loss' }))), {
      trigger_price: ['The trigger price field is required when order type is stop-loss.'],
    });
    assert.deepEqual(
      errorsOf(
        await place(sam, stop(pair, { order_type: 'take-profit', trigger_price: '3000', price: '2990' })),
      ),
      { price: ['The price field is prohibited when order type is take-profit.'] },
    );
    assert.deepEqual(
      errorsOf(await place(sam, stop(pair, { order_type: 'stop-loss-limit', trigger_price: '3000' }))),
      { price: ['The price field is required when order type is stop-loss-limit.'] },
    );
    assert.deepEqual(
      errorsOf(await place(sam, stop(pair, { order_type: 'limit', price: '3000', trigger_price: '2900' }))),
      { trigger_price: ['The trigger price field is prohibited when order type is limit.'] },
    );
    assert.deepEqual(
      errorsOf(await place(sam, stop(pair, { order_type: 'stop-loss', trigger_price: '2900.001' }))),
      { trigger_price: ['The trigger price field must have 0-2 decimal places.'] },
    );
    assert.deepEqual(errorsOf(await place(sam, stop(pair, { order_type: 'trailing-stop' }))), {
      trailing_offset: ['The trailing offset field is required when order type is trailing-stop.'],
    });
    for (const offset of ['60%', '0%', '1.234%', 'two'])
      assert.deepEqual(
        Object.keys(
          errorsOf(await place(sam, stop(pair, { order_type: 'trailing-stop', trailing_offset: offset }))),
        ),
        ['trailing_offset'],
        offset,
      );
    assert.deepEqual(
      errorsOf(
        await place(
          sam,
          stop(pair, { order_type: 'stop-loss', trigger_price: '2900', trailing_offset: '1%' }),
        ),
      ),
      { trailing_offset: ['The trailing offset field is prohibited when order type is stop-loss.'] },
    );
    assert.deepEqual(
      errorsOf(
        await place(
          sam,
          stop(pair, { order_type: 'stop-loss', trigger_price: '2900', time_in_force: 'IOC' }),
        ),
      ),
      { time_in_force: ['The time in force field must be GTC or GTD when order type is stop-loss.'] },
    );
    assert.deepEqual(
      errorsOf(
        await place(sam, stop(pair, { order_type: 'take-profit', trigger_price: '3100', post_only: true })),
      ),
      { post_only: ['The post only field is prohibited when order type is take-profit.'] },
    );
    // Every failure at once, as for any order.
    assert.deepEqual(
      Object.keys(errorsOf(await place(sam, { order_type: 'trailing-stop', pair, trigger_price: '1' }))),
      ['order_direction', 'volume', 'trigger_price', 'trailing_offset'],
    );
  });

  test('a trigger the last trade price has reached already is refused, naming that price', async () => {
    const sam = await t.trader();
    const pair = 'ETH/EUR';
    await tradeAt(pair, '3000.00');
    // A sell stop-loss at or above the last price, a sell take-profit at or below it: both would fire.
    for (const body of [
      stop(pair, { order_type: 'stop-loss', trigger_price: '3000' }),
      stop(pair, { order_type: 'stop-loss-limit', trigger_price: '3100', price: '3050' }),
      stop(pair, { order_type: 'take-profit', trigger_price: '2999.99' }),
      stop(pair, { order_type: 'stop-loss', trigger_price: '2900', order_direction: 'buy' }),
    ]) {
      const errors = errorsOf(await place(sam, body));
      assert.deepEqual(Object.keys(errors), ['trigger_price'], JSON.stringify(body));
      assert.match(errors.trigger_price![0]!, /last trade price, 3000\.00, has reached this trigger already/);
    }
    // Just short of it waits.
    idOf(await place(sam, stop(pair, { order_type: 'stop-loss', trigger_price: '2999.99' })));
    idOf(await place(sam, stop(pair, { order_type: 'take-profit', trigger_price: '3000.01' })));
  });

  test('a waiting stop: open, outside the book, its trigger as price and its condition in words', async () => {
    const sam = await t.trader({ EUR: '10000', BTC: '1' });
    const pair = 'BTC/USD';
    await tradeAt(pair, '60000.0');
    const id = idOf(
      await place(sam, stop(pair, { order_type: 'stop-loss-limit', trigger_price: '58000', price: '57900' })),
    );
    const o = await get(sam, id);
    assert.equal(o.status, 'open');
    assert.equal(o.order_type, 'stop-loss-limit');
    assert.equal(o.description.orderType, 'stop-loss-limit');
    assert.deepEqual(o.price, { amount: '58000.0', currency: 'USD' });
    assert.deepEqual(o.secondary_price, { amount: '57900.0', currency: 'USD' });
    assert.deepEqual(o.limit_price, { amount: '57900.0', currency: 'USD' });
    assert.equal(o.description.secondaryPrice, '57900.0');
    assert.equal(o.description.order, 'sell 0.01000000 BTCUSD @ stop loss 58000.0 -> limit 57900.0');
    assert.equal(o.trigger_conditions, 'last price <= 58000.0');
    const asks = (await book(pair)).asks.map(([price]) => price);
    assert.ok(!asks.includes('57900.0') && !asks.includes('58000.0'), JSON.stringify(asks));
    // Its volume is held from acceptance, as a limit sell's.
    const open = dataOf<OrderJson[]>(await call(t, sam, 'GET', '/v1/open-orders'));
    assert.deepEqual(
      open.map((x) => x.id),
      [id],
    );
    const wallet = dataOf<{ asset_id: string; pending: { balance_pending: string } }[]>(
      await call(t, sam, 'GET', '/v1/spot-wallet'),
    );
    assert.equal(wallet.find((w) => w.asset_id === 'BTC')?.pending.balance_pending, '0.0100000000');
    // A cancel releases it.
    assert.equal((await call(t, sam, 'DELETE', `/v1/orders/${id}`)).status, 200);
    const released = dataOf<{ asset_id: string; pending: { balance_pending: string } }[]>(
      await call(t, sam, 'GET', '/v1/spot-wallet'),
    );
    assert.equal(released.find((w) => w.asset_id === 'BTC')?.pending.balance_pending, '0.0000000000');
  });

  test('a stop-loss that a later trade triggers sells at market; its trades are its own', async () => {
    const sam = await t.trader();
    const pair = 'BTC/EUR';
    await tradeAt(pair, '60000.0');
    const id = idOf(await place(sam, stop(pair, { order_type: 'stop-loss', trigger_price: '58000' })));
    // The bid the fired stop will sell into, below the trigger.
    idOf(
      await place(maker, {
        order_direction: 'buy',
        order_type: 'limit',
        pair,
        volume: '0.01',
        price: '57900',
      }),
    );
    assert.equal((await get(sam, id)).trigger_conditions, 'last price <= 58000.0');
    await tradeAt(pair, '58000.0');
    const fired = await get(sam, id);
    assert.equal(fired.status, 'closed');
    assert.equal(fired.order_type, 'stop-loss');
    assert.equal(fired.trigger_conditions, 'triggered: last price <= 58000.0');
    assert.deepEqual(fired.price, { amount: '58000.0', currency: 'EUR' });
    assert.deepEqual(fired.volume_executed, { amount: '0.01000000', currency: 'BTC' });
    assert.deepEqual(
      fired.trades.map((x) => x.price.amount),
      ['57900.0'],
    );
    const trades = dataOf<{ order_id: number; order_type: string; type: string; price: Money }[]>(
      await call(t, sam, 'GET', '/v1/trades'),
    );
    assert.equal(trades.length, 1);
    assert.equal(trades[0]!.order_id, id);
    assert.equal(trades[0]!.type, 'sell');
    assert.equal(trades[0]!.order_type, 'market', 'a fired stop-loss takes as a market order');
    const closed = dataOf<OrderJson[]>(await call(t, sam, 'GET', '/v1/closed-orders'));
    assert.deepEqual(
      closed.map((x) => x.id),
      [id],
    );
  });

  test('a fired stop-loss-limit that cannot fill rests as a limit order; amends move a waiting trigger only', async () => {
    const sam = await t.trader();
    const pair = 'BTC/EUR';
    await tradeAt(pair, '61000.0');
    const waiting = idOf(
      await place(sam, stop(pair, { order_type: 'stop-loss-limit', trigger_price: '60000', price: '60500' })),
    );
    const amend = (id: number, body: unknown) => call(t, sam, 'PATCH', `/v1/orders/${id}`, body);
    // A trigger the last price has reached, and one of a plain limit order: refused on trigger_price.
    assert.match(
      errorsOf(await amend(waiting, { trigger_price: '61000' })).trigger_price![0]!,
      /has reached this trigger already/,
    );
    const limit = idOf(
      await place(sam, { order_direction: 'buy', order_type: 'limit', pair, volume: '0.01', price: '1000' }),
    );
    assert.deepEqual(Object.keys(errorsOf(await amend(limit, { trigger_price: '900' }))), ['trigger_price']);
    assert.deepEqual(errorsOf(await amend(waiting, { trigger_price: 'x' })), {
      trigger_price: ['The trigger price field must be a number.'],
    });
    assert.equal((await amend(waiting, { trigger_price: '60500.5' })).status, 200);
    assert.equal((await get(sam, waiting)).trigger_conditions, 'last price <= 60500.5');
    // The trade at 60500.0 fires it; the book has no bid at 60500 or above: it rests as a limit sell.
    await tradeAt(pair, '60500.0');
    const fired = await get(sam, waiting);
    assert.equal(fired.status, 'open');
    assert.equal(fired.trigger_conditions, 'triggered: last price <= 60500.5');
    assert.ok((await book(pair)).asks.some(([price]) => price === '60500.0'));
    assert.deepEqual(
      Object.keys(errorsOf(await amend(waiting, { trigger_price: '59000' }))),
      ['trigger_price'],
      'a fired order has no trigger to move',
    );
    assert.equal((await call(t, sam, 'DELETE', `/v1/orders/${waiting}`)).status, 200);
  });

  test('a trailing stop follows the best price: its trigger moves with each new high', async () => {
    const sam = await t.trader({ EUR: '1000', BTC: '1', USD: '100000' });
    const pair = 'BTC/USD';
    await tradeAt(pair, '50000.0');
    const pct = idOf(await place(sam, stop(pair, { order_type: 'trailing-stop', trailing_offset: '2%' })));
    const abs = idOf(
      await place(
        sam,
        stop(pair, { order_type: 'trailing-stop', order_direction: 'buy', trailing_offset: '150.5' }),
      ),
    );
    let o = await get(sam, pct);
    assert.equal(o.order_type, 'trailing-stop');
    assert.equal(o.description.order, 'sell 0.01000000 BTCUSD @ trailing stop -2%');
    assert.equal(o.trigger_conditions, 'last price <= 49000.0 (trailing 2% below the best price 50000.0)');
    assert.deepEqual(o.price, { amount: '49000.0', currency: 'USD' });
    assert.equal(o.secondary_price, null);
    assert.equal(
      (await get(sam, abs)).trigger_conditions,
      'last price >= 50150.5 (trailing 150.5 above the best price 50000.0)',
    );
    await tradeAt(pair, '51000.0');
    o = await get(sam, pct);
    assert.equal(o.trigger_conditions, 'last price <= 49980.0 (trailing 2% below the best price 51000.0)');
    assert.deepEqual(o.price, { amount: '49980.0', currency: 'USD' });
    // The buy's best is the lowest price: unchanged by a higher trade... and it fired at 51000.
    const bought = await get(sam, abs);
    assert.equal(bought.trigger_conditions, 'triggered: last price >= 50150.5');
    assert.equal(bought.status, 'canceled', 'no ask left to buy from');
    assert.equal(bought.reason, 'no liquidity');
    assert.equal((await call(t, sam, 'DELETE', `/v1/orders/${pct}`)).status, 200);
  });

  test('batches and idempotent retries carry the trigger', async () => {
    const sam = await t.trader();
    const pair = 'ETH/EUR';
    const batch = await call(t, sam, 'POST', '/v1/orders/batch', {
      orders: [
        stop(pair, { order_type: 'take-profit-limit', trigger_price: '9000', price: '8900' }),
        stop(pair, { order_type: 'take-profit' }),
        stop(pair, {
          order_type: 'stop-loss',
          trigger_price: '1',
          time_in_force: 'GTD',
          expire_time: String(Math.floor(Date.now() / 1000) + 3600),
        }),
      ],
    });
    assert.equal(batch.status, 200, JSON.stringify(batch.body));
    const items = dataOf<{ success: boolean; id?: number; errors?: Record<string, string[]> }[]>(batch);
    assert.deepEqual(
      items.map((i) => i.success),
      [true, false, true],
      JSON.stringify(items),
    );
    assert.deepEqual(Object.keys(items[1]!.errors!), ['trigger_price'], JSON.stringify(items));
    assert.equal((await get(sam, items[0]!.id!)).order_type, 'take-profit-limit');

    const key = { 'idempotency-key': 'stop-once' };
    const body = stop(pair, { order_type: 'stop-loss', trigger_price: '100' });
    const first = idOf(await place(sam, body, key));
    assert.equal(idOf(await place(sam, { ...body, trigger_price: '100.00' }, key)), first);
    assert.deepEqual(Object.keys(errorsOf(await place(sam, { ...body, trigger_price: '101' }, key))), [
      'Idempotency-Key',
    ]);
  });
});

describe('conditional orders across a restart', () => {
  test('waiting stops, trailing state and the last price survive; a trigger it reached is refused after', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'openspot-stops-'));
    let t = await startTestServer({}, dir);
    try {
      const maker = await t.trader();
      const taker = await t.trader();
      const sam = await t.trader();
      const place = (as: Credentials, body: unknown) => call(t, as, 'POST', '/v1/orders', body);
      const get = async (id: number) => dataOf<OrderJson>(await call(t, sam, 'GET', `/v1/orders/${id}`));
      const tradeAt = async (price: string) => {
        const pair = 'BTC/EUR';
        idOf(
          await place(maker, { order_direction: 'sell', order_type: 'limit', pair, volume: '0.01', price }),
        );
        const id = idOf(
          await place(taker, {
            order_direction: 'buy',
            order_type: 'limit',
            pair,
            volume: '0.01',
            price,
            time_in_force: 'IOC',
          }),
        );
        assert.equal(dataOf<OrderJson>(await call(t, taker, 'GET', `/v1/orders/${id}`)).status, 'closed');
      };
      await tradeAt('60000.0');
      const waiting = idOf(
        await place(sam, stop('BTC/EUR', { order_type: 'stop-loss', trigger_price: '55000' })),
      );
      const trailing = idOf(
        await place(sam, stop('BTC/EUR', { order_type: 'trailing-stop', trailing_offset: '5%' })),
      );
      await tradeAt('62000.0');
      const before = [await get(waiting), await get(trailing)];
      assert.equal(
        before[1]!.trigger_conditions,
        'last price <= 58900.0 (trailing 5% below the best price 62000.0)',
      );
      await t.close();
      t = await startTestServer({}, dir);

      assert.deepEqual([await get(waiting), await get(trailing)], before);
      // The restored last price (62000.0) refuses a sell stop at or above it and a take-profit at or below it.
      for (const body of [
        stop('BTC/EUR', { order_type: 'stop-loss', trigger_price: '62000' }),
        stop('BTC/EUR', { order_type: 'take-profit', trigger_price: '61000' }),
      ])
        assert.match(
          errorsOf(await place(sam, body)).trigger_price![0]!,
          /last trade price, 62000\.0, has reached this trigger already/,
        );
      // The restored trailing stop still follows the market, and fires once.
      await tradeAt('63000.0');
      assert.equal(
        (await get(trailing)).trigger_conditions,
        'last price <= 59850.0 (trailing 5% below the best price 63000.0)',
      );
      idOf(
        await place(maker, {
          order_direction: 'buy',
          order_type: 'limit',
          pair: 'BTC/EUR',
          volume: '0.02',
          price: '59000',
        }),
      );
      await tradeAt('59800.0');
      const fired = await get(trailing);
      assert.equal(fired.status, 'closed');
      assert.equal(fired.trigger_conditions, 'triggered: last price <= 59850.0');
      assert.equal((await get(waiting)).status, 'open', 'the stop at 55000 still waits');
    } finally {
      await t.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
