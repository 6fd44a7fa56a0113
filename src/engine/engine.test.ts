/** Scenario tests of the engine's rules, each written as a trader would describe it. */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type {
  Amount,
  AssetCode,
  FeeRate,
  MarketId,
  Micros,
  OrderId,
  Price,
  UserId,
  Volume,
} from '../domain/types.js';
import { Engine } from './engine.js';
import type { Command, CommandResult, EngineEvent, Trade } from './types.js';

const T = 1_700_000_000_000_000 as Micros;
const EUR = 'EUR' as AssetCode;
const BTC = 'BTC' as AssetCode;
const alice = 1 as UserId;
const bob = 2 as UserId;

/** BTC/EUR with BTC at 8 decimals, EUR at 2; prices at 1 decimal, volumes at 8 (1 lot = 1 satoshi). */
function venue(makerFee = 160_000, takerFee = 260_000): { engine: Engine; market: MarketId } {
  const engine = new Engine();
  ok(engine.apply({ kind: 'createAsset', code: 'EUR', name: 'Euro', type: 'fiat', decimals: 2 }, T));
  ok(engine.apply({ kind: 'createAsset', code: 'BTC', name: 'Bitcoin', type: 'crypto', decimals: 8 }, T));
  ok(
    engine.apply(
      {
        kind: 'createMarket',
        base: BTC,
        quote: EUR,
        pairDecimals: 1,
        lotDecimals: 8,
        ordermin: 10_000 as Volume,
        makerFee: makerFee as FeeRate,
        takerFee: takerFee as FeeRate,
      },
      T,
    ),
  );
  return { engine, market: 1 as MarketId };
}

function ok(result: CommandResult): readonly EngineEvent[] {
  if (!result.ok) assert.fail(`rejected: ${result.error.code} ${result.error.message}`);
  return result.events;
}

const fund = (engine: Engine, user: UserId, asset: AssetCode, amount: number) =>
  ok(engine.apply({ kind: 'deposit', userId: user, asset, amount: amount as Amount }, T));

const order = (
  market: MarketId,
  userId: UserId,
  side: 'buy' | 'sell',
  price: number,
  volume: number,
  type: 'limit' | 'market' = 'limit',
): Command => ({
  kind: 'placeOrder',
  userId,
  marketId: market,
  side,
  type,
  price: price as Price,
  volume: volume as Volume,
});

const trades = (events: readonly EngineEvent[]): Trade[] =>
  events.flatMap((e) => (e.type === 'trade' ? [e.trade] : []));
const idOf = (events: readonly EngineEvent[]): OrderId => {
  const e = events.find((x) => x.type === 'orderAccepted');
  assert.ok(e?.type === 'orderAccepted');
  return e.order.id;
};
const auditOk = (engine: Engine) =>
  assert.ok(
    engine.audit().every((r) => r.ok),
    'conservation holds',
  );

