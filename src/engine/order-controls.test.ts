/** Scenario tests of the order controls (issue 21), each as a trader would describe it. */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  AmendReason,
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
import type { CommandResult, EngineEvent, OrderState, PlaceOrder } from './types.js';

const T = 1_700_000_000_000_000;
const SECOND = 1_000_000;
const EUR = 'EUR' as AssetCode;
const BTC = 'BTC' as AssetCode;
const alice = 1 as UserId;
const bob = 2 as UserId;
const market = 1 as MarketId;

/** BTC/EUR, prices at 1 decimal, 1 lot = 1 satoshi, no fees; alice and bob rich in both. */
function venue(maxOpenOrdersPerUser?: number): Engine {
  const engine = new Engine(maxOpenOrdersPerUser === undefined ? {} : { maxOpenOrdersPerUser });
  const at = T as Micros;
  ok(engine.apply({ kind: 'createAsset', code: 'EUR', name: 'Euro', type: 'fiat', decimals: 2 }, at));
  ok(engine.apply({ kind: 'createAsset', code: 'BTC', name: 'Bitcoin', type: 'crypto', decimals: 8 }, at));
  ok(
    engine.apply(
      {
        kind: 'createMarket',
        base: BTC,
        quote: EUR,
        pairDecimals: 1,
        lotDecimals: 8,
        ordermin: 10_000 as Volume,
        makerFee: 0 as FeeRate,
        takerFee: 0 as FeeRate,
      },
      at,
    ),
  );
  for (const userId of [alice, bob])
    for (const asset of [EUR, BTC])
      ok(engine.apply({ kind: 'deposit', userId, asset, amount: 10_000_000_000 as Amount }, at));
  return engine;
}

function ok(result: CommandResult): readonly EngineEvent[] {
  if (!result.ok) assert.fail(`refused: ${result.error.code} ${result.error.message}`);
  return result.events;
}

function refused(result: CommandResult): string {
  assert.ok(!result.ok, `accepted: ${JSON.stringify(result)}`);
  return result.error.code;
}

const limit = (
  userId: UserId,
  side: 'buy' | 'sell',
  price: number,
  volume: number,
  controls: Partial<PlaceOrder> = {},
): PlaceOrder => ({
  kind: 'placeOrder',
  userId,
  marketId: market,
  side,
  type: 'limit',
  price: price as Price,
  volume: volume as Volume,
  ...controls,
});

/** The state an order ended with, from a command's events. */
function done(events: readonly EngineEvent[], id: OrderId): OrderState {
  const e = events.find((x) => x.type === 'orderDone' && x.order.id === id);
  assert.ok(e?.type === 'orderDone', `order ${id} did not end`);
  return e.order;
}

const idOf = (events: readonly EngineEvent[]): OrderId => {
  const e = events.find((x) => x.type === 'orderAccepted');
  assert.ok(e?.type === 'orderAccepted');
  return e.order.id;
};

/** Ids queued at one price, front first, read from the engine's snapshot. */
const queue = (engine: Engine, price: number): number[] =>
  engine
    .snapshot()
    .openOrders.filter((o) => o.price === price)
    .map((o) => o.id);

