/**
 * The wire records of the interface (spot-trading-interface.md, "Resources and their fields"), as
 * a client sees them. Decimal quantities stay strings: converting them to numbers would lose
 * digits, so arithmetic on them is the caller's choice.
 */

/** A decimal quantity carried as a JSON string, e.g. "30000.5". */
export type Decimal = string;
export type Side = 'buy' | 'sell';
/**
 * Conditional orders (Kraken's names): they wait, unseen in the book, until the last trade price
 * reaches their trigger, then trade as a market order (`stop-loss`, `take-profit`,
 * `trailing-stop`) or as a limit order at their limit price (the two `-limit` types).
 */
export type ConditionalOrderType =
  | 'stop-loss'
  | 'take-profit'
  | 'stop-loss-limit'
  | 'take-profit-limit'
  | 'trailing-stop';
export type OrderType = 'limit' | 'market' | ConditionalOrderType;
export const CONDITIONAL_ORDER_TYPES: readonly ConditionalOrderType[] = [
  'stop-loss',
  'take-profit',
  'stop-loss-limit',
  'take-profit-limit',
  'trailing-stop',
];
export const ORDER_TYPES: readonly OrderType[] = ['limit', 'market', ...CONDITIONAL_ORDER_TYPES];

/** True for the five types that wait for a trigger. */
export const isConditional = (type: OrderType): type is ConditionalOrderType =>
  (CONDITIONAL_ORDER_TYPES as readonly string[]).includes(type);
/** The types whose request carries `price` (the limit price): `limit` and the two `-limit` types. */
export const takesLimitPrice = (type: OrderType): boolean =>
  type === 'limit' || type === 'stop-loss-limit' || type === 'take-profit-limit';
/** The types whose request carries `trigger_price`: the four stop and take-profit types. */
export const takesTriggerPrice = (type: OrderType): boolean =>
  isConditional(type) && type !== 'trailing-stop';
export type OrderStatus = 'open' | 'closed' | 'canceled';
/**
 * How long an order may rest: `GTC` until canceled (the default), `IOC` trades what it can at once
 * and cancels the rest, `FOK` trades in full at once or not at all, `GTD` until `expire_time`.
 */
export type TimeInForce = 'GTC' | 'IOC' | 'FOK' | 'GTD';
export const TIMES_IN_FORCE: readonly TimeInForce[] = ['GTC', 'IOC', 'FOK', 'GTD'];
/** Self-trade prevention: what happens when two orders of one user would trade together. */
export type SelfTradePrevention = 'cancel-oldest' | 'cancel-newest' | 'cancel-both' | 'decrement';
/** 1 to 36 characters of `[A-Za-z0-9_-]`: the server's rule for `client_order_id`. */
export const CLIENT_ORDER_ID = /^[A-Za-z0-9_-]{1,36}$/;
/** Candle intervals in minutes. */
export type Interval = 1 | 5 | 15 | 30 | 60 | 240 | 1440 | 10080 | 21600;
export const INTERVALS: readonly Interval[] = [1, 5, 15, 30, 60, 240, 1440, 10080, 21600];

export interface Market {
  readonly altname: string;
  /** Slash form `<BASE>/<QUOTE>`. */
  readonly wsname: string;
  readonly classBase: string;
  readonly base: string;
  readonly classQuote: string;
  readonly quote: string;
  /** Decimals of prices. */
  readonly pairDecimals: number;
  /** Decimals of volumes. */
  readonly lotDecimals: number;
  /** Minimum order volume. */
  readonly ordermin: Decimal;
}

export interface Ticker {
  /** Slash form. */
  readonly ticker_id: string;
  readonly base_currency: string;
  readonly target_currency: string;
  readonly last_price: Decimal;
  readonly base_volume: Decimal;
  readonly target_volume: Decimal;
  readonly bid: Decimal;
  readonly ask: Decimal;
  readonly high: Decimal;
  readonly low: Decimal;
}

export interface Candle {
  /** Unix seconds, possibly with a fraction. */
  readonly time: number;
  readonly open: Decimal;
  readonly high: Decimal;
  readonly low: Decimal;
  readonly close: Decimal;
  readonly vwap: Decimal;
  readonly volume: Decimal;
  readonly count: number;
}

/** [price, quantity]. */
export type BookLevel = readonly [Decimal, Decimal];

export interface OrderBook {
  readonly ticker_id: string;
  /** Unix seconds. */
  readonly timestamp: number;
  readonly bids: readonly BookLevel[];
  readonly asks: readonly BookLevel[];
}

export interface PublicTrade {
  readonly trade_id: number;
  readonly price: Decimal;
  readonly base_volume: Decimal;
  readonly target_volume: Decimal;
  /** Unix seconds, as a string. */
  readonly trade_timestamp: string;
  /** The taker's side. */
  readonly type: Side;
}

export interface HistoricalTrades {
  readonly buy: readonly PublicTrade[];
  readonly sell: readonly PublicTrade[];
}

