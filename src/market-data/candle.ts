import type { Amount, MarketId, Price, Volume } from '../domain/types.js';

/** Candle intervals of the interface, in minutes. */
export const INTERVALS = [1, 5, 15, 30, 60, 240, 1440, 10080, 21600] as const;
export type Interval = (typeof INTERVALS)[number];

/**
 * One candle. Start is Unix seconds aligned to the Unix epoch (weekly candles therefore start on
 * Thursdays 00:00 UTC, as Kraken's do). Prices in ticks, volume in lots, quoteVolume the exact sum
 * of trade costs in quote units.
 */
export interface Candle {
  readonly marketId: MarketId;
  readonly interval: Interval;
  readonly start: number;
  readonly open: Price;
  readonly high: Price;
  readonly low: Price;
  readonly close: Price;
  readonly volume: Volume;
  readonly quoteVolume: Amount;
  readonly count: number;
}