describe('matching', () => {
  test('a crossing limit order trades at the resting price and settles both sides with fees', () => {
    const { engine, market } = venue();
    fund(engine, alice, BTC, 100_000_000);
    fund(engine, bob, EUR, 10_000_000); // 100,000.00 EUR
    ok(engine.apply(order(market, alice, 'sell', 300_000, 50_000_000), T)); // 0.5 BTC @ 30,000.0
    const events = ok(engine.apply(order(market, bob, 'buy', 310_000, 50_000_000), T)); // willing to pay 31,000.0
    const [trade] = trades(events);
    assert.equal(trade?.price, 300_000, 'maker price');
    assert.equal(trade?.cost, 1_500_000, '15,000.00 EUR');
    assert.equal(trade?.takerFee, 3_900, '0.26% of 15,000.00 = 39.00');
    assert.equal(trade?.makerFee, 2_400, '0.16% = 24.00');
    assert.deepEqual(engine.balance(bob, BTC), { available: 50_000_000, reserved: 0 });
    assert.deepEqual(
      engine.balance(bob, EUR),
      { available: 10_000_000 - 1_500_000 - 3_900, reserved: 0 },
      'over-reservation released',
    );
    assert.deepEqual(engine.balance(alice, EUR), { available: 1_500_000 - 2_400, reserved: 0 });
    assert.deepEqual(engine.balance(alice, BTC), { available: 50_000_000, reserved: 0 });
    auditOk(engine);
  });

  test('price-time priority: better price first, then the older order at the same price', () => {
    const { engine, market } = venue(0, 0);
    for (const u of [alice, bob, 3 as UserId]) fund(engine, u, BTC, 100_000_000);
    fund(engine, 4 as UserId, EUR, 100_000_000);
    const first = idOf(ok(engine.apply(order(market, alice, 'sell', 300_010, 10_000), T)));
    const second = idOf(ok(engine.apply(order(market, bob, 'sell', 300_010, 10_000), T)));
    const best = idOf(ok(engine.apply(order(market, 3 as UserId, 'sell', 300_000, 10_000), T)));
    const fills = trades(ok(engine.apply(order(market, 4 as UserId, 'buy', 300_010, 30_000), T)));
    assert.deepEqual(
      fills.map((t) => t.makerOrderId),
      [best, first, second],
    );
  });

  test('a partially filled limit order rests with its remainder and keeps its reservation for it', () => {
    const { engine, market } = venue();
    fund(engine, alice, BTC, 100_000_000);
    fund(engine, bob, EUR, 10_000_000);
    ok(engine.apply(order(market, alice, 'sell', 300_000, 10_000_000), T));
    const id = idOf(ok(engine.apply(order(market, bob, 'buy', 300_000, 30_000_000), T)));
    const state = engine.openOrder(id);
    assert.equal(state?.executed, 10_000_000);
    assert.equal(state?.status, 'open');
    assert.deepEqual(engine.levels(market, 'buy'), [[300_000, 20_000_000]]);
    assert.equal(engine.balance(bob, EUR).reserved, state?.reserved);
    auditOk(engine);
  });

  test('time priority: at one price the older order fills first; the newer one keeps its full volume', () => {
    const { engine, market } = venue(0, 0);
    for (const u of [alice, bob, 3 as UserId]) fund(engine, u, BTC, 100_000_000);
    fund(engine, 4 as UserId, EUR, 100_000_000);
    const first = idOf(ok(engine.apply(order(market, alice, 'sell', 300_010, 10_000), T)));
    const second = idOf(ok(engine.apply(order(market, bob, 'sell', 300_010, 10_000), T)));
    const third = idOf(ok(engine.apply(order(market, 3 as UserId, 'sell', 300_010, 10_000), T)));
    const fills = trades(ok(engine.apply(order(market, 4 as UserId, 'buy', 300_010, 15_000), T)));
    assert.deepEqual(
      fills.map((t) => [t.makerOrderId, t.volume]),
      [
        [first, 10_000],
        [second, 5_000],
      ],
    );
    assert.equal(engine.openOrder(first), undefined, 'the oldest is filled and gone');
    assert.equal(engine.openOrder(second)?.executed, 5_000, 'the second is partly filled');
    assert.equal(engine.openOrder(third)?.executed, 0, 'the newest is untouched');
  });

  test('no crossed book at rest', () => {
    const { engine, market } = venue();
    fund(engine, alice, BTC, 100_000_000);
    fund(engine, bob, EUR, 100_000_000);
    ok(engine.apply(order(market, alice, 'sell', 300_000, 10_000), T));
    ok(engine.apply(order(market, bob, 'buy', 300_100, 20_000), T));
    const bid = engine.bestPrice(market, 'buy');
    const ask = engine.bestPrice(market, 'sell');
    assert.ok(ask === null || bid === null || bid < ask);
  });
});

