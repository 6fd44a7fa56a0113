/**
 * `openspot db copy --from <sqlite file> --to <postgres url>`: moves a venue from SQLite to an
 * EMPTY PostgreSQL database. The source is read in one read transaction (one consistent state,
 * even while a server writes it; stop the server to copy its last state); the target is migrated,
 * checked empty and filled in one transaction while holding the writer lock, so no engine can
 * start on it half-way. Integers are read from SQLite as BigInt and written as decimal text:
 * nothing passes through a floating-point number. Identity sequences (users, ledger entries)
 * continue after the copied ids (and after SQLite's AUTOINCREMENT high-water mark for users, so a
 * deleted user's id is never handed out again).
 *
 * Afterwards both stores are opened and compared: the engine snapshot (catalogue, balances,
 * totals, open orders, sequences) and the book sequences must be equal, and every table must hold
 * as many rows.
 */
import { isDeepStrictEqual } from 'node:util';
import Database from 'better-sqlite3';
import pg from 'pg';
import { readJournal } from '../sqlite/commit-journal.js';
import { SCHEMA_VERSION as SQLITE_SCHEMA_VERSION, schemaVersion } from '../sqlite/migrations.js';
import { SqliteStore } from '../sqlite/sqlite-store.js';
import { databaseName, EXACT_TYPES, parseDatabaseUrl, redactUrl } from './connection.js';
import { acquireWriterLock } from './lock.js';
import { migratePostgres, PG_SCHEMA_VERSION } from './migrations.js';
import { PostgresStore, WRITER_TERM_KEY } from './postgres-store.js';

interface Column {
  readonly name: string;
  /** PostgreSQL type of the array the values travel in. */
  readonly type: 'bigint' | 'int' | 'text' | 'numeric' | 'boolean';
  /** SQLite expression read for it (default: the column). */
  readonly read?: string;
}

interface TableCopy {
  readonly table: string;
  readonly columns: readonly Column[];
  /** SQLite ORDER BY: the order identity columns (position) are assigned in. */
  readonly order: string;
}

const col = (name: string, type: Column['type'], read?: string): Column =>
  read === undefined ? { name, type } : { name, type, read };
const big = (...names: string[]) => names.map((n) => col(n, 'bigint'));
const text = (...names: string[]) => names.map((n) => col(n, 'text'));

/** Every table of schema v9, in an order that satisfies the (deferred anyway) foreign keys. */
export const COPIED_TABLES: readonly TableCopy[] = [
  { table: 'assets', columns: [...text('code', 'name', 'type'), col('decimals', 'int')], order: 'rowid' },
  {
    table: 'markets',
    columns: [
      ...big('id'),
      ...text('base', 'quote'),
      col('pair_decimals', 'int'),
      col('lot_decimals', 'int'),
      ...big('ordermin', 'maker_fee', 'taker_fee'),
    ],
    order: 'id',
  },
  {
    table: 'balances',
    columns: [...big('user_id'), ...text('asset'), ...big('available', 'reserved')],
    order: 'user_id, asset',
  },
  { table: 'asset_totals', columns: [...text('asset'), ...big('net_deposits', 'fees')], order: 'asset' },
  {
    table: 'orders',
    columns: [
      ...big('id', 'user_id', 'market_id'),
      ...text('side', 'type'),
      ...big('price', 'volume', 'executed'),
      ...text('status', 'reason'),
      ...big('open_time', 'close_time', 'cost', 'fee', 'reserved', 'fee_excess'),
      ...text('time_in_force'),
      ...big('expire_time'),
      col('post_only', 'boolean', 'post_only <> 0'),
      ...text('client_order_id', 'stp'),
      ...big('priority', 'trigger_price'),
      ...text('trailing_unit'),
      ...big('trailing_amount', 'trailing_best'),
      col('triggered', 'boolean', 'triggered <> 0'),
    ],
    order: 'id',
  },
  { table: 'cancel_all_after', columns: big('user_id', 'trigger_time'), order: 'user_id' },
  {
    table: 'trades',
    columns: [
      ...big('id', 'market_id', 'price', 'volume', 'cost'),
      ...big('taker_order_id', 'maker_order_id', 'taker_user_id', 'maker_user_id'),
      ...text('taker_side', 'taker_type'),
      ...big('taker_fee', 'maker_fee', 'time'),
    ],
    order: 'id',
  },
  {
    table: 'candles',
    columns: [
      ...big('market_id'),
      col('interval', 'int'),
      ...big('start', 'open', 'high', 'low', 'close'),
      col('volume', 'numeric'),
      col('quote_volume', 'numeric'),
      col('notional', 'numeric'),
      col('count', 'int'),
    ],
    order: 'market_id, interval, start',
  },
  {
    table: 'ledger_entries',
    columns: [
      ...big('id', 'user_id'),
      ...text('asset', 'kind'),
      ...big('amount'),
      ...text('reference'),
      ...big('time'),
    ],
    order: 'id',
  },
  { table: 'users', columns: [...big('id'), ...text('email'), ...big('created_at')], order: 'id' },
  {
    table: 'api_keys',
    columns: [
      ...text('key'),
      ...big('user_id'),
      ...text('sealed_secret', 'scopes'),
      ...big('created_at', 'revoked_at'),
      ...text('ip_allowlist'),
      col('nonce_required', 'boolean', 'nonce_required <> 0'),
      col('last_nonce', 'numeric'),
    ],
    order: 'created_at, rowid',
  },
  { table: 'meta', columns: [...text('key'), ...big('value')], order: 'key' },
  {
    table: 'idempotency_keys',
    columns: [...big('user_id'), ...text('key', 'fingerprint'), ...big('order_id', 'time')],
    order: 'user_id, key',
  },
  { table: 'book_sequences', columns: big('market_id', 'sequence'), order: 'market_id' },
];

