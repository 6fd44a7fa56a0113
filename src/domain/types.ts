/**
 * Domain vocabulary shared by every layer. Quantities are integers of a fixed smallest unit
 * (see money.ts); the brand says which unit, so a price can't be added to a volume by accident.
 */
declare const brand: unique symbol;
export type Brand<T, B extends string> = T & { readonly [brand]: B };

export type UserId = Brand<number, 'UserId'>;
export type OrderId = Brand<number, 'OrderId'>;
export type TradeId = Brand<number, 'TradeId'>;
export type MarketId = Brand<number, 'MarketId'>;
export type AssetCode = Brand<string, 'AssetCode'>;

/** A price in ticks of 10^-pairDecimals quote units per whole base unit. */
export type Price = Brand<number, 'Price'>;
/** An order volume in lots of 10^-lotDecimals base units. */
export type Volume = Brand<number, 'Volume'>;
/** An amount of an asset in its ledger units, 10^-decimals of one whole unit. */
export type Amount = Brand<number, 'Amount'>;
/** A fee rate in units of 10^-8 (0.0016 = 160000). */
export type FeeRate = Brand<number, 'FeeRate'>;
/** Wall-clock time in whole microseconds since the Unix epoch, taken by an adapter, never by the engine. */
export type Micros = Brand<number, 'Micros'>;

export type Side = 'buy' | 'sell';
export type OrderType = 'limit' | 'market' | ConditionalType;
/**
 * Conditional orders (Kraken's names): they wait, reserved but outside the book, until the last
 * trade price reaches their trigger, then execute as a market order (`stop-loss`, `take-profit`,
 * `trailing-stop`) or a limit order (`stop-loss-limit`, `take-profit-limit`).
 */
export type ConditionalType =
  | 'stop-loss'
  | 'take-profit'
  | 'stop-loss-limit'
  | 'take-profit-limit'
  | 'trailing-stop';
/** How an order matches once it may: a conditional order's form after its trigger. */
export type ExecutionType = 'limit' | 'market';
export const CONDITIONAL_TYPES: readonly ConditionalType[] = [
  'stop-loss',
  'take-profit',
  'stop-loss-limit',
  'take-profit-limit',
  'trailing-stop',
];
export const isConditionalType = (type: OrderType): type is ConditionalType =>
  type !== 'limit' && type !== 'market';
/** The form a type matches in: the `-limit` types and `limit` as limit orders, the rest as market orders. */
export const executionTypeOf = (type: OrderType): ExecutionType =>
  type === 'limit' || type === 'stop-loss-limit' || type === 'take-profit-limit' ? 'limit' : 'market';
/**
 * Which way the last trade price must move to fire a conditional order: a sell stop-loss, a buy
 * take-profit and a sell trailing stop fire when it falls to their trigger or below; the others
 * when it rises to it or above.
 */
export const fallsToTrigger = (type: ConditionalType, side: Side): boolean =>
  (type === 'stop-loss' || type === 'stop-loss-limit' || type === 'trailing-stop') === (side === 'sell');
/**
 * A trailing stop's distance from the best price seen: `ticks` of the market's price (a positive
 * whole number), or `bps` basis points of that price (1 = 0.01 %, 5,000 = 50 %), the trigger then
 * rounded to a whole tick away from the best price (docs/interface-decisions.md). Integers only.
 */
export interface TrailingOffset {
  readonly unit: TrailingOffsetUnit;
  readonly amount: number;
}
export type TrailingOffsetUnit = 'ticks' | 'bps';
/** The range of a percentage trailing offset, in basis points: 0.01 % to 50 %. */
export const MIN_TRAILING_BPS = 1;
export const MAX_TRAILING_BPS = 5_000;
export type OrderStatus = 'open' | 'closed' | 'canceled';
export type AssetType = 'crypto' | 'fiat';
/**
 * How long an order may work: GTC rests until canceled (today's limit order), IOC cancels what
 * does not trade at once, FOK trades its whole volume at once or nothing, GTD rests until its
 * expire time.
 */
export type TimeInForce = 'GTC' | 'IOC' | 'FOK' | 'GTD';
/**
 * Self-trade prevention, decided by the taker's mode when it meets a resting order of its own
 * user: cancel the resting order (today's rule), the taker, both, or (decrement) trade nothing and
 * reduce the larger of the two by the smaller's remaining volume, canceling the smaller.
 */
export type SelfTradeMode = 'cancel-oldest' | 'cancel-newest' | 'cancel-both' | 'decrement';

export const FEE_RATE_DECIMALS = 8;

export interface AssetSpec {
  readonly code: AssetCode;
  readonly name: string;
  readonly type: AssetType;
  /** Ledger precision: balances of this asset are integers of 10^-decimals. */
  readonly decimals: number;
}

export interface MarketSpec {
  readonly id: MarketId;
  readonly base: AssetCode;
  readonly quote: AssetCode;
  readonly pairDecimals: number;
  readonly lotDecimals: number;
  /** Minimum order volume, in lots. */
  readonly ordermin: Volume;
  readonly makerFee: FeeRate;
  readonly takerFee: FeeRate;
}

/** Cancellation reasons; the interface leaves the texts open (docs/interface-decisions.md). */
export const CancelReason = {
  user: 'canceled by user',
  selfTrade: 'self-trade prevention',
  noLiquidity: 'no liquidity',
  insufficientFunds: 'insufficient funds',
  /** An IOC order's remainder that did not trade at once. */
  immediateOrCancel: 'immediate-or-cancel remainder',
  /** A FOK order that could not trade its whole volume at once (it traded nothing). */
  fillOrKill: 'fill-or-kill not filled',
  /** A post-only order that would have taken liquidity on arrival (it traded nothing). */
  postOnly: 'post-only would take liquidity',
  /** A GTD order whose expire time came. */
  expired: 'expired',
  /** Canceled by the owner's dead man's switch (cancel-all-after) firing. */
  deadMansSwitch: "dead man's switch",
  /** Canceled by the owner's cancel-all request. */
  cancelAll: 'canceled by cancel-all',
  /** Self-trade prevention, the taker's mode cancel-newest: the taker was canceled. */
  selfTradeNewest: 'self-trade prevention (cancel newest)',
  /** Self-trade prevention, the taker's mode cancel-both: each of the two orders was canceled. */
  selfTradeBoth: 'self-trade prevention (cancel both)',
  /** Self-trade prevention, the taker's mode decrement: the smaller of the two orders was canceled. */
  selfTradeDecrement: 'self-trade prevention (decrement)',
} as const;
export type CancelReason = (typeof CancelReason)[keyof typeof CancelReason];

/** Why an order changed in place (the `orderAmended` event); docs/interface-decisions.md. */
export const AmendReason = {
  /** The owner amended price, volume or client order id. */
  user: 'amended by user',
  /** Self-trade prevention, mode decrement: reduced by the other order's remaining volume. */
  selfTradeDecrement: 'self-trade prevention (decrement)',
} as const;
export type AmendReason = (typeof AmendReason)[keyof typeof AmendReason];

/** The joined pair name (`BTCEUR`) used in channel names, `pair` fields and `/markets` keys. */
export const joinedPair = (m: Pick<MarketSpec, 'base' | 'quote'>): string => `${m.base}${m.quote}`;
/** The slash form (`BTC/EUR`) used by `ticker_id`, `wsname` and `symbol`. */
export const slashPair = (m: Pick<MarketSpec, 'base' | 'quote'>): string => `${m.base}/${m.quote}`;
