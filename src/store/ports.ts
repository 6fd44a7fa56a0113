/**
 * The asynchronous store ports (issue 12). `Store` (store.ts) mixes four jobs; these split it on
 * the seams the sequencer and the readers need, every method returning a promise so that an
 * adapter over the network (PostgreSQL) implements them as well as embedded SQLite does.
 *
 * - `CommitLog`: what the sequencer needs, and the only I/O awaited before a reply: the committed
 *   state to start from, and one atomic, durable append per group commit.
 * - `HistoryQueries`: paged history for readers (REST, WebSocket snapshots, admin), newest first.
 * - `CredentialStore`: users, API keys and nonces.
 * - `CheckpointStore`: whole-venue checkpoints (save, restore, list, delete).
 *
 * Methods keep the names (and meanings) of today's `Store` methods: `loadSnapshot` is the log's
 * load, `commit` its append. `AsyncStore` is all four plus `close`: what one adapter implements.
 * Errors: I/O trouble rejects with `StoreUnavailableError`; a checkpoint that cannot be used as
 * asked with `CheckpointError`; invalid input as documented per method (RangeError for a nonce).
 */
import type { MarketId, Micros, OrderId, TradeId, UserId } from '../domain/types.js';
import type { BalanceState, EngineSnapshot, OrderState, Trade } from '../engine/types.js';
import type { Candle, Interval } from '../market-data/candle.js';
import type {
  ApiKeyRecord,
  BookSequence,
  CandleEnd,
  CheckpointInfo,
  CommandReceipt,
  CommitBatch,
  IdempotencyRecord,
  LedgerEntry,
  LedgerKind,
  NewApiKeyRecord,
  OrderFilter,
  Page,
  PublicTradeFilter,
  StoreCapabilities,
  TradeFilter,
  UserRecord,
  UserTrade,
} from './store.js';

/**
 * The sequencer's store. No batch is applied while one is being committed: the sequencer awaits
 * `commit` before it applies the next batch, so an adapter never sees two commits at once.
 */
export interface CommitLog {
  /** The committed state the engine is restored to (at start, after a failed commit, after a restore). */
  loadSnapshot(): Promise<EngineSnapshot>;
  /**
   * Every deposit and withdrawal entry that carries a reference: the oldest per (user, kind,
   * reference), in commit order. The sequencer keeps them in memory with the engine state, so a
   * repeated reference is recognised without reading the store in the middle of a batch.
   */
  loadLedgerReferences(): Promise<LedgerEntry[]>;
  /**
   * Every market's committed book sequence (CommitBatch.bookSequences), by market id; a market
   * absent here is at 0 (a database older than the book_sequences table, or a book never changed).
   */
  loadBookSequences(): Promise<BookSequence[]>;
  /**
   * Writes one batch atomically and durably, then resolves; or rejects (StoreUnavailableError on
   * I/O trouble) having written nothing. An empty batch (no events, ledger entries or orders) still
   * takes the write path: the sequencer uses it to probe whether the store takes writes again.
   */
  commit(batch: CommitBatch): Promise<void>;
  /** The record of a user's Idempotency-Key, however old (the caller judges expiry). */
  findIdempotencyRecord(userId: UserId, key: string): Promise<IdempotencyRecord | undefined>;
  /**
   * The receipts of commands sent under an id (CommitBatch.commandReceipts) that expire at or
   * after `notBefore` (ms since the epoch), soonest expiry first: what an engine taking over
   * answers resends from.
   */
  loadCommandReceipts(notBefore: number): Promise<CommandReceipt[]>;
}

/**
 * History for readers. Reads committed state only. Lists are newest first unless said otherwise.
 * A list may be an array or a lazy iterator (SQLite streams an unpaged export row by row); the
 * caller consumes it at once.
 */
export interface HistoryQueries {
  getOrder(id: OrderId): Promise<OrderState | undefined>;
  /** The newest of the user's orders with this client order id (open or not), if any. */
  findOrderByClientId(userId: UserId, clientOrderId: string): Promise<OrderState | undefined>;
  /** Newest first. */
  listOrders(filter: OrderFilter, page?: Page): Promise<Iterable<OrderState>>;
  countOrders(filter: OrderFilter): Promise<number>;
  /** Trades of each given order, oldest first. */
  tradesOfOrders(ids: readonly OrderId[]): Promise<Map<OrderId, Trade[]>>;

