/**
 * Row shapes as SQLite returns them and their conversion to domain values. The CHECK constraints
 * of the schema guarantee the enumerated text columns, so the casts here only restore the brands.
 */
import type {
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
  TrailingOffsetUnit,
  UserId,
  Volume,
} from '../../domain/types.js';
import type {
  AssetTotals,
  BalanceState,
  LastPrice,
  OrderState,
  Sequences,
  SwitchState,
  Trade,
} from '../../engine/types.js';
import type { Candle, Interval } from '../../market-data/candle.js';
import type { ApiKeyRecord, ApiKeyScope, LedgerEntry, LedgerKind, UserRecord, UserTrade } from '../store.js';

export interface AssetRow {
  readonly code: string;
  readonly name: string;
  readonly type: AssetType;
  readonly decimals: number;
}

export interface MarketRow {
  readonly id: number;
  readonly base: string;
  readonly quote: string;
  readonly pair_decimals: number;
  readonly lot_decimals: number;
  readonly ordermin: number;
  readonly maker_fee: number;
  readonly taker_fee: number;
}

export interface BalanceRow {
  readonly user_id: number;
  readonly asset: string;
  readonly available: number;
  readonly reserved: number;
}

export interface TotalsRow {
  readonly asset: string;
  readonly net_deposits: number;
  readonly fees: number;
}

export interface OrderRow {
  readonly id: number;
  readonly user_id: number;
  readonly market_id: number;
  readonly side: Side;
  readonly type: OrderType;
  readonly price: number;
  readonly volume: number;
  readonly executed: number;
  readonly status: OrderStatus;
  readonly reason: string | null;
  readonly open_time: number;
  readonly close_time: number | null;
  readonly cost: number;
  readonly fee: number;
  readonly reserved: number;
  readonly fee_excess: number;
  readonly time_in_force: TimeInForce;
  readonly expire_time: number;
  /** 0 or 1 in SQLite; a boolean from PostgreSQL. */
  readonly post_only: number | boolean;
  readonly client_order_id: string | null;
  readonly stp: SelfTradeMode;
  readonly priority: number | null;
  readonly trigger_price: number | null;
  readonly trailing_unit: TrailingOffsetUnit | null;
  readonly trailing_amount: number | null;
  readonly trailing_best: number | null;
  /** 0 or 1 in SQLite; a boolean from PostgreSQL. */
  readonly triggered: number | boolean;
}

export interface TradeRow {
  readonly id: number;
  readonly market_id: number;
  readonly price: number;
  readonly volume: number;
  readonly cost: number;
  readonly taker_order_id: number;
  readonly maker_order_id: number;
  readonly taker_user_id: number;
  readonly maker_user_id: number;
  readonly taker_side: Side;
  readonly taker_type: ExecutionType;
  readonly taker_fee: number;
  readonly maker_fee: number;
  readonly time: number;
}

export interface CandleRow {
  readonly market_id: number;
  readonly interval: Interval;
  readonly start: number;
  readonly open: number;
  readonly high: number;
  readonly low: number;
  readonly close: number;
  /** Canonical decimal digits (TEXT): sums over trades may exceed SQLite's 64-bit integers. */
  readonly volume: string;
  readonly quote_volume: string;
  readonly notional: string;
  readonly count: number;
}

export interface LedgerRow {
  readonly user_id: number;
  readonly asset: string;
  readonly kind: LedgerKind;
  readonly amount: number;
  readonly reference: string | null;
  readonly time: number;
}

export interface UserRow {
  readonly id: number;
  readonly email: string | null;
  readonly created_at: number;
}

export interface ApiKeyRow {
  readonly key: string;
  readonly user_id: number;
  readonly sealed_secret: string;
  readonly scopes: string;
  readonly created_at: number;
  readonly revoked_at: number | null;
  readonly ip_allowlist: string | null;
  readonly nonce_required: number;
}

export const API_KEY_COLUMNS =
  'key, user_id, sealed_secret, scopes, created_at, revoked_at, ip_allowlist, nonce_required';

export const ORDER_COLUMNS =
  'id, user_id, market_id, side, type, price, volume, executed, status, reason, open_time, close_time, cost, fee, reserved, fee_excess, time_in_force, expire_time, post_only, client_order_id, stp, priority, trigger_price, trailing_unit, trailing_amount, trailing_best, triggered';
export const TRADE_COLUMNS =
  'id, market_id, price, volume, cost, taker_order_id, maker_order_id, taker_user_id, maker_user_id, taker_side, taker_type, taker_fee, maker_fee, time';
export const CANDLE_COLUMNS =
  'market_id, interval, start, open, high, low, close, volume, quote_volume, notional, count';

export const assetFromRow = (r: AssetRow): AssetSpec => ({
  code: r.code as AssetCode,
  name: r.name,
  type: r.type,
  decimals: r.decimals,
});

export const marketFromRow = (r: MarketRow): MarketSpec => ({
  id: r.id as MarketId,
  base: r.base as AssetCode,
  quote: r.quote as AssetCode,
  pairDecimals: r.pair_decimals,
  lotDecimals: r.lot_decimals,
  ordermin: r.ordermin as Volume,
  makerFee: r.maker_fee as FeeRate,
  takerFee: r.taker_fee as FeeRate,
});