describe('fees: rounded up per order, never zero, never cheaper when split', () => {
  test('a fill whose exact fee is a fraction of a unit pays one unit (0.78 -> 1, 0.48 -> 1)', () => {
    const { engine, market } = venue(); // maker 0.16 %, taker 0.26 %
    fund(engine, alice, BTC, 100_000_000);
    fund(engine, bob, EUR, 10_000);
    ok(engine.apply(order(market, alice, 'sell', 300_000, 10_000), T)); // 0.0001 BTC @ 30,000.0
    const [trade] = trades(ok(engine.apply(order(market, bob, 'buy', 300_000, 10_000), T)));
    assert.equal(trade?.cost, 300, '3.00 EUR');
    assert.equal(trade?.takerFee, 1, '0.26 % of 3.00 = 0.0078 EUR, charged 0.01');
    assert.equal(trade?.makerFee, 1, '0.16 % of 3.00 = 0.0048 EUR, charged 0.01');
    assert.deepEqual(engine.balance(bob, EUR), { available: 10_000 - 301, reserved: 0 });
    assert.deepEqual(engine.balance(alice, EUR), { available: 299, reserved: 0 });
    auditOk(engine);
  });

  test("an order's fees over several fills are the ceiling of its exact total, not a ceiling per fill", () => {
    const { engine, market } = venue(100_000, 250_000); // maker 0.1 %, taker 0.25 %
    fund(engine, alice, BTC, 100_000_000);
    fund(engine, bob, EUR, 100_000);
    const makers = [];
    for (let i = 0; i < 4; i++)
      makers.push(idOf(ok(engine.apply(order(market, alice, 'sell', 200_000, 10_000), T))));
    const events = ok(engine.apply(order(market, bob, 'buy', 200_000, 40_000), T));
    const fills = trades(events);
    assert.deepEqual(
      fills.map((t) => t.cost),
      [200, 200, 200, 200],
    );
    // Exact taker fee per fill 0.5 units: 0.5 -> 1, 1.0 -> 1, 1.5 -> 2, 2.0 -> 2.
    assert.deepEqual(
      fills.map((t) => t.takerFee),
      [1, 0, 1, 0],
    );
    // Each maker is its own order: 0.2 units each, rounded up to 1.
    assert.deepEqual(
      fills.map((t) => t.makerFee),
      [1, 1, 1, 1],
    );
    const done = events.find((e) => e.type === 'orderDone' && e.order.id === idOf(events));
    assert.ok(done?.type === 'orderDone');
    assert.equal(done.order.fee, 2, '0.25 % of 8.00 EUR is exactly 0.02');
    assert.deepEqual(engine.balance(bob, EUR), { available: 100_000 - 802, reserved: 0 });
    auditOk(engine);
  });

  test('a resting limit buy reserves its fee rounded up, and its fills never spend more', () => {
    const { engine, market } = venue(); // the larger rate is the taker's, 0.26 %
    fund(engine, bob, EUR, 10_000);
    fund(engine, alice, BTC, 100_000_000);
    const id = idOf(ok(engine.apply(order(market, bob, 'buy', 300_000, 30_000), T))); // 9.00 EUR
    assert.deepEqual(
      engine.balance(bob, EUR),
      { available: 10_000 - 903, reserved: 903 },
      '900 + ceil(2.34)',
    );
    for (let i = 0; i < 3; i++) ok(engine.apply(order(market, alice, 'sell', 300_000, 10_000), T));
    // As maker (0.16 %): 0.48 -> 1, 0.96 -> 1, 1.44 -> 2: fees 1, 0, 1.
    assert.equal(engine.openOrder(id), undefined);
    assert.deepEqual(engine.balance(bob, EUR), { available: 10_000 - 902, reserved: 0 });
    auditOk(engine);
  });
});

