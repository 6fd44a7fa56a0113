/**
 * The data messages of the public and private channels, built from engine and store values.
 * Pure functions. Prices are formatted at the market's pairDecimals, quantities at lotDecimals,
 * amounts at the asset's decimals, all with formatUnits from integers: no float touches a number.
 */

import { formatBigUnits, formatUnits } from '../domain/money.js';
import {
  type AssetSpec,
  joinedPair,
  type MarketSpec,
  type Micros,
  type Price,
  slashPair,
  type Volume,
} from '../domain/types.js';
import type { BookLevels, Trade } from '../engine/types.js';
import type { Candle } from '../market-data/candle.js';
import type { BookView, LevelChange, TradeStats } from '../sequencer/ports.js';
import { formatVwap } from '../wire/serializers.js';
import { bookChecksum, CHECKSUM_DEPTH, type TextLevel } from './crc32.js';

/** A market with what formatting its messages needs. */
export interface FeedMarket {
  readonly spec: MarketSpec;
  /** Slash form, the `symbol` of every payload. */
  readonly symbol: string;
  /** Joined form, used in channel names. */
  readonly pair: string;
  readonly quoteDecimals: number;
}

export const feedMarket = (spec: MarketSpec, quote: AssetSpec): FeedMarket => ({
  spec,
  symbol: slashPair(spec),
  pair: joinedPair(spec),
  quoteDecimals: quote.decimals,
});

export type MessageType = 'snapshot' | 'update';

export interface ChannelMessage<C extends string, D> {
  readonly channel: C;
  readonly type: MessageType;
  readonly data: D;
}

const price = (m: FeedMarket, ticks: number): string => formatUnits(ticks, m.spec.pairDecimals);
const qty = (m: FeedMarket, lots: number): string => formatUnits(lots, m.spec.lotDecimals);
/** A summed volume (candle, statistics): a BigInt, it may exceed 2^53 lots. */
const totalQty = (m: FeedMarket, lots: bigint): string => formatBigUnits(lots, m.spec.lotDecimals);

// Times. Integer arithmetic only: a microsecond count has no exact binary fraction of a second.

const floorDiv = (a: number, b: number): number => (a - (((a % b) + b) % b)) / b;

/** RFC 3339 in UTC with microseconds: `2024-05-01T12:00:00.123456Z`. */
export function rfc3339(time: Micros): string {
  const seconds = floorDiv(time, 1_000_000);
  const micros = time - seconds * 1_000_000;
  return `${new Date(seconds * 1000).toISOString().slice(0, 19)}.${String(micros).padStart(6, '0')}Z`;
}

/** `YYYY-MM-DD HH:MM:SS.ffffff` in UTC, the form of the ohlc message's top-level `timestamp`. */
export function spacedTimestamp(time: Micros): string {
  const text = rfc3339(time);
  return `${text.slice(0, 10)} ${text.slice(11, 26)}`;
}

const secondsToMicros = (seconds: number): Micros => (seconds * 1_000_000) as Micros;

// Book.

export interface BookData {
  readonly symbol: string;
  readonly bids: TextLevel[];
  readonly asks: TextLevel[];
  /** The sequence the next update follows. */
  readonly sequence: number;
  /** Kraken CRC-32 of the top 10 levels (crc32.ts). */
  readonly checksum: number;
}

/** One changed level: exactly one side is an object, the other `[]` (the interface's shape). */
export interface BookUpdateData {
  readonly symbol: string;
  readonly bids: TextLevel | [];
  readonly asks: TextLevel | [];
  /** +1 per message: a client applies a message only if it follows the previous one. */
  readonly sequence: number;
  /** Kraken CRC-32 of the top 10 levels after this message. */
  readonly checksum: number;
}

const textLevels = (m: FeedMarket, levels: BookLevels): TextLevel[] =>
  levels.map(([p, v]) => ({ price: price(m, p), qty: qty(m, v) }));

/** The checksum of a book given best first (a view of at least CHECKSUM_DEPTH levels per side). */
export const checksumOf = (m: FeedMarket, book: Pick<BookView, 'bids' | 'asks'>): number =>
  bookChecksum(
    textLevels(m, book.asks.slice(0, CHECKSUM_DEPTH)),
    textLevels(m, book.bids.slice(0, CHECKSUM_DEPTH)),
  );

/** Every level of the book, best first. */
export function bookSnapshotMessage(m: FeedMarket, view: BookView): ChannelMessage<'book', BookData> {
  return {
    channel: 'book',
    type: 'snapshot',
    data: {
      symbol: m.symbol,
      bids: textLevels(m, view.bids),
      asks: textLevels(m, view.asks),
      sequence: view.sequence,
      checksum: checksumOf(m, view),
    },
  };
}