describe('time in force and post-only', () => {
  test('IOC trades what it can and cancels the rest, which never reaches the book', () => {
    const engine = venue();
    ok(engine.apply(limit(bob, 'sell', 1000, 30_000), T as Micros));
    const events = ok(engine.apply(limit(alice, 'buy', 1000, 50_000, { timeInForce: 'IOC' }), T as Micros));
    const ioc = done(events, idOf(events));
    assert.deepEqual(
      [ioc.status, ioc.executed, ioc.reason],
      ['canceled', 30_000, CancelReason.immediateOrCancel],
    );
    assert.deepEqual(engine.levels(market, 'buy'), []);
    assert.equal(engine.balance(alice, EUR).reserved, 0);
  });

  test('FOK that the book cannot fill trades nothing; one it can fill trades all of it', () => {
    const engine = venue();
    ok(engine.apply(limit(bob, 'sell', 1000, 30_000), T as Micros));
    const killed = ok(engine.apply(limit(alice, 'buy', 1000, 50_000, { timeInForce: 'FOK' }), T as Micros));
    assert.equal(done(killed, idOf(killed)).reason, CancelReason.fillOrKill);
    assert.equal(killed.filter((e) => e.type === 'trade').length, 0);
    assert.deepEqual(engine.levels(market, 'sell'), [[1000, 30_000]]);
    const filled = ok(engine.apply(limit(alice, 'buy', 1000, 30_000, { timeInForce: 'FOK' }), T as Micros));
    assert.equal(done(filled, idOf(filled)).status, 'closed');
  });

  test('a post-only order that would take ends canceled without trading; one that does not rests', () => {
    const engine = venue();
    ok(engine.apply(limit(bob, 'sell', 1000, 30_000), T as Micros));
    const taking = ok(engine.apply(limit(alice, 'buy', 1000, 30_000, { postOnly: true }), T as Micros));
    assert.equal(done(taking, idOf(taking)).reason, CancelReason.postOnly);
    assert.deepEqual(engine.levels(market, 'buy'), []);
    assert.deepEqual(engine.levels(market, 'sell'), [[1000, 30_000]]);
    const resting = ok(engine.apply(limit(alice, 'buy', 999, 30_000, { postOnly: true }), T as Micros));
    assert.equal(engine.openOrder(idOf(resting))?.postOnly, true);
  });

  test('post-only with IOC or a market order, and GTD without a future expiry, are refused', () => {
    const engine = venue();
    const at = T as Micros;
    assert.equal(
      refused(engine.apply(limit(alice, 'buy', 1000, 30_000, { postOnly: true, timeInForce: 'IOC' }), at)),
      'invalid_post_only',
    );
    assert.equal(
      refused(engine.apply({ ...limit(alice, 'buy', 0, 30_000, { postOnly: true }), type: 'market' }, at)),
      'invalid_post_only',
    );
    assert.equal(
      refused(engine.apply(limit(alice, 'buy', 1000, 30_000, { timeInForce: 'GTD' }), at)),
      'invalid_expire_time',
    );
    assert.equal(
      refused(engine.apply(limit(alice, 'buy', 1000, 30_000, { timeInForce: 'GTD', expireTime: at }), at)),
      'invalid_expire_time',
    );
    const tooFar = (T + 366 * 86_400 * SECOND) as Micros;
    assert.equal(
      refused(
        engine.apply(limit(alice, 'buy', 1000, 30_000, { timeInForce: 'GTD', expireTime: tooFar }), at),
      ),
      'invalid_expire_time',
    );
  });
});

