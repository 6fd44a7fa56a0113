/**
 * The committed history in a PostgreSQL database, read by the test itself: plain SQL through its
 * own connection (not src/store code), in one REPEATABLE READ READ ONLY transaction so that every
 * table comes from the same committed snapshot. The rows are shaped like the SQLite reading's
 * (committed-state.ts), so `checkLedger`, `replayCheck`, `committedBooks` and the acknowledgement
 * checks run unchanged on either store.
 *
 * `audit` is the engine's conservation audit over a snapshot built here from those same rows
 * (assets, markets, balances, totals, open orders, sequences): the state a restarted server
 * would load, without going through the adapter under test.
 */
import pg from 'pg';
import type {
  Amount,
  AssetCode,
  MarketId,
  Micros,
  OrderId,
  Price,
  UserId,
  Volume,
} from '../../src/domain/types.js';
import { Engine } from '../../src/engine/engine.js';
import type { EngineSnapshot, OrderState } from '../../src/engine/types.js';
import {
  type AssetRow,
  type BalanceRow,
  type Committed,
  type LedgerRow,
  type MarketRow,
  type OrderRow,
  restoredChecks,
  type SwitchRow,
  type TotalsRow,
  type TradeRow,
} from './committed-state.js';
import { isTriggered } from './conditional.js';

const INT8_OID = 20;
const NUMERIC_OID = 1700;

/** bigint as an exact number (or a loud failure), numeric as decimal text: never a float. */
const TYPES = {
  getTypeParser(oid: number, format?: 'text' | 'binary') {
    if (oid === INT8_OID && format !== 'binary')
      return (text: string) => {
        const value = Number(text);
        if (!Number.isSafeInteger(value)) throw new RangeError(`bigint ${text} beyond exact numbers`);
        return value;
      };
    if (oid === NUMERIC_OID && format !== 'binary') return (text: string) => text;
    return pg.types.getTypeParser(oid, format ?? 'text');
  },
} as unknown as pg.CustomTypesConfig;

const ORDER_COLUMNS =
  'id, user_id, market_id, side, type, price, volume, executed, status, reason, open_time, close_time, cost, fee, reserved, fee_excess, time_in_force, expire_time, post_only, client_order_id, stp, priority';
const TRADE_COLUMNS =
  'id, market_id, price, volume, cost, taker_order_id, maker_order_id, taker_user_id, maker_user_id, taker_side, taker_type, taker_fee, maker_fee, time';