export const balanceFromRow = (r: BalanceRow): BalanceState => ({
  userId: r.user_id as UserId,
  asset: r.asset as AssetCode,
  available: r.available as Amount,
  reserved: r.reserved as Amount,
});

export const totalsFromRow = (r: TotalsRow): AssetTotals => ({
  asset: r.asset as AssetCode,
  netDeposits: r.net_deposits as Amount,
  fees: r.fees as Amount,
});

export function orderFromRow(r: OrderRow): OrderState {
  const order: OrderState = {
    id: r.id as OrderId,
    userId: r.user_id as UserId,
    marketId: r.market_id as MarketId,
    side: r.side,
    type: r.type,
    price: r.price as Price,
    volume: r.volume as Volume,
    executed: r.executed as Volume,
    status: r.status,
    reason: r.reason,
    openTime: r.open_time as Micros,
    closeTime: r.close_time as Micros | null,
    cost: r.cost as Amount,
    fee: r.fee as Amount,
    feeExcess: r.fee_excess,
    reserved: r.reserved as Amount,
  };
  // The engine leaves out every control at its default (engine/types.ts, OrderState): so does the
  // store, so an order read back is the very state the engine drained.
  const postOnly = r.post_only === 1 || r.post_only === true;
  const triggered = r.triggered === 1 || r.triggered === true;
  if (
    r.time_in_force === 'GTC' &&
    r.expire_time === 0 &&
    !postOnly &&
    r.client_order_id === null &&
    r.stp === 'cancel-oldest' &&
    r.priority === null &&
    r.trigger_price === null &&
    r.trailing_unit === null &&
    !triggered
  )
    return order;
  return {
    ...order,
    ...(r.time_in_force === 'GTC' ? {} : { timeInForce: r.time_in_force }),
    ...(postOnly ? { postOnly: true } : {}),
    ...(r.client_order_id === null ? {} : { clientOrderId: r.client_order_id }),
    ...(r.stp === 'cancel-oldest' ? {} : { stp: r.stp }),
    ...(r.expire_time === 0 ? {} : { expireTime: r.expire_time as Micros }),
    ...(r.priority === null ? {} : { priority: r.priority }),
    // A conditional order's trigger fields, present as the engine's state has them.
    ...(r.trigger_price === null ? {} : { triggerPrice: r.trigger_price as Price }),
    ...(r.trailing_unit === null || r.trailing_amount === null
      ? {}
      : { trailingOffset: { unit: r.trailing_unit, amount: r.trailing_amount } }),
    ...(r.trailing_best === null ? {} : { trailingBest: r.trailing_best as Price }),
    ...(triggered ? { triggered: true } : {}),
  };
}

/**
 * An order's conditional columns (trigger_price, trailing_unit, trailing_amount, trailing_best,
 * triggered), NULL / false for any other order: what both stores write after the control columns.
 */
export function orderTriggerValues(
  o: OrderState,
): [number | null, TrailingOffsetUnit | null, number | null, number | null, boolean] {
  return [
    o.triggerPrice ?? null,
    o.trailingOffset?.unit ?? null,
    o.trailingOffset?.amount ?? null,
    o.trailingBest ?? null,
    o.triggered === true,
  ];
}

/**
 * An order's control columns (time_in_force, expire_time, post_only, client_order_id, stp,
 * priority), the defaults written out (priority: null for its id): the values both stores write
 * after the sixteen original columns.
 */
export function orderControlValues(
  o: OrderState,
): [TimeInForce, number, boolean, string | null, SelfTradeMode, number | null] {
  return [
    o.timeInForce ?? 'GTC',
    o.expireTime ?? 0,
    o.postOnly === true,
    o.clientOrderId ?? null,
    o.stp ?? 'cancel-oldest',
    o.priority ?? null,
  ];
}

export const switchFromRow = (r: { user_id: number; trigger_time: number }): SwitchState => ({
  userId: r.user_id as UserId,
  triggerTime: r.trigger_time as Micros,
});

export const tradeFromRow = (r: TradeRow): Trade => ({
  id: r.id as TradeId,
  marketId: r.market_id as MarketId,
  price: r.price as Price,
  volume: r.volume as Volume,
  cost: r.cost as Amount,
  takerOrderId: r.taker_order_id as OrderId,
  makerOrderId: r.maker_order_id as OrderId,
  takerUserId: r.taker_user_id as UserId,
  makerUserId: r.maker_user_id as UserId,
  takerSide: r.taker_side,
  takerType: r.taker_type,
  takerFee: r.taker_fee as Amount,
  makerFee: r.maker_fee as Amount,
  time: r.time as Micros,
});

const opposite = (side: Side): Side => (side === 'buy' ? 'sell' : 'buy');

/** The trade as `userId` took part in it; the caller has selected a trade this user is in. */
export function userTradeFromRow(r: TradeRow, userId: UserId): UserTrade {
  const trade = tradeFromRow(r);
  const taker = r.taker_user_id === userId;
  return {
    trade,
    orderId: taker ? trade.takerOrderId : trade.makerOrderId,
    side: taker ? trade.takerSide : opposite(trade.takerSide),
    fee: taker ? trade.takerFee : trade.makerFee,
    taker,
  };
}

