/**
 * The MarketView: the read model of market state that HTTP market data, the wallet and the
 * WebSocket server read, kept purely from the committed feed. It starts from a snapshot
 * (`MarketSnapshot`, plain data) and applies feed entries in sequence order; it never reads the
 * store or the engine. That is all a gateway of the scale-out issue needs to answer public reads:
 * a snapshot from the engine's process, then the stream.
 *
 * It holds: the catalogue; each book's aggregated levels with its sequence; last prices; the
 * candles the ticker statistics are derived from (today's and a rolling 24 hours); each market's
 * current candle per interval; the most recent trades; every balance.
 *
 * Reads are always committed state: the view only moves when an entry arrives, and the feed only
 * carries committed batches. In the engine's process the entry arrives at the commit, before the
 * replies of its requests are written, so a client reading after its 201 sees its own effects.
 */

import type {
  AssetCode,
  AssetSpec,
  MarketId,
  MarketSpec,
  Micros,
  Price,
  UserId,
  Volume,
} from '../domain/types.js';
import type { BalanceState, BookLevels, Trade } from '../engine/types.js';
import type { Candle, Interval } from '../market-data/candle.js';
import { CatalogueIndex } from './catalogue-index.js';
import type { CommittedFeed, FeedBatch, FeedEntry } from './committed-feed.js';
import type { BookView, Catalogue, LevelChange, TradeStats } from './ports.js';
import { TradeStatsBook } from './trade-stats.js';

/** How many recent trades per market a view keeps (the WebSocket trade snapshot's source). */
export const RECENT_TRADES = 1000;

export interface SnapshotBook {
  readonly marketId: MarketId;
  readonly sequence: number;
  /** Best first. */
  readonly bids: BookLevels;
  readonly asks: BookLevels;
}

/** The whole market state at one feed sequence, as plain data (serialisable like a feed entry). */
export interface MarketSnapshot {
  /** The last feed entry this state includes: a view built from it subscribes from the next one. */
  readonly sequence: number;
  readonly assets: readonly AssetSpec[];
  /** In id order. */
  readonly markets: readonly MarketSpec[];
  readonly books: readonly SnapshotBook[];
  readonly lastPrices: ReadonlyArray<{ readonly marketId: MarketId; readonly price: Price }>;
  /** The newest candle of each market and interval. */
  readonly candles: readonly Candle[];
  /** The candles the ticker statistics are computed from (one-minute ones of the last day, daily). */
  readonly statsCandles: readonly Candle[];
  /** Per market, the most recent trades, oldest first. */
  readonly recentTrades: ReadonlyArray<{ readonly marketId: MarketId; readonly trades: readonly Trade[] }>;
  /** Every non-zero balance (absent means zero). */
  readonly balances: readonly BalanceState[];
}

/** An entry that does not follow the view's sequence: the view cannot apply it. */
export class FeedGapError extends Error {
  override readonly name = 'FeedGapError';
  constructor(
    readonly expected: number,
    readonly received: number,
  ) {
    super(`feed entry ${received} does not follow ${expected - 1}`);
  }
}

type Level = readonly [Price, Volume];

/** One side of a book: levels best first, found by binary search. */
class BookSide {
  constructor(
    private levels: Level[],
    /** Bids: higher is better; asks: lower is better. */
    private readonly descending: boolean,
  ) {}

  /** Sets a level's total; 0 removes it. */
  set(price: Price, volume: Volume): void {
    const levels = this.levels;
    let lo = 0;
    let hi = levels.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      const p = levels[mid]![0];
      if (this.descending ? p > price : p < price) lo = mid + 1;
      else hi = mid;
    }
    const found = lo < levels.length && levels[lo]![0] === price;
    if (volume === 0) {
      if (found) levels.splice(lo, 1);
    } else if (found) levels[lo] = [price, volume];
    else levels.splice(lo, 0, [price, volume]);
  }

  top(max: number): BookLevels {
    return max === 0 || max >= this.levels.length ? this.levels.slice() : this.levels.slice(0, max);
  }
}

class ViewBook {
  readonly bids: BookSide;
  readonly asks: BookSide;
  constructor(
    public sequence: number,
    bids: BookLevels,
    asks: BookLevels,
  ) {
    this.bids = new BookSide([...bids], true);
    this.asks = new BookSide([...asks], false);
  }

  apply(change: LevelChange): void {
    (change.side === 'buy' ? this.bids : this.asks).set(change.price, change.volume);
  }
}