/** Rows per INSERT: well within a statement's size, few round trips. */
const CHUNK = 5000;

export interface CopyReport {
  readonly from: string;
  readonly to: string;
  /** Rows copied per table. */
  readonly rows: Record<string, number>;
  /** The engine snapshots and row counts of both stores, compared after the copy. */
  readonly verified: boolean;
}

export class CopyRefusedError extends Error {
  override readonly name = 'CopyRefusedError';
}

export async function copySqliteToPostgres(from: string, to: string): Promise<CopyReport> {
  const url = parseDatabaseUrl(to, '--to');
  const source = new Database(from, { readonly: true, fileMustExist: true });
  try {
    const version = schemaVersion(source);
    if (version !== SQLITE_SCHEMA_VERSION || version !== PG_SCHEMA_VERSION)
      throw new CopyRefusedError(
        `the SQLite database is at schema version ${version}; this release copies version ${PG_SCHEMA_VERSION}: ` +
          'start this release on it once (it migrates at start), stop it, then copy',
      );
    refuseUnwrittenJournal(source, from);
    const rows = await fill(source, url);
    const verified = await verify(from, url, rows);
    return { from, to: redactUrl(url), rows, verified };
  } finally {
    source.close();
  }
}

/**
 * A server stopped by a crash can leave acknowledged commits in its commit journal that the tables
 * do not have yet (journaled-store.ts): they are written at its next start, not by a copy.
 */
function refuseUnwrittenJournal(source: Database.Database, from: string): void {
  const records = readJournal(from);
  if (records.length === 0) return;
  const applied = source.prepare<[], number>('SELECT applied FROM journal_state').pluck().get() ?? 0;
  if (records.some((r) => r.seq > applied))
    throw new CopyRefusedError(
      'the SQLite database has commits in its commit journal that its tables do not hold yet (the server did not stop cleanly): ' +
        'start the server on it once and stop it, then copy',
    );
}

async function fill(source: Database.Database, url: string): Promise<Record<string, number>> {
  const client = new pg.Client({
    connectionString: url,
    application_name: `openspot db copy pid=${process.pid}`,
    connectionTimeoutMillis: 10_000,
    types: EXACT_TYPES,
  });
  client.on('error', () => undefined);
  await client.connect();
  try {
    // Held for the whole copy: an engine starting on the target meanwhile is refused.
    await acquireWriterLock(client, databaseName(url));
    await migratePostgres(client);
    for (const { table } of COPIED_TABLES) {
      const found = await client.query(`SELECT 1 FROM ${table} LIMIT 1`);
      if (found.rowCount !== 0)
        throw new CopyRefusedError(
          `the target database ${databaseName(url)} is not empty (${table} has rows): db copy only fills an empty database`,
        );
    }
    const counts: Record<string, number> = {};
    source.exec('BEGIN'); // one read transaction: every table from the same state
    await client.query('BEGIN');
    try {
      for (const copy of COPIED_TABLES) counts[copy.table] = await copyTable(source, client, copy);
      await continueIdentity(source, client);
      await client.query('COMMIT');
    } catch (error) {
      await client.query('ROLLBACK').catch(() => undefined);
      throw error;
    } finally {
      source.exec('COMMIT');
    }
    return counts;
  } finally {
    await client.end().catch(() => undefined);
  }
}