describe('market orders', () => {
  test('never rest: the unfilled remainder is released and the order is closed', () => {
    const { engine, market } = venue();
    fund(engine, alice, BTC, 100_000_000);
    fund(engine, bob, BTC, 100_000_000);
    fund(engine, bob, EUR, 100_000_000);
    ok(engine.apply(order(market, bob, 'buy', 290_000, 10_000_000), T));
    const events = ok(engine.apply(order(market, alice, 'sell', 0, 30_000_000, 'market'), T));
    const done = events.find((e) => e.type === 'orderDone');
    assert.ok(done?.type === 'orderDone');
    assert.equal(done.order.status, 'closed');
    assert.equal(done.order.executed, 10_000_000);
    assert.deepEqual(engine.balance(alice, BTC), { available: 90_000_000, reserved: 0 });
    assert.deepEqual(engine.levels(market, 'sell'), []);
  });

  test('with nothing to trade against, it is canceled with a reason', () => {
    const { engine, market } = venue();
    fund(engine, alice, BTC, 100_000_000);
    const events = ok(engine.apply(order(market, alice, 'sell', 0, 10_000, 'market'), T));
    const done = events.find((e) => e.type === 'orderDone');
    assert.ok(done?.type === 'orderDone');
    assert.equal(done.order.status, 'canceled');
    assert.equal(done.order.reason, 'no liquidity');
    assert.deepEqual(engine.balance(alice, BTC), { available: 100_000_000, reserved: 0 });
  });

  test('a market buy spends at most the available quote, fee included', () => {
    const { engine, market } = venue();
    fund(engine, alice, BTC, 100_000_000);
    fund(engine, bob, EUR, 100_000); // 1,000.00 EUR
    ok(engine.apply(order(market, alice, 'sell', 300_000, 100_000_000), T));
    const events = ok(engine.apply(order(market, bob, 'buy', 0, 100_000_000, 'market'), T));
    const [trade] = trades(events);
    assert.ok(trade !== undefined);
    assert.ok(trade.cost + trade.takerFee <= 100_000);
    const bought = engine.balance(bob, BTC).available;
    assert.equal(bought, trade.volume);
    // cost(v) = floor(3v / 100) units; spend = cost + ceil(cost x 0.26 %). 3,324,699 lots cost
    // 997.40 EUR + 2.60 fee = exactly 1,000.00; one more lot costs 997.41 + 2.60 = 1,000.01.
    assert.equal(trade.volume, 3_324_699, 'the largest affordable volume');
    assert.equal(trade.cost, 99_740);
    assert.equal(trade.takerFee, 260);
    const oneMore = Math.floor((3 * (trade.volume + 1)) / 100);
    assert.ok(oneMore + Math.ceil((oneMore * 26) / 10_000) > 100_000, 'one more lot was unaffordable');
    const eur = engine.balance(bob, EUR);
    assert.equal(eur.reserved, 0);
    assert.equal(eur.available, 100_000 - trade.cost - trade.takerFee);
    auditOk(engine);
  });

  test('a market buy whose funds buy less than ordermin is refused, naming ordermin, and changes nothing', () => {
    const { engine, market } = venue(); // ordermin 0.0001 BTC
    fund(engine, alice, BTC, 100_000_000);
    fund(engine, bob, EUR, 100); // 1.00 EUR buys 0.00003333 BTC at 30,000 (0.99 + 0.01 fee)
    ok(engine.apply(order(market, alice, 'sell', 300_000, 100_000_000), T));
    engine.drainChanges();
    const before = engine.snapshot();
    const result = engine.apply(order(market, bob, 'buy', 0, 10_000_000, 'market'), T);
    assert.ok(!result.ok, 'refused');
    assert.equal(result.error.code, 'below_ordermin');
    assert.equal(result.error.field, 'volume');
    assert.match(result.error.message, /0\.00003333/, 'says what the funds buy');
    assert.match(result.error.message, /ordermin/);
    assert.match(result.error.message, /0\.00010000/, 'says the minimum');
    assert.deepEqual(engine.snapshot(), before);
    const changes = engine.drainChanges();
    assert.deepEqual([changes.orders, changes.balances, changes.levels], [[], [], []]);
  });

  test('a market buy whose funds reach ordermin executes what they buy', () => {
    const { engine, market } = venue();
    fund(engine, alice, BTC, 100_000_000);
    fund(engine, bob, EUR, 302); // 3.02 EUR: 0.0001 BTC at 30,000 costs 3.00 + 0.01 fee
    ok(engine.apply(order(market, alice, 'sell', 300_000, 100_000_000), T));
    const events = ok(engine.apply(order(market, bob, 'buy', 0, 10_000_000, 'market'), T));
    const [trade] = trades(events);
    assert.ok(trade !== undefined && trade.volume >= 10_000);
    auditOk(engine);
  });

  test('a thin book is not a refusal: liquidity below ordermin is still taken', () => {
    const { engine, market } = venue();
    fund(engine, alice, BTC, 100_000_000);
    fund(engine, bob, EUR, 1_000_000);
    ok(engine.apply(order(market, alice, 'sell', 300_000, 10_000), T));
    ok(engine.apply({ kind: 'cancelOrder', userId: alice, orderId: 1 as OrderId }, T));
    ok(engine.apply(order(market, alice, 'sell', 300_000, 20_000), T));
    const events = ok(engine.apply(order(market, bob, 'buy', 0, 100_000_000, 'market'), T));
    assert.equal(trades(events)[0]?.volume, 20_000);
  });
});

