/**
 * Random command streams for the engine's property tests (fast-check): four users (user 4 poor, so
 * market buys hit their budget and limits are refused) funded in every asset, then limit and market
 * orders on both sides of the three test markets near a fixed mid, cancels of low ids (open, done,
 * another user's or unknown), deposits and withdrawals.
 */
import fc from 'fast-check';
import type {
  Amount,
  AssetCode,
  MarketId,
  Micros,
  OrderId,
  Price,
  UserId,
  Volume,
} from '../../src/domain/types.js';
import type { Engine } from '../../src/engine/engine.js';
import type { Command, CommandResult, EngineSnapshot, PlaceOrder } from '../../src/engine/types.js';
import { ASSETS, MARKETS } from './fixtures.js';

export const T0 = 1_700_000_000_000_000;
export const USER_IDS = [1, 2, 3, 4];
/** Per market: a mid price (ticks) and a volume step (lots) so orders are sensible in each. */
const SHAPE = [
  { mid: 300_000, step: 100_000 },
  { mid: 5_000, step: 100 },
  { mid: 300_000, step: 100 },
];

export function funding(): Command[] {
  const rich: Record<string, number> = { BTC: 1e10, EUR: 1e9, ETH: 1e14, USDT: 1e12 };
  const commands: Command[] = [];
  for (const userId of USER_IDS) {
    for (const a of ASSETS) {
      // User 4 is poor, so its market buys hit the budget and its limits are sometimes refused.
      const amount = userId === 4 ? Math.floor(rich[a.code]! / 10_000) : rich[a.code]!;
      commands.push({
        kind: 'deposit',
        userId: userId as UserId,
        asset: a.code as AssetCode,
        amount: amount as Amount,
      });
    }
  }
  return commands;
}

const userArb = fc.constantFrom(...USER_IDS).map((u) => u as UserId);
const assetArb = fc.constantFrom(...ASSETS.map((a) => a.code as AssetCode));

const placeArb: fc.Arbitrary<Command> = fc
  .record({
    userId: userArb,
    market: fc.integer({ min: 0, max: MARKETS.length - 1 }),
    side: fc.constantFrom('buy' as const, 'sell' as const),
    type: fc.constantFrom('limit' as const, 'limit' as const, 'limit' as const, 'market' as const),
    offset: fc.integer({ min: -6, max: 6 }),
    lots: fc.integer({ min: 1, max: 40 }),
  })
  .map(({ userId, market, side, type, offset, lots }) => {
    const shape = SHAPE[market]!;
    return {
      kind: 'placeOrder',
      userId,
      marketId: MARKETS[market]!.id as MarketId,
      side,
      type,
      // Buys lean below the mid and sells above it, so books build up and still cross often.
      price: (shape.mid + (side === 'buy' ? offset - 2 : offset + 2)) as Price,
      volume: (lots * shape.step) as Volume,
    };
  });

const cancelArb: fc.Arbitrary<Command> = fc
  .record({ userId: userArb, orderId: fc.integer({ min: 1, max: 120 }) })
  .map(({ userId, orderId }) => ({ kind: 'cancelOrder', userId, orderId: orderId as OrderId }));

const fundsArb: fc.Arbitrary<Command> = fc
  .record({
    kind: fc.constantFrom('deposit' as const, 'withdraw' as const),
    userId: userArb,
    asset: assetArb,
    amount: fc.integer({ min: 1, max: 1_000_000_000 }),
  })
  .map(({ kind, userId, asset, amount }) => ({ kind, userId, asset, amount: amount as Amount }));

export const streamArb = fc.array(
  fc.oneof(
    { weight: 6, arbitrary: placeArb },
    { weight: 3, arbitrary: cancelArb },
    { weight: 1, arbitrary: fundsArb },
  ),
  { maxLength: 400, size: 'max' },
);

// ---- the order controls (issue 21) ----------------------------------------------------------

/** Optional controls for a placeOrder: each left out half the time. */
const controlsArb = fc.record(
  {
    timeInForce: fc.constantFrom('GTC' as const, 'IOC' as const, 'FOK' as const, 'GTD' as const),
    postOnly: fc.boolean(),
    clientOrderId: fc.constantFrom('a', 'b', 'c'),
    stp: fc.constantFrom(
      'cancel-oldest' as const,
      'cancel-newest' as const,
      'cancel-both' as const,
      'decrement' as const,
    ),
    // Commands run at T0 + their index (applyAll): some expiries are past (refused), most come later.
    expireTime: fc.integer({ min: T0, max: T0 + 500 }).map((t) => t as Micros),
  },
  { requiredKeys: [] },
);

const controlledPlaceArb: fc.Arbitrary<Command> = fc
  .tuple(placeArb, controlsArb)
  .map(([order, controls]) => ({ ...(order as PlaceOrder), ...controls }));

