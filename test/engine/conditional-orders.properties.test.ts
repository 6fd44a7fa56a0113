/**
 * Property tests of conditional orders (issue 22), with fast-check, over random streams of limit
 * and market orders, the order controls, and every conditional type with triggers near the mid
 * (so they fire, cascade, are refused on arrival, canceled, expired and amended):
 * - conservation and every invariant validateInternalState checks (waiting orders, trigger heaps,
 *   reservations) hold after every command; canceling everything gives every reservation back;
 * - a trigger fires only when the last trade price reached it, each order at most once, and the
 *   orders one trade reached fire in trigger-price then time order;
 * - replay determinism: snapshot -> JSON -> restore -> the rest of the stream gives exactly the
 *   results of never restoring.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import type { AssetCode, Micros, UserId } from '../../src/domain/types.js';
import { Engine } from '../../src/engine/engine.js';
import { applyAll, conditionalStreamArb, funding, T0, USER_IDS, viaJson } from './arbitraries.js';
import { ASSETS, newEngine } from './fixtures.js';

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
