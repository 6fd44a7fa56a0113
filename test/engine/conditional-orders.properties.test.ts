/**
 * Property tests of conditional orders (issue 22), with fast-check, over random streams of limit
 * and market orders, the order controls, and every conditional type with triggers near the mid
 * (so they fire, cascade, are refused on arrival, canceled, expired and amended):
 * - conservation and every invariant validateInternalState checks (waiting orders, trigger heaps,
 *   reservations) hold after every command; canceling everything gives every reservation back;
 * - a trigger fires only when the last trade price reached it, each order at most once, and the
 *   orders one trade reached fire in trigger-price then time order;
 * - the reservation invariant, computed here from the snapshot rather than by the engine: every
 *   user's reserved balance in every asset is what its open orders hold, and each waiting order
 *   holds what E29 says (a sell its base units, a -limit buy its cost plus the fee at the larger
 *   rate, in BigInt; a market-type buy something), whatever fired, cascaded, expired or amended;
 * - replay determinism: snapshot -> JSON -> restore -> the rest of the stream gives exactly the
 *   results of never restoring.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { type AssetCode, executionTypeOf, type Micros, type UserId } from '../../src/domain/types.js';
import { Engine } from '../../src/engine/engine.js';
import type { EngineSnapshot } from '../../src/engine/types.js';
import { applyAll, conditionalStreamArb, funding, T0, USER_IDS, viaJson } from './arbitraries.js';
import { ASSETS, baseUnitsPerLot, MARKETS, newEngine } from './fixtures.js';

const ten = (n: number): bigint => 10n ** BigInt(n);
const decimals = (code: string): number => ASSETS.find((a) => a.code === code)!.decimals;

/** A limit buy's hold in BigInt from the written rule: cost plus the fee at the larger rate, rounded up. */
function limitBuyHold(marketId: number, price: number, volume: number): bigint {
  const m = MARKETS.find((x) => x.id === marketId)!;
  const cost =
    (BigInt(price) * BigInt(volume) * ten(decimals(m.quote))) / ten(m.pairDecimals + m.lotDecimals);
  const rate = BigInt(Math.max(m.makerFee, m.takerFee));
  return cost + (cost * rate + 99_999_999n) / 100_000_000n;
}

/** The reservation invariant from a snapshot (see the module comment); the first breach, or null. */
function reservationBreach(snapshot: EngineSnapshot): string | null {
  const held = new Map<string, bigint>();
  for (const o of snapshot.openOrders) {
    const m = MARKETS.find((x) => x.id === o.marketId)!;
    const asset = o.side === 'buy' ? m.quote : m.base;
    const key = `${o.userId} ${asset}`;
    held.set(key, (held.get(key) ?? 0n) + BigInt(o.reserved));
    const waiting = o.type !== 'limit' && o.type !== 'market' && o.triggered !== true;
    if (!waiting) continue;
    const expected =
      o.side === 'sell'
        ? BigInt(o.volume) * BigInt(baseUnitsPerLot(m))
        : executionTypeOf(o.type) === 'limit'
          ? limitBuyHold(o.marketId, o.price, o.volume)
          : null;
    if (expected === null ? !(o.reserved > 0) : BigInt(o.reserved) !== expected)
      return `waiting ${o.side} ${o.type} ${o.id} holds ${o.reserved}, not ${expected ?? 'something'}`;
  }
  for (const b of snapshot.balances) {
    const expected = held.get(`${b.userId} ${b.asset}`) ?? 0n;
    if (BigInt(b.reserved) !== expected)
      return `user ${b.userId} has ${b.reserved} ${b.asset} reserved, its open orders hold ${expected}`;
  }
  return null;
}

test('conservation and every invariant hold after every command, with conditional orders firing and cascading', () => {
  const seen = { triggered: 0, refusedOnArrival: 0, cascades: 0, waitingAmended: 0 };
  fc.assert(
    fc.property(conditionalStreamArb, (stream) => {
      const engine = newEngine();
      const fired = new Set<number>();
      const commands = [...funding(), ...stream];
      commands.forEach((command, i) => {
        const result = engine.apply(command, (T0 + i) as Micros);
        if (!result.ok && result.error.code === 'trigger_would_fire') seen.refusedOnArrival++;
        let triggersHere = 0;
        for (const e of result.events ?? []) {
          if (e.type === 'orderAmended' && e.order.triggerPrice !== undefined && !e.order.triggered)
            seen.waitingAmended++;
          if (e.type !== 'orderTriggered') continue;
          triggersHere++;
          const { order, lastPrice } = e;
          assert.ok(!fired.has(order.id), `order ${order.id} fired twice`);
          fired.add(order.id);
          const trigger = order.triggerPrice!;
          const falling =
            order.type === 'trailing-stop'
              ? order.side === 'sell'
              : (order.type.startsWith('stop-loss') ? 'sell' : 'buy') === order.side;
          assert.ok(falling ? lastPrice <= trigger : lastPrice >= trigger, `order ${order.id} fired early`);
        }
        seen.triggered += triggersHere;
        if (triggersHere > 1) seen.cascades++;
        for (const row of engine.audit()) assert.ok(row.ok, `${row.asset} not conserved after command #${i}`);
        const breach = reservationBreach(engine.snapshot());
        assert.equal(breach, null, `after command #${i}`);
        engine.validateInternalState();
      });
      for (const u of USER_IDS)
        engine.apply({ kind: 'cancelAllOrders', userId: u as UserId }, (T0 + 1_000) as Micros);
      engine.validateInternalState();
      for (const u of USER_IDS)
        for (const a of ASSETS) assert.equal(engine.balance(u as UserId, a.code as AssetCode).reserved, 0);
    }),
    { numRuns: 200 },
  );
  for (const [what, count] of Object.entries(seen))
    assert.ok(count > 10, `the streams produced too few ${what}: ${JSON.stringify(seen)}`);
  console.log(`conditional orders: ${JSON.stringify(seen)}`);
});

test('replay determinism with conditional orders: snapshot -> restore -> continue equals never restoring', () => {
  fc.assert(
    fc.property(conditionalStreamArb, fc.nat(), (stream, cut) => {
      const commands = [...funding(), ...stream];
      const split = cut % (commands.length + 1);
      const straight = newEngine();
      const expected = applyAll(straight, commands);
      const first = newEngine();
      applyAll(first, commands.slice(0, split));
      const restored = Engine.restore(viaJson(first.snapshot()));
      assert.equal(restored.stateHash(), first.stateHash());
      assert.deepEqual(applyAll(restored, commands.slice(split), split), expected.slice(split));
      assert.equal(restored.stateHash(), straight.stateHash());
    }),
    { numRuns: 200 },
  );
});
