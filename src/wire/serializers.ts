/**
 * Engine and store data to the exact wire records of the interface. Pure functions, no I/O.
 *
 * Formatting rule, everywhere: prices at the market's pairDecimals, volumes at its lotDecimals,
 * amounts (balances, costs, fees) at the asset's decimals, always as plain decimal strings built
 * from integers by formatUnits / formatBigUnits. No binary floating point touches an amount.
 */

import { formatBigUnits, formatUnits } from '../domain/money.js';
import {
  type AssetSpec,
  joinedPair,
  type MarketSpec,
  type Price,
  slashPair,
  type Volume,
} from '../domain/types.js';
import type { BalanceState, OrderState, Trade } from '../engine/types.js';
import type {
  CandleRecord,
  ExecutionRecord,
  MarketRecord,
  Meta,
  Money,
  OrderRecord,
  PublicTradeRecord,
  TickerRecord,
  UserTradeRecord,
  WalletEntryRecord,
} from '../http/schemas.js';
import type { Valuation } from '../http/valuation.js';
import type { Candle } from '../market-data/candle.js';
import type { Catalogue, TradeStats } from '../sequencer/ports.js';
import type { UserTrade } from '../store/store.js';
import { conditionalView } from './conditional-orders.js';
import { NO_EXPIRY, unixSeconds, unixSeconds4, utcDateTime } from './time.js';
import { orderTransactionId, tradeTransactionId } from './txid.js';

export type AssetLookup = Pick<Catalogue, 'asset'>;

/** The asset of a code the catalogue must know (a market always references known assets). */
function assetOf(catalogue: AssetLookup, code: string): AssetSpec {
  const asset = catalogue.asset(code);
  if (asset === undefined) throw new Error(`asset ${code} is not in the catalogue`);
  return asset;
}

export const formatPrice = (market: MarketSpec, price: number): string =>
  formatUnits(price, market.pairDecimals);
export const formatVolume = (market: MarketSpec, volume: number): string =>
  formatUnits(volume, market.lotDecimals);
/** A summed volume (candle, statistics), which may exceed 2^53 lots. */
export const formatTotalVolume = (market: MarketSpec, lots: bigint): string =>
  formatBigUnits(lots, market.lotDecimals);
const money = (amount: string, currency: string): Money => ({ amount, currency });

/**
 * The volume-weighted average price in ticks, rounded half up: `notional` = Σ price × volume (ticks
 * × lots) over `lots` = Σ volume. Exact sums of the trades' own prices, not of their rounded-down
 * costs, so the result lies between the lowest and the highest price traded (both whole ticks).
 * 0 when nothing traded.
 */
export function averagePrice(notional: bigint, lots: bigint): bigint {
  return lots === 0n ? 0n : (2n * notional + lots) / (2n * lots);
}

/** The VWAP of a candle or a ticker window as a price string (from its two exact sums). */
export const formatVwap = (market: MarketSpec, notional: bigint, lots: bigint): string =>
  formatBigUnits(averagePrice(notional, lots), market.pairDecimals);

/**
 * Volume-weighted average of the trades' own prices, in ticks, rounded half up. Exact, unlike
 * cost / executed: trade costs are rounded down to the quote asset's ledger unit, which for small
 * volumes can be far off the price (0.00000001 BTC at 30000 EUR costs 0.00 EUR).
 */
export function tradesAveragePrice(trades: readonly Trade[]): bigint {
  let notional = 0n;
  let lots = 0n;
  for (const t of trades) {
    notional += BigInt(t.price) * BigInt(t.volume);
    lots += BigInt(t.volume);
  }
  return averagePrice(notional, lots);
}

export function serializeMarket(market: MarketSpec): MarketRecord {
  return {
    altname: joinedPair(market),
    wsname: slashPair(market),
    classBase: 'currency',
    base: market.base,
    classQuote: 'currency',
    quote: market.quote,
    pairDecimals: market.pairDecimals,
    lotDecimals: market.lotDecimals,
    ordermin: formatVolume(market, market.ordermin),
  };
}

export interface TickerInput {
  /** Statistics since 00:00 UTC. */
  readonly today: TradeStats;
  readonly last: Price | null;
  readonly bestBid: Price | null;
  readonly bestAsk: Price | null;
}

