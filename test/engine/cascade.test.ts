/**
 * A cascade of 1,000 conditional orders hitting one thin book (issue 22's proof): stop-loss and
 * stop-loss-limit sells, trailing sells in ticks and in basis points, and take-profit-limit buys
 * (all waiting for the price to fall), many at the same trigger, some moved by an amend, some
 * owned by users who also bid in the book. One sale starts it; in that one command:
 * - it terminates, and no order fires twice;
 * - the orders fire in the E28 order, checked two ways: the events equal the BigInt reference
 *   book's (which keeps the waiting orders in an array and scans it), and the test replays the
 *   command's trades over the waiting orders as they were before it (trailing stops following
 *   each trade) and finds each orderTriggered to be the next one due: the orders each trade
 *   reached, highest trigger first, then oldest (priority) first, after those reached earlier;
 * - every trade's taker is the starting order or a fired one, between its orderTriggered and its
 *   end, in its execution form, and each order's trades add up to what its final state executed;
 * - money is conserved, every invariant holds, and every balance equals the reference's.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  type Amount,
  type AssetCode,
  executionTypeOf,
  type MarketId,
  type Micros,
  type OrderId,
  type Price,
  type UserId,
  type Volume,
} from '../../src/domain/types.js';
import type { Engine } from '../../src/engine/engine.js';
import type { Command, CommandResult, EngineEvent, OrderState, PlaceOrder } from '../../src/engine/types.js';
import { ASSETS, MARKETS, mulberry32, newEngine } from './fixtures.js';
import { ReferenceBook } from './reference-book.js';

const BTC_EUR = 1 as MarketId;
const T = 1_700_000_000_000_000;
const STOP_OWNERS = 100;
const STOPS = 1_000;

/** The engine and the reference, fed the same commands; every outcome compared. */
class Both {
  readonly engine: Engine = newEngine();
  readonly ref = new ReferenceBook(ASSETS, MARKETS);
  private time = T;

  apply(command: Command): CommandResult {
    this.time += 1;
    const e = this.engine.apply(command, this.time as Micros);
    const r = this.ref.apply(command, this.time);
    assert.equal(e.ok, r.ok, `outcome of ${JSON.stringify(command)}`);
    if (e.ok && r.ok) assert.deepEqual(e.events, r.events, `events of ${JSON.stringify(command)}`);
    return e;
  }

  accepted(command: PlaceOrder): OrderState {
    const result = this.apply(command);
    assert.ok(result.ok && result.events[0]?.type === 'orderAccepted', JSON.stringify(result));
    return result.events[0].order;
  }
}

const place = (userId: number, side: 'buy' | 'sell', fields: Partial<PlaceOrder>): PlaceOrder => ({
  kind: 'placeOrder',
  userId: userId as UserId,
  marketId: BTC_EUR,
  side,
  type: 'limit',
  price: 0 as Price,
  volume: 1_000 as Volume,
  ...fields,
});

