/**
 * The durable store on PostgreSQL (node-postgres). Two kinds of connection:
 *
 * - the WRITER: one dedicated connection that holds the writer advisory lock (lock.ts) and
 *   carries every engine-state commit. Writes exist only where the lock is held: should this
 *   connection drop, the lock is gone with it, and the next commit first reconnects and takes the
 *   lock again (or fails with StoreUnavailableError naming the process that took it meanwhile);
 * - a small POOL for reads and for credentials (users, API keys, nonces), which are not engine
 *   state and are written one statement at a time.
 *
 * A commit is one statement (commit-sql.ts): atomic, one round trip. Reads see committed data only.
 * Every list is read in full (with the page's LIMIT/OFFSET), newest first as the ports say.
 */
import pg from 'pg';
import type { MarketId, Micros, OrderId, OrderStatus, TradeId, UserId } from '../../domain/types.js';
import type { EngineSnapshot, OrderState, Sequences, Trade } from '../../engine/types.js';
import type { Candle, Interval } from '../../market-data/candle.js';
import type { AsyncStore } from '../ports.js';
import {
  type ApiKeyRow,
  type AssetRow,
  apiKeyFromRow,
  assetFromRow,
  type BalanceRow,
  balanceFromRow,
  type CandleRow,
  candleFromRow,
  encodeIpAllowlist,
  encodeScopes,
  type LedgerRow,
  ledgerFromRow,
  type MarketRow,
  marketFromRow,
  ORDER_COLUMNS,
  type OrderRow,
  orderFromRow,
  type TotalsRow,
  TRADE_COLUMNS,
  type TradeRow,
  totalsFromRow,
  tradeFromRow,
  type UserRow,
  userFromRow,
  userTradeFromRow,
} from '../sqlite/rows.js';
import {
  type ApiKeyRecord,
  CANONICAL_NONCE,
  CheckpointError,
  type CheckpointInfo,
  type CommitBatch,
  type IdempotencyRecord,
  type LedgerEntry,
  type LedgerKind,
  type NewApiKeyRecord,
  type OrderFilter,
  type Page,
  type PublicTradeFilter,
  StoreUnavailableError,
  type TradeFilter,
  type UserRecord,
  type UserTrade,
} from '../store.js';
import { commitStatement } from './commit-sql.js';
import { databaseName, EXACT_TYPES, guarded, parseDatabaseUrl, toStoreError } from './connection.js';
import {
  acquireWriterLock,
  engineApplicationName,
  readerApplicationName,
  WriterLockHeldError,
} from './lock.js';
import { migratePostgres } from './migrations.js';

export interface PostgresStoreOptions {
  /** postgres://user[:password]@host[:port]/database (DATABASE_URL). */
  readonly url: string;
  /** Connections of the read pool (default 4). */
  readonly poolSize?: number;
  /** How long to wait for a connection, in milliseconds (default 5000). */
  readonly connectTimeoutMs?: number;
  /** Reported in pg_stat_activity for the writer; default `openspot engine pid=… host=…`. */
  readonly applicationName?: string;
  /**
   * A commit with no answer after this long (milliseconds, default 30000) fails as unavailable and
   * its connection is dropped: a silent network partition must not hold the sequencer forever.
   */
  readonly commitTimeoutMs?: number;
}

const DEFAULT_SEQUENCES: Sequences = { nextOrderId: 1, nextTradeId: 1, nextMarketId: 1 };
const OPEN_STATUSES: readonly OrderStatus[] = ['open'];
const DONE_STATUSES: readonly OrderStatus[] = ['closed', 'canceled'];
/** API key records kept in memory (see getApiKey). */
const MAX_CACHED_API_KEYS = 10_000;

const API_KEY_SELECT =
  'key, user_id, sealed_secret, scopes, created_at, revoked_at, ip_allowlist, nonce_required::int AS nonce_required';
const CANDLE_SELECT =
  'market_id, interval, start, open, high, low, close, volume, quote_volume, notional, count';
const LEDGER_SELECT = 'user_id, asset, kind, amount, reference, time';

export const CHECKPOINTS_UNSUPPORTED =
  'checkpoints are not supported on the PostgreSQL store yet: use pg_dump / point-in-time recovery (docs/operations.md), or run the test venue on SQLite';