/** A price or volume that does not exist yet (no trade today, empty book side) shows as zero. */
export function serializeTicker(
  market: MarketSpec,
  catalogue: AssetLookup,
  input: TickerInput,
): TickerRecord {
  const quote = assetOf(catalogue, market.quote);
  const price = (p: Price | null) => formatPrice(market, p ?? 0);
  return {
    ticker_id: slashPair(market),
    base_currency: market.base,
    target_currency: market.quote,
    last_price: price(input.last),
    base_volume: formatTotalVolume(market, input.today.volume),
    target_volume: formatBigUnits(input.today.quoteVolume, quote.decimals),
    bid: price(input.bestBid),
    ask: price(input.bestAsk),
    high: price(input.today.high),
    low: price(input.today.low),
  };
}

export function serializeCandle(candle: Candle, market: MarketSpec): CandleRecord {
  return {
    time: candle.start,
    open: formatPrice(market, candle.open),
    high: formatPrice(market, candle.high),
    low: formatPrice(market, candle.low),
    close: formatPrice(market, candle.close),
    vwap: formatVwap(market, candle.notional, candle.volume),
    volume: formatTotalVolume(market, candle.volume),
    count: candle.count,
  };
}

/** Order book levels as [price, quantity] text pairs. */
export function serializeLevels(
  market: MarketSpec,
  levels: ReadonlyArray<readonly [Price, Volume]>,
): [string, string][] {
  return levels.map(([price, volume]) => [formatPrice(market, price), formatVolume(market, volume)]);
}

/** `trigger_conditions` of an order without a trigger (limit and market orders). */
export const NO_TRIGGER_CONDITIONS = 'none';

/**
 * One order with its executions (`trades`, oldest first, as the store returns them).
 *
 * `price` of a market order (which has no limit price) is the volume-weighted average of its
 * executions, or 0 while nothing executed; `description.price` stays the price as ordered (0).
 */
export function serializeOrder(
  order: OrderState,
  market: MarketSpec,
  catalogue: AssetLookup,
  trades: readonly Trade[],
): OrderRecord {
  const quote = assetOf(catalogue, market.quote);
  const pair = joinedPair(market);
  const volume = formatVolume(market, order.volume);
  // A conditional order shows its trigger as `price` and its limit price (if any) as the
  // secondary price (decision E33); limit and market orders are as they always were.
  const conditional = conditionalView(order, market);
  const limit = conditional?.price ?? formatPrice(market, order.price);
  const shownPrice =
    order.type === 'market' ? formatBigUnits(tradesAveragePrice(trades), market.pairDecimals) : limit;
  const limitPrice = conditional?.limitPrice ?? null;
  const executed = order.executed > 0;
  return {
    id: order.id,
    user_id: order.userId,
    transaction_id: orderTransactionId(order.id),
    status: order.status,
    open_time: unixSeconds4(order.openTime),
    close_time: order.closeTime === null ? null : unixSeconds4(order.closeTime),
    expire_time: order.expireTime === undefined ? NO_EXPIRY : unixSeconds4(order.expireTime),
    reason: order.reason,
    pair,
    type: order.side,
    order_type: order.type,
    description: {
      pair,
      type: order.side,
      close: '',
      order:
        conditional?.order ??
        (order.type === 'limit'
          ? `${order.side} ${volume} ${pair} @ limit ${limit}`
          : `${order.side} ${volume} ${pair} @ market`),
      price: limit,
      leverage: 'none',
      orderType: order.type,
      secondaryPrice: limitPrice,
    },
    volume: money(volume, market.base),
    volume_executed: money(formatVolume(market, order.executed), market.base),
    fee: executed ? money(formatUnits(order.fee, quote.decimals), market.quote) : null,
    price: money(shownPrice, market.quote),
    secondary_price: limitPrice === null ? null : money(limitPrice, market.quote),
    limit_price: limitPrice === null ? null : money(limitPrice, market.quote),
    cost: executed ? money(formatUnits(order.cost, quote.decimals), market.quote) : null,
    asset_pair: {
      id: market.id,
      name: pair,
      display_name: slashPair(market),
      base_name: market.base,
      quote_name: market.quote,
    },
    trigger_conditions: conditional?.triggerConditions ?? NO_TRIGGER_CONDITIONS,
    trades: trades.map((t) => serializeExecution(t, order, market, quote)),
    // The order controls, after every field the interface document lists (decision 164): the
    // client id always, the others only when the order asked for something else than the default,
    // so an order without controls reads as before them but for `client_order_id: null`.
    client_order_id: order.clientOrderId ?? null,
    ...(order.timeInForce === undefined || order.timeInForce === 'GTC'
      ? {}
      : { time_in_force: order.timeInForce }),
    ...(order.postOnly === true ? { post_only: true } : {}),
    ...(order.stp === undefined || order.stp === 'cancel-oldest' ? {} : { stp: order.stp }),
  };
}

