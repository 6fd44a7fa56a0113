/**
 * Channel names and the data messages of the WebSocket channels, as OpenSpot sends them
 * (interface "Events", completed by the server's payloads): every message arrives first as event
 * `snapshot` right after subscribing, then as event `update`; the message's `type` repeats it.
 * Types only and name builders: no protocol library is needed to use them.
 */
import type { Decimal, Interval, Order, Side, UserTrade } from './types.js';

export type MessageType = 'snapshot' | 'update';

export interface ChannelMessage<C extends string, D> {
  readonly channel: C;
  readonly type: MessageType;
  readonly data: D;
}

export interface TickerItem {
  /** Slash form. */
  readonly symbol: string;
  readonly bid: Decimal;
  readonly bid_qty: Decimal;
  readonly ask: Decimal;
  readonly ask_qty: Decimal;
  readonly last: Decimal;
  /** Rolling 24 h. */
  readonly volume: Decimal;
  readonly vwap: Decimal;
  readonly low: Decimal;
  readonly high: Decimal;
  readonly change: Decimal;
  readonly change_pct: Decimal;
}
export type TickerMessage = ChannelMessage<'ticker', TickerItem[]>;

export interface CandleData {
  readonly symbol: string;
  readonly open: Decimal;
  readonly high: Decimal;
  readonly low: Decimal;
  readonly close: Decimal;
  readonly trades: number;
  readonly volume: Decimal;
  readonly vwap: Decimal;
  /** RFC 3339. */
  readonly interval_begin: string;
  readonly interval: Interval;
  /** RFC 3339, time of the candle's last trade. */
  readonly timestamp: string;
}
export interface CandleMessage extends ChannelMessage<'ohlc', CandleData> {
  /** Start of the interval, `YYYY-MM-DD HH:MM:SS.ffffff`. */
  readonly timestamp: string;
}

export interface TradeItem {
  readonly symbol: string;
  /** The taker's side. */
  readonly side: Side;
  readonly price: Decimal;
  readonly qty: Decimal;
  /** The taker's order type. */
  readonly ord_type: 'limit' | 'market';
  /** Sequence number unique per book. */
  readonly trade_id: number;
  /** RFC 3339. */
  readonly timestamp: string;
}
export type TradeMessage = ChannelMessage<'trade', TradeItem[]>;

export interface BookLevelText {
  readonly price: Decimal;
  /** The level's total; in an update, "0…" removes the level. */
  readonly qty: Decimal;
}
/** The `snapshot`: every level of the book. */
export interface BookData {
  readonly symbol: string;
  /** Best first: bids from the highest price down. */
  readonly bids: readonly BookLevelText[];
  /** Best first: asks from the lowest price up. */
  readonly asks: readonly BookLevelText[];
  /** The sequence the next update follows. */
  readonly sequence: number;
  /** CRC-32 of the top 10 levels (Kraken's book checksum). */
  readonly checksum: number;
}
/**
 * An `update`: one changed level, on the side whose field is an object (the other is `[]`), with
 * its new total. Updates come in the order the levels changed.
 */
export interface BookUpdateData {
  readonly symbol: string;
  readonly bids: BookLevelText | readonly [];
  readonly asks: BookLevelText | readonly [];
  /** +1 per update: a gap means lost messages. */
  readonly sequence: number;
  /** CRC-32 of the top 10 levels after this update (Kraken's book checksum). */
  readonly checksum: number;
}
export type BookMessage =
  | (ChannelMessage<'book', BookData> & { readonly type: 'snapshot' })
  | (ChannelMessage<'book', BookUpdateData> & { readonly type: 'update' });

/**
 * `amended`: an open order changed in place (an amend, or self-trade prevention's decrement).
 * `triggered`: a conditional order's trigger was reached; sent before the fills it causes, with
 * the order as it stands then (`trigger_conditions` `triggered: …`).
 */
export type ExecutionEvent = 'accepted' | 'triggered' | 'trade' | 'amended' | 'closed' | 'canceled';
export interface ExecutionData {
  readonly event: ExecutionEvent;
  /**
   * `amended` messages only: why the order changed (`amended by user`, `self-trade prevention
   * (decrement)`). Why an order ended is its `order.reason`.
   */
  readonly reason?: string;
  /** The order as GET /orders/:id shows it right after the event. */
  readonly order: Order;
  /** One for `trade`, none otherwise. */
  readonly trades: UserTrade[];
}
export interface ExecutionsSnapshot {
  /** Open orders, newest first. */
  readonly orders: Order[];
  /** More open orders exist than the snapshot carries. */
  readonly truncated: boolean;
}
export type ExecutionMessage =
  | (ChannelMessage<'executions', ExecutionsSnapshot> & { readonly type: 'snapshot' })
  | (ChannelMessage<'executions', ExecutionData> & { readonly type: 'update' });

/** Channel names use the pair joined without separator (`BTC/EUR` → `BTCEUR`). */
export const joinPair = (pair: string): string => pair.replace('/', '');

export const channelNames = {
  ticker: (pair: string): string => `ticker-information.${joinPair(pair)}`,
  ohlc: (pair: string, interval: Interval): string => `ohlc.${joinPair(pair)}.${interval}`,
  trade: (pair: string): string => `trade.${joinPair(pair)}`,
  book: (pair: string): string => `order-book.${joinPair(pair)}`,
  executions: (userId: number): string => `private-order-executed.${userId}`,
} as const;