async function copyTable(source: Database.Database, client: pg.Client, copy: TableCopy): Promise<number> {
  const reads = copy.columns
    .map((c) => (c.read === undefined ? c.name : `${c.read} AS ${c.name}`))
    .join(', ');
  const statement = source.prepare(`SELECT ${reads} FROM ${copy.table} ORDER BY ${copy.order}`).raw(true);
  statement.safeIntegers(true);
  const names = copy.columns.map((c) => c.name).join(', ');
  const arrays = copy.columns.map((c, i) => `$${i + 1}::${c.type}[]`).join(', ');
  const insert = `INSERT INTO ${copy.table} (${names})
    SELECT ${names} FROM unnest(${arrays}) WITH ORDINALITY AS x(${names}, n) ORDER BY n`;
  let total = 0;
  let chunk: unknown[][] = copy.columns.map(() => []);
  let size = 0;
  const flush = async () => {
    if (size === 0) return;
    await client.query(insert, chunk);
    total += size;
    chunk = copy.columns.map(() => []);
    size = 0;
  };
  // Streamed: the cursor stays open across the awaits, which is safe because nothing else uses
  // the source connection meanwhile (better-sqlite3 refuses only other statements, not waiting).
  for (const row of statement.iterate() as IterableIterator<unknown[]>) {
    row.forEach((value, i) => {
      const type = copy.columns[i]?.type;
      chunk[i]?.push(
        value === null ? null : type === 'boolean' ? value === 1n || value === 1 : String(value),
      );
    });
    size++;
    if (size >= CHUNK) await flush();
  }
  await flush();
  return total;
}

/** Identity sequences continue after the copied ids (users: after SQLite's AUTOINCREMENT mark too). */
async function continueIdentity(source: Database.Database, client: pg.Client): Promise<void> {
  const sqliteSequence = source
    .prepare<[], { name: string; seq: bigint }>("SELECT name, seq FROM sqlite_sequence WHERE name = 'users'")
    .safeIntegers(true)
    .get();
  for (const table of ['users', 'ledger_entries']) {
    const result = await client.query<{ max: number | null }>(`SELECT max(id) AS max FROM ${table}`);
    let next = BigInt(result.rows[0]?.max ?? 0);
    if (table === 'users' && sqliteSequence !== undefined && sqliteSequence.seq > next)
      next = sqliteSequence.seq;
    if (next > 0n)
      await client.query(`SELECT setval(pg_get_serial_sequence('${table}', 'id'), $1::bigint, true)`, [
        next.toString(),
      ]);
  }
}

async function verify(from: string, url: string, copied: Record<string, number>): Promise<boolean> {
  const sqlite = SqliteStore.open({ path: from, readonly: true });
  const counter = new Database(from, { readonly: true, fileMustExist: true });
  const client = new pg.Client({
    connectionString: url,
    types: EXACT_TYPES,
    connectionTimeoutMillis: 10_000,
  });
  client.on('error', () => undefined);
  let postgres: PostgresStore | undefined;
  try {
    // Opening as a writer also proves the copy released the lock and left a schema the server takes.
    postgres = await PostgresStore.open({ url, applicationName: `openspot db copy pid=${process.pid}` });
    if (!isDeepStrictEqual(sqlite.loadSnapshot(), await postgres.loadSnapshot())) return false;
    if (!isDeepStrictEqual(sqlite.loadBookSequences(), await postgres.loadBookSequences())) return false;
    await client.connect();
    for (const { table } of COPIED_TABLES) {
      const inSqlite = counter.prepare<[], number>(`SELECT count(*) FROM ${table}`).pluck().get();
      // The writer's term is PostgreSQL's own (the open above took one), not venue data.
      const where = table === 'meta' ? ` WHERE key <> '${WRITER_TERM_KEY}'` : '';
      const inPostgres = (await client.query<{ n: number }>(`SELECT count(*) AS n FROM ${table}${where}`))
        .rows[0]?.n;
      if (inSqlite !== inPostgres || copied[table] !== inPostgres) return false;
    }
    return true;
  } finally {
    sqlite.close();
    counter.close();
    await postgres?.close();
    await client.end().catch(() => undefined);
  }
}
