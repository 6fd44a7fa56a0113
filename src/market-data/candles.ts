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

function openCandle(marketId: MarketId, interval: Interval, start: number, trade: Trade): Candle {
  return {
    marketId,
    interval,
    start,
    open: trade.price,
    high: trade.price,
    low: trade.price,
    close: trade.price,
    volume: BigInt(trade.volume),
    quoteVolume: BigInt(trade.cost),
    notional: BigInt(trade.price) * BigInt(trade.volume),
    count: 1,
  };
}

function extendCandle(candle: Candle, trade: Trade): Candle {
  return {
    ...candle,
    high: Math.max(trade.price, candle.high) as Price,
    low: Math.min(trade.price, candle.low) as Price,
    close: trade.price,
    volume: candle.volume + BigInt(trade.volume),
    quoteVolume: candle.quoteVolume + BigInt(trade.cost),
    notional: candle.notional + BigInt(trade.price) * BigInt(trade.volume),
    count: candle.count + 1,
  };
}

/**
 * The candle after `trade`. A trade timed before the current candle (the clock stepped back) is
 * folded into the current candle: the earlier candle is already persisted and not held here, and
 * dropping the trade would lose volume.
 */
function addTrade(current: Candle | undefined, marketId: MarketId, interval: Interval, trade: Trade): Candle {
  const start = candleStart(tradeSeconds(trade), interval);
  if (current === undefined || start > current.start) return openCandle(marketId, interval, start, trade);
  return extendCandle(current, trade);
}

const INTERVAL_RANK = new Map<Interval, number>(INTERVALS.map((interval, rank) => [interval, rank]));
const byIntervalThenStart = (a: Candle, b: Candle): number =>
  (INTERVAL_RANK.get(a.interval) ?? 0) - (INTERVAL_RANK.get(b.interval) ?? 0) || a.start - b.start;

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
   */
  apply(marketId: MarketId, trades: readonly Trade[]): Candle[] {
    if (trades.length === 0) return [];
    const candles = this.#candlesOf(marketId);
    const touched = new Map<string, Candle>();
    for (const trade of trades) {
      if (trade.marketId !== marketId)
        throw new RangeError(`trade ${trade.id} of market ${trade.marketId} applied to market ${marketId}`);
      for (const interval of INTERVALS) {
        const candle = addTrade(candles.get(interval), marketId, interval, trade);
        candles.set(interval, candle);
        touched.set(`${interval}:${candle.start}`, candle);
      }
    }
    return [...touched.values()].sort(byIntervalThenStart);
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
