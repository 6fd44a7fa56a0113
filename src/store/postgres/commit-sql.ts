/**
 * One group commit as ONE statement: data-modifying CTEs, one per table the batch writes, each
 * inserting the rows of its column arrays (`unnest`). A single statement is a single transaction
 * in PostgreSQL, so the batch is all or nothing; it is one round trip (Parse once per connection
 * and batch shape, then Bind/Execute), whatever the number of rows; and the deferred foreign keys
 * are checked when it commits.
 *
 * Rows of one table are deduplicated here (the last state wins), because one INSERT … ON CONFLICT
 * may not touch a row twice. Sub-statements of one statement see the same snapshot and none of
 * each other's writes: the pruning of expired idempotency records therefore leaves alone the keys
 * this batch (re)writes.
 */
import { orderControlValues, orderTriggerValues, SEQUENCE_KEYS } from '../sqlite/rows.js';
import type { CommitBatch } from '../store.js';

/** Expired idempotency records deleted per commit at most (as in SQLite). */
export const IDEMPOTENCY_PRUNE_LIMIT = 1000;

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
  ['time_in_force', 'text'],
  ['expire_time', 'bigint'],
  ['post_only', 'boolean'],
  ['client_order_id', 'text'],
  ['stp', 'text'],
  ['priority', 'bigint'],
  ['trigger_price', 'bigint'],
  ['trailing_unit', 'text'],
  ['trailing_amount', 'bigint'],
  ['trailing_best', 'bigint'],
  ['triggered', 'boolean'],
] as const;
/** Armed dead man's switches; a disarmed or fired one is deleted (SWITCH_DELETE). */
const SWITCH = [
  ['user_id', 'bigint'],
  ['trigger_time', 'bigint'],
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
const BOOK_SEQUENCE = [
  ['market_id', 'bigint'],
  ['sequence', 'bigint'],
] as const;
const RECEIPT = [
  ['id', 'text'],
  ['expires', 'bigint'],
  ['reply', 'text'],
] as const;
const META = [
  ['key', 'text'],
  ['value', 'bigint'],
] as const;

type Columns = ReadonlyArray<readonly [string, string]>;
const names = (columns: Columns): string[] => columns.map(([n]) => n);

/** The tables a commit may write, in statement order: columns and the ON CONFLICT clause, if any. */
const TABLES = [
  { cte: 'w_assets', table: 'assets', columns: ASSET, conflict: '' },
  { cte: 'w_markets', table: 'markets', columns: MARKET, conflict: '' },
  { cte: 'w_trades', table: 'trades', columns: TRADE, conflict: '' },
  {
    cte: 'w_orders',
    table: 'orders',
    columns: ORDER,
    conflict: ` ON CONFLICT (id) DO UPDATE SET ${setExcluded(names(ORDER).slice(1))}`,
  },
  {
    cte: 'w_balances',
    table: 'balances',
    columns: BALANCE,
    conflict: ` ON CONFLICT (user_id, asset) DO UPDATE SET ${setExcluded(['available', 'reserved'])}`,
  },
  {
    cte: 'w_totals',
    table: 'asset_totals',
    columns: TOTALS,
    conflict: ` ON CONFLICT (asset) DO UPDATE SET ${setExcluded(['net_deposits', 'fees'])}`,
  },
  { cte: 'w_ledger', table: 'ledger_entries', columns: LEDGER, conflict: '' },
  {
    cte: 'w_candles',
    table: 'candles',
    columns: CANDLE,
    conflict: ` ON CONFLICT (market_id, interval, start) DO UPDATE SET ${setExcluded(names(CANDLE).slice(3))}`,
  },
  {
    cte: 'w_idempotency',
    table: 'idempotency_keys',
    columns: IDEMPOTENCY,
    conflict: ` ON CONFLICT (user_id, key) DO UPDATE SET ${setExcluded(['fingerprint', 'order_id', 'time'])}`,
  },
  {
    cte: 'w_switches',
    table: 'cancel_all_after',
    columns: SWITCH,
    conflict: ` ON CONFLICT (user_id) DO UPDATE SET ${setExcluded(['trigger_time'])}`,
  },
  {
    // Only the markets whose book the batch changed: a batch on one market writes one row.
    cte: 'w_book_sequences',
    table: 'book_sequences',
    columns: BOOK_SEQUENCE,
    conflict: ` ON CONFLICT (market_id) DO UPDATE SET ${setExcluded(['sequence'])}`,
  },
  // A command's id is unique; a second receipt for one (not written by this code) changes nothing.
  {
    cte: 'w_receipts',
    table: 'command_receipts',
    columns: RECEIPT,
    conflict: ' ON CONFLICT (id) DO NOTHING',
  },
] as const;
const IDEMPOTENCY_TABLE = TABLES.findIndex((t) => t.table === 'idempotency_keys');
/** Bit of the shape: the batch prunes expired idempotency records. */
const PRUNE = 1 << TABLES.length;
/** Bit of the shape: the batch disarms dead man's switches (their rows are deleted). */
const SWITCHES_OFF = 1 << (TABLES.length + 1);
/** Bit of the shape: the batch prunes expired command receipts. */
const PRUNE_RECEIPTS = 1 << (TABLES.length + 2);

/**
 * The statement for one shape of batch: a bit per table that has rows (and PRUNE). A table
 * without rows gets no sub-statement at all: an empty `unnest` insert still costs its executor
 * set-up and its parameters, on every commit, for tables most batches never touch (assets,
 * markets, ledger, idempotency keys).
 */
export function commitSql(shape: number): string {
  let next = 1;
  const parts: string[] = [];
  let idempotencyParams: number | undefined;
  for (const [i, t] of TABLES.entries()) {
    if ((shape & (1 << i)) === 0) continue;
    if (i === IDEMPOTENCY_TABLE) idempotencyParams = next;
    parts.push(`${t.cte} AS (${unnestInsert(t.table, t.columns, next)}${t.conflict})`);
    next += t.columns.length;
  }
  if ((shape & PRUNE) !== 0) {
    const expired = next++;
    // Sub-statements see the same snapshot and none of each other's writes: the keys this batch
    // (re)writes are left alone explicitly.
    const rewritten =
      idempotencyParams === undefined
        ? ''
        : `AND (user_id, key) NOT IN (SELECT u, k FROM unnest($${idempotencyParams}::bigint[], $${idempotencyParams + 1}::text[]) AS y(u, k))`;
    parts.push(`w_pruned AS (DELETE FROM idempotency_keys WHERE (user_id, key) IN (
      SELECT user_id, key FROM idempotency_keys
      WHERE time < $${expired}::bigint ${rewritten}
      ORDER BY time LIMIT ${IDEMPOTENCY_PRUNE_LIMIT}))`);
  }
  if ((shape & SWITCHES_OFF) !== 0) {
    // The users of this list are not among w_switches' rows: each user's last state is one or the other.
    parts.push(`w_switches_off AS (DELETE FROM cancel_all_after WHERE user_id = ANY($${next++}::bigint[]))`);
  }
  if ((shape & PRUNE_RECEIPTS) !== 0) {
    // Oldest first through the expiry index, a bounded number per commit (the rest go with the
    // next commits); the receipts this batch writes expire in the future, never before the bound.
    parts.push(`w_receipts_pruned AS (DELETE FROM command_receipts WHERE id IN (
      SELECT id FROM command_receipts WHERE expires < $${next++}::bigint
      ORDER BY expires LIMIT ${IDEMPOTENCY_PRUNE_LIMIT}))`);
  }
  const meta = `${unnestInsert('meta', META, next)} ON CONFLICT (key) DO UPDATE SET value = excluded.value`;
  return parts.length === 0 ? meta : `WITH ${parts.join(',\n')}\n${meta}`;
}

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

/** Characters a quoted element of an array literal must escape with a backslash. */
const NEEDS_ESCAPE = /["\\]/;

/**
 * A column as PostgreSQL's array literal text (`{1,2,NULL}`, `{"buy","a \\"b\\""}`), which the
 * statement casts (`$n::bigint[]`). node-postgres would build the same text from a JS array, but
 * through its general value conversion and two regular-expression replacements per element; the
 * group commit sends a few hundred elements per batch (issue 25, row "group commit"). Numbers and
 * booleans go bare (integers: every column value is a safe integer or null), text is quoted and
 * escaped, null and undefined are NULL.
 */
export function arrayLiteral(values: readonly unknown[]): string {
  let out = '{';
  for (let i = 0; i < values.length; i++) {
    if (i > 0) out += ',';
    const value = values[i];
    if (value === null || value === undefined) out += 'NULL';
    else if (typeof value === 'number' || typeof value === 'bigint' || typeof value === 'boolean')
      out += String(value);
    else {
      const text = String(value);
      out += NEEDS_ESCAPE.test(text) ? `"${text.replace(/["\\]/g, '\\$&')}"` : `"${text}"`;
    }
  }
  return `${out}}`;
}

export interface CommitStatement {
  /** Names the prepared statement: one per shape, parsed once per connection. */
  readonly name: string;
  readonly text: string;
  readonly values: unknown[];
}

const SEQUENCE_LITERAL = arrayLiteral(SEQUENCE_KEYS);

const statements = new Map<number, { readonly name: string; readonly text: string }>();

/** The statement and its parameters for one batch. */
export function commitStatement(batch: CommitBatch): CommitStatement {
  const tables = commitRows(batch);
  let shape = 0;
  const values: unknown[] = [];
  for (const [i, columns] of tables.entries()) {
    if (columns[0]!.length === 0) continue;
    shape |= 1 << i;
    for (const column of columns) values.push(arrayLiteral(column));
  }
  if (batch.idempotencyExpiredBefore !== undefined) {
    shape |= PRUNE;
    values.push(batch.idempotencyExpiredBefore);
  }
  const disarmed = switchesOff(batch);
  if (disarmed.length > 0) {
    shape |= SWITCHES_OFF;
    values.push(arrayLiteral(disarmed));
  }
  if (batch.commandReceiptsExpiredBefore !== undefined) {
    shape |= PRUNE_RECEIPTS;
    values.push(batch.commandReceiptsExpiredBefore);
  }
  values.push(SEQUENCE_LITERAL, arrayLiteral(SEQUENCE_KEYS.map((k) => batch.changes.sequences[k])));
  let statement = statements.get(shape);
  if (statement === undefined) {
    statement = { name: `openspot_commit_${shape.toString(16)}`, text: commitSql(shape) };
    statements.set(shape, statement);
  }
  return { ...statement, values };
}

/** The column arrays of every table in TABLES, in its order (empty arrays for a table without rows). */
function commitRows(batch: CommitBatch): unknown[][][] {
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
  const bookSequences = lastByKey(batch.bookSequences ?? [], (b) => b.marketId);
  const armed = lastByKey(changes.switches ?? [], (w) => w.userId).filter((w) => w.triggerTime > 0);
  const receipts = lastByKey(batch.commandReceipts ?? [], (r) => r.id);
  return [
    columnsOf(assets, ASSET.length, (a) => [a.code, a.name, a.type, a.decimals]),
    columnsOf(markets, MARKET.length, (m) => [
      m.id,
      m.base,
      m.quote,
      m.pairDecimals,
      m.lotDecimals,
      m.ordermin,
      m.makerFee,
      m.takerFee,
    ]),
    columnsOf(trades, TRADE.length, (t) => [
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
    columnsOf(orders, ORDER.length, (o) => [
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
      ...orderControlValues(o),
      ...orderTriggerValues(o),
    ]),
    columnsOf(balances, BALANCE.length, (b) => [b.userId, b.asset, b.available, b.reserved]),
    columnsOf(totals, TOTALS.length, (t) => [t.asset, t.netDeposits, t.fees]),
    columnsOf(batch.ledger, LEDGER.length, (e) => [e.userId, e.asset, e.kind, e.amount, e.reference, e.time]),
    columnsOf(candles, CANDLE.length, (c) => [
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
    columnsOf(idempotency, IDEMPOTENCY.length, (r) => [r.userId, r.key, r.fingerprint, r.orderId, r.time]),
    columnsOf(armed, SWITCH.length, (w) => [w.userId, w.triggerTime]),
    columnsOf(bookSequences, BOOK_SEQUENCE.length, (b) => [b.marketId, b.sequence]),
    columnsOf(receipts, RECEIPT.length, (r) => [r.id, r.expires, r.reply]),
  ];
}

/** The users whose switch the batch disarmed or fired: their last state in the batch is 0. */
function switchesOff(batch: CommitBatch): number[] {
  return lastByKey(batch.changes.switches ?? [], (w) => w.userId)
    .filter((w) => w.triggerTime === 0)
    .map((w) => w.userId);
}
