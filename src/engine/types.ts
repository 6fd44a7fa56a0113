/**
 * The engine's contract: commands in, events out. Everything here is plain data so it can be
 * journaled, replayed and compared. Times arrive with the command; the engine never reads a clock.
 */
import type {
  Amount,
  AssetCode,
  AssetSpec,
  AssetType,
  FeeRate,
  MarketId,
  MarketSpec,
  Micros,
  OrderId,
  OrderStatus,
  OrderType,
  Price,
  Side,
  TradeId,
  UserId,
  Volume,
} from '../domain/types.js';

export type Command =
  | {
      readonly kind: 'createAsset';
      readonly code: string;
      readonly name: string;
      readonly type: AssetType;
      readonly decimals: number;
    }
  | {
      readonly kind: 'createMarket';
      readonly base: AssetCode;
      readonly quote: AssetCode;
      readonly pairDecimals: number;
      readonly lotDecimals: number;
      readonly ordermin: Volume;
      readonly makerFee: FeeRate;
      readonly takerFee: FeeRate;
    }
  | { readonly kind: 'deposit'; readonly userId: UserId; readonly asset: AssetCode; readonly amount: Amount }
  | { readonly kind: 'withdraw'; readonly userId: UserId; readonly asset: AssetCode; readonly amount: Amount }
  | {
      readonly kind: 'placeOrder';
      readonly userId: UserId;
      readonly marketId: MarketId;
      readonly side: Side;
      readonly type: OrderType;
      /** Limit price in ticks; ignored for market orders. */
      readonly price: Price;
      readonly volume: Volume;
    }
  | { readonly kind: 'cancelOrder'; readonly userId: UserId; readonly orderId: OrderId };

export type RejectCode =
  | 'asset_exists'
  | 'unknown_asset'
  | 'market_exists'
  | 'unknown_market'
  | 'invalid_decimals'
  | 'invalid_amount'
  | 'invalid_price'
  | 'invalid_volume'
  | 'below_ordermin'
  | 'too_large'
  | 'insufficient_funds'
  | 'order_not_found'
  | 'order_not_open';

export interface Rejection {
  readonly code: RejectCode;
  readonly message: string;
  /** The input field the rejection is about, when there is one (for 422 bodies). */
  readonly field?: string;
}

/** An order as the engine knows it at one instant; the store keeps the last one of each id. */
export interface OrderState {
  readonly id: OrderId;
  readonly userId: UserId;
  readonly marketId: MarketId;
  readonly side: Side;
  readonly type: OrderType;
  /** Limit price in ticks; 0 for market orders. */
  readonly price: Price;
  readonly volume: Volume;
  readonly executed: Volume;
  readonly status: OrderStatus;
  readonly reason: string | null;
  readonly openTime: Micros;
  readonly closeTime: Micros | null;
  /** Sum of the trade costs of this order, in quote units. */
  readonly cost: Amount;
  /** Sum of the fees this order paid, in quote units: ceil(Σ costᵢ × rateᵢ / 10^8). */
  readonly fee: Amount;
  /**
   * How much `fee` exceeds the exact Σ costᵢ × rateᵢ / 10^8, in 10^-8 quote units
   * (0 <= feeExcess < 10^8); what the next fill's rounding needs (docs/money.md).
   */
  readonly feeExcess: number;
  /** What the order still holds: quote units for a buy, base units for a sell. */
  readonly reserved: Amount;
}

export interface Trade {
  readonly id: TradeId;
  readonly marketId: MarketId;
  readonly price: Price;
  readonly volume: Volume;
  /** price x volume in quote units, rounded down; fees rounded up per order (docs/money.md). */
  readonly cost: Amount;
  readonly takerOrderId: OrderId;
  readonly makerOrderId: OrderId;
  readonly takerUserId: UserId;
  readonly makerUserId: UserId;
  readonly takerSide: Side;
  readonly takerType: OrderType;
  readonly takerFee: Amount;
  readonly makerFee: Amount;
  readonly time: Micros;
}

export type EngineEvent =
  | { readonly type: 'assetCreated'; readonly asset: AssetSpec }
  | { readonly type: 'marketCreated'; readonly market: MarketSpec }
  | {
      readonly type: 'deposited';
      readonly userId: UserId;
      readonly asset: AssetCode;
      readonly amount: Amount;
      readonly time: Micros;
    }
  | {
      readonly type: 'withdrawn';
      readonly userId: UserId;
      readonly asset: AssetCode;
      readonly amount: Amount;
      readonly time: Micros;
    }
  /** A new order, before it matches: status open, nothing executed. */
  | { readonly type: 'orderAccepted'; readonly order: OrderState }
  | { readonly type: 'trade'; readonly trade: Trade }
  /** An order reached a final status (closed or canceled). */
  | { readonly type: 'orderDone'; readonly order: OrderState };

export type CommandResult =
  | { readonly ok: true; readonly events: readonly EngineEvent[] }
  | { readonly ok: false; readonly error: Rejection };

export interface BalanceState {
  readonly userId: UserId;
  readonly asset: AssetCode;
  readonly available: Amount;
  readonly reserved: Amount;
}

export interface AssetTotals {
  readonly asset: AssetCode;
  /** Sum of all deposits minus all withdrawals, in ledger units. */
  readonly netDeposits: Amount;
  /** Fees (and nothing else) collected by the exchange. */
  readonly fees: Amount;
}

export interface Sequences {
  readonly nextOrderId: number;
  readonly nextTradeId: number;
  readonly nextMarketId: number;
}

/**
 * One price level whose total changed (net, over the drain), with its total before; the new
 * total is read from the book when it is needed. Listed per market in the order of the levels'
 * first changes.
 */
export interface LevelKey {
  readonly marketId: MarketId;
  readonly side: Side;
  readonly price: Price;
  /** The level's total at the previous drain (0: there was no level). */
  readonly before: Volume;
}

/** What changed since the last drain: what a store must write to persist the engine's state. */
export interface ChangeSet {
  readonly orders: readonly OrderState[];
  readonly balances: readonly BalanceState[];
  readonly totals: readonly AssetTotals[];
  readonly levels: readonly LevelKey[];
  readonly sequences: Sequences;
}

/** Everything the engine needs to continue exactly where it stopped. */
export interface EngineSnapshot {
  readonly assets: readonly AssetSpec[];
  readonly markets: readonly MarketSpec[];
  readonly balances: readonly BalanceState[];
  readonly totals: readonly AssetTotals[];
  /** Open orders in ascending id order, which is their time priority. */
  readonly openOrders: readonly OrderState[];
  readonly sequences: Sequences;
}

/** Aggregated book side: [price, total volume] from best to worst. */
export type BookLevels = ReadonlyArray<readonly [Price, Volume]>;