describe('risk checks', () => {
  test('an order that cannot be funded is rejected and changes nothing', () => {
    const { engine, market } = venue();
    fund(engine, bob, EUR, 1_000);
    const before = engine.snapshot();
    const result = engine.apply(order(market, bob, 'buy', 300_000, 100_000_000), T);
    assert.equal(result.ok, false);
    assert.equal(!result.ok && result.error.code, 'insufficient_funds');
    assert.deepEqual(engine.snapshot(), before);
  });

  test('below ordermin is rejected naming the volume', () => {
    const { engine, market } = venue();
    fund(engine, bob, EUR, 100_000_000);
    const result = engine.apply(order(market, bob, 'buy', 300_000, 9_999), T);
    assert.ok(!result.ok);
    assert.equal(result.error.code, 'below_ordermin');
    assert.equal(result.error.field, 'volume');
  });

  test('withdrawals cannot exceed the available balance (reserved funds stay put)', () => {
    const { engine, market } = venue();
    fund(engine, alice, BTC, 100_000);
    ok(engine.apply(order(market, alice, 'sell', 300_000, 60_000), T));
    const result = engine.apply({ kind: 'withdraw', userId: alice, asset: BTC, amount: 50_000 as Amount }, T);
    assert.ok(!result.ok);
    assert.equal(result.error.code, 'insufficient_funds');
    ok(engine.apply({ kind: 'withdraw', userId: alice, asset: BTC, amount: 40_000 as Amount }, T));
    auditOk(engine);
  });

  test('amounts past 2^53 - 1 units are refused as too large, never thrown or rounded', () => {
    const { engine, market } = venue(0, 0);
    const MAX = Number.MAX_SAFE_INTEGER;
    fund(engine, alice, EUR, 2_000_000_000);
    fund(engine, bob, EUR, 2_000_000_000);
    // At 0.1 EUR per BTC, MAX lots (90,071,992 BTC) cost 9,007,199.25 EUR: each bid fits alone,
    // but two at one price would make the level's total pass 2^53 - 1 lots.
    ok(engine.apply(order(market, alice, 'buy', 1, MAX), T));
    const before = engine.snapshot();
    const second = engine.apply(order(market, bob, 'buy', 1, MAX), T);
    assert.ok(!second.ok);
    assert.equal(second.error.code, 'too_large');
    assert.equal(second.error.field, 'volume');
    assert.deepEqual(engine.snapshot(), before);
    assert.deepEqual(engine.levels(market, 'buy'), [[1, MAX]]);
    // A buy whose cost plus fee cannot be held exactly.
    const pricey = engine.apply(order(market, bob, 'buy', MAX, 100_000_000), T);
    assert.ok(!pricey.ok);
    assert.equal(pricey.error.code, 'too_large');
  });

  test('a buy whose volume in base units passes 2^53 - 1 is refused as too large', () => {
    const engine = new Engine();
    ok(engine.apply({ kind: 'createAsset', code: 'EUR', name: 'Euro', type: 'fiat', decimals: 2 }, T));
    ok(engine.apply({ kind: 'createAsset', code: 'ETH', name: 'Ether', type: 'crypto', decimals: 10 }, T));
    const market = {
      kind: 'createMarket',
      base: 'ETH' as AssetCode,
      quote: EUR,
      pairDecimals: 2,
      lotDecimals: 4,
      ordermin: 1 as Volume,
      makerFee: 0 as FeeRate,
      takerFee: 0 as FeeRate,
    } as const;
    ok(engine.apply(market, T));
    fund(engine, bob, EUR, 1_000_000_000);
    // One lot is 10^6 units: 9,007,199,255 lots are more than 2^53 - 1 units of ETH.
    const result = engine.apply(order(1 as MarketId, bob, 'buy', 1, 9_007_199_255), T);
    assert.ok(!result.ok);
    assert.equal(result.error.code, 'too_large');
  });
});