describe("GTD expiry and the dead man's switch", () => {
  test('a GTD order expires at its time: a tick fires it, or any later command does first', () => {
    const engine = venue();
    const expiry = (T + 10 * SECOND) as Micros;
    const id = idOf(
      ok(
        engine.apply(
          limit(alice, 'buy', 1000, 30_000, { timeInForce: 'GTD', expireTime: expiry }),
          T as Micros,
        ),
      ),
    );
    assert.equal(engine.nextDeadline(), expiry);
    assert.deepEqual(ok(engine.apply({ kind: 'tick' }, (expiry - 1) as Micros)), []);
    // A refused command still reports the expiry that happened before it.
    const late = engine.apply(
      { kind: 'cancelOrder', userId: bob, orderId: 999 as OrderId },
      (expiry + 5) as Micros,
    );
    assert.ok(!late.ok && late.events !== undefined);
    const expired = done(late.events, id);
    assert.deepEqual([expired.reason, expired.closeTime], [CancelReason.expired, expiry]);
    assert.equal(engine.nextDeadline(), null);
    assert.equal(engine.balance(alice, EUR).reserved, 0);
  });

  test('the switch cancels every open order when it fires, once, and each call moves it', () => {
    const engine = venue();
    ok(engine.apply(limit(alice, 'buy', 1000, 30_000), T as Micros));
    ok(engine.apply(limit(alice, 'sell', 2000, 30_000), T as Micros));
    ok(
      engine.apply({ kind: 'cancelAllAfter', userId: alice, timeout: (60 * SECOND) as Micros }, T as Micros),
    );
    const moved = ok(
      engine.apply(
        { kind: 'cancelAllAfter', userId: alice, timeout: (60 * SECOND) as Micros },
        (T + 30 * SECOND) as Micros,
      ),
    );
    assert.deepEqual(moved, [
      { type: 'cancelAllAfterSet', userId: alice, triggerTime: T + 90 * SECOND, time: T + 30 * SECOND },
    ]);
    assert.equal(engine.drainChanges().switches?.[0]?.triggerTime, T + 90 * SECOND);
    assert.deepEqual(ok(engine.apply({ kind: 'tick' }, (T + 89 * SECOND) as Micros)), []);
    const fired = ok(engine.apply({ kind: 'tick' }, (T + 91 * SECOND) as Micros));
    assert.equal(fired[0]?.type, 'cancelAllAfterFired');
    assert.deepEqual(
      fired.flatMap((e) => (e.type === 'orderDone' ? [e.order.reason] : [])),
      [CancelReason.deadMansSwitch, CancelReason.deadMansSwitch],
    );
    assert.equal(engine.cancelAllAfterTime(alice), null, 'disarmed after firing');
    assert.deepEqual(engine.drainChanges().switches, [{ userId: alice, triggerTime: 0 }]);
    ok(engine.apply(limit(alice, 'buy', 1000, 30_000), (T + 92 * SECOND) as Micros));
    assert.deepEqual(
      ok(engine.apply({ kind: 'tick' }, (T + 1000 * SECOND) as Micros)),
      [],
      'it stays disarmed',
    );
  });

  test('an armed switch and a GTD order survive a restore from the snapshot', () => {
    const engine = venue();
    ok(engine.apply({ kind: 'cancelAllAfter', userId: bob, timeout: (5 * SECOND) as Micros }, T as Micros));
    ok(
      engine.apply(
        limit(alice, 'buy', 1000, 30_000, {
          timeInForce: 'GTD',
          expireTime: (T + 9 * SECOND) as Micros,
          clientOrderId: 'q1',
        }),
        T as Micros,
      ),
    );
    const restored = Engine.restore(JSON.parse(JSON.stringify(engine.snapshot())));
    assert.equal(restored.stateHash(), engine.stateHash());
    assert.equal(restored.cancelAllAfterTime(bob), T + 5 * SECOND);
    assert.equal(restored.openOrderByClientId(alice, 'q1')?.expireTime, T + 9 * SECOND);
    assert.equal(restored.nextDeadline(), T + 5 * SECOND);
  });
});

