/**
 * Ticker statistics derived from candles: "today" from the daily candle (the REST ticker's day
 * starts at 00:00 UTC) and a rolling 24 hours from one-minute candles (the WebSocket ticker), so
 * neither needs to rescan trade history. Rolling figures are exact to the minute.
 */
import type { MarketId, Micros, Price } from '../domain/types.js';
import type { Candle } from '../market-data/candle.js';
import { MICROS_PER_SECOND } from './clock.js';
import type { TradeStats } from './ports.js';

const MINUTES_PER_DAY = 1440;

export const EMPTY_STATS: TradeStats = {
  open: null,
  high: null,
  low: null,
  last: null,
  volume: 0n,
  quoteVolume: 0n,
  notional: 0n,
  count: 0,
};

export class TradeStatsBook {
  /** Per market, one-minute candles of (at least) the last 24 hours, keyed by start second. */
  private readonly minutes = new Map<MarketId, Map<number, Candle>>();
  private readonly daily = new Map<MarketId, Candle>();

  /** Feeds candles (from a committed batch or from the store at start). */
  record(candles: Iterable<Candle>): void {
    for (const candle of candles) {
      if (candle.interval === 1) {
        let perMarket = this.minutes.get(candle.marketId);
        if (perMarket === undefined) {
          perMarket = new Map();
          this.minutes.set(candle.marketId, perMarket);
        }
        perMarket.set(candle.start, candle);
      } else if (candle.interval === 1440) {
        const current = this.daily.get(candle.marketId);
        if (current === undefined || current.start <= candle.start) this.daily.set(candle.marketId, candle);
      }
    }
  }

  /** Every candle held (for a snapshot: `record` on a new book gives the same figures). */
  candles(): Candle[] {
    const out: Candle[] = [];
    for (const perMarket of this.minutes.values()) out.push(...perMarket.values());
    out.push(...this.daily.values());
    return out;
  }

  today(marketId: MarketId, now: Micros): TradeStats {
    const candle = this.daily.get(marketId);
    const midnight = Math.floor(now / MICROS_PER_SECOND / 86_400) * 86_400;
    if (candle === undefined || candle.start !== midnight) return EMPTY_STATS;
    return fromCandles([candle]);
  }

  rolling24h(marketId: MarketId, now: Micros): TradeStats {
    const perMarket = this.minutes.get(marketId);
    if (perMarket === undefined) return EMPTY_STATS;
    const nowSeconds = Math.floor(now / MICROS_PER_SECOND);
    const from = Math.floor(nowSeconds / 60) * 60 - (MINUTES_PER_DAY - 1) * 60;
    const inWindow: Candle[] = [];
    for (const [start, candle] of perMarket) {
      if (start < from) perMarket.delete(start);
      else inWindow.push(candle);
    }
    inWindow.sort((a, b) => a.start - b.start);
    return fromCandles(inWindow);
  }
}

function fromCandles(candles: readonly Candle[]): TradeStats {
  const first = candles[0];
  if (first === undefined) return EMPTY_STATS;
  let high = first.high as number;
  let low = first.low as number;
  // BigInt sums: a day of trades can pass 2^53 lots or quote units however each order is bounded.
  let volume = 0n;
  let quoteVolume = 0n;
  let notional = 0n;
  let count = 0;
  for (const c of candles) {
    if (c.high > high) high = c.high;
    if (c.low < low) low = c.low;
    volume += c.volume;
    quoteVolume += c.quoteVolume;
    notional += c.notional;
    count += c.count;
  }
  return {
    open: first.open,
    high: high as Price,
    low: low as Price,
    last: candles[candles.length - 1]!.close,
    volume,
    quoteVolume,
    notional,
    count,
  };
}