  getUserTrade(userId: UserId, id: TradeId): Promise<UserTrade | undefined>;
  /** Newest first. */
  listUserTrades(filter: TradeFilter, page?: Page): Promise<Iterable<UserTrade>>;
  countUserTrades(filter: TradeFilter): Promise<number>;

  /** Newest first (oldest first with `oldestFirst`). */
  listPublicTrades(filter: PublicTradeFilter): Promise<Trade[]>;

  /** Candles with start > since (exclusive), oldest first, at most `limit`: the newest or the oldest (`keep`). */
  listCandles(
    marketId: MarketId,
    interval: Interval,
    since: number,
    limit: number,
    keep?: CandleEnd,
  ): Promise<Candle[]>;
  /** The newest candle of each interval of a market (to resume aggregation after a restart). */
  latestCandles(marketId: MarketId): Promise<Candle[]>;

  /** The entry a reference names (the oldest one), whatever its asset. */
  findLedgerEntry(userId: UserId, kind: LedgerKind, reference: string): Promise<LedgerEntry | undefined>;
}

/**
 * Committed balances, read from the store rather than from an engine in the same process: what a
 * gateway (which runs no engine) answers wallet reads with. Only stores whose balances are rows
 * of their own implement it (PostgreSQL).
 */
export interface BalanceQueries {
  /** The user's balance of every asset it has one in, by asset code. */
  balancesOf(userId: UserId): Promise<BalanceState[]>;
}

/** Users, API keys and nonces. Independent of the sequencer: written directly, not in a batch. */
export interface CredentialStore {
  createUser(email: string | null, time: Micros): Promise<UserRecord>;
  getUser(id: UserId): Promise<UserRecord | undefined>;
  listUsers(): Promise<UserRecord[]>;

  createApiKey(record: NewApiKeyRecord): Promise<void>;
  getApiKey(key: string): Promise<ApiKeyRecord | undefined>;
  /**
   * The record `getApiKey` would answer, when this process already holds it in memory (its API
   * key cache): no read, no promise. Undefined means "not held", not "unknown": ask getApiKey.
   * Lets a signed request whose key is cached be authenticated without a turn of the event loop.
   */
  cachedApiKey?(key: string): ApiKeyRecord | undefined;
  listApiKeys(userId: UserId): Promise<ApiKeyRecord[]>;
  revokeApiKey(key: string, time: Micros): Promise<boolean>;
  /**
   * Accepts `nonce` (canonical decimal text, CANONICAL_NONCE; rejects with RangeError otherwise)
   * for an active key when it is strictly greater than the last one accepted for that key, and
   * records it durably before resolving true. Atomic: two requests with the same nonce can never
   * both be accepted. False for a smaller or equal nonce, an unknown or a revoked key.
   */
  acceptNonce(key: string, nonce: string): Promise<boolean>;
}

/** Whole-venue checkpoints (see Store in store.ts for the exact semantics). */
export interface CheckpointStore {
  /** Saves exactly what is committed under `name`, replacing one of that name. */
  saveCheckpoint(name: string, time: Micros): Promise<CheckpointInfo>;
  /** Replaces the venue state (not users and keys) with the checkpoint's, all or nothing. */
  restoreCheckpoint(name: string): Promise<void>;
  /** By name. */
  listCheckpoints(): Promise<CheckpointInfo[]>;
  /** False when there was no such checkpoint. */
  deleteCheckpoint(name: string): Promise<boolean>;
}

/** One adapter: every port, what it can do, and its end. */
export interface AsyncStore extends CommitLog, HistoryQueries, CredentialStore, CheckpointStore {
  /**
   * Whether the `CheckpointStore` methods work here. Without checkpoints, saving and restoring
   * are refused (CheckpointError) and the list is empty; callers ask first instead of trying.
   */
  readonly capabilities: StoreCapabilities;
  close(): Promise<void>;
}