describe('client order ids, cancel-all and limits', () => {
  test('a client order id is unique among open orders, finds and cancels its order, and is free again after', () => {
    const engine = venue();
    const at = T as Micros;
    const id = idOf(ok(engine.apply(limit(alice, 'buy', 1000, 30_000, { clientOrderId: 'mm-1' }), at)));
    assert.equal(
      refused(engine.apply(limit(alice, 'buy', 990, 30_000, { clientOrderId: 'mm-1' }), at)),
      'duplicate_client_order_id',
    );
    ok(engine.apply(limit(bob, 'buy', 990, 30_000, { clientOrderId: 'mm-1' }), at));
    assert.equal(
      refused(engine.apply(limit(alice, 'buy', 990, 30_000, { clientOrderId: 'no spaces' }), at)),
      'invalid_client_order_id',
    );
    assert.equal(engine.openOrderByClientId(alice, 'mm-1')?.id, id);
    assert.equal(
      done(ok(engine.apply({ kind: 'cancelClientOrder', userId: alice, clientOrderId: 'mm-1' }, at)), id)
        .reason,
      CancelReason.user,
    );
    ok(engine.apply(limit(alice, 'buy', 990, 30_000, { clientOrderId: 'mm-1' }), at));
  });

  test("cancel-all cancels the caller's open orders only, of one market when asked", () => {
    const engine = venue();
    const at = T as Micros;
    ok(engine.apply(limit(alice, 'buy', 1000, 30_000), at));
    ok(engine.apply(limit(alice, 'sell', 2000, 30_000), at));
    ok(engine.apply(limit(bob, 'buy', 900, 30_000), at));
    assert.equal(
      refused(engine.apply({ kind: 'cancelAllOrders', userId: alice, marketId: 9 as MarketId }, at)),
      'unknown_market',
    );
    const events = ok(engine.apply({ kind: 'cancelAllOrders', userId: alice, marketId: market }, at));
    assert.deepEqual(
      events.map((e) => (e.type === 'orderDone' ? e.order.reason : e.type)),
      [CancelReason.cancelAll, CancelReason.cancelAll],
    );
    assert.deepEqual(engine.levels(market, 'buy'), [[900, 30_000]]);
  });

  test('the open-order limit refuses one more resting order, but not an IOC', () => {
    const engine = venue(2);
    const at = T as Micros;
    ok(engine.apply(limit(alice, 'buy', 1000, 30_000), at));
    ok(engine.apply(limit(alice, 'buy', 999, 30_000), at));
    assert.equal(refused(engine.apply(limit(alice, 'buy', 998, 30_000), at)), 'too_many_open_orders');
    ok(engine.apply(limit(alice, 'buy', 998, 30_000, { timeInForce: 'IOC' }), at));
  });

  test('an order worth less than one cent is refused, even with no funds at all', () => {
    const engine = venue();
    // 0.00005 BTC at 0.1 EUR: 0.000005 EUR, which floors to nothing.
    assert.equal(
      refused(engine.apply(limit(7 as UserId, 'buy', 1, 5_000 * 10), T as Micros)),
      'order_value_too_small',
    );
  });

  test('a batch places each order on its own; an empty or oversized batch places nothing', () => {
    const engine = venue();
    const at = T as Micros;
    const result = engine.apply(
      {
        kind: 'placeOrders',
        orders: [
          limit(alice, 'buy', 1000, 30_000),
          limit(alice, 'buy', 1000, 1),
          limit(alice, 'buy', 999, 30_000),
        ],
      },
      at,
    );
    assert.ok(result.ok);
    assert.deepEqual(
      result.results?.map((r) => (r.ok ? r.orderId : r.error.code)),
      [1, 'below_ordermin', 2],
    );
    assert.equal(refused(engine.apply({ kind: 'placeOrders', orders: [] }, at)), 'invalid_batch');
    const many = Array.from({ length: 21 }, () => limit(alice, 'buy', 900, 30_000));
    assert.equal(refused(engine.apply({ kind: 'placeOrders', orders: many }, at)), 'invalid_batch');
    assert.equal(engine.levels(market, 'buy').length, 2);
  });
});

