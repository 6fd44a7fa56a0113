/**
 * The engine's contract: commands in, events out. Everything here is plain data so it can be
 * journaled, replayed and compared. Times arrive with the command; the engine never reads a clock.
 */
import type {
  AmendReason,
  Amount,
  AssetCode,
  AssetSpec,
  AssetType,
  ExecutionType,
  FeeRate,
  MarketId,
  MarketSpec,
  Micros,
  OrderId,
  OrderStatus,
  OrderType,
  Price,
  SelfTradeMode,
  Side,
  TimeInForce,
  TradeId,
  TrailingOffset,
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
  | PlaceOrder
  | { readonly kind: 'cancelOrder'; readonly userId: UserId; readonly orderId: OrderId }
  /** Cancels the user's open order with this client order id (order_not_found when none). */
  | { readonly kind: 'cancelClientOrder'; readonly userId: UserId; readonly clientOrderId: string }
  /**
   * Changes an open order in place (event `orderAmended`). Each field given is the new value;
   * `volume` is the new total volume, executed part included; `clientOrderId: null` removes the
   * id. Lowering the volume keeps the order's queue place; a new price or a higher volume moves it
   * to the back of its new level, and a new price that crosses the book trades at once as a
   * taker would (a post-only order is refused instead). At least one field must be given.
   */
  | {
      readonly kind: 'amendOrder';
      readonly userId: UserId;
      readonly orderId: OrderId;
      readonly price?: Price;
      readonly volume?: Volume;
      readonly clientOrderId?: string | null;
      /**
       * A waiting conditional order's new trigger price (not a trailing stop's: its trigger
       * follows the market); refused as on placement when it would fire at once.
       */
      readonly triggerPrice?: Price;
    }
  /** Cancels every open order of the user, or only those of one market. */
  | { readonly kind: 'cancelAllOrders'; readonly userId: UserId; readonly marketId?: MarketId }
  /**
   * The dead man's switch: arms (or moves) the user's deadline to the command's time plus
   * `timeout`; `timeout` 0 disarms it. When the deadline comes, every open order of the user is
   * canceled and the switch is disarmed until the next non-zero call.
   */
  | {
      readonly kind: 'cancelAllAfter';
      readonly userId: UserId;
      /** Microseconds, 0 to MAX_CANCEL_ALL_AFTER. */
      readonly timeout: Micros;
    }
  /**
   * 1 to MAX_BATCH_ORDERS orders placed in one step, in the order given, each accepted or refused
   * on its own (CommandResult.results, one per order). An empty or longer batch is refused whole.
   */
  | { readonly kind: 'placeOrders'; readonly orders: readonly PlaceOrder[] }
  /**
   * Moves time forward and nothing else: every GTD expiry and dead man's switch whose deadline
   * is at or before the command's time fires. (Any command does this first; a tick is what a
   * timer sends when no other command comes.)
   */
  | { readonly kind: 'tick' };

/**
 * A new order. The order-control fields are optional; left out, the order is what it was before
 * they existed: good till canceled, may take liquidity, no client id, self-trade mode
 * cancel-oldest, no expiry.
 */
export interface PlaceOrder {
  readonly kind: 'placeOrder';
  readonly userId: UserId;
  readonly marketId: MarketId;
  readonly side: Side;
  readonly type: OrderType;
  /**
   * Limit price in ticks: for `limit` and the `-limit` conditional types. Ignored for market
   * orders; must be 0 (absent from the request) for the other conditional types.
   */
  readonly price: Price;
  readonly volume: Volume;
  /**
   * `stop-loss`, `take-profit` and their `-limit` types only (and required there): the last trade
   * price, in ticks, that triggers the order. One the last price has reached already is refused.
   */
  readonly triggerPrice?: Price;
  /** `trailing-stop` only (and required there): the distance of its trigger from the best price seen. */
  readonly trailingOffset?: TrailingOffset;
  /** Default GTC. A market order takes GTC or IOC (it never rests either way). */
  readonly timeInForce?: TimeInForce;
  /** Default false. Only with a limit order that is GTC or GTD. */
  readonly postOnly?: boolean;
  /** 1 to 36 of [A-Za-z0-9_-], unique among the user's open orders; default null (none). */
  readonly clientOrderId?: string | null;
  /** Default cancel-oldest. */
  readonly stp?: SelfTradeMode;
  /**
   * GTD only (and required there): when the order is canceled, in the engine's time unit; after
   * the command's time and at most MAX_EXPIRY_AHEAD after it. Otherwise absent or 0.
   */
  readonly expireTime?: Micros;
}

/** The most orders one `placeOrders` command may carry. */
export const MAX_BATCH_ORDERS = 20;
/** The longest dead man's switch timeout: 86,400 s, in microseconds. */
export const MAX_CANCEL_ALL_AFTER = 86_400_000_000;
/** The furthest a GTD expire time may lie ahead of its command's time: 365 days, in microseconds. */
export const MAX_EXPIRY_AHEAD = 365 * 86_400_000_000;
/** Default of EngineOptions.maxOpenOrdersPerUser (MAX_OPEN_ORDERS_PER_USER). */
export const DEFAULT_MAX_OPEN_ORDERS_PER_USER = 1_000;

/** Settings that change what the engine decides, so every replica and replay must use the same. */
export interface EngineOptions {
  /**
   * How many open (resting) orders one user may have; an order that could rest (GTC or GTD limit)
   * is refused with `too_many_open_orders` when the user has this many. Default 1,000.
   */
  readonly maxOpenOrdersPerUser?: number;
}

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
  | 'order_not_open'
  /** time_in_force unknown, or FOK/GTD on a market order. */
  | 'invalid_time_in_force'
  /** post_only on a market order or with IOC/FOK. */
  | 'invalid_post_only'
  /** GTD without an expire time, or one not after the command's time, or more than a year ahead; or an expire time without GTD. */
  | 'invalid_expire_time'
  | 'invalid_client_order_id'
  /** Another open order of the user has this client order id. */
  | 'duplicate_client_order_id'
  | 'invalid_stp'
  /** The user has EngineOptions.maxOpenOrdersPerUser open orders already. */
  | 'too_many_open_orders'
  /** The order's quote value at its price is below one unit of the quote asset. */
  | 'order_value_too_small'
  /** Amend: the new volume is at or below what has already executed. */
  | 'volume_not_above_executed'
  /** Amend: a post-only order's new price would take liquidity. */
  | 'post_only_would_take'
  /** Amend: no field to change was given. */
  | 'nothing_to_amend'
  /** cancelAllAfter: the timeout is not a whole number from 0 to MAX_CANCEL_ALL_AFTER. */
  | 'invalid_timeout'
  /** placeOrders: no orders, or more than MAX_BATCH_ORDERS. */
  | 'invalid_batch'
  /**
   * A conditional order without a trigger price, or with one that is not a positive whole number
   * of ticks; or a trigger price on an order type that takes none (amend: on an order that is not
   * a waiting stop or take-profit).
   */
  | 'invalid_trigger_price'
  /** The trigger is reached by the last trade price already: the order would fire on arrival. */
  | 'trigger_would_fire'
  /** A limit price on `stop-loss`, `take-profit` or `trailing-stop`, which execute as market orders. */
  | 'price_not_allowed'
  /**
   * A trailing stop without an offset, or with one out of range (ticks: a positive whole number;
   * bps: 1 to 5,000, i.e. 0.01 % to 50 %); or an offset on any other type.
   */
  | 'invalid_trailing_offset'
  /** A conditional type with time in force IOC or FOK, or with post-only: it waits, so it is GTC or GTD. */
  | 'invalid_conditional_controls';

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
  // The order controls. Each is present only when it differs from the default, so an order that
  // uses none of them is the same object as before they existed (stores write `?? default`).
  /** Absent: GTC. */
  readonly timeInForce?: TimeInForce;
  /** Absent: false. */
  readonly postOnly?: true;
  /** Absent: none (the interface's null). */
  readonly clientOrderId?: string;
  /** Absent: cancel-oldest. */
  readonly stp?: SelfTradeMode;
  /** GTD only: when the order expires. Absent: no expiry (the interface's zero). */
  readonly expireTime?: Micros;
  /**
   * The order's place in time priority when that is not its id: set when an amend moved it to
   * the back of a level, to a number taken from the order id sequence (so it compares with other
   * orders' ids, and that id is never issued). Absent: its id. Committed state: a restore queues
   * each level's orders by it.
   */
  readonly priority?: number;
  // Conditional orders (types other than limit and market). Each is absent for every other order.
  /**
   * The last trade price, in ticks, that fires the order (a trailing stop's: where its offset from
   * `trailingBest` puts it now). Stays after the trigger, for the record.
   */
  readonly triggerPrice?: Price;
  /** A trailing stop's distance from the best price seen. */
  readonly trailingOffset?: TrailingOffset;
  /**
   * A trailing stop's best last trade price since it was placed (the highest for a sell, the
   * lowest for a buy); absent until the market's first trade when it had none at placement.
   */
  readonly trailingBest?: Price;
  /**
   * Present once the trigger fired: the order then matches (and may rest, for a `-limit` type) as
   * a market or limit order. Absent: it is waiting, outside the book.
   */
  readonly triggered?: true;
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
  /**
   * How the taker matched. A triggered conditional order takes in its execution form
   * (executionTypeOf), so trades keep today's two values.
   */
  readonly takerType: ExecutionType;
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
  | { readonly type: 'orderDone'; readonly order: OrderState }
  /**
   * An open order changed in place: its new state (price, volume, client id, reservation). By
   * its owner's amend, or by self-trade prevention in mode decrement (`reason` says which).
   * Trades may follow (an amended price that crosses), and `orderDone` if it then ends.
   */
  | { readonly type: 'orderAmended'; readonly order: OrderState; readonly reason: AmendReason }
  /** The user's dead man's switch was armed or moved (`triggerTime`), or disarmed (0). */
  | {
      readonly type: 'cancelAllAfterSet';
      readonly userId: UserId;
      readonly triggerTime: Micros;
      readonly time: Micros;
    }
  /**
   * The user's dead man's switch fired at `triggerTime`; an `orderDone` per canceled order
   * follows. The switch is disarmed afterwards.
   */
  | { readonly type: 'cancelAllAfterFired'; readonly userId: UserId; readonly triggerTime: Micros }
  /**
   * A conditional order's trigger fired: the last trade price (`lastPrice`, of the trade that
   * crossed it) reached its trigger. The order's new state (`triggered`) follows, and then its
   * trades and `orderDone` if it ends, in the same command as the crossing trade.
   */
  | {
      readonly type: 'orderTriggered';
      readonly order: OrderState;
      readonly lastPrice: Price;
      readonly time: Micros;
    };

/** One order of a `placeOrders` batch: its id, or why it was refused. */
export type PlaceResult =
  | { readonly ok: true; readonly orderId: OrderId }
  | { readonly ok: false; readonly error: Rejection };

export type CommandResult =
  | {
      readonly ok: true;
      readonly events: readonly EngineEvent[];
      /** `placeOrders` only: one result per order, in the order given. */
      readonly results?: readonly PlaceResult[];
    }
  | {
      readonly ok: false;
      readonly error: Rejection;
      /**
       * Present only when deadlines (GTD expiries, dead man's switches) due at the command's time
       * fired before the command itself was refused: those changes happened and must be
       * persisted and published like any command's events.
       */
      readonly events?: readonly EngineEvent[];
    };

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

/** A user's dead man's switch: when it fires, or 0 when it is disarmed. */
export interface SwitchState {
  readonly userId: UserId;
  readonly triggerTime: Micros;
}

/** What changed since the last drain: what a store must write to persist the engine's state. */
export interface ChangeSet {
  readonly orders: readonly OrderState[];
  /**
   * Dead man's switches armed, moved, disarmed or fired since the last drain, each user once with
   * its switch now (triggerTime 0: none armed any more). Absent when none changed, so a change set
   * without the feature is what it was before it existed.
   */
  readonly switches?: readonly SwitchState[];
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
  /** Open orders in time priority (ascending `priority ?? id`; restore sorts them so anyway). */
  readonly openOrders: readonly OrderState[];
  /** Armed dead man's switches (triggerTime > 0) in ascending user id; absent: none. */
  readonly switches?: readonly SwitchState[];
  /**
   * Each market's last trade price, in ascending market id, for the markets that traded: what
   * conditional orders are triggered and refused by. A store gives it from its last trade of
   * each market (a change set carries no last prices: its trades say them). Absent on restore:
   * no market has a last price until its next trade.
   */
  readonly lastPrices?: readonly LastPrice[];
  readonly sequences: Sequences;
}

/** A market's last trade price, in ticks. */
export interface LastPrice {
  readonly marketId: MarketId;
  readonly price: Price;
}

/** Aggregated book side: [price, total volume] from best to worst. */
export type BookLevels = ReadonlyArray<readonly [Price, Volume]>;
