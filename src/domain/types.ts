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
export type OrderType = 'limit' | 'market';
export type OrderStatus = 'open' | 'closed' | 'canceled';
export type AssetType = 'crypto' | 'fiat';

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
} as const;
export type CancelReason = (typeof CancelReason)[keyof typeof CancelReason];

/** The joined pair name (`BTCEUR`) used in channel names, `pair` fields and `/markets` keys. */
export const joinedPair = (m: Pick<MarketSpec, 'base' | 'quote'>): string => `${m.base}${m.quote}`;
/** The slash form (`BTC/EUR`) used by `ticker_id`, `wsname` and `symbol`. */
export const slashPair = (m: Pick<MarketSpec, 'base' | 'quote'>): string => `${m.base}/${m.quote}`;