export const candleFromRow = (r: CandleRow): Candle => ({
  marketId: r.market_id as MarketId,
  interval: r.interval,
  start: r.start,
  open: r.open as Price,
  high: r.high as Price,
  low: r.low as Price,
  close: r.close as Price,
  volume: BigInt(r.volume),
  quoteVolume: BigInt(r.quote_volume),
  notional: BigInt(r.notional),
  count: r.count,
});

export const ledgerFromRow = (r: LedgerRow): LedgerEntry => ({
  userId: r.user_id as UserId,
  asset: r.asset as AssetCode,
  kind: r.kind,
  amount: r.amount as Amount,
  reference: r.reference,
  time: r.time as Micros,
});

export const userFromRow = (r: UserRow): UserRecord => ({
  id: r.id as UserId,
  email: r.email,
  createdAt: r.created_at as Micros,
});

const SCOPES: readonly ApiKeyScope[] = ['read', 'trade'];
const isScope = (s: string): s is ApiKeyScope => (SCOPES as readonly string[]).includes(s);

/** Scopes are kept as one comma-separated text column: a set of two words needs no join table. */
export function encodeScopes(scopes: readonly ApiKeyScope[]): string {
  for (const s of scopes) if (!isScope(s)) throw new RangeError(`unknown API key scope: ${String(s)}`);
  return [...new Set(scopes)].join(',');
}

export const decodeScopes = (text: string): ApiKeyScope[] => text.split(',').filter(isScope);

/**
 * The IP allow-list as one comma-separated text column (null: any address). The entries are
 * validated by the admin API (src/auth/key-policy.ts); here only what would break the encoding is
 * refused: an empty list (it would decode as "any address"), empty entries, commas or spaces.
 */
export function encodeIpAllowlist(list: readonly string[] | null | undefined): string | null {
  if (list === null || list === undefined) return null;
  if (list.length === 0) throw new RangeError('an IP allow-list cannot be empty (null allows any address)');
  for (const entry of list)
    if (typeof entry !== 'string' || !/^[0-9A-Za-z.:/]+$/.test(entry))
      throw new RangeError(`invalid IP allow-list entry: ${JSON.stringify(entry)}`);
  return [...new Set(list)].join(',');
}

export const decodeIpAllowlist = (text: string | null): string[] | null =>
  text === null ? null : text.split(',');

export const apiKeyFromRow = (r: ApiKeyRow): ApiKeyRecord => ({
  key: r.key,
  userId: r.user_id as UserId,
  sealedSecret: r.sealed_secret,
  scopes: decodeScopes(r.scopes),
  createdAt: r.created_at as Micros,
  revokedAt: r.revoked_at as Micros | null,
  ipAllowlist: decodeIpAllowlist(r.ip_allowlist),
  nonceRequired: r.nonce_required === 1,
});

/** The id counters the meta table keeps (both dialects), each written with every batch. */
export const SEQUENCE_KEYS = ['nextOrderId', 'nextTradeId', 'nextMarketId'] as const;

/**
 * The id counters from the meta table's rows: 1 for a counter never written (a fresh database).
 * Other keys (PostgreSQL's writer term) are not counters and are ignored.
 */
export function sequencesFromMeta(rows: readonly { key: string; value: number }[]): Sequences {
  const stored = new Map(rows.map((r) => [r.key, r.value]));
  return {
    nextOrderId: stored.get('nextOrderId') ?? 1,
    nextTradeId: stored.get('nextTradeId') ?? 1,
    nextMarketId: stored.get('nextMarketId') ?? 1,
  };
}

/**
 * The snapshot's `switches` field: present only when a switch is armed, as the engine's own
 * snapshot leaves it out when none is (engine/types.ts, EngineSnapshot).
 */
export const switchesOf = (switches: readonly SwitchState[]): { switches?: readonly SwitchState[] } =>
  switches.length === 0 ? {} : { switches };

/**
 * Each market's last trade price, for the engine snapshot's `lastPrices` (what conditional orders
 * are triggered and refused by): the price of its trade with the highest id, one index probe per
 * market (trades_by_market). Markets without a trade are left out.
 */
export const LAST_PRICES_SQL =
  'SELECT market_id, price FROM (SELECT m.id AS market_id, ' +
  '(SELECT t.price FROM trades t WHERE t.market_id = m.id ORDER BY t.id DESC LIMIT 1) AS price ' +
  'FROM markets m) AS last WHERE price IS NOT NULL ORDER BY market_id';

/**
 * The snapshot's `lastPrices` field: present only when a market has traded, as the engine's own
 * snapshot leaves it out when none has (engine/types.ts, EngineSnapshot).
 */
export function lastPricesOf(rows: readonly { market_id: number; price: number }[]): {
  lastPrices?: readonly LastPrice[];
} {
  if (rows.length === 0) return {};
  return { lastPrices: rows.map((r) => ({ marketId: r.market_id as MarketId, price: r.price as Price })) };
}
