/** Scenario tests of conditional orders (stop-loss, take-profit, their -limit types, trailing stops). */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  type Amount,
  type AssetCode,
  CancelReason,
  type FeeRate,
  type MarketId,
  type Micros,
  type OrderId,
  type Price,
  type UserId,
  type Volume,
} from '../domain/types.js';
import { Engine } from './engine.js';
import type { CommandResult, EngineEvent, PlaceOrder } from './types.js';

const T = 1_700_000_000_000_000 as Micros;
const EUR = 'EUR' as AssetCode;
const BTC = 'BTC' as AssetCode;
const alice = 1 as UserId;
const bob = 2 as UserId;
const carol = 3 as UserId;
const market = 1 as MarketId;
const LOT = 10_000; // ordermin, 0.0001 BTC

/** BTC/EUR, prices at 1 decimal (58000.0 EUR = 580_000 ticks), 1 lot = 1 satoshi, 0.26 % taker fee. */
function venue(): Engine {
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
        ordermin: LOT as Volume,
        makerFee: 160_000 as FeeRate,
        takerFee: 260_000 as FeeRate,
      },
      T,
    ),
  );
  for (const userId of [alice, bob, carol])
    for (const asset of [EUR, BTC])
      ok(engine.apply({ kind: 'deposit', userId, asset, amount: 10_000_000_000 as Amount }, T));
  return engine;
}

let clock = 0;
/** Applies a command a microsecond after the last, and checks every invariant after it. */
function run(engine: Engine, command: Parameters<Engine['apply']>[0]): CommandResult {
  const result = engine.apply(command, (T + ++clock) as Micros);
  engine.validateInternalState();
  return result;
}

function ok(result: CommandResult): readonly EngineEvent[] {
  if (!result.ok) assert.fail(`refused: ${result.error.code} ${result.error.message}`);
  return result.events;
}

function refused(result: CommandResult): string {
  assert.ok(!result.ok, `accepted: ${JSON.stringify(result)}`);
  return result.error.code;
}

const order = (userId: UserId, side: 'buy' | 'sell', fields: Partial<PlaceOrder>): PlaceOrder => ({
  kind: 'placeOrder',
  userId,
  marketId: market,
  side,
  type: 'limit',
  price: 0 as Price,
  volume: LOT as Volume,
  ...fields,
});
const limit = (userId: UserId, side: 'buy' | 'sell', price: number, volume = LOT) =>
  order(userId, side, { price: price as Price, volume: volume as Volume });
/** Alice and bob trade one lot at `price`: the market's last price becomes `price`. */
function tradeAt(engine: Engine, price: number): readonly EngineEvent[] {
  ok(run(engine, limit(alice, 'sell', price)));
  return ok(run(engine, order(bob, 'buy', { type: 'market', volume: LOT as Volume })));
}
const kinds = (events: readonly EngineEvent[]) => events.map((e) => e.type);
const acceptedId = (events: readonly EngineEvent[]): OrderId => {
  const first = events[0];
  assert.ok(first?.type === 'orderAccepted');
  return first.order.id;
};

