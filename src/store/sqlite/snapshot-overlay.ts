/**
 * The engine snapshot of the tables with journaled commits on top, for when those commits cannot
 * be written to the tables yet (a file turned read-only, say): the server still rebuilds its
 * engine from, and checks what it serves against, exactly what it acknowledged. Equal to the
 * snapshot the tables give once the commits are written to them (snapshot-overlay.test.ts), in
 * the same order (sqlite-store.ts, readSnapshot).
 */
import type { MarketId, Price } from '../../domain/types.js';
import type { EngineSnapshot, LastPrice, OrderState } from '../../engine/types.js';
import type { Candle, Interval } from '../../market-data/candle.js';
import type { CommitBatch } from '../store.js';

const byNumber = (a: number, b: number): number => a - b;
const byText = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

/** `snapshot` after `batch` (journaled commits merged, merge-batches.ts). */
export function overlaySnapshot(snapshot: EngineSnapshot, batch: CommitBatch): EngineSnapshot {
  const assets = [...snapshot.assets];
  const markets = [...snapshot.markets];
  const lastPrices = new Map<MarketId, Price>((snapshot.lastPrices ?? []).map((p) => [p.marketId, p.price]));
  for (const event of batch.events) {
    if (event.type === 'assetCreated') assets.push(event.asset);
    else if (event.type === 'marketCreated') markets.push(event.market);
    else if (event.type === 'trade') lastPrices.set(event.trade.marketId, event.trade.price);
  }
  markets.sort((a, b) => byNumber(a.id, b.id));

  const balances = new Map(snapshot.balances.map((b) => [`${b.userId}\u0000${b.asset}`, b]));
  for (const b of batch.changes.balances) balances.set(`${b.userId}\u0000${b.asset}`, b);
  const totals = new Map(snapshot.totals.map((t) => [t.asset, t]));
  for (const t of batch.changes.totals) totals.set(t.asset, t);
  const open = new Map<number, OrderState>(snapshot.openOrders.map((o) => [o.id, o]));
  for (const o of batch.changes.orders) {
    if (o.status === 'open') open.set(o.id, o);
    else open.delete(o.id);
  }
  const switches = new Map((snapshot.switches ?? []).map((w) => [w.userId, w]));
  for (const w of batch.changes.switches ?? []) {
    if (w.triggerTime > 0) switches.set(w.userId, w);
    else switches.delete(w.userId);
  }
  const armed = [...switches.values()].sort((a, b) => byNumber(a.userId, b.userId));
  const prices: LastPrice[] = [...lastPrices]
    .map(([marketId, price]) => ({ marketId, price }))
    .sort((a, b) => byNumber(a.marketId, b.marketId));
  return {
    assets,
    markets,
    balances: [...balances.values()].sort((a, b) => byNumber(a.userId, b.userId) || byText(a.asset, b.asset)),
    totals: [...totals.values()].sort((a, b) => byText(a.asset, b.asset)),
    openOrders: [...open.values()].sort((a, b) => byNumber(a.priority ?? a.id, b.priority ?? b.id)),
    ...(armed.length > 0 ? { switches: armed } : {}),
    ...(prices.length > 0 ? { lastPrices: prices } : {}),
    sequences: batch.changes.sequences,
  };
}

/**
 * The newest candle of each interval of `marketId` (SqliteStore.latestCandles, in its order)
 * after `batch`: what the candle aggregator resumes from. Resumed from the tables alone, it would
 * leave out the waiting commits' trades, and the candles it then writes would miss them for good.
 */
export function overlayLatestCandles(
  latest: readonly Candle[],
  batch: CommitBatch,
  marketId: MarketId,
): Candle[] {
  const newest = new Map<Interval, Candle>(latest.map((c) => [c.interval, c]));
  for (const candle of batch.candles) {
    if (candle.marketId !== marketId) continue;
    const current = newest.get(candle.interval);
    // The batch's candle is the newer state of one of the same start.
    if (current === undefined || candle.start >= current.start) newest.set(candle.interval, candle);
  }
  return [...newest.values()].sort((a, b) => a.interval - b.interval);
}
