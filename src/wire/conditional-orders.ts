/**
 * How a conditional order (stop-loss, take-profit, their -limit types, trailing-stop) reads in the
 * Order record (docs/interface-decisions.md, E33): Kraken's meanings, where `price` is the trigger
 * and `price2` (our `secondary_price`) the limit price of the -limit types, and
 * `trigger_conditions` says in words what the order waits for. Pure; prices are formatted from
 * integer ticks, never through a binary fraction.
 */
import { formatUnits } from '../domain/money.js';
import {
  type ConditionalType,
  executionTypeOf,
  fallsToTrigger,
  isConditionalType,
  joinedPair,
  type MarketSpec,
  type TrailingOffset,
} from '../domain/types.js';
import type { OrderState } from '../engine/types.js';

/** The parts of the Order record a conditional order fills in its own way. */
export interface ConditionalView {
  /** `price` / `description.price`: the trigger price ("0.0…" for a trailing stop with none yet). */
  readonly price: string;
  /** The limit price of a -limit type (`secondary_price`, `limit_price`, `description.secondaryPrice`); else null. */
  readonly limitPrice: string | null;
  readonly triggerConditions: string;
  /** `description.order`, e.g. `sell 0.01000000 BTCEUR @ stop loss 58000.0 -> limit 57900.0`. */
  readonly order: string;
}

/** Basis points as a percentage: 250 → "2.5%", 1 → "0.01%", 5000 → "50%". */
export function formatBps(bps: number): string {
  const whole = Math.trunc(bps / 100);
  const cents = bps % 100;
  if (cents === 0) return `${whole}%`;
  return `${whole}.${String(cents).padStart(2, '0').replace(/0$/, '')}%`;
}

/** A trailing offset as the trader gave it: `2.5%` or a price distance `150.5`. */
export const formatTrailingOffset = (market: MarketSpec, offset: TrailingOffset): string =>
  offset.unit === 'bps' ? formatBps(offset.amount) : formatUnits(offset.amount, market.pairDecimals);

/** Kraken's words for a type in `description.order`: `stop loss`, `take profit`, `trailing stop`. */
const TYPE_WORDS: Readonly<Record<ConditionalType, string>> = {
  'stop-loss': 'stop loss',
  'take-profit': 'take profit',
  'stop-loss-limit': 'stop loss',
  'take-profit-limit': 'take profit',
  'trailing-stop': 'trailing stop',
};

/** The record parts of a conditional order, or undefined for a limit or market order. */
export function conditionalView(order: OrderState, market: MarketSpec): ConditionalView | undefined {
  const type = order.type;
  if (!isConditionalType(type)) return undefined;
  const price = (ticks: number) => formatUnits(ticks, market.pairDecimals);
  const falling = fallsToTrigger(type, order.side);
  const limitPrice = executionTypeOf(type) === 'limit' ? price(order.price) : null;
  const trigger = order.triggerPrice;
  const head = `${order.side} ${formatUnits(order.volume, market.lotDecimals)} ${joinedPair(market)} @ ${TYPE_WORDS[type]}`;

  let orderText: string;
  if (order.trailingOffset !== undefined) {
    const sign = falling ? '-' : '+';
    orderText = `${head} ${sign}${formatTrailingOffset(market, order.trailingOffset)}`;
  } else {
    orderText = `${head} ${price(trigger ?? 0)}`;
    if (limitPrice !== null) orderText += ` -> limit ${limitPrice}`;
  }

  const condition =
    trigger === undefined ? undefined : `last price ${falling ? '<=' : '>='} ${price(trigger)}`;
  let triggerConditions: string;
  if (order.triggered === true) {
    triggerConditions = `triggered: ${condition ?? 'last price reached the trigger'}`;
  } else if (order.trailingOffset !== undefined) {
    const trailing = `trailing ${formatTrailingOffset(market, order.trailingOffset)} ${falling ? 'below' : 'above'} the best price`;
    triggerConditions =
      condition === undefined || order.trailingBest === undefined
        ? `waiting for the first trade (${trailing})`
        : `${condition} (${trailing} ${price(order.trailingBest)})`;
  } else {
    triggerConditions = condition ?? 'none';
  }

  return { price: price(trigger ?? 0), limitPrice, triggerConditions, order: orderText };
}
