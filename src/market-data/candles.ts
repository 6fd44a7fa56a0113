/**
 * Candle aggregation: pure and synchronous, so the sequencer can compute a batch's candles before
 * committing them together with the trades, and rebuild the aggregator from the store afterwards.
 */
import type { MarketId, Price } from '../domain/types.js';
import type { Trade } from '../engine/types.js';
import { type Candle, INTERVALS, type Interval } from './candle.js';

const MICROS_PER_SECOND = 1_000_000;
const SECONDS_PER_MINUTE = 60;

/** floor(a / b) for safe integers and b > 0, without rounding a fractional quotient. */
function floorDiv(a: number, b: number): number {
  const remainder = ((a % b) + b) % b;
  return (a - remainder) / b;
}

/** Start (Unix seconds) of the `interval`-minute candle containing `seconds`, aligned to the Unix epoch. */
export function candleStart(seconds: number, interval: Interval): number {
  const length = interval * SECONDS_PER_MINUTE;
  return floorDiv(seconds, length) * length;
}

export const tradeSeconds = (trade: Pick<Trade, 'time'>): number => floorDiv(trade.time, MICROS_PER_SECOND);

/**
 * Consecutive trades summed: what they add to a candle (the first trade's price opens a new one).
 * The sums are exact (BigInt), as the candle's.
 */
class TradeSum {
  readonly first: Price;
  high: Price;
  low: Price;
  close: Price;
  volume: bigint;
  quoteVolume: bigint;
  notional: bigint;
  count = 1;

  constructor(trade: Trade) {
    this.first = this.high = this.low = this.close = trade.price;
    this.volume = BigInt(trade.volume);
    this.quoteVolume = BigInt(trade.cost);
    this.notional = BigInt(trade.price) * this.volume;
  }

  add(trade: Trade): void {
    const volume = BigInt(trade.volume);
    if (trade.price > this.high) this.high = trade.price;
    if (trade.price < this.low) this.low = trade.price;
    this.close = trade.price;
    this.volume += volume;
    this.quoteVolume += BigInt(trade.cost);
    this.notional += BigInt(trade.price) * volume;
    this.count++;
  }

  /** A new candle made of these trades alone. */
  opened(marketId: MarketId, interval: Interval, start: number): Candle {
    return {
      marketId,
      interval,
      start,
      open: this.first,
      high: this.high,
      low: this.low,
      close: this.close,
      volume: this.volume,
      quoteVolume: this.quoteVolume,
      notional: this.notional,
      count: this.count,
    };
  }

  /** `candle` with these trades added (a trade timed before the candle is folded into it too). */
  extended(candle: Candle): Candle {
    return {
      marketId: candle.marketId,
      interval: candle.interval,
      start: candle.start,
      open: candle.open,
      high: Math.max(this.high, candle.high) as Price,
      low: Math.min(this.low, candle.low) as Price,
      close: this.close,
      volume: candle.volume + this.volume,
      quoteVolume: candle.quoteVolume + this.quoteVolume,
      notional: candle.notional + this.notional,
      count: candle.count + this.count,
    };
  }
}

export class CandleAggregator {
  /** The newest candle per market and interval; candles are immutable values, replaced on update. */
  readonly #latest = new Map<MarketId, Map<Interval, Candle>>();

  /** `latest`: the newest stored candle of each market and interval (older ones are ignored). */
  constructor(latest: readonly Candle[]) {
    for (const candle of latest) {
      const candles = this.#candlesOf(candle.marketId);
      const known = candles.get(candle.interval);
      if (known === undefined || candle.start > known.start) candles.set(candle.interval, candle);
    }
  }

  /**
   * Adds the trades (in engine order) to every interval's candles. Returns each candle the trades
   * touched once, in its final state, ordered by interval (as INTERVALS) then start.
   *
   * Consecutive trades of the same minute are summed first (a minute lies within one candle of
   * every interval, since every interval is a whole number of minutes aligned to the epoch), and
   * each interval's candle is then extended by that sum once: one new candle and three BigInt
   * additions per interval per minute of trades, not per trade. The result is the one trade by
   * trade folding would give (candles.test.ts compares them).
   */
  apply(marketId: MarketId, trades: readonly Trade[]): Candle[] {
    if (trades.length === 0) return [];
    const candles = this.#candlesOf(marketId);
    const touched: Candle[][] = INTERVALS.map(() => []);
    let i = 0;
    for (const trade of trades) {
      if (trade.marketId !== marketId)
        throw new RangeError(`trade ${trade.id} of market ${trade.marketId} applied to market ${marketId}`);
    }
    while (i < trades.length) {
      const first = trades[i]!;
      const minute = candleStart(tradeSeconds(first), 1);
      const group = new TradeSum(first);
      for (i++; i < trades.length; i++) {
        const trade = trades[i]!;
        if (candleStart(tradeSeconds(trade), 1) !== minute) break;
        group.add(trade);
      }
      for (let rank = 0; rank < INTERVALS.length; rank++) {
        const interval = INTERVALS[rank]!;
        const start = candleStart(minute, interval);
        const current = candles.get(interval);
        const candle =
          current === undefined || start > current.start
            ? group.opened(marketId, interval, start)
            : group.extended(current);
        candles.set(interval, candle);
        const list = touched[rank]!;
        // Within an interval, candles only move forward: the same start replaces, a later one follows.
        if (list.length > 0 && list[list.length - 1]!.start === candle.start) list[list.length - 1] = candle;
        else list.push(candle);
      }
    }
    return touched.flat();
  }

  current(marketId: MarketId, interval: Interval): Candle | undefined {
    return this.#latest.get(marketId)?.get(interval);
  }

  #candlesOf(marketId: MarketId): Map<Interval, Candle> {
    let candles = this.#latest.get(marketId);
    if (candles === undefined) {
      candles = new Map();
      this.#latest.set(marketId, candles);
    }
    return candles;
  }
}