describe('a stop-loss sell', () => {
  test('waits outside the book with its volume held, and fires as a market sell when the last price falls to its trigger', () => {
    const engine = venue();
    tradeAt(engine, 600_000);
    const id = acceptedId(
      ok(run(engine, order(carol, 'sell', { type: 'stop-loss', triggerPrice: 580_000 as Price }))),
    );
    assert.deepEqual(engine.levels(market, 'sell'), [], 'not in the public book');
    assert.equal(engine.balance(carol, BTC).reserved, LOT, 'its volume is held from acceptance');
    assert.equal(engine.openOrder(id)?.triggerPrice, 580_000);
    ok(run(engine, limit(bob, 'buy', 570_000)));
    const above = ['orderAccepted', 'trade', 'orderDone', 'orderDone'];
    assert.deepEqual(kinds(tradeAt(engine, 585_000)), above, 'above its trigger: it waits');
    assert.equal(engine.openOrder(id)?.triggered, undefined);
    // A trade at the trigger fires it in the same command; it sells into bob's bid at 57000.0.
    const events = tradeAt(engine, 580_000);
    assert.deepEqual(kinds(events), [...above, 'orderTriggered', 'trade', 'orderDone', 'orderDone']);
    const fired = events[4]!;
    assert.ok(fired.type === 'orderTriggered');
    assert.equal(fired.order.id, id);
    assert.equal(fired.order.triggered, true);
    assert.equal(fired.lastPrice, 580_000);
    const trade = events[5]!;
    assert.ok(trade.type === 'trade');
    assert.equal(trade.trade.takerOrderId, id);
    assert.equal(trade.trade.price, 570_000);
    assert.equal(trade.trade.takerType, 'market');
    assert.equal(engine.balance(carol, BTC).reserved, 0);
  });

  test('is refused when the last price has reached its trigger already, as Kraken refuses it', () => {
    const engine = venue();
    tradeAt(engine, 580_000);
    const stop = order(carol, 'sell', { type: 'stop-loss', triggerPrice: 580_000 as Price });
    assert.equal(refused(run(engine, stop)), 'trigger_would_fire');
    assert.equal(engine.balance(carol, BTC).reserved, 0, 'refused: nothing held');
  });
});

test('bad conditional orders are refused, each with its own code, and change nothing', () => {
  const engine = venue();
  tradeAt(engine, 600_000);
  const cases: Array<[Partial<PlaceOrder>, string]> = [
    [{ type: 'stop-loss' }, 'invalid_trigger_price'],
    [{ type: 'stop-loss', triggerPrice: -5 as Price }, 'invalid_trigger_price'],
    [{ type: 'stop-loss', triggerPrice: 1.5 as Price }, 'invalid_trigger_price'],
    [{ type: 'stop-loss', triggerPrice: 550_000 as Price, price: 540_000 as Price }, 'price_not_allowed'],
    [{ type: 'stop-loss-limit', triggerPrice: 550_000 as Price }, 'invalid_price'],
    [{ type: 'limit', price: 550_000 as Price, triggerPrice: 540_000 as Price }, 'invalid_trigger_price'],
    [{ type: 'trailing-stop' }, 'invalid_trailing_offset'],
    [{ type: 'trailing-stop', trailingOffset: { unit: 'bps', amount: 0 } }, 'invalid_trailing_offset'],
    [{ type: 'trailing-stop', trailingOffset: { unit: 'bps', amount: 5_001 } }, 'invalid_trailing_offset'],
    [{ type: 'trailing-stop', trailingOffset: { unit: 'ticks', amount: 2.5 } }, 'invalid_trailing_offset'],
    [
      { type: 'trailing-stop', trailingOffset: { unit: 'ticks', amount: 5 }, triggerPrice: 1 as Price },
      'invalid_trigger_price',
    ],
    [
      { type: 'take-profit', triggerPrice: 650_000 as Price, timeInForce: 'IOC' },
      'invalid_conditional_controls',
    ],
    // A market-type stop is refused for waiting controls with the conditional code too, not as a
    // market order's FOK or post-only would be (decision E30).
    [
      { type: 'stop-loss', triggerPrice: 550_000 as Price, timeInForce: 'FOK' },
      'invalid_conditional_controls',
    ],
    [{ type: 'stop-loss', triggerPrice: 550_000 as Price, postOnly: true }, 'invalid_conditional_controls'],
    [
      { type: 'trailing-stop', trailingOffset: { unit: 'ticks', amount: 5 }, timeInForce: 'FOK' },
      'invalid_conditional_controls',
    ],
    [{ type: 'market', trailingOffset: { unit: 'ticks', amount: 5 } }, 'invalid_trailing_offset'],
  ];
  const before = engine.stateHash();
  for (const [fields, code] of cases) {
    assert.equal(refused(run(engine, order(carol, 'sell', fields))), code, JSON.stringify(fields));
  }
  assert.equal(engine.stateHash(), before);
});

