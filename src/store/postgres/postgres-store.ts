/**
 * The durable store on PostgreSQL (node-postgres). Two kinds of connection:
 *
 * - the WRITER: one dedicated connection that holds the writer advisory lock (lock.ts) and
 *   carries every engine-state commit. Writes exist only where the lock is held: should this
 *   connection drop, the lock is gone with it, and the next commit first reconnects and takes the
 *   lock again (or fails with StoreUnavailableError naming the process that took it meanwhile);
 * - a small POOL for reads and for credentials (users, API keys, nonces), which are not engine
 *   state and are written one statement at a time. Those queries live in queries.ts, shared with
 *   the gateways' reader (reader.ts), which has the pool and nothing else.
 *
 * A commit is one statement (commit-sql.ts): atomic, one round trip. Reads see committed data only.
 * Every list is read in full (with the page's LIMIT/OFFSET), newest first as the ports say.
 */
import { setTimeout as delay } from 'node:timers/promises';
import pg from 'pg';
import type { MarketId, Micros, OrderId, UserId } from '../../domain/types.js';
import type { EngineSnapshot } from '../../engine/types.js';
import type { AsyncStore } from '../ports.js';
import {
  type AssetRow,
  assetFromRow,
  type BalanceRow,
  balanceFromRow,
  LAST_PRICES_SQL,
  type LedgerRow,
  lastPricesOf,
  ledgerFromRow,
  type MarketRow,
  marketFromRow,
  ORDER_COLUMNS,
  type OrderRow,
  orderFromRow,
  sequencesFromMeta,
  switchesOf,
  switchFromRow,
  type TotalsRow,
  totalsFromRow,
} from '../sqlite/rows.js';
import {
  type BookSequence,
  CheckpointError,
  type CheckpointInfo,
  type CommandReceipt,
  type CommitBatch,
  type IdempotencyRecord,
  type LedgerEntry,
  type StoreCapabilities,
  StoreUnavailableError,
} from '../store.js';
import { commitStatement } from './commit-sql.js';
import {
  databaseName,
  EXACT_TYPES,
  isUnavailable,
  openReadPool,
  parseDatabaseUrl,
  toStoreError,
} from './connection.js';
import {
  acquireWriterLock,
  engineApplicationName,
  type LockWaitOptions,
  readerApplicationName,
  WriterLockHeldError,
  waitForWriterLock,
} from './lock.js';
import { migratePostgres } from './migrations.js';
import { hasNul, LEDGER_SELECT, PostgresQueries } from './queries.js';

/** A commit pending this long is failed (PostgresStoreOptions.commitTimeoutMs). */
const DEFAULT_COMMIT_TIMEOUT_MS = 10_000;

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
   * A commit with no answer after this long (milliseconds, default 10000: DATABASE_COMMIT_TIMEOUT_MS)
   * fails as unavailable and its session is ended: a silent network partition or a lock held by
   * another session must not hold the sequencer, and every order queued behind it, for long.
   */
  readonly commitTimeoutMs?: number;
  /**
   * A standby engine: wait for the writer lock while another engine holds it, instead of refusing
   * with WriterLockHeldError. `open` resolves once the lock is taken (and the schema migrated);
   * the caller loads the snapshot after that, so it reads what the last holder committed.
   */
  readonly waitForLock?: boolean;
  /** Ends a wait for the lock: `open` rejects with the signal's reason, having taken nothing. */
  readonly signal?: AbortSignal;
  /** Between two attempts to take the lock while waiting, in milliseconds (default 200). */
  readonly lockPollMs?: number;
  /** Told who holds the lock when a wait starts (and if the holder changes): for the log. */
  readonly onLockWait?: (holder: string) => void;
  /**
   * Told once when this writer finds, on retaking the lock after its connection dropped, that
   * another engine held it meanwhile: this process's engine state is stale, it never writes again
   * and should stop (a supervisor restarts it, as a standby or not at all).
   */
  readonly onSuperseded?: (message: string) => void;
}

/** What the writer connection is made from (the wait settings only matter at open). */
type WriterSettings = Required<
  Omit<PostgresStoreOptions, 'waitForLock' | 'signal' | 'lockPollMs' | 'onLockWait' | 'onSuperseded'>