/** The most recent trades per market, oldest first, at most `limit` each. */
export class RecentTrades {
  private readonly byMarket = new Map<MarketId, Trade[]>();
  constructor(private readonly limit = RECENT_TRADES) {}

  add(marketId: MarketId, trades: readonly Trade[]): void {
    let list = this.byMarket.get(marketId);
    if (list === undefined) {
      list = [];
      this.byMarket.set(marketId, list);
    }
    for (const trade of trades) list.push(trade);
    // Trimmed in bulk, not per trade: an array shift per trade would be quadratic under load.
    if (list.length > this.limit * 2) list.splice(0, list.length - this.limit);
  }

  /** The newest `count` trades, oldest first. */
  newest(marketId: MarketId, count: number): Trade[] {
    const list = this.byMarket.get(marketId);
    if (list === undefined) return [];
    return list.slice(Math.max(0, list.length - Math.min(count, this.limit)));
  }

  last(marketId: MarketId): Trade | undefined {
    const list = this.byMarket.get(marketId);
    return list?.[list.length - 1];
  }

  snapshot(): Array<{ marketId: MarketId; trades: Trade[] }> {
    return [...this.byMarket.keys()].map((marketId) => ({
      marketId,
      trades: this.newest(marketId, this.limit),
    }));
  }

  get capacity(): number {
    return this.limit;
  }
}

const candleKey = (marketId: MarketId, interval: Interval): string => `${marketId}:${interval}`;

export class MarketView {
  private seq: number;
  /** One object for the view's life: a reset re-indexes it, so adapters may keep it. */
  private readonly catalogueModel = new CatalogueIndex();
  private books = new Map<MarketId, ViewBook>();
  private lastPrices = new Map<MarketId, Price>();
  private stats = new TradeStatsBook();
  private currentCandles = new Map<string, Candle>();
  private recent: RecentTrades;
  /** Per user, per asset. */
  private balanceBook = new Map<UserId, Map<AssetCode, BalanceState>>();

  private constructor(
    snapshot: MarketSnapshot,
    private readonly recentLimit: number,
  ) {
    this.seq = snapshot.sequence;
    this.recent = new RecentTrades(recentLimit);
    this.load(snapshot);
  }

  /** A view of exactly the snapshot's state; apply the feed from `snapshot.sequence + 1` on. */
  static fromSnapshot(snapshot: MarketSnapshot, recentTrades = RECENT_TRADES): MarketView {
    return new MarketView(snapshot, recentTrades);
  }

  private load(snapshot: MarketSnapshot): void {
    this.seq = snapshot.sequence;
    this.catalogueModel.replace(snapshot.assets, snapshot.markets);
    this.books = new Map();
    for (const book of snapshot.books)
      this.books.set(book.marketId, new ViewBook(book.sequence, book.bids, book.asks));
    this.lastPrices = new Map(snapshot.lastPrices.map((p) => [p.marketId, p.price]));
    this.stats = new TradeStatsBook();
    this.stats.record(snapshot.statsCandles);
    this.currentCandles = new Map(snapshot.candles.map((c) => [candleKey(c.marketId, c.interval), c]));
    this.recent = new RecentTrades(this.recentLimit);
    for (const { marketId, trades } of snapshot.recentTrades) this.recent.add(marketId, trades);
    this.balanceBook = new Map();
    for (const balance of snapshot.balances) this.setBalance(balance);
  }

  /** The sequence of the last feed entry applied. */
  get sequence(): number {
    return this.seq;
  }

  get catalogue(): Catalogue {
    return this.catalogueModel;
  }

  /**
   * Applies the next feed entry. An entry already applied is ignored (a redelivery); one that
   * skips a sequence throws FeedGapError and changes nothing: the view must be rebuilt.
   */
  apply(entry: FeedEntry): void {
    if (entry.sequence <= this.seq) return;
    if (entry.sequence !== this.seq + 1) throw new FeedGapError(this.seq + 1, entry.sequence);
    if (entry.kind === 'reset') this.load(entry.snapshot);
    else this.applyBatch(entry);
    this.seq = entry.sequence;
  }