/**
 * The top of one side of the book while the messages of a batch are built: levels best first,
 * each formatted once. It holds the book's first levels after the batch, and each change's level
 * whatever its depth; that is enough for the top 10 at every step (see `bookUpdateMessages`).
 */
class SideTop {
  private readonly levels: { price: number; volume: number; text?: TextLevel }[];

  constructor(
    private readonly m: FeedMarket,
    levels: BookLevels,
    private readonly descending: boolean,
  ) {
    this.levels = levels.map(([price, volume]) => ({ price, volume }));
  }

  /** Sets a level's total (0 removes it). */
  set(at: number, volume: number): void {
    let low = 0;
    let high = this.levels.length;
    while (low < high) {
      const mid = (low + high) >>> 1;
      const p = this.levels[mid]!.price;
      if (this.descending ? p > at : p < at) low = mid + 1;
      else high = mid;
    }
    const found = this.levels[low]?.price === at;
    if (volume === 0) {
      if (found) this.levels.splice(low, 1);
    } else if (found) this.levels[low] = { price: at, volume };
    else this.levels.splice(low, 0, { price: at, volume });
  }

  top(): TextLevel[] {
    const out: TextLevel[] = [];
    for (const level of this.levels.slice(0, CHECKSUM_DEPTH)) {
      level.text ??= { price: price(this.m, level.price), qty: qty(this.m, level.volume) };
      out.push(level.text);
    }
    return out;
  }
}

/**
 * One update per changed level, in the order of the changes, each with the checksum of the book
 * right after it. `after` is the book once every change is applied, best first, with at least
 * CHECKSUM_DEPTH + (changes on that side) levels per side when the book has them.
 *
 * The book between two messages is rebuilt from `after` by putting back the totals the later
 * changes replaced (`before`). Only the top 10 matter: every level a change does not touch has the
 * same total at every step, and at most one such level per change is missing from the top
 * CHECKSUM_DEPTH + changes of `after`, so those levels always hold the first ten.
 */
export function bookUpdateMessages(
  m: FeedMarket,
  changes: readonly LevelChange[],
  after: Pick<BookView, 'bids' | 'asks'>,
): ChannelMessage<'book', BookUpdateData>[] {
  const count = (side: 'buy' | 'sell') => changes.reduce((n, c) => n + (c.side === side ? 1 : 0), 0);
  const bids = new SideTop(m, after.bids.slice(0, CHECKSUM_DEPTH + count('buy')), true);
  const asks = new SideTop(m, after.asks.slice(0, CHECKSUM_DEPTH + count('sell')), false);
  for (const c of changes) (c.side === 'buy' ? bids : asks).set(c.price, c.before);
  return changes.map((c) => {
    (c.side === 'buy' ? bids : asks).set(c.price, c.volume);
    const level: TextLevel = { price: price(m, c.price), qty: qty(m, c.volume) };
    return {
      channel: 'book',
      type: 'update',
      data: {
        symbol: m.symbol,
        bids: c.side === 'buy' ? level : [],
        asks: c.side === 'sell' ? level : [],
        sequence: c.sequence,
        checksum: bookChecksum(asks.top(), bids.top()),
      },
    };
  });
}

// Ticker.

export interface TickerItem {
  readonly symbol: string;
  readonly bid: string;
  readonly bid_qty: string;
  readonly ask: string;
  readonly ask_qty: string;
  readonly last: string;
  readonly volume: string;
  readonly vwap: string;
  readonly low: string;
  readonly high: string;
  readonly change: string;
  readonly change_pct: string;
}

export interface TickerInput {
  /** Rolling 24 hours. */
  readonly stats: TradeStats;
  /** The last trade price ever (the 24 h window may be empty). */
  readonly last: Price | null;
  readonly bestBid: readonly [Price, Volume] | undefined;
  readonly bestAsk: readonly [Price, Volume] | undefined;
}

/** (a / b) rounded half away from zero, for BigInts with b > 0. */
function roundDiv(a: bigint, b: bigint): bigint {
  const magnitude = (2n * (a < 0n ? -a : a) + b) / (2n * b);
  return a < 0n ? -magnitude : magnitude;
}

/** Change in percent with two decimals, e.g. "-1.25"; "0.00" when there is no opening price. */
export function changePercent(open: number | null, last: number | null): string {
  if (open === null || last === null || open === 0) return '0.00';
  // hundredths of a percent = (last - open) / open · 100 · 100
  return formatBigUnits(roundDiv(BigInt(last - open) * 10_000n, BigInt(open)), 2);
}

/**
 * Kraken's WS v2 ticker fields over the rolling 24 hours. What does not exist (an empty book side,
 * no trade in the window) shows as zero, as in the REST ticker: the fields are decimal strings.
 */