describe('cancel and self-trade prevention', () => {
  test('cancel releases exactly what the order still holds', () => {
    const { engine, market } = venue();
    fund(engine, bob, EUR, 10_000_000);
    const id = idOf(ok(engine.apply(order(market, bob, 'buy', 300_000, 10_000_000), T)));
    assert.ok(engine.balance(bob, EUR).reserved > 0);
    const events = ok(engine.apply({ kind: 'cancelOrder', userId: bob, orderId: id }, T));
    assert.deepEqual(engine.balance(bob, EUR), { available: 10_000_000, reserved: 0 });
    const done = events.find((e) => e.type === 'orderDone');
    assert.ok(done?.type === 'orderDone');
    assert.equal(done.order.reason, 'canceled by user');
    assert.deepEqual(engine.levels(market, 'buy'), []);
  });

  test("another user's order cannot be canceled and is reported as not found", () => {
    const { engine, market } = venue();
    fund(engine, bob, EUR, 10_000_000);
    const id = idOf(ok(engine.apply(order(market, bob, 'buy', 300_000, 10_000), T)));
    const result = engine.apply({ kind: 'cancelOrder', userId: alice, orderId: id }, T);
    assert.ok(!result.ok);
    assert.equal(result.error.code, 'order_not_found');
  });

  test('a taker never trades with its own resting order: the resting one is canceled', () => {
    const { engine, market } = venue();
    fund(engine, alice, BTC, 100_000_000);
    fund(engine, alice, EUR, 100_000_000);
    fund(engine, bob, BTC, 100_000_000);
    const own = idOf(ok(engine.apply(order(market, alice, 'sell', 300_000, 10_000), T)));
    ok(engine.apply(order(market, bob, 'sell', 300_010, 10_000), T));
    const events = ok(engine.apply(order(market, alice, 'buy', 300_010, 10_000), T));
    const canceled = events.find((e) => e.type === 'orderDone' && e.order.id === own);
    assert.ok(canceled?.type === 'orderDone');
    assert.equal(canceled.order.reason, 'self-trade prevention');
    const [trade] = trades(events);
    assert.equal(trade?.makerUserId, bob);
    auditOk(engine);
  });
});