export class PostgresStore implements AsyncStore {
  readonly #url: string;
  readonly #database: string;
  readonly #options: Required<PostgresStoreOptions>;
  readonly #pool: pg.Pool;
  /** The lock-holding connection; undefined after it was lost, until the next commit reconnects. */
  #writer: pg.Client | undefined;
  #reconnecting: Promise<pg.Client> | undefined;
  #closed = false;
  /** See SqliteStore: every write to api_keys goes through this object and drops the entry. */
  readonly #apiKeys = new Map<string, ApiKeyRecord>();

  private constructor(options: Required<PostgresStoreOptions>, writer: pg.Client, pool: pg.Pool) {
    this.#url = options.url;
    this.#database = databaseName(options.url);
    this.#options = options;
    this.#pool = pool;
    this.#adoptWriter(writer);
  }

  /**
   * Connects, takes the writer lock (or throws WriterLockHeldError naming the holder, having
   * written nothing), brings the schema up to date, and opens the read pool.
   */
  static async open(options: PostgresStoreOptions): Promise<PostgresStore> {
    const full: Required<PostgresStoreOptions> = {
      url: parseDatabaseUrl(options.url),
      poolSize: options.poolSize ?? 4,
      connectTimeoutMs: options.connectTimeoutMs ?? 5000,
      applicationName: options.applicationName ?? engineApplicationName(),
      commitTimeoutMs: options.commitTimeoutMs ?? 30_000,
    };
    const writer = await connectWriter(full);
    try {
      await migratePostgres(writer);
    } catch (error) {
      await writer.end().catch(() => undefined);
      throw toStoreError(error);
    }
    const pool = new pg.Pool({
      connectionString: full.url,
      application_name: readerApplicationName(),
      max: full.poolSize,
      connectionTimeoutMillis: full.connectTimeoutMs,
      keepAlive: true,
      types: EXACT_TYPES,
    });
    // An idle pooled connection that dies is discarded by the pool; without a listener the
    // 'error' event would end the process.
    pool.on('error', () => undefined);
    return new PostgresStore(full, writer, pool);
  }

  #adoptWriter(writer: pg.Client): void {
    this.#writer = writer;
    const lost = () => {
      if (this.#writer === writer) this.#writer = undefined;
    };
    writer.on('error', lost);
    writer.on('end', lost);
  }

