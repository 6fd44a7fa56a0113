/**
 * Property tests of the order controls (issue 21), with fast-check:
 * - a FOK order either trades its whole volume at once or changes nothing: same balances, same
 *   books, same resting orders as before it came (only the id counter moves on);
 * - conservation (and every other invariant validateInternalState checks) holds after every
 *   command of streams that use every control;
 * - replay determinism with the controls: snapshot -> JSON -> restore -> the rest of the stream
 *   gives exactly the results of never restoring (deadlines, switches, client ids, priorities).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import {
  type AssetCode,
  CancelReason,
  type MarketId,
  type Micros,
  type Price,
  type SelfTradeMode,
  type UserId,
  type Volume,
} from '../../src/domain/types.js';
import { Engine } from '../../src/engine/engine.js';
import type { Command, EngineSnapshot } from '../../src/engine/types.js';
import { applyAll, controlledStreamArb, funding, streamArb, T0, USER_IDS, viaJson } from './arbitraries.js';
import { ASSETS, MARKETS, newEngine } from './fixtures.js';

/** Everything a FOK that did not fill must leave as it was: the snapshot but the id counter. */
function untouched(s: EngineSnapshot): unknown {
  const balances = [...s.balances].sort((a, b) => a.userId - b.userId || a.asset.localeCompare(b.asset));
  return { ...s, balances, sequences: { ...s.sequences, nextOrderId: 0 } };
}

const seen = { filled: 0, killed: 0, killedBySelf: 0 };

test('a FOK order trades its whole volume at once or changes nothing', () => {
  fc.assert(
    fc.property(
      streamArb,
      fc.record({
        userId: fc.constantFrom(...USER_IDS),
        market: fc.integer({ min: 0, max: MARKETS.length - 1 }),
        side: fc.constantFrom('buy' as const, 'sell' as const),
        through: fc.integer({ min: -4, max: 12 }),
        lots: fc.integer({ min: 1, max: 60 }),
        stp: fc.constantFrom<SelfTradeMode>('cancel-oldest', 'cancel-newest', 'cancel-both', 'decrement'),
      }),
      (stream, f) => {
        const engine = newEngine();
        applyAll(engine, [...funding(), ...stream]);
        const market = MARKETS[f.market]!;
        const [mid, step] = f.market === 1 ? [5_000, 100] : [300_000, f.market === 0 ? 100_000 : 100];
        const before = engine.snapshot();
        const fok: Command = {
          kind: 'placeOrder',
          userId: f.userId as UserId,
          marketId: market.id as MarketId,
          side: f.side,
          type: 'limit',
          price: (mid + (f.side === 'buy' ? f.through : -f.through)) as Price,
          volume: (f.lots * step) as Volume,
          timeInForce: 'FOK',
          stp: f.stp,
        };
        const result = engine.apply(fok, (T0 + 10_000) as Micros);
        if (!result.ok) {
          // Refused (funds, size): nothing may have changed, not even the id counter.
          assert.deepEqual(engine.snapshot(), before);
          return;
        }
        const accepted = result.events[0];
        assert.ok(accepted?.type === 'orderAccepted');
        const done = result.events.find((e) => e.type === 'orderDone' && e.order.id === accepted.order.id);
        assert.ok(done?.type === 'orderDone', 'a FOK order always ends in its own command');
        assert.ok(engine.openOrder(done.order.id) === undefined, 'and never rests');
        const traded = result.events
          .filter((e) => e.type === 'trade')
          .reduce((sum, e) => sum + (e.type === 'trade' ? e.trade.volume : 0), 0);
        if (done.order.status === 'closed') {
          seen.filled++;
          assert.equal(done.order.executed, fok.volume, 'filled: its whole volume');
          assert.equal(traded, fok.volume);
        } else {
          seen.killed++;
          assert.equal(done.order.reason, CancelReason.fillOrKill);
          assert.equal(traded, 0, 'killed: no trade');
          assert.deepEqual(untouched(engine.snapshot()), untouched(before), 'killed: nothing changed');
          const crossesOwn = before.openOrders.some(
            (o) =>
              o.userId === f.userId &&
              o.marketId === market.id &&
              o.side !== f.side &&
              (f.side === 'buy' ? o.price <= fok.price : o.price >= fok.price),
          );
          if (crossesOwn) seen.killedBySelf++;
        }
        engine.validateInternalState();
      },
    ),
    { numRuns: 300 },
  );
  assert.ok(seen.filled > 20 && seen.killed > 20 && seen.killedBySelf > 5, JSON.stringify(seen));
  console.log(`FOK orders: ${JSON.stringify(seen)}`);
});

test('conservation and every invariant hold after every command, with every order control', () => {
  const kinds = new Set<string>();
  fc.assert(
    fc.property(controlledStreamArb, (stream) => {
      const engine = newEngine();
      const commands = [...funding(), ...stream];
      commands.forEach((command, i) => {
        const result = engine.apply(command, (T0 + i) as Micros);
        for (const e of result.events ?? []) kinds.add(e.type === 'orderDone' ? `${e.order.reason}` : e.type);
        for (const row of engine.audit()) assert.ok(row.ok, `${row.asset} not conserved after command #${i}`);
        engine.validateInternalState();
      });
      // Whatever rests, once canceled, gives every reservation back.
      for (const u of USER_IDS)
        engine.apply({ kind: 'cancelAllOrders', userId: u as UserId }, (T0 + 1_000) as Micros);
      for (const u of USER_IDS)
        for (const a of ASSETS) assert.equal(engine.balance(u as UserId, a.code as AssetCode).reserved, 0);
    }),
    { numRuns: 150 },
  );
  for (const kind of ['orderAmended', 'cancelAllAfterFired', CancelReason.expired, CancelReason.fillOrKill])
    assert.ok(kinds.has(kind), `the streams never produced ${kind}: ${[...kinds].join(', ')}`);
});

test('replay determinism with the controls: snapshot -> restore -> continue equals never restoring', () => {
  fc.assert(
    fc.property(controlledStreamArb, fc.nat(), (stream, cut) => {
      const commands = [...funding(), ...stream];
      const split = cut % (commands.length + 1);
      const straight = newEngine();
      const expected = applyAll(straight, commands);
      const first = newEngine();
      applyAll(first, commands.slice(0, split));
      const restored = Engine.restore(viaJson(first.snapshot()));
      assert.equal(restored.stateHash(), first.stateHash());
      assert.equal(restored.nextDeadline(), first.nextDeadline());
      assert.deepEqual(applyAll(restored, commands.slice(split), split), expected.slice(split));
      assert.equal(restored.stateHash(), straight.stateHash());
    }),
    { numRuns: 150 },
  );
});