test('a buy stop-loss-limit and a take-profit sell fire on one rise, in trigger-price order; the first rests, the second sells to it', () => {
  const engine = venue();
  tradeAt(engine, 600_000);
  const takeProfit = acceptedId(
    ok(run(engine, order(alice, 'sell', { type: 'take-profit', triggerPrice: 620_000 as Price }))),
  );
  const stopBuy = acceptedId(
    ok(
      run(
        engine,
        order(carol, 'buy', {
          type: 'stop-loss-limit',
          triggerPrice: 615_000 as Price,
          price: 616_000 as Price,
        }),
      ),
    ),
  );
  // One trade at 620000 reaches both: the buy's trigger (615000) first, in trigger-price order.
  const events = tradeAt(engine, 620_000);
  const fired = events.filter((e) => e.type === 'orderTriggered').map((e) => e.order.id);
  assert.deepEqual(fired, [stopBuy, takeProfit]);
  // The buy found no ask at or below 61600.0 and rested; the take-profit's market sell took it.
  const last = events.filter((e) => e.type === 'trade').at(-1);
  assert.ok(last?.type === 'trade');
  assert.deepEqual(
    [last.trade.takerOrderId, last.trade.makerOrderId, last.trade.price, last.trade.takerType],
    [takeProfit, stopBuy, 616_000, 'market'],
  );
  assert.equal(engine.openOrder(stopBuy), undefined);
  assert.equal(engine.openOrder(takeProfit), undefined);
});

test('a trailing stop follows the best price seen since placement and fires at its offset below it', () => {
  const engine = venue();
  tradeAt(engine, 600_000);
  const id = acceptedId(
    ok(
      run(
        engine,
        order(carol, 'sell', { type: 'trailing-stop', trailingOffset: { unit: 'bps', amount: 100 } }),
      ),
    ),
  );
  assert.equal(engine.openOrder(id)?.triggerPrice, 594_000, '1 % below 60000.0');
  tradeAt(engine, 610_000);
  assert.equal(engine.openOrder(id)?.trailingBest, 610_000);
  assert.equal(engine.openOrder(id)?.triggerPrice, 603_900);
  tradeAt(engine, 605_000);
  assert.equal(engine.openOrder(id)?.triggerPrice, 603_900, 'a lower price does not move it back');
  ok(run(engine, limit(bob, 'buy', 590_000)));
  assert.ok(kinds(tradeAt(engine, 603_900)).includes('orderTriggered'));
  assert.equal(engine.openOrder(id), undefined);
});

test('a stop-loss, take-profit or trailing stop (market once fired) takes GTD; FOK and post-only are refused as conditional', () => {
  const engine = venue();
  tradeAt(engine, 600_000);
  const expireTime = (T + 1_000_000_000) as Micros;
  for (const fields of [
    { type: 'stop-loss' as const, triggerPrice: 580_000 as Price },
    { type: 'take-profit' as const, triggerPrice: 620_000 as Price },
    { type: 'trailing-stop' as const, trailingOffset: { unit: 'bps' as const, amount: 100 } },
  ]) {
    const placed = ok(run(engine, order(carol, 'sell', { ...fields, timeInForce: 'GTD', expireTime })));
    const accepted = placed[0];
    assert.equal(accepted?.type === 'orderAccepted' && accepted.order.expireTime, expireTime, fields.type);
    assert.equal(
      refused(run(engine, order(carol, 'sell', { ...fields, timeInForce: 'FOK' }))),
      'invalid_conditional_controls',
    );
    assert.equal(
      refused(run(engine, order(carol, 'sell', { ...fields, postOnly: true }))),
      'invalid_conditional_controls',
    );
  }
  assert.equal(engine.balance(carol, BTC).reserved, 3 * LOT, 'each waiting sell holds its volume');
  const expired = ok(engine.apply({ kind: 'tick' }, expireTime));
  const done = expired.filter((e) => e.type === 'orderDone');
  assert.equal(done.length, 3);
  for (const e of done) assert.equal(e.type === 'orderDone' && e.order.reason, CancelReason.expired);
  assert.equal(engine.balance(carol, BTC).reserved, 0, 'the expiries gave back every hold');
  engine.validateInternalState();
});