describe('amend', () => {
  test('lowering the volume keeps the queue place; a higher volume goes to the back', () => {
    const engine = venue();
    const at = T as Micros;
    const first = idOf(ok(engine.apply(limit(alice, 'buy', 1000, 50_000), at)));
    const second = idOf(ok(engine.apply(limit(bob, 'buy', 1000, 50_000), at)));
    const lowered = ok(
      engine.apply({ kind: 'amendOrder', userId: alice, orderId: first, volume: 40_000 as Volume }, at),
    );
    assert.deepEqual(
      lowered.map((e) => e.type),
      ['orderAmended'],
    );
    assert.deepEqual(queue(engine, 1000), [first, second]);
    assert.equal(engine.balance(alice, EUR).reserved, 4, 'the hold shrinks with it (0.0004 BTC at 100 EUR)');
    ok(engine.apply({ kind: 'amendOrder', userId: alice, orderId: first, volume: 60_000 as Volume }, at));
    assert.deepEqual(queue(engine, 1000), [second, first]);
    // The new place survives a restore.
    assert.deepEqual(queue(Engine.restore(JSON.parse(JSON.stringify(engine.snapshot()))), 1000), [
      second,
      first,
    ]);
  });

  test('a new price that crosses trades at once; a post-only order may not cross', () => {
    const engine = venue();
    const at = T as Micros;
    ok(engine.apply(limit(bob, 'sell', 1010, 20_000), at));
    const id = idOf(ok(engine.apply(limit(alice, 'buy', 1000, 50_000), at)));
    const crossed = ok(
      engine.apply({ kind: 'amendOrder', userId: alice, orderId: id, price: 1010 as Price }, at),
    );
    assert.deepEqual(
      crossed.map((e) => e.type),
      ['orderAmended', 'trade', 'orderDone'],
    );
    assert.equal(engine.openOrder(id)?.executed, 20_000);
    const post = idOf(ok(engine.apply(limit(bob, 'sell', 1020, 20_000, { postOnly: true }), at)));
    assert.equal(
      refused(engine.apply({ kind: 'amendOrder', userId: bob, orderId: post, price: 1010 as Price }, at)),
      'post_only_would_take',
    );
  });

  test('a volume at or below what executed, more funds than available, or nothing to change is refused', () => {
    const engine = venue();
    const at = T as Micros;
    ok(engine.apply(limit(bob, 'sell', 1000, 20_000), at));
    const id = idOf(ok(engine.apply(limit(alice, 'buy', 1000, 50_000), at)));
    assert.equal(
      refused(engine.apply({ kind: 'amendOrder', userId: alice, orderId: id, volume: 20_000 as Volume }, at)),
      'volume_not_above_executed',
    );
    assert.equal(
      refused(engine.apply({ kind: 'amendOrder', userId: alice, orderId: id }, at)),
      'nothing_to_amend',
    );
    assert.equal(
      refused(engine.apply({ kind: 'amendOrder', userId: bob, orderId: id, volume: 30_000 as Volume }, at)),
      'order_not_found',
    );
    const huge = 200_000_000_000_000; // 2,000,000 BTC at 100 EUR: more EUR than alice has
    assert.equal(
      refused(engine.apply({ kind: 'amendOrder', userId: alice, orderId: id, volume: huge as Volume }, at)),
      'insufficient_funds',
    );
    assert.equal(engine.openOrder(id)?.volume, 50_000);
  });
});

describe('self-trade prevention modes', () => {
  const selfCross = (stp: PlaceOrder['stp'], restingLots: number, takingLots: number) => {
    const engine = venue();
    const resting = idOf(ok(engine.apply(limit(alice, 'sell', 1000, restingLots), T as Micros)));
    const events = ok(engine.apply(limit(alice, 'buy', 1000, takingLots, { stp }), T as Micros));
    return { engine, resting, taker: idOf(events), events };
  };

  test('cancel-newest cancels the incoming order and leaves the resting one', () => {
    const { engine, resting, taker, events } = selfCross('cancel-newest', 30_000, 30_000);
    assert.equal(done(events, taker).reason, CancelReason.selfTradeNewest);
    assert.ok(engine.openOrder(resting) !== undefined);
  });

  test('cancel-both cancels both', () => {
    const { resting, taker, events } = selfCross('cancel-both', 30_000, 30_000);
    assert.equal(done(events, taker).reason, CancelReason.selfTradeBoth);
    assert.equal(done(events, resting).reason, CancelReason.selfTradeBoth);
  });

  test('decrement trades nothing: the larger shrinks by the smaller, which is canceled', () => {
    const { engine, resting, taker, events } = selfCross('decrement', 50_000, 20_000);
    assert.equal(events.filter((e) => e.type === 'trade').length, 0);
    assert.equal(done(events, taker).reason, CancelReason.selfTradeDecrement);
    const amended = events.find((e) => e.type === 'orderAmended');
    assert.ok(amended?.type === 'orderAmended');
    assert.deepEqual(
      [amended.order.id, amended.order.volume, amended.reason],
      [resting, 30_000, AmendReason.selfTradeDecrement],
    );
    assert.equal(engine.balance(alice, BTC).reserved, 30_000);
    const equal = selfCross('decrement', 20_000, 20_000);
    assert.equal(done(equal.events, equal.resting).reason, CancelReason.selfTradeDecrement);
    assert.equal(done(equal.events, equal.taker).reason, CancelReason.selfTradeDecrement);
  });
});