const amendArb: fc.Arbitrary<Command> = fc
  .record(
    {
      userId: userArb,
      orderId: fc.integer({ min: 1, max: 120 }).map((id) => id as OrderId),
      price: fc.integer({ min: 4_990, max: 300_010 }).map((p) => p as Price),
      volume: fc.integer({ min: 1, max: 40 }).map((lots) => (lots * 100) as Volume),
      clientOrderId: fc.constantFrom('a', 'b', null),
    },
    { requiredKeys: ['userId', 'orderId'] },
  )
  .map((fields) => ({ kind: 'amendOrder', ...fields }));

const sessionArb: fc.Arbitrary<Command> = fc.oneof(
  userArb.map((userId): Command => ({ kind: 'cancelAllOrders', userId })),
  fc
    .record({ userId: userArb, timeout: fc.constantFrom(0, 1, 20, 150) })
    .map(({ userId, timeout }): Command => ({ kind: 'cancelAllAfter', userId, timeout: timeout as Micros })),
  fc.constant<Command>({ kind: 'tick' }),
  fc
    .array(controlledPlaceArb, { minLength: 1, maxLength: 4 })
    .map((orders): Command => ({ kind: 'placeOrders', orders: orders as PlaceOrder[] })),
);

/** Streams that use every order control besides today's commands (run with applyAll). */
export const controlledStreamArb = fc.array(
  fc.oneof(
    { weight: 3, arbitrary: placeArb },
    { weight: 4, arbitrary: controlledPlaceArb },
    { weight: 3, arbitrary: cancelArb },
    { weight: 2, arbitrary: amendArb },
    { weight: 1, arbitrary: sessionArb },
    { weight: 1, arbitrary: fundsArb },
  ),
  { maxLength: 400, size: 'max' },
);

export function applyAll(engine: Engine, commands: readonly Command[], firstIndex = 0): CommandResult[] {
  return commands.map((c, i) => engine.apply(c, (T0 + firstIndex + i) as Micros));
}

/** A snapshot as a store would keep it: through JSON. */
export const viaJson = (s: EngineSnapshot): EngineSnapshot => JSON.parse(JSON.stringify(s)) as EngineSnapshot;

// ---- conditional orders (issue 22) -----------------------------------------------------------

/** A conditional order near its market's mid: triggers a few ticks away, some already reached. */
const conditionalPlaceArb: fc.Arbitrary<Command> = fc
  .tuple(
    placeArb,
    fc.constantFrom(
      'stop-loss' as const,
      'take-profit' as const,
      'stop-loss-limit' as const,
      'take-profit-limit' as const,
      'trailing-stop' as const,
    ),
    fc.integer({ min: -8, max: 8 }),
    fc.oneof(
      fc.record({ unit: fc.constant('ticks' as const), amount: fc.integer({ min: 1, max: 6 }) }),
      fc.record({ unit: fc.constant('bps' as const), amount: fc.integer({ min: 1, max: 5_000 }) }),
    ),
    fc.constantFrom('GTC' as const, 'GTD' as const),
  )
  .map(([placed, type, away, trailingOffset, timeInForce]) => {
    const order = placed as PlaceOrder;
    const market = MARKETS.findIndex((m) => m.id === order.marketId);
    const trigger = (SHAPE[market]!.mid + away) as Price;
    const controls =
      timeInForce === 'GTD' ? { timeInForce, expireTime: (T0 + 300) as Micros } : { clientOrderId: 'c' };
    if (type === 'trailing-stop') return { ...order, type, price: 0 as Price, trailingOffset, ...controls };
    const price = type.endsWith('-limit') ? order.price : (0 as Price);
    return { ...order, type, price, triggerPrice: trigger, ...controls };
  });

const amendTriggerArb: fc.Arbitrary<Command> = fc
  .record({
    userId: userArb,
    orderId: fc.integer({ min: 1, max: 160 }).map((id) => id as OrderId),
    market: fc.integer({ min: 0, max: MARKETS.length - 1 }),
    away: fc.integer({ min: -8, max: 8 }),
  })
  .map(({ userId, orderId, market, away }) => ({
    kind: 'amendOrder',
    userId,
    orderId,
    triggerPrice: (SHAPE[market]!.mid + away) as Price,
  }));

/** Streams of today's orders, the controls and conditional orders, with cascades, cancels and amends. */
export const conditionalStreamArb = fc.array(
  fc.oneof(
    { weight: 5, arbitrary: placeArb },
    { weight: 4, arbitrary: conditionalPlaceArb },
    { weight: 1, arbitrary: controlledPlaceArb },
    { weight: 2, arbitrary: cancelArb },
    { weight: 1, arbitrary: amendArb },
    { weight: 1, arbitrary: amendTriggerArb },
    { weight: 1, arbitrary: sessionArb },
    { weight: 1, arbitrary: fundsArb },
  ),
  { maxLength: 400, size: 'max' },
);