test('cancel, cancel-all and a GTD expiry remove a waiting order and give back what it held', () => {
  const engine = venue();
  tradeAt(engine, 600_000);
  const stop = (fields: Partial<PlaceOrder> = {}) =>
    order(carol, 'buy', {
      type: 'stop-loss-limit',
      triggerPrice: 650_000 as Price,
      price: 651_000 as Price,
      ...fields,
    });
  const a = acceptedId(ok(run(engine, stop())));
  ok(run(engine, stop()));
  ok(run(engine, stop({ timeInForce: 'GTD', expireTime: (T + 1_000_000_000) as Micros })));
  assert.ok(engine.balance(carol, EUR).reserved > 0);
  const done = ok(run(engine, { kind: 'cancelOrder', userId: carol, orderId: a }));
  assert.equal(done[0]?.type === 'orderDone' && done[0].order.reason, CancelReason.user);
  const expired = engine.apply({ kind: 'tick' }, (T + 1_000_000_000) as Micros);
  engine.validateInternalState();
  const [expiry] = ok(expired);
  assert.equal(expiry?.type === 'orderDone' && expiry.order.reason, CancelReason.expired);
  const all = ok(engine.apply({ kind: 'cancelAllOrders', userId: carol }, (T + 1_000_000_001) as Micros));
  assert.deepEqual(
    all.map((e) => e.type === 'orderDone' && e.order.reason),
    [CancelReason.cancelAll],
  );
  engine.validateInternalState();
  assert.equal(engine.balance(carol, EUR).reserved, 0);
  assert.equal(engine.balance(carol, EUR).available, 10_000_000_000);
});

test('an amend moves the trigger (not to where it would fire) and resizes the hold', () => {
  const engine = venue();
  tradeAt(engine, 600_000);
  const id = acceptedId(
    ok(run(engine, order(carol, 'sell', { type: 'stop-loss', triggerPrice: 580_000 as Price }))),
  );
  const amend = { kind: 'amendOrder', userId: carol, orderId: id } as const;
  assert.equal(refused(run(engine, { ...amend, triggerPrice: 600_000 as Price })), 'trigger_would_fire');
  assert.equal(refused(run(engine, { ...amend, price: 570_000 as Price })), 'price_not_allowed');
  ok(run(engine, { ...amend, triggerPrice: 590_000 as Price, volume: (2 * LOT) as Volume }));
  assert.equal(engine.openOrder(id)?.triggerPrice, 590_000);
  assert.equal(engine.balance(carol, BTC).reserved, 2 * LOT);
  ok(run(engine, limit(bob, 'buy', 580_000, 2 * LOT)));
  assert.ok(kinds(tradeAt(engine, 590_000)).includes('orderTriggered'));
});

test('a market buy stop holds everything its owner has available while it waits (decision E29)', () => {
  const engine = venue();
  tradeAt(engine, 600_000);
  ok(run(engine, order(carol, 'buy', { type: 'stop-loss', triggerPrice: 620_000 as Price })));
  assert.equal(engine.balance(carol, EUR).available, 0);
  assert.equal(
    refused(run(engine, order(carol, 'buy', { type: 'stop-loss', triggerPrice: 630_000 as Price }))),
    'insufficient_funds',
  );
});