>;

/**
 * The writer's term: `meta.writerTerm`, incremented by every engine that opens the store as its
 * writer. A writer whose connection (and so the lock) dropped retakes the lock on its next commit;
 * if the term moved meanwhile, a standby took over, wrote, and may have gone again: this writer's
 * engine state no longer matches the database, and writing from it would corrupt the venue
 * (ids handed out twice, balances spent twice). The lock alone cannot tell, the term can.
 */
export const WRITER_TERM_KEY = 'writerTerm';
const TAKE_TERM = `INSERT INTO meta (key, value) VALUES ('${WRITER_TERM_KEY}', 1)
  ON CONFLICT (key) DO UPDATE SET value = meta.value + 1 RETURNING value::text AS term`;
const READ_TERM = `SELECT value::text AS term FROM meta WHERE key = '${WRITER_TERM_KEY}'`;

export const SUPERSEDED_REASON = 'another engine took over';

/**
 * Server-side TCP settings for the writer's session (PostgreSQL's own, settable per session): should
 * the engine's machine vanish without closing its connection, the server notices within
 * idle + interval × count = 5 + 2 × 3 = 11 s when the session is idle (keep-alives), or 10 s when
 * it has unacknowledged data in flight (tcp_user_timeout), ends the session and so frees the lock
 * for a standby. The server's defaults follow the operating system's: two hours, or ~15 minutes
 * of retransmissions. A killed process is noticed at once: its kernel closes the connection.
 * Ignored over a Unix socket. Not idle_session_timeout: that would end a quiet primary's session,
 * handing the lock to a standby although nothing failed.
 */
const WRITER_KEEPALIVES =
  'SET tcp_keepalives_idle = 5; SET tcp_keepalives_interval = 2; SET tcp_keepalives_count = 3; SET tcp_user_timeout = 10000';

export const CHECKPOINTS_UNSUPPORTED =
  'checkpoints are not supported on the PostgreSQL store yet: use pg_dump / point-in-time recovery (docs/operations.md), or run the test venue on SQLite';

/** Checkpoints (and so reset) are not available here yet: docs/interface-decisions.md 79a. */
export const POSTGRES_CAPABILITIES: StoreCapabilities = Object.freeze({
  checkpoints: false,
  why: 'checkpoints and reset are not available on the PostgreSQL store yet (use pg_dump / point-in-time recovery; docs/operations.md, "PostgreSQL")',
});

export class PostgresStore extends PostgresQueries implements AsyncStore {
  /** A plain field (no getter): the metrics proxy reads it through `Reflect.get`. */
  readonly capabilities: StoreCapabilities = POSTGRES_CAPABILITIES;
  readonly #url: string;
  readonly #database: string;
  readonly #options: WriterSettings;
  /** The lock-holding connection; undefined after it was lost, until the next commit reconnects. */
  #writer: pg.Client | undefined;
  #reconnecting: Promise<pg.Client> | undefined;
  /** This writer's term (TAKE_TERM): a reconnect that finds another one never writes. */
  readonly #term: string;
  #superseded: StoreUnavailableError | undefined;
  readonly #onSuperseded: ((message: string) => void) | undefined;

  private constructor(
    options: WriterSettings,
    writer: pg.Client,
    pool: pg.Pool,
    term: string,
    onSuperseded: ((message: string) => void) | undefined,
  ) {
    // API key records are kept until a write through this store drops them (as SqliteStore does):
    // in one process every revocation goes through it.
    super(pool, Number.POSITIVE_INFINITY);
    this.#url = options.url;
    this.#database = databaseName(options.url);
    this.#options = options;
    this.#term = term;
    this.#onSuperseded = onSuperseded;
    this.#adoptWriter(writer);
  }

  /** This writer's term (`meta.writerTerm` as it took it at open). */
  get writerTerm(): string {
    return this.#term;
  }

