import type { MarketId, Price } from '../domain/types.js';

/** Candle intervals of the interface, in minutes. */
export const INTERVALS = [1, 5, 15, 30, 60, 240, 1440, 10080, 21600] as const;
export type Interval = (typeof INTERVALS)[number];

/**
 * One candle. Start is Unix seconds aligned to the Unix epoch (weekly candles therefore start on
 * Thursdays 00:00 UTC, as Kraken's do). Prices in ticks.
 *
 * The sums are BigInts: they add up trades without bound (the same coins can change hands any
 * number of times in a minute), so no per-order limit keeps them below 2^53 (docs/money.md).
 */
export interface Candle {
  readonly marketId: MarketId;
  readonly interval: Interval;
  readonly start: number;
  readonly open: Price;
  readonly high: Price;
  readonly low: Price;
  readonly close: Price;
  /** Sum of the trades' volumes, in lots. */
  readonly volume: bigint;
  /** Sum of the trades' costs (each rounded down, docs/money.md), in quote units. */
  readonly quoteVolume: bigint;
  /** Sum of price × volume over the trades, in ticks × lots: the exact VWAP is notional / volume. */
  readonly notional: bigint;
  readonly count: number;
}
