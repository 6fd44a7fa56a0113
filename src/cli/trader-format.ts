/**
 * Human-readable views of the trader commands: table rows picked from the wire records, and the
 * live order book screen of `book --watch`. Pure functions, so the layout is testable without a
 * terminal. Decimal strings are shown as received (no float rounding).
 */
import type { BookLevelText, TickerItem, TradeItem } from '../client/channels.js';
import { subtractDecimal } from '../client/decimal.js';
import {
  isConditional,
  type Market,
  type Order,
  type OrderBook,
  type Ticker,
  type UserTrade,
  type WalletEntry,
} from '../client/types.js';
import { table } from './table.js';

type Row = Record<string, unknown>;

export const marketRows = (markets: Record<string, Market>): Row[] =>
  Object.entries(markets).map(([pair, m]) => ({
    pair,
    wsname: m.wsname,
    base: m.base,
    quote: m.quote,
    price_decimals: m.pairDecimals,
    volume_decimals: m.lotDecimals,
    ordermin: m.ordermin,
  }));

export const tickerRows = (tickers: readonly Ticker[]): Row[] =>
  tickers.map((t) => ({
    pair: t.ticker_id,
    last: t.last_price,
    bid: t.bid,
    ask: t.ask,
    high: t.high,
    low: t.low,
    volume: t.base_volume,
    quote_volume: t.target_volume,
  }));

export const balanceRows = (entries: readonly WalletEntry[]): Row[] =>
  entries.map((e) => ({
    asset: e.asset_id,
    total: e.balance.balance_total,
    in_orders: e.pending.balance_pending,
    available: subtractDecimal(e.balance.balance_total, e.pending.balance_pending),
    value: `${e.balance.balance_total_in_fiat} ${e.balance_currency}`,
  }));

const unixTime = (seconds: string | null): string =>
  seconds === null
    ? '-'
    : new Date(Math.floor(Number(seconds)) * 1000).toISOString().slice(0, 19).replace('T', ' ');

/**
 * An order's row. A conditional order's `price` column is the price it trades at once triggered
 * (its limit price, or `market`), and `trigger` says what it waits for (the record's `price` is
 * its trigger price, which the condition already shows).
 */
export const orderRows = (orders: readonly Order[]): Row[] =>
  orders.map((o) => ({
    id: o.id,
    pair: o.asset_pair.display_name,
    side: o.type,
    type: o.order_type,
    price: isConditional(o.order_type) ? (o.limit_price?.amount ?? 'market') : o.price.amount,
    trigger: isConditional(o.order_type) ? o.trigger_conditions : null,
    volume: o.volume.amount,
    executed: o.volume_executed.amount,
    status: o.status,
    opened: unixTime(o.open_time),
    client_id: o.client_order_id ?? null,
    reason: o.reason,
  }));

export const tradeRows = (trades: readonly UserTrade[]): Row[] =>
  trades.map((t) => ({
    id: t.id,
    time: t.timestamp,
    pair: t.pair,
    side: t.type,
    price: t.price.amount,
    volume: t.volume.amount,
    cost: `${t.cost.amount} ${t.cost.currency}`,
    fee: `${t.fee.amount} ${t.fee.currency}`,
    order: t.order_id,
  }));

/** Bids and asks side by side, best first, `depth` rows. */
export function bookTable(
  bids: readonly (readonly [string, string])[],
  asks: readonly (readonly [string, string])[],
  depth: number,
): string {
  const rows: Row[] = [];
  for (let i = 0; i < Math.min(depth, Math.max(bids.length, asks.length)); i += 1) {
    rows.push({
      bid_qty: bids[i]?.[1] ?? '',
      bid: bids[i]?.[0] ?? '',
      ask: asks[i]?.[0] ?? '',
      ask_qty: asks[i]?.[1] ?? '',
    });
  }
  return rows.length === 0 ? '(empty book)' : table(rows);
}

export const restBookTable = (book: OrderBook, depth: number): string =>
  bookTable(book.bids, book.asks, depth);

const pairs = (levels: readonly BookLevelText[]) => levels.map((l) => [l.price, l.qty] as const);

export interface WatchState {
  readonly symbol: string;
  readonly connection: string;
  readonly sequence: number | undefined;
  readonly synced: boolean;
  readonly bids: readonly BookLevelText[];
  readonly asks: readonly BookLevelText[];
  readonly ticker: TickerItem | undefined;
  /** Newest first. */
  readonly trades: readonly TradeItem[];
  readonly depth: number;
  readonly notice: string | undefined;
}

/** The whole `book --watch` screen as text (the caller clears the terminal and writes it). */
export function renderWatch(s: WatchState): string {
  const t = s.ticker;
  const head = [
    s.symbol,
    t === undefined
      ? ''
      : `last ${t.last}  24h ${t.change_pct}%  high ${t.high}  low ${t.low}  vol ${t.volume}`,
  ]
    .filter((x) => x !== '')
    .join('   ');
  const status = `[${s.connection}${s.synced ? `, seq ${s.sequence}` : ', waiting for snapshot'}]`;
  const trades =
    s.trades.length === 0
      ? '(no trades yet)'
      : table(
          s.trades.map((x) => ({
            time: x.timestamp.slice(11, 19),
            side: x.side,
            price: x.price,
            qty: x.qty,
            type: x.ord_type,
          })),
        );
  return [
    `${head}   ${status}`,
    '',
    bookTable(pairs(s.bids), pairs(s.asks), s.depth),
    '',
    'Last trades',
    trades,
    '',
    s.notice ?? 'Ctrl-C to quit',
  ].join('\n');
}