  private applyBatch(batch: FeedBatch): void {
    // Catalogue first: the rest of the batch may be about a market it creates.
    for (const event of batch.events) {
      if (event.type === 'assetCreated') this.catalogueModel.addAsset(event.asset);
      else if (event.type === 'marketCreated') this.catalogueModel.addMarket(event.market);
    }
    for (const update of batch.books) {
      let book = this.books.get(update.marketId);
      if (book === undefined) {
        book = new ViewBook(0, [], []);
        this.books.set(update.marketId, book);
      }
      for (const change of update.changes) book.apply(change);
      book.sequence = update.sequence;
    }
    for (const { marketId, trades } of batch.trades) {
      const last = trades[trades.length - 1];
      if (last !== undefined) this.lastPrices.set(marketId, last.price);
      this.recent.add(marketId, trades);
    }
    this.stats.record(batch.candles);
    for (const candle of batch.candles)
      this.currentCandles.set(candleKey(candle.marketId, candle.interval), candle);
    for (const balance of batch.balances) this.setBalance(balance);
  }

  private setBalance(balance: BalanceState): void {
    let perUser = this.balanceBook.get(balance.userId);
    if (perUser === undefined) {
      perUser = new Map();
      this.balanceBook.set(balance.userId, perUser);
    }
    perUser.set(balance.asset, balance);
  }

  /** Aggregated levels, best first; `maxLevels` per side (0 = all); and the book's sequence. */
  book(marketId: MarketId, maxLevels: number): BookView {
    const book = this.books.get(marketId);
    if (book === undefined) return { sequence: 0, bids: [], asks: [] };
    return { sequence: book.sequence, bids: book.bids.top(maxLevels), asks: book.asks.top(maxLevels) };
  }

  /** Every asset of the catalogue for this user (zero when never funded), in catalogue order. */
  balances(userId: UserId): BalanceState[] {
    const perUser = this.balanceBook.get(userId);
    return this.catalogueModel.assets().map(
      (asset) =>
        perUser?.get(asset.code) ?? {
          userId,
          asset: asset.code,
          available: 0 as BalanceState['available'],
          reserved: 0 as BalanceState['reserved'],
        },
    );
  }

  lastPrice(marketId: MarketId): Price | null {
    return this.lastPrices.get(marketId) ?? null;
  }

  /** Since 00:00 UTC of the day containing `now`. */
  statsToday(marketId: MarketId, now: Micros): TradeStats {
    return this.stats.today(marketId, now);
  }

  /** Over the 24 hours before `now`. */
  stats24h(marketId: MarketId, now: Micros): TradeStats {
    return this.stats.rolling24h(marketId, now);
  }

  /** The newest candle of an interval, if the market ever traded. */
  currentCandle(marketId: MarketId, interval: Interval): Candle | undefined {
    return this.currentCandles.get(candleKey(marketId, interval));
  }

  /** The newest `count` trades of a market, oldest first (at most the view's capacity). */
  recentTrades(marketId: MarketId, count: number): Trade[] {
    return this.recent.newest(marketId, count);
  }

  /** The market's last trade, if it ever traded (within the view's memory: it keeps the newest). */
  lastTrade(marketId: MarketId): Trade | undefined {
    return this.recent.last(marketId);
  }

  /** How many recent trades per market the view keeps. */
  get recentTradesCapacity(): number {
    return this.recent.capacity;
  }

  /** The view's whole state as plain data: another view built from it equals this one. */
  snapshot(): MarketSnapshot {
    const balances: BalanceState[] = [];
    for (const perUser of this.balanceBook.values())
      for (const balance of perUser.values())
        if (balance.available !== 0 || balance.reserved !== 0) balances.push(balance);
    return {
      sequence: this.seq,
      assets: [...this.catalogueModel.assets()],
      markets: [...this.catalogueModel.markets()],
      books: [...this.books].map(([marketId, book]) => ({
        marketId,
        sequence: book.sequence,
        bids: book.bids.top(0),
        asks: book.asks.top(0),
      })),
      lastPrices: [...this.lastPrices].map(([marketId, price]) => ({ marketId, price })),
      candles: [...this.currentCandles.values()],
      statsCandles: this.stats.candles(),
      recentTrades: this.recent.snapshot(),
      balances,
    };
  }
}

type Logger = { error(obj: object, msg: string): void };

/**
 * Keeps `view` up to date from `feed`, at the commit. Returns the function that stops it. A gap
 * (entries the feed no longer holds, or an entry that skips one) leaves the view as it was and is
 * logged: the owner must rebuild it from a snapshot (never serve it as if it were current).
 */
export function followFeed(view: MarketView, feed: CommittedFeed, logger?: Logger): () => void {
  let stop = (): void => undefined;
  stop = feed.subscribe(view.sequence + 1, (message) => {
    if (message.kind === 'gap') {
      logger?.error({ requested: message.requested, oldest: message.oldest }, 'market view: feed gap');
      return;
    }
    view.apply(message);
  });
  return () => stop();
}