  /**
   * Connects, takes the writer lock (or throws WriterLockHeldError naming the holder, having
   * written nothing), brings the schema up to date, and opens the read pool.
   */
  static async open(options: PostgresStoreOptions): Promise<PostgresStore> {
    const full: WriterSettings = {
      url: parseDatabaseUrl(options.url),
      poolSize: options.poolSize ?? 4,
      connectTimeoutMs: options.connectTimeoutMs ?? 5000,
      applicationName: options.applicationName ?? engineApplicationName(),
      commitTimeoutMs: options.commitTimeoutMs ?? DEFAULT_COMMIT_TIMEOUT_MS,
    };
    const writer =
      options.waitForLock === true
        ? await connectStandby(full, {
            signal: options.signal,
            pollMs: options.lockPollMs,
            onWait: options.onLockWait,
          })
        : await connectWriter(full);
    let term: string;
    try {
      await migratePostgres(writer);
      term = (await writer.query<{ term: string }>(TAKE_TERM)).rows[0]!.term;
    } catch (error) {
      await writer.end().catch(() => undefined);
      throw toStoreError(error);
    }
    const pool = openReadPool({
      url: full.url,
      applicationName: readerApplicationName(),
      size: full.poolSize,
      connectTimeoutMs: full.connectTimeoutMs,
    });
    return new PostgresStore(full, writer, pool, term, options.onSuperseded);
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
    if (this.closed) throw new StoreUnavailableError('store unavailable: the store is closed');
    if (this.#superseded !== undefined) throw this.#superseded;
    if (this.#writer !== undefined) return this.#writer;
    this.#reconnecting ??= connectWriter(this.#options)
      .catch((error: unknown) => {
        // Another engine has the lock now: it is the writer, and this one's state is about to be
        // stale (if it is not already). Waiting to retake the lock later would be writing from it.
        if (error instanceof WriterLockHeldError) throw this.#supersede(error.message);
        throw error;
      })
      .then(async (writer) => {
        if (this.closed) {
          void writer.end().catch(() => undefined);
          throw new StoreUnavailableError('store unavailable: the store is closed');
        }
        await this.#checkTerm(writer);
        this.#adoptWriter(writer);
        return writer;
      })
      .finally(() => {
        this.#reconnecting = undefined;
      });
    return this.#reconnecting;
  }

  /**
   * On a reconnected writer (lock retaken): the term must still be ours. If not, another engine
   * wrote meanwhile: give the lock back, and refuse every commit from now on.
   */
  async #checkTerm(writer: pg.Client): Promise<void> {
    let term: string | undefined;
    try {
      term = (await writer.query<{ term: string }>(READ_TERM)).rows[0]?.term;
    } catch (error) {
      void writer.end().catch(() => undefined);
      throw toStoreError(error);
    }
    if (term === this.#term) return;
    void writer.end().catch(() => undefined);
    throw this.#supersede(
      `another engine took over the PostgreSQL database ${this.#database} while this one was disconnected ` +
        `(writer term ${this.#term}, now ${term ?? 'none'})`,
    );
  }

  /** From now on every commit is refused; the owner is told once. */
  #supersede(what: string): StoreUnavailableError {
    if (this.#superseded !== undefined) return this.#superseded;
    const message = `${what}: this engine's state is stale and it will not write again; restart it`;
    this.#superseded = new StoreUnavailableError(`store unavailable: ${message}`, {
      reason: SUPERSEDED_REASON,
    });
    this.#onSuperseded?.(message);
    return this.#superseded;
  }

  async loadSnapshot(): Promise<EngineSnapshot> {
    return this.readTransaction(async (c) => {
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
        `SELECT ${ORDER_COLUMNS} FROM orders WHERE status = 'open' ORDER BY coalesce(priority, id)`,
      );
      const switches = await c.query<{ user_id: number; trigger_time: number }>(
        'SELECT user_id, trigger_time FROM cancel_all_after ORDER BY user_id',
      );
      const meta = await c.query<{ key: string; value: number }>('SELECT key, value FROM meta');
      const lastPrices = await c.query<{ market_id: number; price: number }>(LAST_PRICES_SQL);
      return {
        assets: assets.rows.map(assetFromRow),
        markets: markets.rows.map(marketFromRow),
        balances: balances.rows.map(balanceFromRow),
        totals: totals.rows.map(totalsFromRow),
        openOrders: open.rows.map(orderFromRow),
        ...switchesOf(switches.rows.map(switchFromRow)),
        ...lastPricesOf(lastPrices.rows),
        sequences: sequencesFromMeta(meta.rows),
      };
    });
  }

  async loadLedgerReferences(): Promise<LedgerEntry[]> {
    const rows = await this.rows<LedgerRow>(
      `SELECT ${LEDGER_SELECT} FROM ledger_entries
       WHERE id IN (SELECT min(id) FROM ledger_entries WHERE reference IS NOT NULL GROUP BY user_id, kind, reference)
       ORDER BY id`,
    );
    return rows.map(ledgerFromRow);
  }

  async loadBookSequences(): Promise<BookSequence[]> {
    const rows = await this.rows<{ market_id: number; sequence: number }>(
      'SELECT market_id, sequence FROM book_sequences ORDER BY market_id',
    );
    return rows.map((row) => ({ marketId: row.market_id as MarketId, sequence: row.sequence }));
  }

  async commit(batch: CommitBatch): Promise<void> {
    const statement = commitStatement(batch);
    let writer: pg.Client;
    try {
      writer = await this.#writerConnection();
    } catch (error) {
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
    const [row] = await this.rows<{
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

  async loadCommandReceipts(notBefore: number): Promise<CommandReceipt[]> {
    return this.rows<CommandReceipt>(
      'SELECT id, expires, reply FROM command_receipts WHERE expires >= $1 ORDER BY expires',
      [notBefore],
    );
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
    if (this.closed) return;
    this.closed = true;
    const writer = this.#writer ?? (await this.#reconnecting?.catch(() => undefined));
    this.#writer = undefined;
    await Promise.allSettled([this.pool.end(), writer?.end()]);
  }

  // ------------------------------------------------------------ helpers

  async #terminateBackend(client: pg.Client): Promise<void> {
    const pid = (client as unknown as { processID?: unknown }).processID;
    if (typeof pid !== 'number') return;
    await this.pool.query('SELECT pg_terminate_backend($1)', [pid]).catch(() => undefined);
  }

  /** For messages and tests: the database this store writes. */
  get database(): string {
    return this.#database;
  }
}

function writerClient(options: WriterSettings): pg.Client {
  const client = new pg.Client({
    connectionString: options.url,
    application_name: options.applicationName,
    connectionTimeoutMillis: options.connectTimeoutMs,
    // TCP keep-alives: a peer that vanished without a word is noticed by the kernel too.
    keepAlive: true,
    types: EXACT_TYPES,
  });
  // Until adopted: an error on a connection being set up must not end the process.
  client.on('error', () => undefined);
  return client;
}

async function connectWriter(options: WriterSettings): Promise<pg.Client> {
  const client = writerClient(options);
  try {
    await client.connect();
    await client.query(WRITER_KEEPALIVES);
    await acquireWriterLock(client, databaseName(options.url));
    return client;
  } catch (error) {
    await client.end().catch(() => undefined);
    if (error instanceof WriterLockHeldError) throw error;
    throw toStoreError(error);
  }
}

/** Retrying a lost connection while waiting for the lock (the database restarting, say). */
const STANDBY_RECONNECT_MS = 1000;

/**
 * A standby's writer connection: waits for the lock (lock.ts: waitForWriterLock) on its own
 * session, and reconnects when that session is lost while waiting, until `signal` aborts.
 */
async function connectStandby(options: WriterSettings, wait: LockWaitOptions): Promise<pg.Client> {
  for (;;) {
    wait.signal?.throwIfAborted();
    const client = writerClient(options);
    try {
      await client.connect();
      await client.query(WRITER_KEEPALIVES);
      await waitForWriterLock(client, wait);
      return client;
    } catch (error) {
      await client.end().catch(() => undefined);
      if (wait.signal?.aborted === true) throw wait.signal.reason;
      if (!isUnavailable(error)) throw toStoreError(error);
    }
    await delay(STANDBY_RECONNECT_MS, undefined, wait.signal ? { signal: wait.signal } : {}).catch(() => {
      throw wait.signal?.reason;
    });
  }
}