test('a restored engine holds the same waiting orders and last prices, and fires them alike', () => {
  const engine = venue();
  tradeAt(engine, 600_000);
  ok(run(engine, order(carol, 'sell', { type: 'stop-loss', triggerPrice: 580_000 as Price })));
  ok(
    run(
      engine,
      order(carol, 'sell', { type: 'trailing-stop', trailingOffset: { unit: 'ticks', amount: 3_000 } }),
    ),
  );
  ok(
    run(
      engine,
      order(carol, 'buy', {
        type: 'take-profit-limit',
        triggerPrice: 570_000 as Price,
        price: 571_000 as Price,
      }),
    ),
  );
  tradeAt(engine, 605_000);
  const copy = Engine.restore(engine.snapshot());
  copy.validateInternalState();
  assert.equal(copy.stateHash(), engine.stateHash());
  assert.equal(copy.lastPrice(market), 605_000);
  ok(run(engine, limit(bob, 'buy', 560_000, 5 * LOT)));
  ok(copy.apply(limit(bob, 'buy', 560_000, 5 * LOT), (T + clock) as Micros));
  const a = engine.apply(limit(alice, 'sell', 560_000, LOT), (T + ++clock) as Micros);
  const b = copy.apply(limit(alice, 'sell', 560_000, LOT), (T + clock) as Micros);
  assert.deepEqual(b, a);
  assert.equal(kinds(ok(a)).filter((k) => k === 'orderTriggered').length, 3);
  assert.equal(copy.stateHash(), engine.stateHash());
});

test('a cascade of 1,000 stop-losses on a thin book ends, fires in trigger-price then time order, and conserves money', () => {
  const engine = new Engine({ maxOpenOrdersPerUser: 2_000 });
  const at = (n: number) => (T + n) as Micros;
  let n = 0;
  const apply = (command: Parameters<Engine['apply']>[0]) => ok(engine.apply(command, at(++n)));
  apply({ kind: 'createAsset', code: 'EUR', name: 'Euro', type: 'fiat', decimals: 2 });
  apply({ kind: 'createAsset', code: 'BTC', name: 'Bitcoin', type: 'crypto', decimals: 8 });
  apply({
    kind: 'createMarket',
    base: BTC,
    quote: EUR,
    pairDecimals: 1,
    lotDecimals: 8,
    ordermin: LOT as Volume,
    makerFee: 160_000 as FeeRate,
    takerFee: 260_000 as FeeRate,
  });
  apply({ kind: 'deposit', userId: bob, asset: EUR, amount: 100_000_000_000 as Amount });
  apply({ kind: 'deposit', userId: alice, asset: BTC, amount: LOT as Amount });
  // The bids: one lot every 5.0 EUR from 59900.0 down, 1,100 of them; one lot each is all a stop takes.
  for (let k = 0; k < 1_100; k++) apply(limit(bob, 'buy', 599_000 - k * 50));
  // 1,000 sellers, ten at each trigger from 59900.0 down to 58910.0 (10.0 EUR apart).
  const stops: { id: OrderId; trigger: number }[] = [];
  for (let i = 0; i < 1_000; i++) {
    const userId = (100 + i) as UserId;
    apply({ kind: 'deposit', userId, asset: BTC, amount: LOT as Amount });
    const trigger = 599_000 - Math.floor(i / 10) * 100;
    const placed = apply(order(userId, 'sell', { type: 'stop-loss', triggerPrice: trigger as Price }));
    stops.push({ id: acceptedId(placed), trigger });
  }
  // Interleaved placement: the ten at one trigger were placed in id order. One sale starts it all.
  const events = apply(limit(alice, 'sell', 599_000));
  engine.validateInternalState();
  const fired = events.filter((e) => e.type === 'orderTriggered').map((e) => e.order.id);
  const expected = [...stops].sort((a, b) => b.trigger - a.trigger || a.id - b.id).map((s) => s.id);
  assert.deepEqual(fired, expected, 'every stop fired once, highest trigger first, then oldest first');
  // Each stop sold its lot to the next bid down, as the taker of its own trade.
  const trades = events.filter((e) => e.type === 'trade').map((e) => e.trade);
  assert.equal(trades.length, 1_001);
  assert.deepEqual(
    trades.slice(1).map((t) => t.takerOrderId),
    expected,
  );
  for (const [i, t] of trades.entries()) assert.equal(t.price, 599_000 - i * 50);
  for (const row of engine.audit()) assert.equal(row.ok, true, `${row.asset} is conserved`);
  assert.equal(engine.lastPrice(market), 599_000 - 1_000 * 50);
});