export function tickerMessage(
  m: FeedMarket,
  type: MessageType,
  input: TickerInput,
): ChannelMessage<'ticker', TickerItem[]> {
  const { stats } = input;
  const change = stats.open !== null && stats.last !== null ? stats.last - stats.open : 0;
  return {
    channel: 'ticker',
    type,
    data: [
      {
        symbol: m.symbol,
        bid: price(m, input.bestBid?.[0] ?? 0),
        bid_qty: qty(m, input.bestBid?.[1] ?? 0),
        ask: price(m, input.bestAsk?.[0] ?? 0),
        ask_qty: qty(m, input.bestAsk?.[1] ?? 0),
        last: price(m, input.last ?? 0),
        volume: totalQty(m, stats.volume),
        vwap: formatVwap(m.spec, stats.notional, stats.volume),
        low: price(m, stats.low ?? 0),
        high: price(m, stats.high ?? 0),
        change: price(m, change),
        change_pct: changePercent(stats.open, stats.last),
      },
    ],
  };
}

// OHLC.

export interface CandleData {
  readonly symbol: string;
  readonly open: string;
  readonly high: string;
  readonly low: string;
  readonly close: string;
  readonly trades: number;
  readonly volume: string;
  readonly vwap: string;
  readonly interval_begin: string;
  readonly interval: number;
  readonly timestamp: string;
}

export interface CandleMessage extends ChannelMessage<'ohlc', CandleData> {
  /** Start of the interval, `YYYY-MM-DD HH:MM:SS.ffffff`. */
  readonly timestamp: string;
}

/** One candle; `updatedAt` is the time of its last trade (`data.timestamp`). */
export function candleMessage(
  m: FeedMarket,
  type: MessageType,
  candle: Candle,
  updatedAt: Micros,
): CandleMessage {
  const begin = secondsToMicros(candle.start);
  return {
    channel: 'ohlc',
    type,
    timestamp: spacedTimestamp(begin),
    data: {
      symbol: m.symbol,
      open: price(m, candle.open),
      high: price(m, candle.high),
      low: price(m, candle.low),
      close: price(m, candle.close),
      trades: candle.count,
      volume: totalQty(m, candle.volume),
      vwap: formatVwap(m.spec, candle.notional, candle.volume),
      interval_begin: rfc3339(begin),
      interval: candle.interval,
      timestamp: rfc3339(updatedAt),
    },
  };
}

// Trades.

export interface TradeItem {
  readonly symbol: string;
  readonly side: 'buy' | 'sell';
  readonly price: string;
  readonly qty: string;
  readonly ord_type: 'limit' | 'market';
  readonly trade_id: number;
  readonly timestamp: string;
}

/** Trades oldest first; `side` and `ord_type` are the taker's. */
export function tradeMessage(
  m: FeedMarket,
  type: MessageType,
  trades: readonly Trade[],
): ChannelMessage<'trade', TradeItem[]> {
  return {
    channel: 'trade',
    type,
    data: trades.map((t) => ({
      symbol: m.symbol,
      side: t.takerSide,
      price: price(m, t.price),
      qty: qty(m, t.volume),
      ord_type: t.takerType,
      trade_id: t.id,
      timestamp: rfc3339(t.time),
    })),
  };
}

// Executions (private-order-executed.{userId}).

/**
 * What happened to the order (decision W19; `amended`: W40; `triggered`: W51): it was accepted,
 * traded, changed in place (by its owner's amend, or reduced by self-trade prevention in mode
 * decrement: the order's `reason` is then null and the message's `reason` field says which), its
 * trigger fired (a conditional order, before the trades it then makes), or it ended.
 */
export type ExecutionEvent = 'accepted' | 'trade' | 'amended' | 'triggered' | 'closed' | 'canceled';

export interface ExecutionData<O, T> {
  readonly event: ExecutionEvent;
  /** `amended` only: why the order changed (`amended by user`, `self-trade prevention (decrement)`). */
  readonly reason?: string;
  /** The order as GET /orders/:order_id shows it, right after this event. */
  readonly order: O;
  /** The executions this event is about: one for `trade`, none otherwise. */
  readonly trades: T[];
}

export function executionMessage<O, T>(
  event: ExecutionEvent,
  order: O,
  trades: T[],
  reason?: string,
): ChannelMessage<'executions', ExecutionData<O, T>> {
  const data = reason === undefined ? { event, order, trades } : { event, reason, order, trades };
  return { channel: 'executions', type: 'update', data };
}

export interface ExecutionsSnapshot<O> {
  /** Open orders, newest first. */
  readonly orders: O[];
  /** True when there were more open orders than the snapshot carries (GET /open-orders has all). */
  readonly truncated: boolean;
}

export function executionsSnapshotMessage<O>(
  orders: O[],
  truncated: boolean,
): ChannelMessage<'executions', ExecutionsSnapshot<O>> {
  return { channel: 'executions', type: 'snapshot', data: { orders, truncated } };
}
