/**
 * The matching loop always makes progress (property tests over random books, fast-check):
 * - a taker that wants more than a whole side of a random book takes every resting order of it,
 *   one trade each, and leaves that side empty: every pass over a level consumed it;
 * - on a book holding a maker that can take nothing (an order whose remaining volume is 0, what a
 *   fill that forgets to unlink its maker leaves behind), the same taker fails with an
 *   InternalStateError naming the stuck level, instead of matching that level forever. (Without
 *   the engine's guard this property does not fail: it hangs, until the test runner's timeout.)
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import type {
  Amount,
  AssetCode,
  MarketId,
  Micros,
  Price,
  Side,
  UserId,
  Volume,
} from '../../src/domain/types.js';
import { Engine } from '../../src/engine/engine.js';
import { InternalStateError } from '../../src/engine/engine-state.js';
import type { Command, EngineSnapshot } from '../../src/engine/types.js';
import { applyAll, funding, streamArb, T0 } from './arbitraries.js';
import { ASSETS, MARKETS, newEngine } from './fixtures.js';

/** Not one of the stream's users: its taker never meets an order of its own (self-trade prevention). */
const TAKER = 9 as UserId;
const T = (T0 + 1_000_000) as Micros;

/** A random book: the funding, a random stream, and the taker's funds in every asset. */
const bookArb = fc
  .record({
    stream: streamArb,
    market: fc.integer({ min: 0, max: MARKETS.length - 1 }),
    side: fc.constantFrom<Side>('buy', 'sell'),
    pick: fc.nat(),
  })
  .map(({ stream, market, side, pick }) => {
    const engine = newEngine();
    const taker: Command[] = ASSETS.map((a) => ({
      kind: 'deposit',
      userId: TAKER,
      asset: a.code as AssetCode,
      amount: (10 ** 15) as Amount,
    }));
    applyAll(engine, [...funding(), ...stream, ...taker]);
    return { snapshot: engine.snapshot(), marketId: MARKETS[market]!.id as MarketId, side, pick };
  });

/**
 * A limit order of TAKER against the whole `side` of the book (the side the taker takes from):
 * priced at its worst level, for more than it holds (by the market's minimum order volume).
 */
function sweep(engine: Engine, marketId: MarketId, side: Side): Command {
  const levels = engine.levels(marketId, side);
  const worst = levels[levels.length - 1]![0];
  const total = levels.reduce((sum, [, volume]) => sum + volume, 0);
  return {
    kind: 'placeOrder',
    userId: TAKER,
    marketId,
    side: side === 'sell' ? 'buy' : 'sell',
    type: 'limit',
    price: worst as Price,
    volume: (total + MARKETS.find((m) => m.id === marketId)!.ordermin) as Volume,
  };
}

/** The resting orders of one side of a book, in price-time priority (the snapshot lists them by id). */
const resting = (snapshot: EngineSnapshot, marketId: MarketId, side: Side) =>
  snapshot.openOrders
    .filter((o) => o.marketId === marketId && o.side === side)
    .sort((a, b) => (side === 'buy' ? b.price - a.price : a.price - b.price) || a.id - b.id);

test('a taker larger than a side of a random book takes every order of it and empties it', () => {
  let swept = 0;
  fc.assert(
    fc.property(bookArb, ({ snapshot, marketId, side }) => {
      const makers = resting(snapshot, marketId, side);
      fc.pre(makers.length > 0);
      const engine = Engine.restore(snapshot);
      const result = engine.apply(sweep(engine, marketId, side), T);
      assert.ok(result.ok, JSON.stringify(result));
      const trades = result.events.filter((e) => e.type === 'trade');
      assert.deepEqual(
        trades.map((e) => e.trade.makerOrderId),
        makers.map((o) => o.id),
        'one trade per resting order, in price-time priority',
      );
      assert.deepEqual(engine.levels(marketId, side), []);
      swept += makers.length;
    }),
    { numRuns: 150 },
  );
  assert.ok(swept > 300, `only ${swept} resting orders swept: the books were too thin`);
});

test('a maker that can take nothing stops the taker with an InternalStateError, not an endless loop', () => {
  let stuck = 0;
  fc.assert(
    fc.property(bookArb, ({ snapshot, marketId, side, pick }) => {
      const makers = resting(snapshot, marketId, side);
      fc.pre(makers.length > 0);
      const stale = makers[pick % makers.length]!;
      const broken: EngineSnapshot = {
        ...snapshot,
        openOrders: snapshot.openOrders.map((o) => (o === stale ? { ...o, executed: o.volume } : o)),
      };
      const engine = Engine.restore(broken);
      const taker = sweep(engine, marketId, side);
      assert.throws(
        () => engine.apply(taker, T),
        (e: unknown) =>
          e instanceof InternalStateError &&
          e.message === `matching made no progress at price ${stale.price} of market ${marketId}`,
      );
      stuck += 1;
    }),
    { numRuns: 150 },
  );
  assert.ok(stuck > 100, `only ${stuck} books held a resting order`);
});