test("a batch reports its order's id even when that order's trade fires a -limit order that rests", () => {
  const engine = venue();
  tradeAt(engine, 600_000);
  // Carol's stop-loss-limit sell fires at 59000.0 and rests at 59500.0 (no bid there): resting
  // queues it behind its level with a number from the id sequence.
  ok(
    run(
      engine,
      order(carol, 'sell', {
        type: 'stop-loss-limit',
        triggerPrice: 590_000 as Price,
        price: 595_000 as Price,
      }),
    ),
  );
  ok(run(engine, limit(bob, 'buy', 590_000)));
  const result = run(engine, { kind: 'placeOrders', orders: [limit(alice, 'sell', 590_000)] });
  const events = ok(result);
  assert.ok(result.ok);
  const placed = acceptedId(events);
  assert.ok(kinds(events).includes('orderTriggered'));
  assert.deepEqual(result.results, [{ ok: true, orderId: placed }]);
});

test('an amend of a waiting -limit sell to a price worth less than one quote unit is refused (decision 23)', () => {
  const engine = venue();
  tradeAt(engine, 600_000);
  const id = acceptedId(
    ok(
      run(
        engine,
        order(carol, 'sell', {
          type: 'stop-loss-limit',
          triggerPrice: 580_000 as Price,
          price: 579_000 as Price,
        }),
      ),
    ),
  );
  // One lot (a satoshi) at 0.5 EUR costs 0.000000005 EUR: less than a cent.
  const amend = { kind: 'amendOrder', userId: carol, orderId: id, price: 5 as Price } as const;
  assert.equal(refused(run(engine, amend)), 'order_value_too_small');
  assert.equal(engine.openOrder(id)?.price, 579_000);
});

test("a market's first trade reaches triggers of both directions: the falling ones fire first (decision E45)", () => {
  const engine = venue();
  // No trade yet: no last price, so any trigger is accepted, on either side of the coming trade.
  const rising = acceptedId(
    ok(
      run(
        engine,
        order(bob, 'buy', {
          type: 'stop-loss-limit',
          triggerPrice: 590_000 as Price,
          price: 590_000 as Price,
        }),
      ),
    ),
  );
  const falling = acceptedId(
    ok(run(engine, order(carol, 'sell', { type: 'stop-loss', triggerPrice: 600_000 as Price }))),
  );
  const events = tradeAt(engine, 595_000);
  const fired = events.filter((e) => e.type === 'orderTriggered').map((e) => e.order.id);
  assert.deepEqual(fired, [falling, rising]);
});

test('a GTD stop-loss-limit that fired and rests expires as a limit order does', () => {
  const engine = venue();
  tradeAt(engine, 600_000);
  const expireTime = (T + 1_000_000_000) as Micros;
  const id = acceptedId(
    ok(
      run(
        engine,
        order(carol, 'sell', {
          type: 'stop-loss-limit',
          triggerPrice: 590_000 as Price,
          price: 595_000 as Price,
          timeInForce: 'GTD',
          expireTime,
        }),
      ),
    ),
  );
  assert.ok(kinds(tradeAt(engine, 590_000)).includes('orderTriggered'));
  assert.equal(engine.openOrder(id)?.triggered, true, 'fired, resting at its limit price');
  const expired = ok(engine.apply({ kind: 'tick' }, expireTime));
  const done = expired.find((e) => e.type === 'orderDone' && e.order.id === id);
  assert.equal(done?.type === 'orderDone' && done.order.reason, CancelReason.expired);
  assert.equal(engine.openOrder(id), undefined);
  engine.validateInternalState();
});