export async function readCommittedPostgres(url: string): Promise<Committed> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 10_000, types: TYPES });
  client.on('error', () => undefined);
  await client.connect();
  try {
    await client.query('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY');
    const all = async <T extends pg.QueryResultRow>(sql: string) => (await client.query<T>(sql)).rows;
    const assets = await all<AssetRow>('SELECT code, name, type, decimals FROM assets ORDER BY position');
    const markets = await all<MarketRow>(
      'SELECT id, base, quote, pair_decimals, lot_decimals, ordermin, maker_fee, taker_fee FROM markets ORDER BY id',
    );
    const orders = await all<OrderRow>(`SELECT ${ORDER_COLUMNS} FROM orders ORDER BY id`);
    const trades = await all<TradeRow>(`SELECT ${TRADE_COLUMNS} FROM trades ORDER BY id`);
    const ledger = await all<LedgerRow>(
      'SELECT id, user_id, asset, kind, amount, reference, time FROM ledger_entries ORDER BY id',
    );
    const balances = await all<BalanceRow>(
      'SELECT user_id, asset, available, reserved FROM balances ORDER BY user_id, asset COLLATE "C"',
    );
    const totals = await all<TotalsRow>(
      'SELECT asset, net_deposits, fees FROM asset_totals ORDER BY asset COLLATE "C"',
    );
    const meta = new Map(
      (await all<{ key: string; value: number }>('SELECT key, value FROM meta')).map((r) => [r.key, r.value]),
    );
    const switches = await all<SwitchRow>(
      'SELECT user_id, trigger_time FROM cancel_all_after ORDER BY user_id',
    );
    // Summed by PostgreSQL in numeric (exact), read as decimal text.
    const candles = (
      await all<{ market_id: number; interval: number; count: string; volume: string; quote_volume: string }>(
        `SELECT market_id, interval, sum(count) AS count, sum(volume) AS volume, sum(quote_volume) AS quote_volume
         FROM candles GROUP BY market_id, interval ORDER BY market_id, interval`,
      )
    ).map((r) => ({
      market_id: r.market_id,
      interval: r.interval,
      count: Number(r.count),
      volume: BigInt(r.volume),
      quote_volume: BigInt(r.quote_volume),
    }));
    await client.query('COMMIT');
    const snapshot: EngineSnapshot = {
      assets: assets.map((a) => ({ ...a, code: a.code as AssetCode })),
      markets: markets.map((m) => ({
        id: m.id as MarketId,
        base: m.base as AssetCode,
        quote: m.quote as AssetCode,
        pairDecimals: m.pair_decimals,
        lotDecimals: m.lot_decimals,
        ordermin: m.ordermin as Volume,
        makerFee: m.maker_fee as EngineSnapshot['markets'][number]['makerFee'],
        takerFee: m.taker_fee as EngineSnapshot['markets'][number]['takerFee'],
      })),
      balances: balances.map((b) => ({
        userId: b.user_id as UserId,
        asset: b.asset as AssetCode,
        available: b.available as Amount,
        reserved: b.reserved as Amount,
      })),
      totals: totals.map((t) => ({
        asset: t.asset as AssetCode,
        netDeposits: t.net_deposits as Amount,
        fees: t.fees as Amount,
      })),
      openOrders: orders.filter((o) => o.status === 'open').map(orderState),
      ...(switches.length === 0
        ? {}
        : {
            switches: switches.map((w) => ({
              userId: w.user_id as UserId,
              triggerTime: w.trigger_time as Micros,
            })),
          }),
      ...(trades.length === 0 ? {} : { lastPrices: lastPricesOf(trades) }),
      sequences: {
        nextOrderId: meta.get('nextOrderId') ?? 1,
        nextTradeId: meta.get('nextTradeId') ?? 1,
        nextMarketId: meta.get('nextMarketId') ?? 1,
      },
    };
    return {
      // PostgreSQL checks its constraints at every commit; there is no file to check.
      integrity: 'ok',
      assets,
      markets,
      orders,
      trades,
      ledger,
      balances,
      totals,
      meta,
      candles,
      switches,
      ...restoredChecks(Engine.restore(snapshot)),
    };
  } finally {
    await client.end().catch(() => undefined);
  }
}

function orderState(o: OrderRow): OrderState {
  return {
    id: o.id as OrderId,
    userId: o.user_id as UserId,
    marketId: o.market_id as MarketId,
    side: o.side,
    type: o.type,
    price: o.price as Price,
    volume: o.volume as Volume,
    executed: o.executed as Volume,
    status: o.status,
    reason: o.reason,
    openTime: o.open_time as Micros,
    closeTime: o.close_time as Micros | null,
    cost: o.cost as Amount,
    fee: o.fee as Amount,
    feeExcess: o.fee_excess,
    reserved: o.reserved as Amount,
    // The controls, each only when not its default (engine/types.ts, OrderState).
    ...(o.time_in_force === 'GTC' ? {} : { timeInForce: o.time_in_force }),
    ...(o.post_only === true ? { postOnly: true } : {}),
    ...(o.client_order_id === null ? {} : { clientOrderId: o.client_order_id }),
    ...(o.stp === 'cancel-oldest' ? {} : { stp: o.stp }),
    ...(o.expire_time === 0 ? {} : { expireTime: o.expire_time as Micros }),
    ...(o.priority === null ? {} : { priority: o.priority }),
    // A conditional order's trigger fields, as the store's own reader gives them.
    ...(o.trigger_price === null ? {} : { triggerPrice: o.trigger_price as Price }),
    ...(o.trailing_unit === null || o.trailing_amount === null
      ? {}
      : { trailingOffset: { unit: o.trailing_unit, amount: o.trailing_amount } }),
    ...(o.trailing_best === null ? {} : { trailingBest: o.trailing_best as Price }),
    ...(isTriggered(o) ? { triggered: true } : {}),
  };
}

/** Each market's last trade price (its newest trade's), as the store's snapshot gives them. */
function lastPricesOf(trades: readonly TradeRow[]): EngineSnapshot['lastPrices'] {
  const last = new Map<number, number>();
  for (const t of trades) last.set(t.market_id, t.price);
  return [...last]
    .sort(([a], [b]) => a - b)
    .map(([marketId, price]) => ({ marketId: marketId as MarketId, price: price as Price }));
}
