/**
 * The durable store on SQLite (better-sqlite3). One connection, WAL journal, synchronous=FULL by
 * default so a commit that returned survives a power cut. Every statement is prepared once here.
 *
 * Lists stream in chunks rather than through one open `stmt.iterate()`: better-sqlite3 refuses
 * any write on a connection while one of its cursors is open, so a list consumed across an
 * `await` (or abandoned half-way) would make every commit fail. Each chunk is read completely,
 * the next one resumes below the last id seen (keyset pagination), so memory stays bounded and
 * the connection is free between chunks.
 */
import { accessSync, closeSync, constants, fdatasync, fdatasyncSync, openSync } from 'node:fs';
import Database from 'better-sqlite3';
import type {
  AssetSpec,
  MarketId,
  MarketSpec,
  Micros,
  OrderId,
  OrderStatus,
  TradeId,
  UserId,
} from '../../domain/types.js';
import type { EngineSnapshot, OrderState, Trade } from '../../engine/types.js';
import { type Candle, INTERVALS, type Interval } from '../../market-data/candle.js';
import { narrowToOwner, PRIVATE_FILE } from '../../private-files.js';
import { ApiKeyCache } from '../api-key-cache.js';
import {
  type ApiKeyRecord,
  type BookSequence,
  CANONICAL_NONCE,
  type CandleEnd,
  type CheckpointInfo,
  type CommandReceipt,
  type CommitBatch,
  type IdempotencyRecord,
  type LedgerEntry,
  type LedgerKind,
  type NewApiKeyRecord,
  type OrderFilter,
  type Page,
  type PublicTradeFilter,
  type Store,
  StoreUnavailableError,
  type TradeFilter,
  type UserRecord,
  type UserTrade,
} from '../store.js';
import { SqliteCheckpoints } from './checkpoints.js';
import { guarded, toStoreError } from './errors.js';
import { migrate, SCHEMA_VERSION, schemaVersion } from './migrations.js';
import {
  API_KEY_COLUMNS,
  type ApiKeyRow,
  type AssetRow,
  apiKeyFromRow,
  assetFromRow,
  type BalanceRow,
  balanceFromRow,
  CANDLE_COLUMNS,
  type CandleRow,
  candleFromRow,
  encodeIpAllowlist,
  encodeScopes,
  LAST_PRICES_SQL,
  type LedgerRow,
  lastPricesOf,
  ledgerFromRow,
  type MarketRow,
  marketFromRow,
  ORDER_COLUMNS,
  type OrderRow,
  orderControlValues,
  orderFromRow,
  orderTriggerValues,
  SEQUENCE_KEYS,
  sequencesFromMeta,
  switchesOf,
  switchFromRow,
  type TotalsRow,
  TRADE_COLUMNS,
  type TradeRow,
  totalsFromRow,
  tradeFromRow,
  type UserRow,
  userFromRow,
  userTradeFromRow,
} from './rows.js';
import { ensureWriteProbe, prepareWriteProbe } from './write-probe.js';

export interface SqliteStoreOptions {
  /** A file path, or ':memory:' for a throw-away database. */
  readonly path: string;
  /** FULL (default) syncs the WAL on every commit; NORMAL may lose the last commits on power loss. */
  readonly synchronous?: 'FULL' | 'NORMAL';
  /** How long to wait for a lock held by another connection before failing, in milliseconds. */
  readonly busyTimeoutMs?: number;
  /** Open without writing (inspection tools): no migration, and every write fails with StoreUnavailableError. */
  readonly readonly?: boolean;
  /** Where checkpoints are saved (created when the first is). Default: kept in memory (checkpoints.ts). */
  readonly checkpointDir?: string;
}

/** Rows read per query when streaming a list. */
const CHUNK_ROWS = 256;
/** Order ids bound per `tradesOfOrders` query, well under SQLite's bound-parameter limit. */
const IN_LIST_SIZE = 500;
const DEFAULT_BUSY_TIMEOUT_MS = 5000;
/** A read that must not be kept (inside a transaction, on a read-only store): frozen, not cached. */
const UNCACHED = new ApiKeyCache(0);

const OPEN_STATUSES: readonly OrderStatus[] = ['open'];
const DONE_STATUSES: readonly OrderStatus[] = ['closed', 'canceled'];

/** A journaled write in progress: SqliteStore.startJournaledWrite. */
export interface JournaledWrite {
  /** Runs up to `statements` more of its statements; true once all have run. Throws (rolled back) when one fails. */
  step(statements: number): boolean;
  /** Runs what is left and commits, not synced (SqliteStore.syncJournaledWrites); throws (rolled back) when it cannot. */
  commit(): void;
  /** Rolls it back, unless it is over. */
  abandon(): void;
}

export class SqliteStore implements Store {
  readonly #db: Database.Database;
  readonly #write: WriteStatements;
  readonly #read: ReadStatements;
  /** Writes a batch; with a number, also records it as the last journaled commit written (journal_state). */
  readonly #commit: Database.Transaction<(batch: CommitBatch, journaledUpTo?: number) => void>;
  readonly #snapshot: Database.Transaction<() => EngineSnapshot>;
  readonly #writeProbe: (() => void) | undefined;
  readonly #withoutSync: Database.Statement;
  readonly #withConfiguredSync: Database.Statement;
  /** The journaled write whose transaction is open (startJournaledWrite), if any. */
  #journaledWrite: JournaledWrite | undefined;
  /** The write-ahead log, opened to sync what journaled writes committed (syncJournaledWrites). */
  #walFd: number | undefined;
  /**
   * API key records by key, as read: every signed request reads its key. Every write to api_keys
   * goes through this object (createApiKey, revokeApiKey), which drops the key's entry, so a
   * revocation is seen by the very next read. Off on a read-only store (another process writes).
   * The IP allow-list and the nonce flag are fixed at creation, so a cached record cannot hold a
   * stale one; the last accepted nonce, the one column that changes per request, is never part of
   * a record: acceptNonce compares it inside SQLite, so the cache cannot serve a stale nonce.
   */
  readonly #apiKeys = new ApiKeyCache(Number.POSITIVE_INFINITY);
  readonly #checkpoints: SqliteCheckpoints;

