/**
 * Property tests of the engine (fast-check):
 * - replay determinism: snapshot -> (JSON, as a store would keep it) -> Engine.restore -> the rest
 *   of the stream gives exactly the results of never restoring;
 * - determinism: the same stream twice gives identical results, change sets and snapshots;
 * - canceling every open order returns every reservation to 0 and leaves each user's available
 *   balance at deposits - withdrawals + the net effect of its trades (fees included).
 * A long seeded stream with a restore every 1,000 commands complements the replay property.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import type { AssetCode, MarketId, Micros, UserId } from '../../src/domain/types.js';
import { Engine } from '../../src/engine/engine.js';
import type { CommandResult, EngineSnapshot } from '../../src/engine/types.js';
import { applyAll, funding, streamArb, T0, USER_IDS, viaJson } from './arbitraries.js';
import { ASSETS, baseUnitsPerLot, MARKETS, newEngine } from './fixtures.js';
import { ReferenceBook } from './reference-book.js';
import { Generator } from './stream.js';

/** What the generated streams exercised, so a weak generator can't pass silently. */
const seen = { trades: 0, selfTrade: 0, budget: 0, restingAtSplit: 0 };
function tally(results: readonly CommandResult[]): void {
  for (const r of results) {
    // Only a market buy's funds can fall short of ordermin here: generated volumes are >= ordermin.
    if (!r.ok && r.error.code === 'below_ordermin') seen.budget++;
    if (!r.ok) continue;
    for (const e of r.events) {
      if (e.type === 'trade') seen.trades++;
      else if (e.type === 'orderDone' && e.order.reason === 'self-trade prevention') seen.selfTrade++;
    }
  }
}

/** Snapshot rows in a canonical order (balances are listed in account-creation order). */
function canonical(s: EngineSnapshot): EngineSnapshot {
  return {
    ...s,
    balances: [...s.balances].sort((a, b) => a.userId - b.userId || a.asset.localeCompare(b.asset)),
  };
}

test('replay determinism: snapshot -> restore -> continue equals never restoring', () => {
  fc.assert(
    fc.property(streamArb, fc.nat(), (stream, cut) => {
      const commands = [...funding(), ...stream];
      const split = cut % (commands.length + 1);
      const straight = newEngine();
      const expected = applyAll(straight, commands);
      tally(expected);

      const first = newEngine();
      applyAll(first, commands.slice(0, split));
      seen.restingAtSplit += first.snapshot().openOrders.length;
      const restored = Engine.restore(viaJson(first.snapshot()));
      assert.deepEqual(canonical(restored.snapshot()), canonical(first.snapshot()));
      const rest = applyAll(restored, commands.slice(split), split);
      assert.deepEqual(rest, expected.slice(split));
      assert.deepEqual(canonical(restored.snapshot()), canonical(straight.snapshot()));
      for (const m of MARKETS) {
        for (const side of ['buy', 'sell'] as const) {
          assert.deepEqual(restored.levels(m.id as MarketId, side), straight.levels(m.id as MarketId, side));
        }
      }
    }),
    { numRuns: 200 },
  );
  assert.ok(
    seen.trades > 4_000 && seen.selfTrade > 500 && seen.budget > 10 && seen.restingAtSplit > 1_000,
    JSON.stringify(seen),
  );
});

test('determinism: the same stream twice gives identical results, change sets and snapshots', () => {
  fc.assert(
    fc.property(streamArb, (stream) => {
      const commands = [...funding(), ...stream];
      const a = newEngine();
      const b = newEngine();
      assert.deepEqual(applyAll(a, commands), applyAll(b, commands));
      assert.deepEqual(a.drainChanges(), b.drainChanges());
      assert.deepEqual(a.snapshot(), b.snapshot());
    }),
    { numRuns: 200 },
  );
});

test('canceling every open order frees all reservations; available = deposits - withdrawals + trades', () => {
  fc.assert(
    fc.property(streamArb, (stream) => {
      const commands = [...funding(), ...stream];
      const engine = newEngine();
      const results = applyAll(engine, commands);
      const expected = new Map<string, number>();
      const add = (userId: number, asset: string, delta: number): void => {
        const key = `${userId}/${asset}`;
        expected.set(key, (expected.get(key) ?? 0) + delta);
      };
      const fees = new Map<string, number>();
      for (const r of results) {
        if (!r.ok) continue;
        for (const e of r.events) {
          if (e.type === 'deposited') add(e.userId, e.asset, e.amount);
          else if (e.type === 'withdrawn') add(e.userId, e.asset, -e.amount);
          else if (e.type === 'trade') {
            const t = e.trade;
            const m = MARKETS.find((x) => x.id === t.marketId)!;
            const base = t.volume * baseUnitsPerLot(m);
            const takerBuys = t.takerSide === 'buy';
            const [buyer, buyerFee, seller, sellerFee] = takerBuys
              ? [t.takerUserId, t.takerFee, t.makerUserId, t.makerFee]
              : [t.makerUserId, t.makerFee, t.takerUserId, t.takerFee];
            assert.notEqual(buyer, seller, 'a user traded with itself');
            add(buyer, m.base, base);
            add(buyer, m.quote, -(t.cost + buyerFee));
            add(seller, m.base, -base);
            add(seller, m.quote, t.cost - sellerFee);
            fees.set(m.quote, (fees.get(m.quote) ?? 0) + t.takerFee + t.makerFee);
          }
        }
      }
      let time = T0 + commands.length;
      for (const o of engine.snapshot().openOrders) {
        const r = engine.apply({ kind: 'cancelOrder', userId: o.userId, orderId: o.id }, time++ as Micros);
        assert.ok(r.ok, `cancel of open order ${o.id} refused`);
      }
      assert.equal(engine.snapshot().openOrders.length, 0);
      for (const m of MARKETS) {
        assert.equal(engine.bestPrice(m.id as MarketId, 'buy'), null);
        assert.equal(engine.bestPrice(m.id as MarketId, 'sell'), null);
      }
      for (const userId of USER_IDS) {
        for (const a of ASSETS) {
          const b = engine.balance(userId as UserId, a.code as AssetCode);
          assert.equal(b.reserved, 0, `user ${userId} still reserves ${a.code}`);
          assert.equal(
            b.available,
            expected.get(`${userId}/${a.code}`) ?? 0,
            `user ${userId} available ${a.code}`,
          );
        }
      }
      for (const row of engine.audit()) {
        assert.ok(row.ok, `audit of ${row.asset}`);
        assert.equal(row.fees, BigInt(fees.get(row.asset) ?? 0), `fees in ${row.asset}`);
      }
    }),
    { numRuns: 200 },
  );
});

test('a long seeded stream restored from a snapshot every 1,000 commands gives the same results', () => {
  const straight = newEngine();
  let restored = newEngine();
  const ref = new ReferenceBook(ASSETS, MARKETS);
  const gen = new Generator(4242, ref);
  const prefix = gen.funding();
  for (let i = 0; i < 20_000; i++) {
    const command = i < prefix.length ? prefix[i]! : gen.next();
    const time = (T0 + i) as Micros;
    ref.apply(command, time);
    const expected = straight.apply(command, time);
    assert.deepEqual(restored.apply(command, time), expected, `command #${i}`);
    if (i % 1000 === 999) {
      restored = Engine.restore(viaJson(restored.snapshot()));
      assert.deepEqual(canonical(restored.snapshot()), canonical(straight.snapshot()));
    }
  }
});
