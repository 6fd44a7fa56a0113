/**
 * The order controls' state (issue 21) in the engine's state hash and invariant check: a restored
 * snapshot that differs in a control, a switch or a queue priority hashes differently, and one
 * whose controls contradict each other is caught by validateInternalState.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Amount, AssetCode, MarketId, Micros, Price, UserId, Volume } from '../../src/domain/types.js';
import { Engine } from '../../src/engine/engine.js';
import { InternalStateError } from '../../src/engine/engine-state.js';
import type { Command, EngineSnapshot, OrderState, PlaceOrder } from '../../src/engine/types.js';
import { T0, viaJson } from './arbitraries.js';
import { newEngine } from './fixtures.js';

const place = (userId: number, price: number, controls: Partial<PlaceOrder> = {}): Command => ({
  kind: 'placeOrder',
  userId: userId as UserId,
  marketId: 1 as MarketId,
  side: 'buy',
  type: 'limit',
  price: price as Price,
  volume: 3000 as Volume,
  ...controls,
});

/** Two resting buys of user 1 (one GTD with a client id), an armed switch of user 2. */
function controlled(): Engine {
  const engine = newEngine();
  const commands: Command[] = [
    { kind: 'deposit', userId: 1 as UserId, asset: 'EUR' as AssetCode, amount: 10_000_000 as Amount },
    place(1, 299_000),
    place(1, 298_000, { timeInForce: 'GTD', expireTime: (T0 + 1_000) as Micros, clientOrderId: 'k1' }),
    { kind: 'cancelAllAfter', userId: 2 as UserId, timeout: 500 as Micros },
  ];
  for (const c of commands) assert.ok(engine.apply(c, T0 as Micros).ok);
  engine.validateInternalState();
  return engine;
}

/** The snapshot with its second open order (the GTD one) changed. */
function withOrder(engine: Engine, change: (o: OrderState) => OrderState): EngineSnapshot {
  const s = viaJson(engine.snapshot());
  return { ...s, openOrders: s.openOrders.map((o, i) => (i === 1 ? change(o) : o)) };
}

test('a control, a switch or a queue priority is part of the state hash', () => {
  const engine = controlled();
  const hash = engine.stateHash();
  assert.equal(Engine.restore(viaJson(engine.snapshot())).stateHash(), hash);
  const variants: Record<string, EngineSnapshot> = {
    'client order id': withOrder(engine, (o) => ({ ...o, clientOrderId: 'k2' })),
    'expire time': withOrder(engine, (o) => ({ ...o, expireTime: (T0 + 2_000) as Micros })),
    'self-trade mode': withOrder(engine, (o) => ({ ...o, stp: 'decrement' })),
    'post-only': withOrder(engine, (o) => ({ ...o, postOnly: true })),
    priority: withOrder(engine, (o) => ({ ...o, priority: o.id + 1 })),
    'the switch': {
      ...viaJson(engine.snapshot()),
      switches: [{ userId: 2 as UserId, triggerTime: (T0 + 501) as Micros }],
    },
    'no switch': { ...viaJson(engine.snapshot()), switches: [] },
  };
  for (const [name, snapshot] of Object.entries(variants))
    assert.notEqual(Engine.restore(snapshot).stateHash(), hash, name);
});

test('validateInternalState catches controls that contradict each other', () => {
  const engine = controlled();
  const broken: Record<string, [EngineSnapshot, RegExp]> = {
    'an IOC order resting': [
      withOrder(engine, (o) => ({ ...o, timeInForce: 'IOC', expireTime: undefined })),
      /rests with time in force IOC/,
    ],
    'GTD without an expiry': [
      withOrder(engine, (o) => ({ ...o, expireTime: undefined })),
      /is GTD with expire time 0/,
    ],
    'an expiry without GTD': [
      withOrder(engine, (o) => ({ ...o, timeInForce: undefined })),
      /is GTC with expire time/,
    ],
    'one client id on two open orders': [
      (() => {
        const s = viaJson(engine.snapshot());
        return { ...s, openOrders: s.openOrders.map((o) => ({ ...o, clientOrderId: 'k1' })) };
      })(),
      /client order id/,
    ],
    'a priority from the future': [
      withOrder(engine, (o) => ({ ...o, priority: 10_000 })),
      /has priority 10000/,
    ],
  };
  for (const [name, [snapshot, message]] of Object.entries(broken)) {
    const restored = Engine.restore(snapshot);
    assert.throws(
      () => restored.validateInternalState(),
      (e: unknown) => e instanceof InternalStateError && message.test(e.message),
      name,
    );
  }
});
