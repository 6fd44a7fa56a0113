/**
 * One group commit as ONE statement: data-modifying CTEs, one per table, each inserting the rows
 * of its column arrays (`unnest`). A single statement is a single transaction in PostgreSQL, so
 * the batch is all or nothing; it is one round trip (Parse once per connection, then Bind/Execute),
 * whatever the number of rows; and the deferred foreign keys are checked when it commits.
 *
 * Rows of one table are deduplicated here (the last state wins), because one INSERT … ON CONFLICT
 * may not touch a row twice. Sub-statements of one statement see the same snapshot and none of
 * each other's writes: the pruning of expired idempotency records therefore leaves alone the keys
 * this batch (re)writes.
 */
import type { CommitBatch } from '../store.js';

/** Expired idempotency records deleted per commit at most (as in SQLite). */
export const IDEMPOTENCY_PRUNE_LIMIT = 1000;

const SEQUENCE_KEYS = ['nextOrderId', 'nextTradeId', 'nextMarketId'] as const;

/** `INSERT INTO table (cols) SELECT cols FROM unnest($a::t[], …)` with the parameters numbered from `first`. */
function unnestInsert(
  table: string,
  columns: ReadonlyArray<readonly [string, string]>,
  first: number,
): string {
  const names = columns.map(([name]) => name).join(', ');
  const arrays = columns.map(([, type], i) => `$${first + i}::${type}[]`).join(', ');
  return `INSERT INTO ${table} (${names}) SELECT ${names} FROM unnest(${arrays}) WITH ORDINALITY AS x(${names}, n) ORDER BY n`;
}

const setExcluded = (columns: readonly string[]): string =>
  columns.map((c) => `${c} = excluded.${c}`).join(', ');

const ASSET = [
  ['code', 'text'],
  ['name', 'text'],
  ['type', 'text'],
  ['decimals', 'int'],
] as const;
const MARKET = [
  ['id', 'bigint'],
  ['base', 'text'],
  ['quote', 'text'],
  ['pair_decimals', 'int'],
  ['lot_decimals', 'int'],
  ['ordermin', 'bigint'],
  ['maker_fee', 'bigint'],
  ['taker_fee', 'bigint'],
] as const;
const TRADE = [
  ['id', 'bigint'],
  ['market_id', 'bigint'],
  ['price', 'bigint'],
  ['volume', 'bigint'],
  ['cost', 'bigint'],
  ['taker_order_id', 'bigint'],
  ['maker_order_id', 'bigint'],
  ['taker_user_id', 'bigint'],
  ['maker_user_id', 'bigint'],
  ['taker_side', 'text'],
  ['taker_type', 'text'],
  ['taker_fee', 'bigint'],
  ['maker_fee', 'bigint'],
  ['time', 'bigint'],
] as const;
const ORDER = [
  ['id', 'bigint'],
  ['user_id', 'bigint'],
  ['market_id', 'bigint'],
  ['side', 'text'],
  ['type', 'text'],
  ['price', 'bigint'],
  ['volume', 'bigint'],
  ['executed', 'bigint'],
  ['status', 'text'],
  ['reason', 'text'],
  ['open_time', 'bigint'],
  ['close_time', 'bigint'],
  ['cost', 'bigint'],
  ['fee', 'bigint'],
  ['reserved', 'bigint'],
  ['fee_excess', 'bigint'],
] as const;
const BALANCE = [
  ['user_id', 'bigint'],
  ['asset', 'text'],
  ['available', 'bigint'],
  ['reserved', 'bigint'],
] as const;
const TOTALS = [
  ['asset', 'text'],
  ['net_deposits', 'bigint'],
  ['fees', 'bigint'],
] as const;
const LEDGER = [
  ['user_id', 'bigint'],
  ['asset', 'text'],
  ['kind', 'text'],
  ['amount', 'bigint'],
  ['reference', 'text'],
  ['time', 'bigint'],
] as const;
const CANDLE = [
  ['market_id', 'bigint'],
  ['interval', 'int'],
  ['start', 'bigint'],
  ['open', 'bigint'],
  ['high', 'bigint'],
  ['low', 'bigint'],
  ['close', 'bigint'],
  ['volume', 'numeric'],
  ['quote_volume', 'numeric'],
  ['notional', 'numeric'],
  ['count', 'int'],
] as const;
const IDEMPOTENCY = [
  ['user_id', 'bigint'],
  ['key', 'text'],
  ['fingerprint', 'text'],
  ['order_id', 'bigint'],
  ['time', 'bigint'],
] as const;
const META = [
  ['key', 'text'],
  ['value', 'bigint'],
] as const;

type Columns = ReadonlyArray<readonly [string, string]>;
const names = (columns: Columns): string[] => columns.map(([n]) => n);

