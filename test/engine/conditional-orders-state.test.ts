/**
 * Conditional orders (issue 22) in the engine's invariant check: validateInternalState holds for
 * waiting orders of every kind, and a restored snapshot whose waiting orders contradict their
 * rules (a hold that is not what their kind holds, a trigger the last price has reached, a
 * trailing stop's trigger away from its offset, a limit price on a market-type stop, post-only)
 * is caught, each with a message naming what is wrong.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Amount, AssetCode, MarketId, Micros, Price, UserId, Volume } from '../../src/domain/types.js';
import { Engine } from '../../src/engine/engine.js';
import { InternalStateError } from '../../src/engine/engine-state.js';
import type { Command, EngineSnapshot, OrderState, PlaceOrder } from '../../src/engine/types.js';
import { T0, viaJson } from './arbitraries.js';
import { newEngine } from './fixtures.js';

const BTC_EUR = 1 as MarketId;
const LOTS = 3_000 as Volume;

const place = (userId: number, side: 'buy' | 'sell', fields: Partial<PlaceOrder>): PlaceOrder => ({
  kind: 'placeOrder',
  userId: userId as UserId,
  marketId: BTC_EUR,
  side,
  type: 'limit',
  price: 0 as Price,
  volume: LOTS,
  ...fields,
});

/**
 * BTC/EUR last traded at 30000.0; user 1 waits with a stop-loss-limit buy (1), a stop-loss sell
 * (2) and a 2.5 % trailing sell (3), user 2 with a take-profit market buy (4).
 */
function waiting(): { engine: Engine; ids: number[] } {
  const engine = newEngine();
  const setup: Command[] = [];
  for (const userId of [1, 2, 3])
    for (const asset of ['EUR', 'BTC'])
      setup.push({
        kind: 'deposit',
        userId: userId as UserId,
        asset: asset as AssetCode,
        amount: 10_000_000 as Amount,
      });
  setup.push(place(3, 'sell', { price: 300_000 as Price }), place(2, 'buy', { type: 'market' }));
  for (const c of setup) assert.ok(engine.apply(c, T0 as Micros).ok, JSON.stringify(c));
  assert.equal(engine.lastPrice(BTC_EUR), 300_000);
  const orders = [
    place(1, 'buy', { type: 'stop-loss-limit', triggerPrice: 301_000 as Price, price: 301_500 as Price }),
    place(1, 'sell', { type: 'stop-loss', triggerPrice: 299_000 as Price }),
    place(1, 'sell', { type: 'trailing-stop', trailingOffset: { unit: 'bps', amount: 250 } }),
    place(2, 'buy', { type: 'take-profit', triggerPrice: 299_500 as Price }),
  ];
  const ids: number[] = [];
  for (const c of orders) {
    const result = engine.apply(c, (T0 + 1) as Micros);
    assert.ok(result.ok && result.events[0]?.type === 'orderAccepted', JSON.stringify(result));
    ids.push(result.events[0].order.id);
  }
  engine.validateInternalState();
  return { engine, ids };
}

/** The snapshot with one open order changed (and, optionally, the rest of the snapshot). */
function tampered(
  engine: Engine,
  id: number,
  change: (o: OrderState) => OrderState,
  whole: (s: EngineSnapshot) => EngineSnapshot = (s) => s,
): EngineSnapshot {
  const s = viaJson(engine.snapshot());
  return whole({ ...s, openOrders: s.openOrders.map((o) => (o.id === id ? change(o) : o)) });
}

test('waiting orders of every kind keep every invariant, and a restore keeps them', () => {
  const { engine, ids } = waiting();
  const trailing = engine.openOrder(ids[2]! as never);
  // 2.5 % of 30000.0 is 750.0 (7,500 ticks): the trigger sits exactly that far below the best price.
  assert.deepEqual([trailing?.trailingBest, trailing?.triggerPrice], [300_000, 292_500]);
  const restored = Engine.restore(viaJson(engine.snapshot()));
  restored.validateInternalState();
  assert.equal(restored.stateHash(), engine.stateHash());
});

test('validateInternalState catches waiting orders that break their rules', () => {
  const { engine, ids } = waiting();
  const [limitBuy, stopSell, trailingSell, marketBuy] = ids as [number, number, number, number];
  const broken: Record<string, [EngineSnapshot, RegExp]> = {
    'a -limit buy holding less than a limit buy holds': [
      tampered(
        engine,
        limitBuy,
        (o) => ({ ...o, reserved: (o.reserved - 1) as Amount }),
        (s) => ({
          ...s,
          balances: s.balances.map((b) =>
            b.userId === 1 && b.asset === 'EUR'
              ? { ...b, available: (b.available + 1) as Amount, reserved: (b.reserved - 1) as Amount }
              : b,
          ),
        }),
      ),
      /waiting order \d+ holds \d+, not the \d+ a limit buy holds/,
    ],
    'a trigger the last price reached': [
      tampered(
        engine,
        stopSell,
        (o) => o,
        (s) => ({ ...s, lastPrices: [{ marketId: BTC_EUR, price: 299_000 as Price }] }),
      ),
      /still waits at trigger 299000, which the last price 299000 reached/,
    ],
    'a trailing trigger away from its offset': [
      tampered(engine, trailingSell, (o) => ({ ...o, triggerPrice: 292_501 as Price })),
      /has trigger 292501, not 292500 \(best price 300000, offset 250 bps\)/,
    ],
    'a trailing stop without a best price in a market that traded': [
      tampered(engine, trailingSell, (o) => ({ ...o, trailingBest: undefined, triggerPrice: undefined })),
      /has no best price, and the market traded at 300000/,
    ],
    'a market-type stop with a limit price': [
      tampered(engine, stopSell, (o) => ({ ...o, price: 298_000 as Price })),
      /is a stop-loss with limit price 298000/,
    ],
    'a waiting order with post-only': [
      tampered(engine, stopSell, (o) => ({ ...o, postOnly: true })),
      /waits with post-only/,
    ],
    'a market-type buy holding nothing': [
      tampered(
        engine,
        marketBuy,
        (o) => ({ ...o, reserved: 0 as Amount }),
        (s) => ({
          ...s,
          balances: s.balances.map((b) =>
            b.userId === 2 && b.asset === 'EUR'
              ? { ...b, available: (b.available + b.reserved) as Amount, reserved: 0 as Amount }
              : b,
          ),
        }),
      ),
      /is a market buy holding nothing/,
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
