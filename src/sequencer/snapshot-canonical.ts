/**
 * A market snapshot's canonical encoding: one string per state that readers can tell apart, so
 * that two snapshots are compared by what they show rather than by how they were assembled.
 *
 * Why it is needed: a gateway's view, built from a snapshot and then moved by batches, and an
 * engine's view, loaded afresh from the store, hold the same market state in different forms —
 * books and trade lists of markets nothing happened in present on one side and absent on the
 * other, maps iterated in the order entries first arrived, one-minute candles kept past the 24
 * hours the statistics read, object keys in another order. The encoding removes exactly those
 * differences and nothing else:
 *
 * - `sequence` (the feed's own numbering, local to each process) is left out;
 * - a book with no level at sequence 0 is what an unknown market's book reads as (MarketView.book),
 *   so it is left out; every other book is kept, levels and sequence;
 * - a market's empty recent-trade list reads as no list: left out;
 * - one-minute statistics candles that start before the rolling 24-hour window at `now` can never
 *   be read again (TradeStatsBook.rolling24h drops them): left out;
 * - lists keyed by market, user or candle are sorted by that key; object keys are sorted;
 *   `undefined` fields are left out (the wire drops them too).
 *
 * Everything else — the catalogue in its order, every level and book sequence, last prices, the
 * current candles, the daily candles, the newest trades, every non-zero balance — is compared as
 * it is. Numbers and BigInts are tagged apart, so 5 and 5n differ.
 */
import type { Micros } from '../domain/types.js';
import type { MarketSnapshot } from './market-view.js';

const MINUTES_PER_DAY = 1440;

export function canonicalSnapshot(snapshot: MarketSnapshot, now: Micros): string {
  // As TradeStatsBook.rolling24h: the first minute of the window that ends at `now`.
  const nowSeconds = Math.floor(now / 1_000_000);
  const windowStart = Math.floor(nowSeconds / 60) * 60 - (MINUTES_PER_DAY - 1) * 60;
  const byMarket = (a: { marketId: number }, b: { marketId: number }) => a.marketId - b.marketId;
  const byCandle = (
    a: { marketId: number; interval: number; start: number },
    b: { marketId: number; interval: number; start: number },
  ) => a.marketId - b.marketId || a.interval - b.interval || a.start - b.start;
  const canonical = {
    assets: snapshot.assets,
    markets: snapshot.markets,
    books: snapshot.books
      .filter((b) => b.sequence !== 0 || b.bids.length > 0 || b.asks.length > 0)
      .sort(byMarket),
    lastPrices: [...snapshot.lastPrices].sort(byMarket),
    candles: [...snapshot.candles].sort(byCandle),
    statsCandles: snapshot.statsCandles
      .filter((c) => c.interval !== 1 || c.start >= windowStart)
      .sort(byCandle),
    recentTrades: snapshot.recentTrades.filter((r) => r.trades.length > 0).sort(byMarket),
    balances: [...snapshot.balances].sort(
      (a, b) => a.userId - b.userId || (a.asset < b.asset ? -1 : a.asset > b.asset ? 1 : 0),
    ),
  };
  return JSON.stringify(tagged(canonical, 0));
}

/** Plain data with sorted keys and tagged scalars (JSON.stringify keeps insertion order). */
function tagged(value: unknown, depth: number): unknown {
  if (depth > 64) throw new RangeError('snapshot nested too deeply');
  switch (typeof value) {
    case 'bigint':
      return `n${value}`;
    case 'number':
      return `#${Object.is(value, -0) ? '-0' : String(value)}`;
    case 'string':
      return `'${value}`;
    case 'boolean':
      return value;
    case 'undefined':
      return null;
    default:
      break;
  }
  if (value === null) return null;
  if (Array.isArray(value)) return value.map((item) => tagged(item, depth + 1));
  if (value instanceof Map)
    return ['m', ...[...value].map(([k, v]) => [tagged(k, depth + 1), tagged(v, depth + 1)])];
  const out: Record<string, unknown> = {};
  const object = value as Record<string, unknown>;
  for (const key of Object.keys(object).sort()) {
    if (object[key] === undefined) continue;
    out[key] = tagged(object[key], depth + 1);
  }
  return out;
}