/** The thin book, a last price of 30000.0, and 1,000 waiting orders (their states after placement and amends). */
function setUp(both: Both): void {
  const rnd = mulberry32(22);
  const int = (lo: number, hi: number) => lo + Math.floor(rnd() * (hi - lo + 1));
  const deposit = (userId: number, asset: string, amount: number) =>
    both.apply({
      kind: 'deposit',
      userId: userId as UserId,
      asset: asset as AssetCode,
      amount: amount as Amount,
    });
  for (const userId of [1, 2, 3, 4, 5]) {
    deposit(userId, 'BTC', 100_000_000_000);
    deposit(userId, 'EUR', 10_000_000_000);
  }
  both.accepted(place(3, 'sell', { price: 300_000 as Price }));
  both.accepted(place(4, 'buy', { price: 300_000 as Price }));
  assert.equal(both.engine.lastPrice(BTC_EUR), 300_000);
  // Thin bids: one order every 0.5 EUR from 29999.0 down, 1,000 to 6,000 lots each.
  for (let k = 0; k < 400; k++)
    both.accepted(
      place(1, 'buy', { price: (299_990 - 5 * k) as Price, volume: int(1_000, 6_000) as Volume }),
    );
  for (let k = 0; k < 40; k++)
    both.accepted(
      place(2, 'sell', { price: (300_010 + 10 * k) as Price, volume: int(1_000, 3_000) as Volume }),
    );
  for (let u = 0; u < STOP_OWNERS; u++) {
    deposit(100 + u, 'BTC', 1_000_000_000);
    deposit(100 + u, 'EUR', 1_000_000_000);
  }
  // Ten of the stop owners bid between the ladder's prices too: their fired stops meet their bids.
  for (let k = 0; k < 30; k++)
    for (let u = 0; u < 10; u++) both.accepted(place(100 + u, 'buy', { price: (299_988 - 10 * k) as Price }));
  const ids: number[] = [];
  for (let i = 0; i < STOPS; i++) {
    const userId = 100 + (i % STOP_OWNERS);
    // 120 distinct triggers for 1,000 orders: many ties, placed interleaved.
    const trigger = 299_995 - 10 * int(0, 120);
    const volume = int(1_000, 4_000) as Volume;
    const r = rnd();
    let order: PlaceOrder;
    if (r < 0.5) order = place(userId, 'sell', { type: 'stop-loss', triggerPrice: trigger as Price, volume });
    else if (r < 0.7)
      order = place(userId, 'sell', {
        type: 'stop-loss-limit',
        triggerPrice: trigger as Price,
        price: (trigger - int(20, 200)) as Price,
        volume,
      });
    else if (r < 0.85)
      order = place(userId, 'sell', {
        type: 'trailing-stop',
        trailingOffset:
          rnd() < 0.5 ? { unit: 'ticks', amount: int(5, 300) } : { unit: 'bps', amount: int(1, 9) },
        volume,
      });
    else
      order = place(userId, 'buy', {
        type: 'take-profit-limit',
        triggerPrice: trigger as Price,
        price: (trigger - int(10, 60)) as Price,
        volume,
      });
    ids.push(both.accepted(order).id);
  }
  // Every seventh non-trailing order moves its trigger: behind the others waiting there.
  for (const id of ids.filter((_, i) => i % 7 === 3)) {
    const o = both.engine.openOrder(id as OrderId)!;
    if (o.type === 'trailing-stop') continue;
    const moved = both.apply({
      kind: 'amendOrder',
      userId: o.userId,
      orderId: o.id,
      triggerPrice: (o.triggerPrice! - 10) as Price,
    });
    assert.ok(moved.ok);
  }
  both.engine.validateInternalState();
}

interface Waiting {
  readonly id: number;
  readonly priority: number;
  trigger: number;
  best: number;
  readonly offset: OrderState['trailingOffset'];
}

/** The E28 queue, replayed from the command's trades over the orders waiting before it. */
function checkFiringOrder(before: readonly OrderState[], events: readonly EngineEvent[]): number {
  const waiting = new Map<number, Waiting>();
  for (const o of before) {
    if (o.type === 'limit' || o.type === 'market' || o.triggered === true) continue;
    assert.ok(o.side === 'sell' || o.type === 'take-profit-limit', 'every order here waits for a fall');
    waiting.set(o.id, {
      id: o.id,
      priority: o.priority ?? o.id,
      trigger: o.triggerPrice!,
      best: o.trailingBest ?? 0,
      offset: o.trailingOffset,
    });
  }
  const due: number[] = [];
  let next = 0;
  for (const e of events) {
    if (e.type === 'trade') {
      const price = e.trade.price;
      for (const w of waiting.values()) {
        if (w.offset === undefined || price <= w.best) continue;
        const distance =
          w.offset.unit === 'ticks' ? w.offset.amount : Math.ceil((price * w.offset.amount) / 10_000);
        w.best = price;
        w.trigger = price - distance;
      }
      const reached = [...waiting.values()]
        .filter((w) => price <= w.trigger)
        .sort((a, b) => b.trigger - a.trigger || a.priority - b.priority);
      for (const w of reached) {
        waiting.delete(w.id);
        due.push(w.id);
      }
    } else if (e.type === 'orderTriggered') {
      assert.equal(e.order.id, due[next], `fired #${next}: the next order due in the E28 order`);
      next++;
    }
  }
  assert.equal(next, due.length, 'every order a trade reached fired');
  return next;
}