export interface WalletEntry {
  readonly asset_id: string;
  readonly asset_name: string;
  /** Values seen: crypto, fiat; others are allowed. */
  readonly type: string;
  readonly balance: { readonly balance_total: Decimal; readonly balance_total_in_fiat: Decimal };
  readonly pending: {
    readonly has_pending: boolean;
    readonly balance_pending: Decimal;
    readonly balance_pending_in_fiat: Decimal;
  };
  readonly balance_currency: string;
}

export interface Money {
  readonly amount: Decimal;
  /** An asset code; a slash pair for the price inside an order's executions. */
  readonly currency: string;
}

/** One execution inside an order's `trades`. */
export interface OrderExecution {
  readonly id: number;
  /** `YYYY-MM-DD HH:MM:SS`, UTC. */
  readonly timestamp: string;
  readonly type: Side;
  readonly volume: Money;
  readonly price: Money;
  readonly cost: Money;
  readonly transaction_id: string;
}

export interface Order {
  readonly id: number;
  readonly user_id: number;
  readonly transaction_id: string;
  readonly status: OrderStatus;
  /** Unix seconds with 4 decimals. */
  readonly open_time: string;
  readonly close_time: string | null;
  readonly expire_time: string;
  readonly reason: string | null;
  /** Base and quote joined without separator. */
  readonly pair: string;
  readonly type: Side;
  readonly order_type: OrderType;
  readonly description: {
    readonly pair: string;
    readonly type: Side;
    readonly close: string;
    readonly order: string;
    /** A conditional order's trigger price (a trailing stop's current one); else its limit price. */
    readonly price: string;
    readonly leverage: string;
    readonly orderType: OrderType;
    /** Kraken's `price2`: the limit price of a `-limit` type; null for every other order. */
    readonly secondaryPrice: string | null;
  };
  readonly volume: Money;
  readonly volume_executed: Money;
  readonly fee: Money | null;
  /**
   * A limit order's limit price; a market order's average execution price (0 before any); a
   * conditional order's trigger price (a trailing stop's moves with the best price).
   */
  readonly price: Money;
  /** The limit price of a `-limit` type (Kraken's `price2`); null for every other order. */
  readonly secondary_price: Money | null;
  /** The limit price of a `-limit` type; null for every other order. */
  readonly limit_price: Money | null;
  readonly cost: Money | null;
  readonly asset_pair: {
    readonly id: number;
    readonly name: string;
    readonly display_name: string;
    readonly base_name: string;
    readonly quote_name: string;
  };
  /**
   * What a conditional order waits for, in words: `last price <= 58000.0`, a trailing stop's with
   * its offset and best price, `triggered: …` once it fired; the placeholder `none` for others.
   */
  readonly trigger_conditions: string;
  readonly trades: readonly OrderExecution[];
  /** The id the order was placed with; null when none. */
  readonly client_order_id?: string | null;
  /** Present only when not GTC. */
  readonly time_in_force?: TimeInForce;
  /** Present (true) only for a post-only order. */
  readonly post_only?: true;
  /** Present only when not `cancel-oldest`. */
  readonly stp?: SelfTradePrevention;
}

export interface UserTrade {
  readonly id: number;
  /** `YYYY-MM-DD HH:MM:SS`, UTC. */
  readonly timestamp: string;
  readonly type: Side;
  readonly order_id: number;
  readonly order_type: string;
  readonly pair_id: number;
  /** Slash form. */
  readonly pair: string;
  readonly volume: Money;
  readonly price: Money;
  readonly cost: Money;
  readonly fee: Money;
  readonly transaction_id: string;
  readonly leverage: unknown;
}

export interface PaginationMeta {
  readonly current_page: number;
  /** Null on an empty page (Laravel's paginator). */
  readonly from: number | null;
  readonly to: number | null;
  readonly path: string;
  readonly per_page: number;
  readonly total: number;
  readonly last_page: number;
}

/** The private success envelope without data (create, cancel). */
export interface BareEnvelope {
  readonly success: true;
  readonly message: string;
  /** Equals the HTTP status. */
  readonly code: number;
}

export interface Envelope<T> extends BareEnvelope {
  readonly data: T;
}

export interface PagedEnvelope<T> extends Envelope<T[]> {
  /** Present when `page-size` was given. */
  readonly meta?: PaginationMeta;
}

export interface CreatedOrder {
  /** From the `Location` header (`/v1/orders/<id>`), when the server sends one. */
  readonly id: number | undefined;
  readonly envelope: BareEnvelope;
}

/** One order of `POST /orders/batch`, in the order sent: placed, or refused on its own. */
export type BatchResult =
  | { readonly success: true; readonly id: number; readonly location: string }
  | {
      readonly success: false;
      readonly message: string;
      /** Shape D's fields: messages by request field. */
      readonly errors: Readonly<Record<string, readonly string[]>>;
    };

/** The answer of a cancel-all. */
export interface CanceledCount {
  readonly canceled: number;
}

/** The dead man's switch: when it fires, Unix seconds with 4 decimals; `"0.0000"` when disarmed. */
export interface CancelAllAfter {
  readonly trigger_time: string;
}

export interface ChannelAuth {
  readonly auth: string;
}

/** An API key and its base64 secret. */
export interface Credentials {
  readonly apiKey: string;
  readonly apiSecret: string;
}