/** One execution inside an order; its price's currency is the slash pair (interface, "Money object"). */
function serializeExecution(
  trade: Trade,
  order: OrderState,
  market: MarketSpec,
  quote: AssetSpec,
): ExecutionRecord {
  return {
    id: trade.id,
    timestamp: utcDateTime(trade.time),
    type: order.side,
    volume: money(formatVolume(market, trade.volume), market.base),
    price: money(formatPrice(market, trade.price), slashPair(market)),
    cost: money(formatUnits(trade.cost, quote.decimals), market.quote),
    transaction_id: tradeTransactionId(trade.id),
  };
}

/** A trade seen by one of its two parties. The maker of a trade always rested, so it was a limit order. */
export function serializeUserTrade(
  userTrade: UserTrade,
  market: MarketSpec,
  catalogue: AssetLookup,
): UserTradeRecord {
  const { trade } = userTrade;
  const quote = assetOf(catalogue, market.quote);
  return {
    id: trade.id,
    timestamp: utcDateTime(trade.time),
    type: userTrade.side,
    order_id: userTrade.orderId,
    order_type: userTrade.taker ? trade.takerType : 'limit',
    pair_id: market.id,
    pair: slashPair(market),
    volume: money(formatVolume(market, trade.volume), market.base),
    price: money(formatPrice(market, trade.price), market.quote),
    cost: money(formatUnits(trade.cost, quote.decimals), market.quote),
    fee: money(formatUnits(userTrade.fee, quote.decimals), market.quote),
    transaction_id: tradeTransactionId(trade.id),
    leverage: null,
  };
}

/** A public trade (CoinGecko /historical_trades): `type` is the taker's side. */
export function serializePublicTrade(
  trade: Trade,
  market: MarketSpec,
  catalogue: AssetLookup,
): PublicTradeRecord {
  const quote = assetOf(catalogue, market.quote);
  return {
    trade_id: trade.id,
    price: formatPrice(market, trade.price),
    base_volume: formatVolume(market, trade.volume),
    target_volume: formatUnits(trade.cost, quote.decimals),
    trade_timestamp: String(unixSeconds(trade.time)),
    type: trade.takerSide,
  };
}

/**
 * One asset of a wallet. `balance_total` is everything the user owns (available + held by open
 * orders); `pending` is the part held by open orders, which cannot be spent until they end.
 */
export function serializeWalletEntry(
  asset: AssetSpec,
  balance: Pick<BalanceState, 'available' | 'reserved'>,
  valuation: Valuation,
): WalletEntryRecord {
  const total = balance.available + balance.reserved;
  if (!Number.isSafeInteger(total)) throw new RangeError(`balance of ${asset.code} out of range`);
  const fiat = (units: number) =>
    formatBigUnits(valuation.value(asset, units as typeof balance.reserved), valuation.decimals);
  return {
    asset_id: asset.code,
    asset_name: asset.name,
    type: asset.type,
    balance: {
      balance_total: formatUnits(total, asset.decimals),
      balance_total_in_fiat: fiat(total),
    },
    pending: {
      has_pending: balance.reserved > 0,
      balance_pending: formatUnits(balance.reserved, asset.decimals),
      balance_pending_in_fiat: fiat(balance.reserved),
    },
    balance_currency: valuation.currency,
  };
}

export interface PageRequest {
  /** 1-based. */
  readonly page: number;
  readonly perPage: number;
}

/** Laravel LengthAwarePaginator's numbers; `path` is the list's URL without query string. */
export function paginationMeta(request: PageRequest, total: number, count: number, path: string): Meta {
  const from = count === 0 ? null : (request.page - 1) * request.perPage + 1;
  return {
    current_page: request.page,
    from,
    to: from === null ? null : from + count - 1,
    path,
    per_page: request.perPage,
    total,
    last_page: Math.max(ceilDiv(total, request.perPage), 1),
  };
}

const ceilDiv = (a: number, b: number): number => (a + b - 1 - ((a + b - 1) % b)) / b;

/** The store's offset/limit for a page. */
export const pageWindow = (request: PageRequest): { limit: number; offset: number } => ({
  limit: request.perPage,
  offset: (request.page - 1) * request.perPage,
});