  /** The lock-holding connection, reconnected (and the lock retaken) when it was lost. */
  async #writerConnection(): Promise<pg.Client> {
    if (this.#closed) throw new StoreUnavailableError('store unavailable: the store is closed');
    if (this.#writer !== undefined) return this.#writer;
    this.#reconnecting ??= connectWriter(this.#options)
      .then((writer) => {
        if (this.#closed) {
          void writer.end().catch(() => undefined);
          throw new StoreUnavailableError('store unavailable: the store is closed');
        }
        this.#adoptWriter(writer);
        return writer;
      })
      .finally(() => {
        this.#reconnecting = undefined;
      });
    return this.#reconnecting;
  }

  async loadSnapshot(): Promise<EngineSnapshot> {
    return this.#readTransaction(async (c) => {
      const assets = await c.query<AssetRow>(
        'SELECT code, name, type, decimals FROM assets ORDER BY position',
      );
      const markets = await c.query<MarketRow>(
        'SELECT id, base, quote, pair_decimals, lot_decimals, ordermin, maker_fee, taker_fee FROM markets ORDER BY id',
      );
      const balances = await c.query<BalanceRow>(
        'SELECT user_id, asset, available, reserved FROM balances ORDER BY user_id, asset COLLATE "C"',
      );
      const totals = await c.query<TotalsRow>(
        'SELECT asset, net_deposits, fees FROM asset_totals ORDER BY asset COLLATE "C"',
      );
      const open = await c.query<OrderRow>(
        `SELECT ${ORDER_COLUMNS} FROM orders WHERE status = 'open' ORDER BY id`,
      );
      const meta = await c.query<{ key: string; value: number }>('SELECT key, value FROM meta');
      const stored = new Map(meta.rows.map((r) => [r.key, r.value]));
      return {
        assets: assets.rows.map(assetFromRow),
        markets: markets.rows.map(marketFromRow),
        balances: balances.rows.map(balanceFromRow),
        totals: totals.rows.map(totalsFromRow),
        openOrders: open.rows.map(orderFromRow),
        sequences: {
          nextOrderId: stored.get('nextOrderId') ?? DEFAULT_SEQUENCES.nextOrderId,
          nextTradeId: stored.get('nextTradeId') ?? DEFAULT_SEQUENCES.nextTradeId,
          nextMarketId: stored.get('nextMarketId') ?? DEFAULT_SEQUENCES.nextMarketId,
        },
      };
    });
  }

  async loadLedgerReferences(): Promise<LedgerEntry[]> {
    const rows = await this.#rows<LedgerRow>(
      `SELECT ${LEDGER_SELECT} FROM ledger_entries
       WHERE id IN (SELECT min(id) FROM ledger_entries WHERE reference IS NOT NULL GROUP BY user_id, kind, reference)
       ORDER BY id`,
    );
    return rows.map(ledgerFromRow);
  }

  async commit(batch: CommitBatch): Promise<void> {
    const statement = commitStatement(batch);
    let writer: pg.Client;
    try {
      writer = await this.#writerConnection();
    } catch (error) {
      if (error instanceof WriterLockHeldError)
        throw new StoreUnavailableError(`store unavailable: ${error.message}`, { cause: error });
      throw toStoreError(error);
    }
    try {
      // Named: parsed and planned once per connection and batch shape, then only bound and executed.
      await writer.query({
        name: statement.name,
        text: statement.text,
        values: statement.values,
        // Per commit, not per connection: a migration at open may rightly take longer.
        query_timeout: this.#options.commitTimeoutMs,
      } as pg.QueryConfig);
    } catch (error) {
      const mapped = toStoreError(error);
      if (mapped instanceof StoreUnavailableError && this.#writer === writer) {
        // The connection (and with it the lock) may be gone: the next commit starts afresh.
        this.#writer = undefined;
        if (error instanceof Error && /Query read timeout/.test(error.message)) {
          // The server may still be running the statement, and that session still holds the lock:
          // end it there, so the statement is aborted (unless already committed) and the lock freed.
          await this.#terminateBackend(writer);
        }
        void writer.end().catch(() => undefined);
      }
      throw mapped;
    }
  }

  async findIdempotencyRecord(userId: UserId, key: string): Promise<IdempotencyRecord | undefined> {
    if (hasNul(key)) return undefined;
    const [row] = await this.#rows<{
      user_id: number;
      key: string;
      fingerprint: string;
      order_id: number;
      time: number;
    }>(
      'SELECT user_id, key, fingerprint, order_id, time FROM idempotency_keys WHERE user_id = $1 AND key = $2',
      [userId, key],
    );
    return (
      row && {
        userId: row.user_id as UserId,
        key: row.key,
        fingerprint: row.fingerprint,
        orderId: row.order_id as OrderId,
        time: row.time as Micros,
      }
    );
  }

  // ------------------------------------------------------------ history

  async getOrder(id: OrderId): Promise<OrderState | undefined> {
    const [row] = await this.#rows<OrderRow>(`SELECT ${ORDER_COLUMNS} FROM orders WHERE id = $1`, [id]);
    return row && orderFromRow(row);
  }

  async listOrders(filter: OrderFilter, page?: Page): Promise<OrderState[]> {
    const { limit, offset } = checkPage(page);
    const [where, params] = orderConditions(filter);
    const rows = await this.#rows<OrderRow>(
      `SELECT ${ORDER_COLUMNS} FROM orders WHERE ${where} ORDER BY id DESC LIMIT $${params.length + 1} OFFSET $${params.length + 2}`,
      [...params, limit, offset],
    );
    return rows.map(orderFromRow);
  }

  async countOrders(filter: OrderFilter): Promise<number> {
    const [where, params] = orderConditions(filter);
    const [row] = await this.#rows<{ n: number }>(`SELECT count(*) AS n FROM orders WHERE ${where}`, params);
    return row?.n ?? 0;
  }

  async tradesOfOrders(ids: readonly OrderId[]): Promise<Map<OrderId, Trade[]>> {
    const result = new Map<OrderId, Trade[]>(ids.map((id) => [id, []]));
    if (result.size === 0) return result;
    const rows = await this.#rows<TradeRow>(
      `SELECT ${TRADE_COLUMNS} FROM trades WHERE taker_order_id = ANY($1::bigint[]) OR maker_order_id = ANY($1::bigint[])
       ORDER BY id`,
      [[...result.keys()]],
    );
    for (const row of rows) {
      const trade = tradeFromRow(row);
      result.get(trade.takerOrderId)?.push(trade);
      result.get(trade.makerOrderId)?.push(trade);
    }
    return result;
  }

  async getUserTrade(userId: UserId, id: TradeId): Promise<UserTrade | undefined> {
    const [row] = await this.#rows<TradeRow>(
      `SELECT ${TRADE_COLUMNS} FROM trades WHERE id = $1 AND (taker_user_id = $2 OR maker_user_id = $2)`,
      [id, userId],
    );
    return row && userTradeFromRow(row, userId);
  }

  async listUserTrades(filter: TradeFilter, page?: Page): Promise<UserTrade[]> {
    const { limit, offset } = checkPage(page);
    const [market, params] = userTradeConditions(filter);
    const n = params.length;
    // Each arm stops at limit + offset rows (its index walk, newest first); the union is then cut.
    const arm = (role: 'taker' | 'maker') =>
      `(SELECT ${TRADE_COLUMNS} FROM trades WHERE ${role}_user_id = $1${market}
        ORDER BY id DESC LIMIT $${n + 1}::bigint + $${n + 2}::bigint)`;
    const rows = await this.#rows<TradeRow>(
      `${arm('taker')} UNION ALL ${arm('maker')} ORDER BY id DESC LIMIT $${n + 1} OFFSET $${n + 2}`,
      [...params, limit, offset],
    );
    return rows.map((row) => userTradeFromRow(row, filter.userId));
  }

  async countUserTrades(filter: TradeFilter): Promise<number> {
    const [market, params] = userTradeConditions(filter);
    const count = (role: 'taker' | 'maker') =>
      `(SELECT count(*) FROM trades WHERE ${role}_user_id = $1${market})`;
    const [row] = await this.#rows<{ n: number }>(
      `SELECT ${count('taker')} + ${count('maker')} AS n`,
      params,
    );
    return row?.n ?? 0;
  }

  async listPublicTrades(filter: PublicTradeFilter): Promise<Trade[]> {
    const limit = filter.limit === undefined ? null : checkCount(filter.limit, 'limit');
    const since = filter.since === undefined ? '' : ' AND time >= $4';
    const params: unknown[] = [filter.marketId, filter.takerSide ?? null, limit];
    if (filter.since !== undefined) params.push(filter.since);
    const rows = await this.#rows<TradeRow>(
      `SELECT ${TRADE_COLUMNS} FROM trades WHERE market_id = $1${since} AND ($2::text IS NULL OR taker_side = $2)
       ORDER BY id DESC LIMIT $3`,
      params,
    );
    return rows.map(tradeFromRow);
  }

  async listCandles(marketId: MarketId, interval: Interval, since: number, limit: number): Promise<Candle[]> {
    const rows = await this.#rows<CandleRow>(
      `SELECT ${CANDLE_SELECT} FROM (
         SELECT ${CANDLE_SELECT} FROM candles WHERE market_id = $1 AND interval = $2 AND start > $3
         ORDER BY start DESC LIMIT $4
       ) recent ORDER BY start`,
      [marketId, interval, since, checkCount(limit, 'limit')],
    );
    return rows.map(candleFromRow);
  }

  async latestCandles(marketId: MarketId): Promise<Candle[]> {
    const rows = await this.#rows<CandleRow>(
      `SELECT DISTINCT ON (interval) ${CANDLE_SELECT} FROM candles WHERE market_id = $1 ORDER BY interval, start DESC`,
      [marketId],
    );
    return rows.map(candleFromRow);
  }

  async findLedgerEntry(
    userId: UserId,
    kind: LedgerKind,
    reference: string,
  ): Promise<LedgerEntry | undefined> {
    if (hasNul(reference)) return undefined;
    const [row] = await this.#rows<LedgerRow>(
      `SELECT ${LEDGER_SELECT} FROM ledger_entries WHERE user_id = $1 AND kind = $2 AND reference = $3
       ORDER BY id LIMIT 1`,
      [userId, kind, reference],
    );
    return row && ledgerFromRow(row);
  }

  // ------------------------------------------------------------ credentials

  async createUser(email: string | null, time: Micros): Promise<UserRecord> {
    const [row] = await this.#rows<UserRow>(
      'INSERT INTO users (email, created_at) VALUES ($1, $2) RETURNING id, email, created_at',
      [email, time],
    );
    if (row === undefined) throw new Error('INSERT ... RETURNING returned no row');
    return userFromRow(row);
  }

  async getUser(id: UserId): Promise<UserRecord | undefined> {
    const [row] = await this.#rows<UserRow>('SELECT id, email, created_at FROM users WHERE id = $1', [id]);
    return row && userFromRow(row);
  }

  async listUsers(): Promise<UserRecord[]> {
    return (await this.#rows<UserRow>('SELECT id, email, created_at FROM users ORDER BY id')).map(
      userFromRow,
    );
  }

  async createApiKey(record: NewApiKeyRecord): Promise<void> {
    this.#apiKeys.delete(record.key);
    const scopes = encodeScopes(record.scopes);
    const ipAllowlist = encodeIpAllowlist(record.ipAllowlist);
    await this.#rows(
      `INSERT INTO api_keys (key, user_id, sealed_secret, scopes, created_at, revoked_at, ip_allowlist, nonce_required)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
      [
        record.key,
        record.userId,
        record.sealedSecret,
        scopes,
        record.createdAt,
        record.revokedAt,
        ipAllowlist,
        record.nonceRequired === true,
      ],
    );
  }

  cachedApiKey(key: string): ApiKeyRecord | undefined {
    return this.#apiKeys.get(key);
  }

  async getApiKey(key: string): Promise<ApiKeyRecord | undefined> {
    if (hasNul(key)) return undefined;
    const cached = this.#apiKeys.get(key);
    if (cached !== undefined) return cached;
    const [row] = await this.#rows<ApiKeyRow>(`SELECT ${API_KEY_SELECT} FROM api_keys WHERE key = $1`, [key]);
    if (row === undefined) return undefined; // unknown keys are not remembered
    const record = apiKeyFromRow(row);
    Object.freeze(record.scopes);
    if (record.ipAllowlist !== null) Object.freeze(record.ipAllowlist);
    if (this.#apiKeys.size >= MAX_CACHED_API_KEYS) {
      const oldest = this.#apiKeys.keys().next();
      if (oldest.done !== true) this.#apiKeys.delete(oldest.value);
    }
    this.#apiKeys.set(key, Object.freeze(record));
    return record;
  }

  async listApiKeys(userId: UserId): Promise<ApiKeyRecord[]> {
    const rows = await this.#rows<ApiKeyRow>(
      `SELECT ${API_KEY_SELECT} FROM api_keys WHERE user_id = $1 ORDER BY created_at, position`,
      [userId],
    );
    return rows.map(apiKeyFromRow);
  }

  async revokeApiKey(key: string, time: Micros): Promise<boolean> {
    if (hasNul(key)) return false;
    this.#apiKeys.delete(key);
    const result = await guarded(() =>
      this.#pool.query('UPDATE api_keys SET revoked_at = $1 WHERE key = $2 AND revoked_at IS NULL', [
        time,
        key,
      ]),
    );
    // Dropped again: a read racing the update may have cached the record as it was before.
    this.#apiKeys.delete(key);
    return (result.rowCount ?? 0) > 0;
  }

  async acceptNonce(key: string, nonce: string): Promise<boolean> {
    if (typeof nonce !== 'string' || !CANONICAL_NONCE.test(nonce))
      throw new RangeError(`invalid nonce: ${JSON.stringify(nonce)}`);
    if (hasNul(key)) return false;
    // One conditional UPDATE, committed (synchronous_commit) before it returns: a row lock makes
    // two requests with the same nonce serialize, and the second finds last_nonce already equal.
    const result = await guarded(() =>
      this.#pool.query(
        `UPDATE api_keys SET last_nonce = $2::numeric
         WHERE key = $1 AND revoked_at IS NULL AND (last_nonce IS NULL OR last_nonce < $2::numeric)`,
        [key, nonce],
      ),
    );
    return (result.rowCount ?? 0) > 0;
  }

  // ------------------------------------------------------------ checkpoints

  async saveCheckpoint(_name: string, _time: Micros): Promise<CheckpointInfo> {
    throw new CheckpointError('incompatible', CHECKPOINTS_UNSUPPORTED);
  }

  async restoreCheckpoint(_name: string): Promise<void> {
    throw new CheckpointError('incompatible', CHECKPOINTS_UNSUPPORTED);
  }

  /** None can exist: saving one is refused. */
  async listCheckpoints(): Promise<CheckpointInfo[]> {
    return [];
  }

  async deleteCheckpoint(_name: string): Promise<boolean> {
    return false;
  }

  /** Ends the read pool and the writer connection: the writer lock is released with its session. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    const writer = this.#writer ?? (await this.#reconnecting?.catch(() => undefined));
    this.#writer = undefined;
    await Promise.allSettled([this.#pool.end(), writer?.end()]);
  }

  // ------------------------------------------------------------ helpers

  async #terminateBackend(client: pg.Client): Promise<void> {
    const pid = (client as unknown as { processID?: unknown }).processID;
    if (typeof pid !== 'number') return;
    await this.#pool.query('SELECT pg_terminate_backend($1)', [pid]).catch(() => undefined);
  }

  async #rows<R extends pg.QueryResultRow>(text: string, values?: unknown[]): Promise<R[]> {
    if (this.#closed) throw new StoreUnavailableError('store unavailable: the store is closed');
    const result = await guarded(() => this.#pool.query<R>(text, values));
    return result.rows;
  }

  /** Several reads from one snapshot of the database. */
  async #readTransaction<T>(read: (client: pg.PoolClient) => Promise<T>): Promise<T> {
    if (this.#closed) throw new StoreUnavailableError('store unavailable: the store is closed');
    return guarded(async () => {
      const client = await this.#pool.connect();
      let broken = false;
      try {
        await client.query('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY');
        const value = await read(client);
        await client.query('COMMIT');
        return value;
      } catch (error) {
        broken = true;
        throw error;
      } finally {
        // A connection that failed mid-transaction is not handed out again.
        client.release(broken);
      }
    });
  }

  /** For messages and tests: the database this store writes. */
  get database(): string {
    return this.#database;
  }
}

async function connectWriter(options: Required<PostgresStoreOptions>): Promise<pg.Client> {
  const { url } = options;
  const client = new pg.Client({
    connectionString: url,
    application_name: options.applicationName,
    connectionTimeoutMillis: options.connectTimeoutMs,
    // TCP keep-alives: a peer that vanished without a word is noticed by the kernel too.
    keepAlive: true,
    types: EXACT_TYPES,
  });
  // Until adopted: an error on a connection being set up must not end the process.
  client.on('error', () => undefined);
  try {
    await client.connect();
    await acquireWriterLock(client, databaseName(url));
    return client;
  } catch (error) {
    await client.end().catch(() => undefined);
    if (error instanceof WriterLockHeldError) throw error;
    throw toStoreError(error);
  }
}

/**
 * PostgreSQL text cannot hold a NUL character (SQLite's can): no stored key or reference has one,
 * so a lookup by such a string finds nothing, as it would on SQLite, instead of failing.
 */
const hasNul = (text: string): boolean => text.includes('\u0000');

function orderConditions(filter: OrderFilter): [string, unknown[]] {
  const params: unknown[] = [filter.userId];
  const status = filter.status === 'open' ? OPEN_STATUSES : DONE_STATUSES;
  let where = `user_id = $1 AND status ${status.length === 1 ? `= '${status[0]}'` : `IN (${status.map((s) => `'${s}'`).join(', ')})`}`;
  if (filter.marketId !== undefined) {
    params.push(filter.marketId);
    where += ` AND market_id = $${params.length}`;
  }
  return [where, params];
}

/** An empty market list matches nothing; undefined means no filter. */
function userTradeConditions(filter: TradeFilter): [string, unknown[]] {
  if (filter.marketIds === undefined) return ['', [filter.userId]];
  return [' AND market_id = ANY($2::bigint[])', [filter.userId, [...filter.marketIds]]];
}

function checkCount(value: number, name: string): number {
  if (!Number.isSafeInteger(value) || value < 0) throw new RangeError(`invalid ${name}: ${value}`);
  return value;
}

/** LIMIT NULL is no limit in PostgreSQL. */
function checkPage(page: Page | undefined): { limit: number | null; offset: number } {
  if (page === undefined) return { limit: null, offset: 0 };
  return { limit: checkCount(page.limit, 'page limit'), offset: checkCount(page.offset, 'page offset') };
}