function buildCommitSql(): string {
  let next = 1;
  const insert = (table: string, columns: Columns): string => {
    const sql = unnestInsert(table, columns, next);
    next += columns.length;
    return sql;
  };
  const parts: string[] = [];
  parts.push(`w_assets AS (${insert('assets', ASSET)})`);
  parts.push(`w_markets AS (${insert('markets', MARKET)})`);
  parts.push(`w_trades AS (${insert('trades', TRADE)})`);
  parts.push(
    `w_orders AS (${insert('orders', ORDER)} ON CONFLICT (id) DO UPDATE SET ${setExcluded(names(ORDER).slice(1))})`,
  );
  parts.push(
    `w_balances AS (${insert('balances', BALANCE)} ON CONFLICT (user_id, asset) DO UPDATE SET ${setExcluded(['available', 'reserved'])})`,
  );
  parts.push(
    `w_totals AS (${insert('asset_totals', TOTALS)} ON CONFLICT (asset) DO UPDATE SET ${setExcluded(['net_deposits', 'fees'])})`,
  );
  parts.push(`w_ledger AS (${insert('ledger_entries', LEDGER)})`);
  parts.push(
    `w_candles AS (${insert('candles', CANDLE)} ON CONFLICT (market_id, interval, start) DO UPDATE SET ${setExcluded(names(CANDLE).slice(3))})`,
  );
  const idemUsers = next;
  const idemKeys = next + 1;
  parts.push(
    `w_idempotency AS (${insert('idempotency_keys', IDEMPOTENCY)} ON CONFLICT (user_id, key) DO UPDATE SET ${setExcluded(['fingerprint', 'order_id', 'time'])})`,
  );
  const expired = next++;
  parts.push(`w_pruned AS (DELETE FROM idempotency_keys WHERE (user_id, key) IN (
      SELECT user_id, key FROM idempotency_keys
      WHERE $${expired}::bigint IS NOT NULL AND time < $${expired}::bigint
        AND (user_id, key) NOT IN (SELECT u, k FROM unnest($${idemUsers}::bigint[], $${idemKeys}::text[]) AS y(u, k))
      ORDER BY time LIMIT ${IDEMPOTENCY_PRUNE_LIMIT}))`);
  const meta = insert('meta', META);
  return `WITH ${parts.join(',\n')}\n${meta} ON CONFLICT (key) DO UPDATE SET value = excluded.value`;
}

export const COMMIT_SQL: string = buildCommitSql();

/** Keeps the last of each key, in first-seen order. */
function lastByKey<T>(rows: readonly T[], key: (row: T) => string | number): T[] {
  const byKey = new Map<string | number, T>();
  for (const row of rows) {
    const k = key(row);
    byKey.delete(k);
    byKey.set(k, row);
  }
  return [...byKey.values()];
}

/** Column arrays of `rows`, one per column, in the order of `columns`. */
function columnsOf<T>(rows: readonly T[], columns: number, row: (r: T) => readonly unknown[]): unknown[][] {
  const out: unknown[][] = Array.from({ length: columns }, () => []);
  for (const r of rows) {
    const values = row(r);
    for (let i = 0; i < columns; i++) out[i]?.push(values[i]);
  }
  return out;
}

/** The parameters of COMMIT_SQL for one batch, in the order the statement numbers them. */
export function commitParams(batch: CommitBatch): unknown[] {
  const assets = [];
  const markets = [];
  const trades = [];
  for (const event of batch.events) {
    if (event.type === 'assetCreated') assets.push(event.asset);
    else if (event.type === 'marketCreated') markets.push(event.market);
    else if (event.type === 'trade') trades.push(event.trade);
    // Order and balance events are covered by the change set, which holds their final state.
  }
  const { changes } = batch;
  const orders = lastByKey(changes.orders, (o) => o.id);
  const balances = lastByKey(changes.balances, (b) => `${b.userId}\u0000${b.asset}`);
  const totals = lastByKey(changes.totals, (t) => t.asset);
  const candles = lastByKey(batch.candles, (c) => `${c.marketId}\u0000${c.interval}\u0000${c.start}`);
  const idempotency = lastByKey(batch.idempotencyKeys ?? [], (r) => `${r.userId}\u0000${r.key}`);
  return [
    ...columnsOf(assets, ASSET.length, (a) => [a.code, a.name, a.type, a.decimals]),
    ...columnsOf(markets, MARKET.length, (m) => [
      m.id,
      m.base,
      m.quote,
      m.pairDecimals,
      m.lotDecimals,
      m.ordermin,
      m.makerFee,
      m.takerFee,
    ]),
    ...columnsOf(trades, TRADE.length, (t) => [
      t.id,
      t.marketId,
      t.price,
      t.volume,
      t.cost,
      t.takerOrderId,
      t.makerOrderId,
      t.takerUserId,
      t.makerUserId,
      t.takerSide,
      t.takerType,
      t.takerFee,
      t.makerFee,
      t.time,
    ]),
    ...columnsOf(orders, ORDER.length, (o) => [
      o.id,
      o.userId,
      o.marketId,
      o.side,
      o.type,
      o.price,
      o.volume,
      o.executed,
      o.status,
      o.reason,
      o.openTime,
      o.closeTime,
      o.cost,
      o.fee,
      o.reserved,
      o.feeExcess,
    ]),
    ...columnsOf(balances, BALANCE.length, (b) => [b.userId, b.asset, b.available, b.reserved]),
    ...columnsOf(totals, TOTALS.length, (t) => [t.asset, t.netDeposits, t.fees]),
    ...columnsOf(batch.ledger, LEDGER.length, (e) => [
      e.userId,
      e.asset,
      e.kind,
      e.amount,
      e.reference,
      e.time,
    ]),
    ...columnsOf(candles, CANDLE.length, (c) => [
      c.marketId,
      c.interval,
      c.start,
      c.open,
      c.high,
      c.low,
      c.close,
      c.volume.toString(),
      c.quoteVolume.toString(),
      c.notional.toString(),
      c.count,
    ]),
    ...columnsOf(idempotency, IDEMPOTENCY.length, (r) => [r.userId, r.key, r.fingerprint, r.orderId, r.time]),
    batch.idempotencyExpiredBefore ?? null,
    [...SEQUENCE_KEYS],
    SEQUENCE_KEYS.map((k) => changes.sequences[k]),
  ];
}