describe('open orders by id (paged index, recycled order records)', () => {
  test('a cancel naming no order, whatever the id, is not found and changes nothing', () => {
    const { engine, market } = venue();
    fund(engine, bob, EUR, 10_000_000);
    ok(engine.apply(order(market, bob, 'buy', 300_000, 10_000), T));
    const before = engine.snapshot();
    for (const id of [0, -1, 1.5, 2, 512, 2 ** 31, 2 ** 53 - 1, 2 ** 53, Number.NaN, Infinity]) {
      const result = engine.apply({ kind: 'cancelOrder', userId: bob, orderId: id as OrderId }, T);
      assert.ok(!result.ok && result.error.code === 'order_not_found', `id ${id}`);
    }
    assert.deepEqual(engine.snapshot(), before);
  });

  test('thousands of orders placed and canceled across drains: every survivor stays exact and in time order', () => {
    const { engine, market } = venue(0, 0);
    fund(engine, bob, EUR, 1_000_000_000_000);
    const open = new Map<number, number>();
    // Rounds of 700 orders at 7 prices; each round cancels all but every 97th order, then drains,
    // so finished order records are recycled into the next round's orders and whole id pages empty.
    for (let round = 0; round < 6; round++) {
      const ids: OrderId[] = [];
      for (let i = 0; i < 700; i++) {
        const volume = 10_000 + round * 1000 + i;
        const id = idOf(ok(engine.apply(order(market, bob, 'buy', 290_000 + (i % 7), volume), T)));
        ids.push(id);
        open.set(id, volume);
      }
      for (const [i, id] of ids.entries()) {
        if (i % 97 === 0) continue;
        ok(engine.apply({ kind: 'cancelOrder', userId: bob, orderId: id }, T));
        open.delete(id);
      }
      const changed = engine.drainChanges().orders;
      assert.equal(changed.length, 700, 'each order of the round changed once');
    }
    const expected = [...open].sort((a, b) => a[0] - b[0]);
    assert.deepEqual(
      engine.snapshot().openOrders.map((o) => [o.id, o.volume]),
      expected,
    );
    for (const [id, volume] of expected) assert.equal(engine.openOrder(id as OrderId)?.volume, volume);
    const total = expected.reduce((sum, [, v]) => sum + v, 0);
    assert.equal(
      engine.levels(market, 'buy').reduce((sum, [, v]) => sum + v, 0),
      total,
    );
    // The next orders get fresh ids and records; the old survivors keep theirs.
    const next = idOf(ok(engine.apply(order(market, bob, 'buy', 289_000, 10_000), T)));
    assert.equal(next, 4201);
    assert.equal(engine.openOrder(expected[0]![0] as OrderId)?.status, 'open');
    auditOk(engine);
  });
});

test('restore from a snapshot continues exactly where the engine stopped', () => {
  const { engine, market } = venue();
  fund(engine, alice, BTC, 100_000_000);
  fund(engine, bob, EUR, 100_000_000);
  ok(engine.apply(order(market, alice, 'sell', 300_000, 10_000), T));
  ok(engine.apply(order(market, alice, 'sell', 300_000, 20_000), T));
  const restored = Engine.restore(engine.snapshot());
  const next = order(market, bob, 'buy', 300_000, 25_000);
  assert.deepEqual(restored.apply(next, T), engine.apply(next, T));
  assert.deepEqual(restored.snapshot(), engine.snapshot());
});