/** Each trade's taker is the starting order or a fired one, in its execution form, while it is live. */
function checkAttribution(starter: number, events: readonly EngineEvent[], engine: Engine): void {
  const live = new Map<number, OrderState>();
  const ended = new Set<number>();
  const traded = new Map<number, number>();
  for (const e of events) {
    if (e.type === 'orderAccepted' && e.order.id === starter) live.set(starter, e.order);
    else if (e.type === 'orderTriggered') {
      assert.ok(!live.has(e.order.id) && !ended.has(e.order.id), `order ${e.order.id} fired twice`);
      live.set(e.order.id, e.order);
    } else if (e.type === 'trade') {
      const t = e.trade;
      const taker = live.get(t.takerOrderId);
      assert.ok(taker !== undefined && !ended.has(t.takerOrderId), `trade ${t.id}'s taker is live`);
      assert.equal(t.takerType, executionTypeOf(taker.type), `trade ${t.id} in its taker's form`);
      assert.equal(t.takerUserId, taker.userId);
      assert.equal(t.takerSide, taker.side);
      for (const id of [t.takerOrderId, t.makerOrderId]) traded.set(id, (traded.get(id) ?? 0) + t.volume);
    } else if (e.type === 'orderDone') {
      ended.add(e.order.id);
      if (live.has(e.order.id)) assert.equal(e.order.executed, traded.get(e.order.id) ?? 0);
    }
  }
  // A fired order that rests has executed exactly its trades of this command.
  for (const [id, state] of live) {
    if (ended.has(id)) continue;
    assert.equal(engine.openOrder(id as OrderId)?.executed ?? -1, traded.get(id) ?? 0, `order ${id} rests`);
    assert.equal(state.triggered, id === starter ? undefined : true);
  }
}

test('a cascade of 1,000 conditional orders on a thin book terminates, fires in the E28 order, attributes every trade and conserves money', () => {
  const both = new Both();
  setUp(both);
  const before = both.engine.snapshot().openOrders;
  assert.equal(before.filter((o) => o.triggerPrice !== undefined && o.triggered !== true).length, STOPS);
  // One sale at 29999.0 takes the best bid and starts it all.
  const kick = both.apply(place(5, 'sell', { type: 'market', volume: 1_000 as Volume }));
  assert.ok(kick.ok);
  const events = kick.events;
  const starter = (events[0] as Extract<EngineEvent, { type: 'orderAccepted' }>).order.id;
  const fired = checkFiringOrder(before, events);
  assert.ok(fired >= 500, `a cascade: ${fired} orders fired`);
  const cascaded = events.filter((e) => e.type === 'trade' && e.trade.takerOrderId !== starter).length;
  assert.ok(cascaded >= 500, `the fired orders traded: ${cascaded} trades`);
  const selfTrades = events.filter(
    (e) => e.type === 'orderDone' && e.order.reason === 'self-trade prevention',
  );
  assert.ok(selfTrades.length > 0, 'some fired stops met their owners’ own bids');
  checkAttribution(starter, events, both.engine);

  for (const row of both.engine.audit()) assert.ok(row.ok, `${row.asset} is conserved`);
  both.engine.validateInternalState();
  for (const { userId, asset, balance } of both.ref.allBalances()) {
    const e = both.engine.balance(userId as UserId, asset as AssetCode);
    assert.deepEqual([BigInt(e.available), BigInt(e.reserved)], [balance.available, balance.reserved]);
  }
  assert.equal(both.engine.lastPrice(BTC_EUR), both.ref.lastPrice(1));
  console.log(
    `cascade: ${fired} of ${STOPS} fired, ${cascaded} trades by fired orders, last price ${both.engine.lastPrice(BTC_EUR)}`,
  );
});