  private constructor(db: Database.Database, checkpointDir: string | undefined) {
    this.#db = db;
    this.#checkpoints = new SqliteCheckpoints(db, checkpointDir);
    this.#write = prepareWrites(db);
    this.#read = prepareReads(db);
    // Prepared only where the row exists: a read-only store never commits.
    const writeProbe = db.readonly ? undefined : prepareWriteProbe(db);
    this.#writeProbe = writeProbe;
    // Journaled writes commit without syncing the log (startJournaledWrite): their commits are
    // in the journal until syncJournaledWrites says otherwise. Everything else syncs as configured.
    this.#withoutSync = db.prepare('PRAGMA synchronous = NORMAL');
    this.#withConfiguredSync = db.prepare(
      `PRAGMA synchronous = ${db.pragma('synchronous', { simple: true }) === 2 ? 'FULL' : 'NORMAL'}`,
    );
    this.#commit = db.transaction((batch: CommitBatch, journaledUpTo?: number) => {
      writeBatch(this.#write, batch);
      if (batch.writeProbe === true && writeProbe !== undefined) writeProbe();
      if (journaledUpTo !== undefined) this.#write.setJournalApplied.run(journaledUpTo);
    });
    this.#snapshot = db.transaction(() => readSnapshot(this.#read));
  }

  static open(options: SqliteStoreOptions): SqliteStore {
    const readonly = options.readonly ?? false;
    const timeout = options.busyTimeoutMs ?? DEFAULT_BUSY_TIMEOUT_MS;
    if (!Number.isSafeInteger(timeout) || timeout < 0)
      throw new RangeError(`invalid busy timeout: ${timeout}`);
    return guarded(() => {
      if (!readonly) createPrivately(options.path);
      const db = new Database(options.path, { readonly, fileMustExist: readonly, timeout });
      try {
        configure(db, options.synchronous ?? 'FULL', readonly);
        if (!readonly) assertWritable(options.path);
        return new SqliteStore(db, options.checkpointDir);
      } catch (error) {
        db.close();
        throw error;
      }
    });
  }

  loadSnapshot(): EngineSnapshot {
    // Inside a transaction left open by a failed commit, better-sqlite3 would read through a
    // savepoint, i.e. the uncommitted writes: the snapshot must only ever be the committed state.
    this.#endAbandonedTransaction();
    // A read transaction so every table is read from the same state of the file.
    return guarded(() => this.#snapshot.deferred());
  }

  commit(batch: CommitBatch): void {
    this.#writeBatch(batch, undefined);
  }

  /**
   * Writes `batch` (journaled group commits merged into one, merge-batches.ts) and records
   * `appliedSeq` as the last journaled commit the tables hold, in one transaction.
   */
  commitJournaled(batch: CommitBatch, appliedSeq: number): void {
    this.#writeBatch(batch, appliedSeq);
  }

  #writeBatch(batch: CommitBatch, journaledUpTo: number | undefined): void {
    // A commit nested in a leftover transaction would only release a savepoint: nothing durable.
    this.#endAbandonedTransaction();
    try {
      // IMMEDIATE takes the write lock up front, so lock contention surfaces at BEGIN (after the
      // busy timeout) rather than half-way through the batch.
      guarded(() => this.#commit.immediate(batch, journaledUpTo));
    } catch (error) {
      // better-sqlite3 rolls back when the connection is still in the transaction; should that
      // rollback fail too, try once more here so the next reader does not see the failed writes.
      this.#endAbandonedTransaction(false);
      throw error;
    }
  }

  /**
   * Starts writing `batch` (journaled group commits merged into one) and `appliedSeq` as the last
   * journaled commit the tables hold, in one transaction that stays open between calls of the
   * returned write's `step`: its statements run a few at a time, and the event loop serves
   * requests in between. Until it is committed or abandoned nothing else may use the connection
   * (the journaled store finishes it first); a read or write that ends a leftover transaction
   * rolls it back instead, which loses nothing: the commits are still in the journal.
   */
  startJournaledWrite(batch: CommitBatch, appliedSeq: number): JournaledWrite {
    this.#endAbandonedTransaction();
    // Not synced at its commit, on the event loop: the commits stay in the journal until
    // syncJournaledWrites has made it durable, off the loop. (Set outside the transaction, as
    // SQLite requires; the configured level is back once it ends.)
    guarded(() => {
      this.#withoutSync.run();
      try {
        this.#write.begin.run();
      } catch (error) {
        this.#withConfiguredSync.run();
        throw error;
      }
    });
    const writes = journaledWrites(this.#write, batch, appliedSeq, this.#writeProbe);
    const write: JournaledWrite = {
      step: (statements) => {
        this.#assertOpen(write);
        try {
          for (let i = 0; i < statements; i++) if (writes.next().done === true) return true;
          return false;
        } catch (error) {
          this.#abandon(write);
          throw toStoreError(error);
        }
      },
      commit: () => {
        while (!write.step(Number.MAX_SAFE_INTEGER));
        try {
          guarded(() => this.#write.commit.run());
        } catch (error) {
          this.#abandon(write);
          throw error;
        }
        this.#journaledWrite = undefined;
        guarded(() => this.#withConfiguredSync.run());
      },
      abandon: () => {
        if (this.#journaledWrite === write) this.#abandon(write);
      },
    };
    this.#journaledWrite = write;
    return write;
  }

  /**
   * Makes every journaled write committed so far durable: one fdatasync of the write-ahead log,
   * on libuv's thread pool. Rejects with StoreUnavailableError when the sync fails.
   */
  syncJournaledWrites(): Promise<void> {
    const fd = this.#wal();
    if (fd === undefined) return Promise.resolve();
    return new Promise((resolve, reject) =>
      fdatasync(fd, (error) => (error === null ? resolve() : reject(toStoreError(error)))),
    );
  }

  /** syncJournaledWrites, on the calling thread. */
  syncJournaledWritesNow(): void {
    const fd = this.#wal();
    if (fd !== undefined) guarded(() => fdatasyncSync(fd));
  }

  /** The log's descriptor; undefined without one (an in-memory database, nothing written yet). */
  #wal(): number | undefined {
    if (this.#walFd !== undefined || !isFilePath(this.#db.name)) return this.#walFd;
    try {
      this.#walFd = openSync(`${this.#db.name}-wal`, 'r+');
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw toStoreError(error);
    }
    return this.#walFd;
  }

  #assertOpen(write: JournaledWrite): void {
    if (this.#journaledWrite !== write)
      throw new StoreUnavailableError('store unavailable: the journaled write was rolled back', {
        reason: 'database file I/O error',
      });
  }

  #abandon(write: JournaledWrite): void {
    if (this.#journaledWrite === write) this.#endAbandonedTransaction(false);
  }

  /** The number of the last journaled group commit the tables hold (0: none yet). */
  journalApplied(): number {
    this.#endAbandonedTransaction();
    return guarded(() => this.#read.journalApplied.get()) ?? 0;
  }

  /**
   * Rolls back a transaction still open on the connection (only a failed commit or rollback can
   * leave one). Throws StoreUnavailableError when it cannot, unless `strict` is false.
   */
  #endAbandonedTransaction(strict = true): void {
    const journaled = this.#journaledWrite !== undefined;
    this.#journaledWrite = undefined;
    if (!this.#db.open) return;
    if (this.#db.inTransaction) {
      try {
        this.#db.exec('ROLLBACK');
      } catch (error) {
        if (strict) throw toStoreError(error);
        return;
      }
      if (this.#db.inTransaction) {
        if (strict)
          throw new StoreUnavailableError('store unavailable: a failed transaction could not be rolled back');
        return;
      }
    }
    // A journaled write's transaction ended: back to the configured sync.
    if (journaled) guarded(() => this.#withConfiguredSync.run());
  }

  createUser(email: string | null, time: Micros): UserRecord {
    const row = guarded(() => this.#write.insertUser.get(email, time));
    if (row === undefined) throw new Error('INSERT ... RETURNING returned no row');
    return userFromRow(row);
  }

  getUser(id: UserId): UserRecord | undefined {
    const row = guarded(() => this.#read.user.get(id));
    return row && userFromRow(row);
  }

  listUsers(): UserRecord[] {
    return guarded(() => this.#read.users.all()).map(userFromRow);
  }

  createApiKey(record: NewApiKeyRecord): void {
    this.#apiKeys.forget(record.key);
    const scopes = encodeScopes(record.scopes);
    const ipAllowlist = encodeIpAllowlist(record.ipAllowlist);
    const nonceRequired = record.nonceRequired === true ? 1 : 0;
    guarded(() =>
      this.#write.insertApiKey.run(
        record.key,
        record.userId,
        record.sealedSecret,
        scopes,
        record.createdAt,
        record.revokedAt,
        ipAllowlist,
        nonceRequired,
      ),
    );
  }

  cachedApiKey(key: string): ApiKeyRecord | undefined {
    return this.#apiKeys.get(key);
  }

  getApiKey(key: string): ApiKeyRecord | undefined {
    const cached = this.#apiKeys.get(key);
    if (cached !== undefined) return cached;
    const row = guarded(() => this.#read.apiKey.get(key));
    if (row === undefined) return undefined; // unknown keys are not remembered: nothing to fill memory with
    // Only what is committed: a read inside a transaction could see writes that get rolled back.
    const cache = !this.#db.readonly && !this.#db.inTransaction ? this.#apiKeys : UNCACHED;
    return cache.remember(apiKeyFromRow(row));
  }

  listApiKeys(userId: UserId): ApiKeyRecord[] {
    return guarded(() => this.#read.apiKeysOfUser.all(userId)).map(apiKeyFromRow);
  }

  /** True when the key existed and was active; revoking twice keeps the first revocation time. */
  revokeApiKey(key: string, time: Micros): boolean {
    this.#apiKeys.forget(key);
    return guarded(() => this.#write.revokeApiKey.run(time, key)).changes > 0;
  }

  acceptNonce(key: string, nonce: string): boolean {
    if (typeof nonce !== 'string' || !CANONICAL_NONCE.test(nonce))
      throw new RangeError(`invalid nonce: ${JSON.stringify(nonce)}`);
    // Outside any transaction, so the UPDATE commits (and, with synchronous=FULL, is synced)
    // before this returns: a nonce accepted once stays accepted across a crash.
    this.#endAbandonedTransaction();
    return guarded(() => this.#write.acceptNonce.run({ key, nonce })).changes > 0;
  }

  findLedgerEntry(userId: UserId, kind: LedgerKind, reference: string): LedgerEntry | undefined {
    const row = guarded(() => this.#read.ledgerEntry.get(userId, kind, reference));
    return row && ledgerFromRow(row);
  }

  loadLedgerReferences(): LedgerEntry[] {
    return guarded(() => this.#read.ledgerReferences.all()).map(ledgerFromRow);
  }

  loadBookSequences(): BookSequence[] {
    return guarded(() => this.#read.bookSequences.all()).map((row) => ({
      marketId: row.market_id as MarketId,
      sequence: row.sequence,
    }));
  }

  findIdempotencyRecord(userId: UserId, key: string): IdempotencyRecord | undefined {
    const row = guarded(() => this.#read.idempotencyRecord.get(userId, key));
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

  loadCommandReceipts(notBefore: number): CommandReceipt[] {
    return guarded(() => this.#read.commandReceipts.all(notBefore));
  }

  getOrder(id: OrderId): OrderState | undefined {
    const row = guarded(() => this.#read.order.get(id));
    return row && orderFromRow(row);
  }

  findOrderByClientId(userId: UserId, clientOrderId: string): OrderState | undefined {
    const row = guarded(() => this.#read.orderByClientId.get(userId, clientOrderId));
    return row && orderFromRow(row);
  }

  listOrders(filter: OrderFilter, page?: Page): Iterable<OrderState> {
    const stmt = pickByMarket(this.#read.orderLists[filter.status], filter.marketId);
    const params = { user: filter.userId, market: filter.marketId };
    return newestFirst(
      page,
      (before, limit, offset) => stmt.all({ ...params, before, limit, offset }),
      orderFromRow,
      filter.beforeId,
    );
  }

  countOrders(filter: OrderFilter): number {
    const stmt = pickByMarket(this.#read.orderCounts[filter.status], filter.marketId);
    return guarded(() => stmt.get({ user: filter.userId, market: filter.marketId })) ?? 0;
  }

  /** Every requested id is a key of the result, with an empty list when the order never traded. */
  tradesOfOrders(ids: readonly OrderId[]): Map<OrderId, Trade[]> {
    const result = new Map<OrderId, Trade[]>(ids.map((id) => [id, []]));
    const unique = [...result.keys()];
    for (let i = 0; i < unique.length; i += IN_LIST_SIZE) {
      const chunk = unique.slice(i, i + IN_LIST_SIZE);
      // Padding with NULL keeps one prepared statement for every chunk size: `x IN (.., NULL)` never matches NULL.
      const bound = [...chunk, ...Array<null>(IN_LIST_SIZE - chunk.length).fill(null)];
      const inChunk = new Set<number>(chunk);
      for (const row of guarded(() => this.#read.tradesOfOrders.all(...bound, ...bound))) {
        const trade = tradeFromRow(row);
        // Only this chunk's orders: the other side of the trade is collected with its own chunk.
        if (inChunk.has(trade.takerOrderId)) result.get(trade.takerOrderId)?.push(trade);
        if (inChunk.has(trade.makerOrderId)) result.get(trade.makerOrderId)?.push(trade);
      }
    }
    return result;
  }

  getUserTrade(userId: UserId, id: TradeId): UserTrade | undefined {
    const row = guarded(() => this.#read.userTrade.get({ user: userId, id }));
    return row && userTradeFromRow(row, userId);
  }

  listUserTrades(filter: TradeFilter, page?: Page): Iterable<UserTrade> {
    const stmt =
      filter.marketIds === undefined ? this.#read.userTradeLists.all : this.#read.userTradeLists.market;
    const params = { user: filter.userId, markets: marketList(filter.marketIds) };
    return newestFirst(
      page,
      (before, limit, offset) => stmt.all({ ...params, before, limit, offset }),
      (row) => userTradeFromRow(row, filter.userId),
      filter.beforeId,
    );
  }

  countUserTrades(filter: TradeFilter): number {
    const stmt =
      filter.marketIds === undefined ? this.#read.userTradeCounts.all : this.#read.userTradeCounts.market;
    return guarded(() => stmt.get({ user: filter.userId, markets: marketList(filter.marketIds) })) ?? 0;
  }

  listPublicTrades(filter: PublicTradeFilter): Trade[] {
    const limit = filter.limit === undefined ? -1 : checkCount(filter.limit, 'limit');
    const params = { market: filter.marketId, side: filter.takerSide ?? null, since: filter.since, limit };
    const trades = this.#read.publicTrades;
    const stmt =
      filter.since === undefined
        ? filter.oldestFirst === true
          ? trades.oldest
          : trades.recent
        : filter.oldestFirst === true
          ? trades.sinceOldest
          : trades.since;
    return guarded(() => stmt.all({ ...params, since: filter.since ?? 0 })).map(tradeFromRow);
  }

  listCandles(
    marketId: MarketId,
    interval: Interval,
    since: number,
    limit: number,
    keep: CandleEnd = 'newest',
  ): Candle[] {
    const params = { market: marketId, interval, since, limit: checkCount(limit, 'limit') };
    const stmt = keep === 'oldest' ? this.#read.oldestCandles : this.#read.candles;
    return guarded(() => stmt.all(params)).map(candleFromRow);
  }

  latestCandles(marketId: MarketId): Candle[] {
    const latest: Candle[] = [];
    for (const interval of INTERVALS) {
      const row = guarded(() => this.#read.latestCandle.get({ market: marketId, interval }));
      if (row !== undefined) latest.push(candleFromRow(row));
    }
    return latest;
  }

  saveCheckpoint(name: string, time: Micros): CheckpointInfo {
    // A transaction left open by a failed commit would be copied with its uncommitted writes.
    this.#endAbandonedTransaction();
    return this.#checkpoints.save(name, time);
  }

  restoreCheckpoint(name: string): void {
    this.#endAbandonedTransaction();
    this.#checkpoints.restore(name);
  }

  listCheckpoints(): CheckpointInfo[] {
    return this.#checkpoints.list();
  }

  deleteCheckpoint(name: string): boolean {
    return this.#checkpoints.delete(name);
  }

  close(): void {
    if (this.#walFd !== undefined) closeSync(this.#walFd);
    this.#walFd = undefined;
    if (this.#db.open) this.#db.close();
  }
}

/**
 * SQLite opens a file it may not write (read-only mount, immutable file) read-only without a word
 * when its WAL already exists, and only the first commit fails; nothing short of reopening would
 * ever make it writable again. Refuse at open instead, saying why.
 */
const isFilePath = (path: string): boolean => path !== '' && path !== ':memory:' && !path.startsWith('file:');

/**
 * The database holds balances, orders and sealed secrets: it is created 0600 before SQLite opens
 * it, whatever the umask, and SQLite gives its -wal and -shm files the mode of the main file. A
 * file left readable by others (an older version, a restored backup) is narrowed to 0600.
 */
function createPrivately(path: string): void {
  if (!isFilePath(path)) return;
  try {
    closeSync(openSync(path, 'wx', 0o600));
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') return; // SQLite reports it better
  }
  // Absent (-wal, -shm) or not ours to change: SQLite decides what happens next.
  for (const file of [path, `${path}-wal`, `${path}-shm`]) narrowToOwner(file, PRIVATE_FILE);
}

function assertWritable(path: string): void {
  if (!isFilePath(path)) return;
  try {
    accessSync(path, constants.W_OK);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code ?? 'unknown error';
    throw new StoreUnavailableError(
      `store unavailable: the database file ${path} cannot be written (${code})`,
      {
        cause: error,
      },
    );
  }
}

function configure(db: Database.Database, synchronous: 'FULL' | 'NORMAL', readonly: boolean): void {
  // Interpolated into a pragma, so checked even though the type already restricts it.
  if (synchronous !== 'FULL' && synchronous !== 'NORMAL')
    throw new RangeError(`invalid synchronous: ${synchronous}`);
  if (!readonly) db.pragma('journal_mode = WAL');
  db.pragma(`synchronous = ${synchronous}`);
  db.pragma('foreign_keys = ON');
  if (!readonly) {
    migrate(db);
    ensureWriteProbe(db);
    return;
  }
  const version = schemaVersion(db);
  if (version !== SCHEMA_VERSION)
    throw new Error(`database schema version ${version} differs from this release's (${SCHEMA_VERSION})`);
}

// ---------------------------------------------------------------- commit

function prepareWrites(db: Database.Database) {
  return {
    insertAsset: db.prepare<[string, string, string, number]>(
      'INSERT INTO assets (code, name, type, decimals) VALUES (?, ?, ?, ?)',
    ),
    insertMarket: db.prepare<[number, string, string, number, number, number, number, number]>(
      `INSERT INTO markets (id, base, quote, pair_decimals, lot_decimals, ordermin, maker_fee, taker_fee)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
    ),
    insertTrade: db.prepare<
      [
        number,
        number,
        number,
        number,
        number,
        number,
        number,
        number,
        number,
        string,
        string,
        number,
        number,
        number,
      ]
    >(`INSERT INTO trades (${TRADE_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`),
    upsertOrder: db.prepare<
      [
        number,
        number,
        number,
        string,
        string,
        number,
        number,
        number,
        string,
        string | null,
        number,
        number | null,
        number,
        number,
        number,
        number,
        ...OrderControlParams,
        ...OrderTriggerParams,
      ]
    >(
      `INSERT INTO orders (${ORDER_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
       ON CONFLICT (id) DO UPDATE SET
         user_id = excluded.user_id, market_id = excluded.market_id, side = excluded.side,
         type = excluded.type, price = excluded.price, volume = excluded.volume,
         executed = excluded.executed, status = excluded.status, reason = excluded.reason,
         open_time = excluded.open_time, close_time = excluded.close_time, cost = excluded.cost,
         fee = excluded.fee, reserved = excluded.reserved, fee_excess = excluded.fee_excess,
         time_in_force = excluded.time_in_force, expire_time = excluded.expire_time,
         post_only = excluded.post_only, client_order_id = excluded.client_order_id, stp = excluded.stp,
         priority = excluded.priority, trigger_price = excluded.trigger_price,
         trailing_unit = excluded.trailing_unit, trailing_amount = excluded.trailing_amount,
         trailing_best = excluded.trailing_best, triggered = excluded.triggered`,
    ),
    // An order's later states change only these columns (the others are fixed when it is placed;
    // an amend changes price, volume, client id and trigger; a trailing stop moves its trigger and
    // best price; a conditional order fires): no conflict detection, and no foreign-key check of
    // a market_id that cannot have changed.
    updateOrderState: db.prepare<
      [
        number,
        number,
        number,
        string,
        string | null,
        number | null,
        number,
        number,
        number,
        number,
        string | null,
        number | null,
        number | null,
        number | null,
        number,
        number,
      ]
    >(
      `UPDATE orders SET price = ?, volume = ?, executed = ?, status = ?, reason = ?, close_time = ?,
         cost = ?, fee = ?, reserved = ?, fee_excess = ?, client_order_id = ?, priority = ?,
         trigger_price = ?, trailing_best = ?, triggered = ? WHERE id = ?`,
    ),
    upsertSwitch: db.prepare<[number, number]>(
      `INSERT INTO cancel_all_after (user_id, trigger_time) VALUES (?, ?)
       ON CONFLICT (user_id) DO UPDATE SET trigger_time = excluded.trigger_time`,
    ),
    deleteSwitch: db.prepare<[number]>('DELETE FROM cancel_all_after WHERE user_id = ?'),
    upsertBalance: db.prepare<[number, string, number, number]>(
      `INSERT INTO balances (user_id, asset, available, reserved) VALUES (?, ?, ?, ?)
       ON CONFLICT (user_id, asset) DO UPDATE SET available = excluded.available, reserved = excluded.reserved`,
    ),
    upsertTotals: db.prepare<[string, number, number]>(
      `INSERT INTO asset_totals (asset, net_deposits, fees) VALUES (?, ?, ?)
       ON CONFLICT (asset) DO UPDATE SET net_deposits = excluded.net_deposits, fees = excluded.fees`,
    ),
    insertLedger: db.prepare<[number, string, string, number, string | null, number]>(
      'INSERT INTO ledger_entries (user_id, asset, kind, amount, reference, time) VALUES (?, ?, ?, ?, ?, ?)',
    ),
    upsertIdempotency: db.prepare<[number, string, string, number, number]>(
      `INSERT INTO idempotency_keys (user_id, key, fingerprint, order_id, time) VALUES (?, ?, ?, ?, ?)
       ON CONFLICT (user_id, key) DO UPDATE SET
         fingerprint = excluded.fingerprint, order_id = excluded.order_id, time = excluded.time`,
    ),
    // Oldest first through the time index, at most PRUNE_LIMIT rows: a commit's cost stays bounded
    // however many records expired at once (the rest go with the next commits).
    insertCommandReceipt: db.prepare<[string, number, string]>(
      'INSERT INTO command_receipts (id, expires, reply) VALUES (?, ?, ?) ON CONFLICT (id) DO NOTHING',
    ),
    pruneCommandReceipts: db.prepare<[number, number]>(
      `DELETE FROM command_receipts WHERE id IN (
         SELECT id FROM command_receipts INDEXED BY command_receipts_by_expiry
         WHERE expires < ? ORDER BY expires LIMIT ?)`,
    ),
    pruneIdempotency: db.prepare<[number, number]>(
      `DELETE FROM idempotency_keys WHERE rowid IN (
         SELECT rowid FROM idempotency_keys INDEXED BY idempotency_keys_by_time
         WHERE time < ? ORDER BY time LIMIT ?)`,
    ),
    upsertCandle: db.prepare<
      [number, number, number, number, number, number, number, string, string, string, number]
    >(
      `INSERT INTO candles (${CANDLE_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
       ON CONFLICT (market_id, interval, start) DO UPDATE SET
         open = excluded.open, high = excluded.high, low = excluded.low, close = excluded.close,
         volume = excluded.volume, quote_volume = excluded.quote_volume,
         notional = excluded.notional, count = excluded.count`,
    ),
    upsertMeta: db.prepare<[string, number]>(
      'INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value',
    ),
    setJournalApplied: db.prepare<[number]>('UPDATE journal_state SET applied = ? WHERE id = 1'),
    // A journaled write's transaction, open across several calls (startJournaledWrite).
    begin: db.prepare('BEGIN IMMEDIATE'),
    commit: db.prepare('COMMIT'),
    upsertBookSequence: db.prepare<[number, number]>(
      `INSERT INTO book_sequences (market_id, sequence) VALUES (?, ?)
       ON CONFLICT (market_id) DO UPDATE SET sequence = excluded.sequence`,
    ),
    insertUser: db.prepare<[string | null, number], UserRow>(
      'INSERT INTO users (email, created_at) VALUES (?, ?) RETURNING id, email, created_at',
    ),
    insertApiKey: db.prepare<[string, number, string, string, number, number | null, string | null, number]>(
      `INSERT INTO api_keys (${API_KEY_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
    ),
    // Canonical decimal texts of at most 20 digits: the longer is the greater, and at equal length
    // SQLite's BINARY text comparison is the numeric one.
    acceptNonce: db.prepare<{ key: string; nonce: string }>(
      `UPDATE api_keys SET last_nonce = @nonce
       WHERE key = @key AND revoked_at IS NULL AND (
         last_nonce IS NULL
         OR length(last_nonce) < length(@nonce)
         OR (length(last_nonce) = length(@nonce) AND last_nonce < @nonce)
       )`,
    ),
    revokeApiKey: db.prepare<[number, string]>(
      'UPDATE api_keys SET revoked_at = ? WHERE key = ? AND revoked_at IS NULL',
    ),
  };
}

type WriteStatements = ReturnType<typeof prepareWrites>;

/** Expired idempotency records deleted per commit at most (more than a batch usually creates). */
const IDEMPOTENCY_PRUNE_LIMIT = 1000;

/** Runs inside the commit transaction; the order of the writes does not matter (foreign keys are deferred). */
function writeBatch(s: WriteStatements, batch: CommitBatch): void {
  const writes = batchWrites(s, batch);
  while (writes.next().done !== true);
}

/** A journaled write's statements: the batch's, the write probe's, then the journal number. */
function* journaledWrites(
  s: WriteStatements,
  batch: CommitBatch,
  appliedSeq: number,
  writeProbe: (() => void) | undefined,
): Generator<void, void, undefined> {
  yield* batchWrites(s, batch);
  if (batch.writeProbe === true && writeProbe !== undefined) writeProbe();
  s.setJournalApplied.run(appliedSeq);
}

/**
 * The statements of `batch`, run one per step: writeBatch runs them all at once, a journaled
 * write (startJournaledWrite) a few at a time between other work.
 */
function* batchWrites(s: WriteStatements, batch: CommitBatch): Generator<void, void, undefined> {
  /** Orders placed in this batch: every other changed order already has its row. */
  const placed = new Set<number>(batch.placedOrderIds);
  for (const event of batch.events) {
    if (event.type === 'assetCreated') insertAsset(s, event.asset);
    else if (event.type === 'marketCreated') insertMarket(s, event.market);
    else if (event.type === 'trade') insertTrade(s, event.trade);
    else if (event.type === 'orderAccepted') {
      placed.add(event.order.id);
      continue;
    } else continue; // Order and balance events are covered by the change set, which holds their final state.
    yield;
  }
  const { changes } = batch;
  for (const o of changes.orders) {
    // The upsert stays the fallback, should a row be missing after all.
    if (placed.has(o.id) || updateOrderState(s, o) === 0) upsertOrder(s, o);
    yield;
  }
  for (const w of changes.switches ?? []) {
    // A disarmed or fired switch has no row: what is left is exactly the armed ones.
    if (w.triggerTime > 0) s.upsertSwitch.run(w.userId, w.triggerTime);
    else s.deleteSwitch.run(w.userId);
    yield;
  }
  for (const b of changes.balances) {
    s.upsertBalance.run(b.userId, b.asset, b.available, b.reserved);
    yield;
  }
  for (const t of changes.totals) s.upsertTotals.run(t.asset, t.netDeposits, t.fees);
  for (const e of batch.ledger) {
    s.insertLedger.run(e.userId, e.asset, e.kind, e.amount, e.reference, e.time);
    yield;
  }
  for (const c of batch.candles) {
    upsertCandle(s, c);
    yield;
  }
  for (const r of batch.idempotencyKeys ?? []) {
    s.upsertIdempotency.run(r.userId, r.key, r.fingerprint, r.orderId, r.time);
    yield;
  }
  if (batch.idempotencyExpiredBefore !== undefined)
    s.pruneIdempotency.run(batch.idempotencyExpiredBefore, IDEMPOTENCY_PRUNE_LIMIT);
  for (const r of batch.commandReceipts ?? []) {
    s.insertCommandReceipt.run(r.id, r.expires, r.reply);
    yield;
  }
  if (batch.commandReceiptsExpiredBefore !== undefined)
    s.pruneCommandReceipts.run(batch.commandReceiptsExpiredBefore, IDEMPOTENCY_PRUNE_LIMIT);
  for (const key of SEQUENCE_KEYS) s.upsertMeta.run(key, changes.sequences[key]);
  for (const b of batch.bookSequences ?? []) s.upsertBookSequence.run(b.marketId, b.sequence);
}

function insertAsset(s: WriteStatements, a: AssetSpec): void {
  s.insertAsset.run(a.code, a.name, a.type, a.decimals);
}

function insertMarket(s: WriteStatements, m: MarketSpec): void {
  s.insertMarket.run(
    m.id,
    m.base,
    m.quote,
    m.pairDecimals,
    m.lotDecimals,
    m.ordermin,
    m.makerFee,
    m.takerFee,
  );
}

function insertTrade(s: WriteStatements, t: Trade): void {
  s.insertTrade.run(
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
  );
}

function upsertOrder(s: WriteStatements, o: OrderState): void {
  s.upsertOrder.run(
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
    ...sqliteControls(o),
    ...sqliteTriggers(o),
  );
}

type OrderTriggerParams = [number | null, string | null, number | null, number | null, number];

/** The conditional columns as SQLite takes them (triggered as 0 or 1). */
function sqliteTriggers(o: OrderState): OrderTriggerParams {
  const [triggerPrice, unit, amount, best, triggered] = orderTriggerValues(o);
  return [triggerPrice, unit, amount, best, triggered ? 1 : 0];
}

type OrderControlParams = [string, number, number, string | null, string, number | null];

/** The control columns as SQLite takes them (a boolean as 0 or 1). */
function sqliteControls(o: OrderState): OrderControlParams {
  const [timeInForce, expireTime, postOnly, clientOrderId, stp, priority] = orderControlValues(o);
  return [timeInForce, expireTime, postOnly ? 1 : 0, clientOrderId, stp, priority];
}

/** Rows changed. */
function updateOrderState(s: WriteStatements, o: OrderState): number {
  return s.updateOrderState.run(
    o.price,
    o.volume,
    o.executed,
    o.status,
    o.reason,
    o.closeTime,
    o.cost,
    o.fee,
    o.reserved,
    o.feeExcess,
    o.clientOrderId ?? null,
    o.priority ?? null,
    o.triggerPrice ?? null,
    o.trailingBest ?? null,
    o.triggered === true ? 1 : 0,
    o.id,
  ).changes;
}

function upsertCandle(s: WriteStatements, c: Candle): void {
  s.upsertCandle.run(
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
  );
}

// ---------------------------------------------------------------- reads

interface UserParams {
  readonly user: number;
  readonly market?: number | undefined;
}
interface KeysetParams extends UserParams {
  readonly before: number;
  readonly limit: number;
  readonly offset: number;
}
interface UserTradeParams {
  readonly user: number;
  /** JSON array of market ids, or null when not filtering. */
  readonly markets: string | null;
}

interface PublicTradeParams {
  readonly market: number;
  readonly side: string | null;
  readonly since?: number;
  readonly limit: number;
}

interface ByMarket<S> {
  readonly all: S;
  readonly market: S;
}

function prepareReads(db: Database.Database) {
  const orderList = (statuses: readonly OrderStatus[], byMarket: boolean) =>
    db.prepare<KeysetParams, OrderRow>(orderListSql(statuses, byMarket));
  const orderCount = (statuses: readonly OrderStatus[], byMarket: boolean) =>
    db.prepare<UserParams, number>(orderCountSql(statuses, byMarket)).pluck();
  const userTradeList = (byMarket: boolean) =>
    db.prepare<UserTradeParams & KeysetParams, TradeRow>(userTradeListSql(byMarket));
  const userTradeCount = (byMarket: boolean) =>
    db.prepare<UserTradeParams, number>(userTradeCountSql(byMarket)).pluck();
  const inList = Array<string>(IN_LIST_SIZE).fill('?').join(', ');

  return {
    journalApplied: db.prepare<[], number>('SELECT applied FROM journal_state WHERE id = 1').pluck(),
    assets: db.prepare<[], AssetRow>('SELECT code, name, type, decimals FROM assets ORDER BY rowid'),
    markets: db.prepare<[], MarketRow>(
      'SELECT id, base, quote, pair_decimals, lot_decimals, ordermin, maker_fee, taker_fee FROM markets ORDER BY id',
    ),
    balances: db.prepare<[], BalanceRow>(
      'SELECT user_id, asset, available, reserved FROM balances ORDER BY user_id, asset',
    ),
    totals: db.prepare<[], TotalsRow>('SELECT asset, net_deposits, fees FROM asset_totals ORDER BY asset'),
    openOrders: db.prepare<[], OrderRow>(
      `SELECT ${ORDER_COLUMNS} FROM orders WHERE status = 'open' ORDER BY coalesce(priority, id)`,
    ),
    meta: db.prepare<[], { key: string; value: number }>('SELECT key, value FROM meta'),
    bookSequences: db.prepare<[], { market_id: number; sequence: number }>(
      'SELECT market_id, sequence FROM book_sequences ORDER BY market_id',
    ),
    switches: db.prepare<[], { user_id: number; trigger_time: number }>(
      'SELECT user_id, trigger_time FROM cancel_all_after ORDER BY user_id',
    ),
    lastPrices: db.prepare<[], { market_id: number; price: number }>(LAST_PRICES_SQL),

    order: db.prepare<[number], OrderRow>(`SELECT ${ORDER_COLUMNS} FROM orders WHERE id = ?`),
    orderByClientId: db.prepare<[number, string], OrderRow>(
      `SELECT ${ORDER_COLUMNS} FROM orders INDEXED BY orders_by_user_client_id
       WHERE user_id = ? AND client_order_id = ? ORDER BY id DESC LIMIT 1`,
    ),
    orderLists: {
      open: { all: orderList(OPEN_STATUSES, false), market: orderList(OPEN_STATUSES, true) },
      done: { all: orderList(DONE_STATUSES, false), market: orderList(DONE_STATUSES, true) },
    },
    orderCounts: {
      open: { all: orderCount(OPEN_STATUSES, false), market: orderCount(OPEN_STATUSES, true) },
      done: { all: orderCount(DONE_STATUSES, false), market: orderCount(DONE_STATUSES, true) },
    },
    tradesOfOrders: db.prepare<(number | null)[], TradeRow>(
      `SELECT ${TRADE_COLUMNS} FROM trades
       WHERE taker_order_id IN (${inList}) OR maker_order_id IN (${inList}) ORDER BY id`,
    ),

    userTrade: db.prepare<{ user: number; id: number }, TradeRow>(
      `SELECT ${TRADE_COLUMNS} FROM trades WHERE id = @id AND (taker_user_id = @user OR maker_user_id = @user)`,
    ),
    userTradeLists: { all: userTradeList(false), market: userTradeList(true) },
    userTradeCounts: { all: userTradeCount(false), market: userTradeCount(true) },
    publicTrades: {
      recent: db.prepare<PublicTradeParams, TradeRow>(publicTradesSql('trades_by_market', false)),
      since: db.prepare<PublicTradeParams, TradeRow>(publicTradesSql('trades_by_market_time', true)),
      oldest: db.prepare<PublicTradeParams, TradeRow>(oldestPublicTradesSql('trades_by_market', false)),
      sinceOldest: db.prepare<PublicTradeParams, TradeRow>(
        oldestPublicTradesSql('trades_by_market_time', true),
      ),
    },

    candles: db.prepare<{ market: number; interval: number; since: number; limit: number }, CandleRow>(
      `SELECT ${CANDLE_COLUMNS} FROM (
         SELECT ${CANDLE_COLUMNS} FROM candles
         WHERE market_id = @market AND interval = @interval AND start > @since
         ORDER BY start DESC LIMIT @limit
       ) ORDER BY start`,
    ),
    oldestCandles: db.prepare<{ market: number; interval: number; since: number; limit: number }, CandleRow>(
      `SELECT ${CANDLE_COLUMNS} FROM candles
       WHERE market_id = @market AND interval = @interval AND start > @since
       ORDER BY start LIMIT @limit`,
    ),
    latestCandle: db.prepare<{ market: number; interval: number }, CandleRow>(
      `SELECT ${CANDLE_COLUMNS} FROM candles WHERE market_id = @market AND interval = @interval
       ORDER BY start DESC LIMIT 1`,
    ),

    idempotencyRecord: db.prepare<
      [number, string],
      { user_id: number; key: string; fingerprint: string; order_id: number; time: number }
    >('SELECT user_id, key, fingerprint, order_id, time FROM idempotency_keys WHERE user_id = ? AND key = ?'),

    commandReceipts: db.prepare<[number], CommandReceipt>(
      'SELECT id, expires, reply FROM command_receipts WHERE expires >= ? ORDER BY expires',
    ),

    ledgerEntry: db.prepare<[number, string, string], LedgerRow>(
      `SELECT user_id, asset, kind, amount, reference, time FROM ledger_entries
       INDEXED BY ledger_entries_by_user_reference
       WHERE user_id = ? AND kind = ? AND reference = ? ORDER BY id LIMIT 1`,
    ),

    // The oldest entry per (user, kind, reference), in commit order (the index gives that order per key).
    ledgerReferences: db.prepare<[], LedgerRow>(
      `SELECT user_id, asset, kind, amount, reference, time FROM ledger_entries
       WHERE id IN (SELECT min(id) FROM ledger_entries WHERE reference IS NOT NULL
                    GROUP BY user_id, kind, reference)
       ORDER BY id`,
    ),

    user: db.prepare<[number], UserRow>('SELECT id, email, created_at FROM users WHERE id = ?'),
    users: db.prepare<[], UserRow>('SELECT id, email, created_at FROM users ORDER BY id'),

    apiKey: db.prepare<[string], ApiKeyRow>(`SELECT ${API_KEY_COLUMNS} FROM api_keys WHERE key = ?`),
    apiKeysOfUser: db.prepare<[number], ApiKeyRow>(
      `SELECT ${API_KEY_COLUMNS} FROM api_keys WHERE user_id = ? ORDER BY created_at, rowid`,
    ),
  };
}

type ReadStatements = ReturnType<typeof prepareReads>;

/**
 * The index that serves a list or count: the partial index of open orders, or the index of all
 * of a user's orders. Both are keyed by (user, id), so a list walks them newest first without a
 * sort, and the other conditions (status, market) are read from the index entries. Named
 * because the planner, without statistics, might prefer another path.
 */
const orderIndex = (statuses: readonly OrderStatus[]): string =>
  statuses.length === 1 && statuses[0] === 'open' ? 'orders_open_by_user' : 'orders_by_user';

function orderConditions(statuses: readonly OrderStatus[], byMarket: boolean): string {
  const market = byMarket ? ' AND market_id = @market' : '';
  // `status = 'open'` spelled out: the partial index applies only to a query that says so.
  const status =
    statuses.length === 1
      ? `status = '${statuses[0]}'`
      : `status IN (${statuses.map((s) => `'${s}'`).join(', ')})`;
  return `user_id = @user${market} AND ${status}`;
}

export function orderListSql(statuses: readonly OrderStatus[], byMarket: boolean): string {
  return `SELECT ${ORDER_COLUMNS} FROM orders INDEXED BY ${orderIndex(statuses)}
    WHERE ${orderConditions(statuses, byMarket)} AND id < @before ORDER BY id DESC LIMIT @limit OFFSET @offset`;
}

export function orderCountSql(statuses: readonly OrderStatus[], byMarket: boolean): string {
  return `SELECT count(*) FROM orders INDEXED BY ${orderIndex(statuses)} WHERE ${orderConditions(statuses, byMarket)}`;
}

/**
 * Without `since`, the (market, id) index yields the newest trades first and stops at the limit.
 * With it, the (market, time) range holds just the trades wanted, sorted afterwards; the index is
 * named because the planner, without statistics, may prefer walking the whole market by id.
 */
export function publicTradesSql(
  index: 'trades_by_market' | 'trades_by_market_time',
  bySince: boolean,
): string {
  const since = bySince ? ' AND time >= @since' : '';
  return `SELECT ${TRADE_COLUMNS} FROM trades INDEXED BY ${index}
    WHERE market_id = @market${since} AND (@side IS NULL OR taker_side = @side)
    ORDER BY id DESC LIMIT @limit`;
}

/** The forward page of publicTradesSql: the oldest trades (from `since`), oldest first. */
export function oldestPublicTradesSql(
  index: 'trades_by_market' | 'trades_by_market_time',
  bySince: boolean,
): string {
  const since = bySince ? ' AND time >= @since' : '';
  const order = bySince ? 'time, id' : 'id';
  return `SELECT ${TRADE_COLUMNS} FROM trades INDEXED BY ${index}
    WHERE market_id = @market${since} AND (@side IS NULL OR taker_side = @side)
    ORDER BY ${order} LIMIT @limit`;
}

const MARKET_FILTER = ' AND market_id IN (SELECT value FROM json_each(@markets))';

/** Taker and maker sides as two index walks merged by id (see orderListSql); self-trades don't exist. */
export function userTradeListSql(byMarket: boolean): string {
  const market = byMarket ? MARKET_FILTER : '';
  const arm = (role: 'taker' | 'maker') =>
    `SELECT ${TRADE_COLUMNS} FROM trades WHERE ${role}_user_id = @user${market} AND id < @before`;
  return `${arm('taker')} UNION ALL ${arm('maker')} ORDER BY id DESC LIMIT @limit OFFSET @offset`;
}

function userTradeCountSql(byMarket: boolean): string {
  const market = byMarket ? MARKET_FILTER : '';
  const count = (role: 'taker' | 'maker') =>
    `(SELECT count(*) FROM trades WHERE ${role}_user_id = @user${market})`;
  return `SELECT ${count('taker')} + ${count('maker')}`;
}

const pickByMarket = <S>(statements: ByMarket<S>, marketId: MarketId | undefined): S =>
  marketId === undefined ? statements.all : statements.market;

/** An empty list means "no market", which matches nothing; undefined means no filter. */
const marketList = (ids: readonly MarketId[] | undefined): string | null =>
  ids === undefined ? null : JSON.stringify(ids);

function readSnapshot(r: ReadStatements): EngineSnapshot {
  return {
    assets: r.assets.all().map(assetFromRow),
    markets: r.markets.all().map(marketFromRow),
    balances: r.balances.all().map(balanceFromRow),
    totals: r.totals.all().map(totalsFromRow),
    openOrders: r.openOrders.all().map(orderFromRow),
    ...switchesOf(r.switches.all().map(switchFromRow)),
    ...lastPricesOf(r.lastPrices.all()),
    sequences: sequencesFromMeta(r.meta.all()),
  };
}

function checkCount(value: number, name: string): number {
  if (!Number.isSafeInteger(value) || value < 0) throw new RangeError(`invalid ${name}: ${value}`);
  return value;
}

/**
 * A re-iterable, newest-first list read CHUNK_ROWS at a time. The page is validated now, so a bad
 * page fails at the call rather than at the first iteration.
 */
function newestFirst<R extends { readonly id: number }, T>(
  page: Page | undefined,
  fetch: (before: number, limit: number, offset: number) => readonly R[],
  map: (row: R) => T,
  /** Only rows with a smaller id (OrderFilter.beforeId); undefined: from the newest. */
  beforeId: number | undefined,
): Iterable<T> {
  const limit = page === undefined ? Number.POSITIVE_INFINITY : checkCount(page.limit, 'page limit');
  const offset = page === undefined ? 0 : checkCount(page.offset, 'page offset');
  const start = beforeId === undefined ? Number.MAX_SAFE_INTEGER : checkCount(beforeId, 'beforeId');
  return {
    *[Symbol.iterator]() {
      let remaining = limit;
      let skip = offset;
      let before = start;
      while (remaining > 0) {
        const want = Math.min(CHUNK_ROWS, remaining);
        const rows = guarded(() => fetch(before, want, skip));
        for (const row of rows) yield map(row);
        const last = rows[rows.length - 1];
        if (last === undefined || rows.length < want) return;
        remaining -= rows.length;
        skip = 0;
        before = last.id;
      }
    },
  };
}