describe('changed levels (drainChanges)', () => {
  test('are listed in the order of their first change, across sides, each once with its total before', () => {
    const { engine, market } = venue();
    fund(engine, alice, BTC, 100_000_000);
    fund(engine, bob, EUR, 100_000_000);
    ok(engine.apply(order(market, alice, 'sell', 300_100, 20_000), T));
    engine.drainChanges();
    // One batch: a bid rests, an ask rests, then a buy sweeps the first ask and adds to it again.
    ok(engine.apply(order(market, bob, 'buy', 299_000, 10_000), T));
    ok(engine.apply(order(market, alice, 'sell', 300_200, 30_000), T));
    ok(engine.apply(order(market, bob, 'buy', 300_100, 20_000), T));
    ok(engine.apply(order(market, alice, 'sell', 300_100, 50_000), T));
    ok(engine.apply(order(market, bob, 'buy', 299_500, 10_000), T));
    const levels = engine.drainChanges().levels.map(({ side, price, before }) => [side, price, before]);
    assert.deepEqual(levels, [
      ['buy', 299_000, 0],
      ['sell', 300_200, 0],
      ['sell', 300_100, 20_000],
      ['buy', 299_500, 0],
    ]);
    assert.equal(engine.levelVolume(market, 'sell', 300_100 as Price), 50_000);
  });

  test('a level that ends the batch as it began is not listed', () => {
    const { engine, market } = venue();
    fund(engine, bob, EUR, 100_000_000);
    engine.drainChanges();
    const id = idOf(ok(engine.apply(order(market, bob, 'buy', 299_000, 10_000), T)));
    ok(engine.apply({ kind: 'cancelOrder', userId: bob, orderId: id }, T));
    assert.deepEqual(engine.drainChanges().levels, []);
  });

  test('a level emptied and created again within the batch is listed once, with its first total', () => {
    const { engine, market } = venue();
    fund(engine, bob, EUR, 100_000_000);
    const first = idOf(ok(engine.apply(order(market, bob, 'buy', 299_000, 10_000), T)));
    engine.drainChanges();
    // 299,000 goes 10,000 -> gone -> 20,000 -> gone -> 10,000: no net change. 298,000 is created
    // twice and ends at 30,000: listed once, from 0.
    ok(engine.apply({ kind: 'cancelOrder', userId: bob, orderId: first }, T));
    const second = idOf(ok(engine.apply(order(market, bob, 'buy', 299_000, 20_000), T)));
    const low = idOf(ok(engine.apply(order(market, bob, 'buy', 298_000, 10_000), T)));
    ok(engine.apply({ kind: 'cancelOrder', userId: bob, orderId: second }, T));
    ok(engine.apply({ kind: 'cancelOrder', userId: bob, orderId: low }, T));
    ok(engine.apply(order(market, bob, 'buy', 298_000, 30_000), T));
    ok(engine.apply(order(market, bob, 'buy', 299_000, 10_000), T));
    assert.deepEqual(engine.drainChanges().levels, [
      { marketId: market, side: 'buy', price: 298_000, before: 0 },
    ]);
    // And the next batch lists them afresh.
    ok(engine.apply(order(market, bob, 'buy', 299_000, 10_000), T));
    assert.deepEqual(engine.drainChanges().levels, [
      { marketId: market, side: 'buy', price: 299_000, before: 10_000 },
    ]);
  });
});

test('users with ids of any size hold balances and trade alike (small ids are kept in an array)', () => {
  const { engine, market } = venue();
  const small = 7 as UserId;
  const large = 9_007_199_254_740_000 as UserId;
  const edge = 65_536 as UserId;
  fund(engine, small, EUR, 50_000_000);
  fund(engine, large, BTC, 50_000_000);
  fund(engine, edge, BTC, 50_000_000);
  ok(engine.apply(order(market, large, 'sell', 300_000, 20_000), T));
  ok(engine.apply(order(market, edge, 'sell', 300_000, 20_000), T));
  const fills = trades(ok(engine.apply(order(market, small, 'buy', 300_000, 40_000), T)));
  assert.deepEqual(
    fills.map((t) => t.makerUserId),
    [large, edge],
  );
  assert.equal(engine.balance(large, BTC).available, 50_000_000 - 20_000);
  assert.equal(engine.balance(edge, EUR).available > 0, true);
  assert.equal(engine.balance(small, BTC).available, 40_000);
  // An id that is not a whole number names nobody, even when it reads like one.
  assert.deepEqual(engine.balance('7' as unknown as UserId, BTC), { available: 0, reserved: 0 });
  assert.deepEqual(engine.balance(7.5 as UserId, EUR), { available: 0, reserved: 0 });
  engine.validateInternalState();
  auditOk(engine);
});

test('a market id that is not a whole number names no market, even when it reads like one', () => {
  const { engine, market } = venue();
  fund(engine, bob, EUR, 100_000_000);
  for (const id of [String(market), market + 0.5, 0, -1, 2 ** 40]) {
    const r = engine.apply(order(id as MarketId, bob, 'buy', 300_000, 10_000), T);
    assert.equal(r.ok ? 'ok' : r.error.code, 'unknown_market', `market id ${id}`);
  }
  ok(engine.apply(order(market, bob, 'buy', 300_000, 10_000), T));
});
