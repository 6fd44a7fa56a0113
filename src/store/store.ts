/**
 * The store's record types, and `Store`: the synchronous store that embedded SQLite implements.
 * Nothing outside the composition root and tools calls it directly: the sequencer and the readers
 * use the asynchronous ports (ports.ts: CommitLog, HistoryQueries, CredentialStore,
 * CheckpointStore), which `asyncStore` (async-store.ts) provides over a `Store` and a PostgreSQL
 * adapter implements directly. The engine never sees either.
 */
import type { Amount, AssetCode, MarketId, Micros, OrderId, Side, TradeId, UserId } from '../domain/types.js';
import type { ChangeSet, EngineEvent, EngineSnapshot, OrderState, Trade } from '../engine/types.js';
import type { Candle, Interval } from '../market-data/candle.js';

export type LedgerKind = 'deposit' | 'withdrawal';

export interface LedgerEntry {
  readonly userId: UserId;
  readonly asset: AssetCode;
  readonly kind: LedgerKind;
  readonly amount: Amount;
  /** Idempotency reference given by the operator; null when none was given. */
  readonly reference: string | null;
  readonly time: Micros;
}

/**
 * An order created under an Idempotency-Key: a retry with the same key (same user) finds the
 * order it already created. Written in the order's own commit, so it exists exactly when the order does.
 */
export interface IdempotencyRecord {
  readonly userId: UserId;
  readonly key: string;
  /** SHA-256 (64 hex digits) of the request, to tell a retry from another request reusing the key. */
  readonly fingerprint: string;
  readonly orderId: OrderId;
  readonly time: Micros;
}

/**
 * A market's book sequence: the `sequence` of the last order-book update published for it (+1
 * per update, no gaps; docs/interface-decisions.md 15 and 104). Kept in the store so that a
 * restarted engine (or a standby taking over) goes on from the committed value.
 */
export interface BookSequence {
  readonly marketId: MarketId;
  readonly sequence: number;
}

/**
 * The answer to a command a gateway sent under a unique id (src/cluster), committed with the
 * command's effects in the same transaction: a resend of that id to another engine after a
 * failover is answered from it instead of being applied twice. Kept until `expires` has passed
 * (and some margin: COMMAND_RECEIPT_MARGIN_MS); a request of that id arriving later is dropped as
 * too late anyway.
 */
export interface CommandReceipt {
  /** The gateway's command id (22 base64url characters). */
  readonly id: string;
  /** Milliseconds since the Unix epoch after which no engine takes this id's request any more. */
  readonly expires: number;
  /** The answer as the engine sent it (the cluster's encoded reply, JSON text). */
  readonly reply: string;
}

/** Everything one group commit writes, atomically. */
export interface CommitBatch {
  readonly changes: ChangeSet;
  /** In engine order; the store appends the trades to history. */
  readonly events: readonly EngineEvent[];
  readonly ledger: readonly LedgerEntry[];
  /** Candles touched by this batch's trades, in their new state. */
  readonly candles: readonly Candle[];
  /** Idempotency keys of the orders this batch creates (a record under the same user and key is replaced). */
  readonly idempotencyKeys?: readonly IdempotencyRecord[];
  /** Idempotency records older than this are deleted, a bounded number per commit. */
  readonly idempotencyExpiredBefore?: Micros;
  /**
   * The new book sequence of each market whose book this batch changed (only those: the others
   * keep theirs), written in the same transaction as the rest of the batch.
   */
  readonly bookSequences?: readonly BookSequence[];
  /** The answers of commands sent under an id (a gateway's, over NATS) that this batch applied. */
  readonly commandReceipts?: readonly CommandReceipt[];
  /** Command receipts that expired before this (ms since the epoch) are deleted, a bounded number per commit. */
  readonly commandReceiptsExpiredBefore?: number;
  /**
   * The exchange's write probe (a batch that changes no state): the store also rewrites a probe
   * row of its own, as large as a real commit, so the probe fails when real commits would (an
   * empty commit may fit into space no real one fits in) and succeeds once they can again.
   */
  readonly writeProbe?: true;
  /**
   * Orders placed by this batch, when its events leave out their `orderAccepted` (the journaled
   * SQLite store's compact form of a batch, merge-batches.ts): a store inserts these rows.
   */
  readonly placedOrderIds?: readonly OrderId[];
}

export type ApiKeyScope = 'read' | 'trade';

export interface UserRecord {
  readonly id: UserId;
  readonly email: string | null;
  readonly createdAt: Micros;
}

export interface ApiKeyRecord {
  readonly key: string;
  readonly userId: UserId;
  /** The secret as stored: sealed (encrypted) by the credential vault, never in the clear. */
  readonly sealedSecret: string;
  readonly scopes: readonly ApiKeyScope[];
  readonly createdAt: Micros;
  readonly revokedAt: Micros | null;
  /**
   * Addresses and CIDR blocks (IPv4 or IPv6, as text) the key may be used from; null: any address.
   * Fixed when the key is created (no update), so a cached record never holds a stale list.
   */
  readonly ipAllowlist: readonly string[] | null;
  /**
   * Every signed body must carry a `nonce` greater than the last one accepted (see acceptNonce).
   * The last accepted nonce is deliberately not part of the record: it changes on every request
   * and lives only in the store, compared there atomically.
   */
  readonly nonceRequired: boolean;
}

/** What createApiKey takes: the access-control options default to "any address" and "no nonce". */
export type NewApiKeyRecord = Omit<ApiKeyRecord, 'ipAllowlist' | 'nonceRequired'> &
  Partial<Pick<ApiKeyRecord, 'ipAllowlist' | 'nonceRequired'>>;

/** A nonce in canonical form: decimal digits, no leading zero (except "0" itself), at most 20 digits. */
export const CANONICAL_NONCE = /^(?:0|[1-9][0-9]{0,19})$/;

export interface Page {
  readonly limit: number;
  readonly offset: number;
}

export interface OrderFilter {
  readonly userId: UserId;
  readonly status: 'open' | 'done';
  readonly marketId?: MarketId;
  /** Only orders with a smaller id: where a newest-first list read in batches resumes (keyset). */
  readonly beforeId?: number;
}

export interface TradeFilter {
  readonly userId: UserId;
  readonly marketIds?: readonly MarketId[];
  /** Only trades with a smaller id: where a newest-first list read in batches resumes (keyset). */
  readonly beforeId?: number;
}

export interface PublicTradeFilter {
  readonly marketId: MarketId;
  readonly takerSide?: Side;
  /** Only trades at or after this time. */
  readonly since?: Micros;
  /** At most this many, newest first; undefined means all. */
  readonly limit?: number;
  /**
   * Keep the oldest trades (from `since` on) rather than the newest, and list them oldest first:
   * a client pages forward through history with it (GET /historical_trades with start_time).
   */
  readonly oldestFirst?: boolean;
}

/** Which end of a candle range a limit keeps: the most recent (the default) or the oldest. */
export type CandleEnd = 'newest' | 'oldest';

/** A user's trade seen from that user's side. */
export interface UserTrade {
  readonly trade: Trade;
  readonly orderId: OrderId;
  readonly side: Side;
  readonly fee: Amount;
  /** True when this user's order was the taker. */
  readonly taker: boolean;
}

/**
 * I/O trouble: the store cannot take this read or write now (answered 503). `reason` is a short
 * phrase from a fixed vocabulary that /readyz shows (`database unreachable`, `disk full`, …):
 * safe to publish, unlike the message, which may name hosts and files.
 */
export class StoreUnavailableError extends Error {
  override readonly name = 'StoreUnavailableError';
  readonly reason: string | undefined;
  constructor(message: string, options?: ErrorOptions & { readonly reason?: string }) {
    super(message, options);
    this.reason = options?.reason;
  }
}

/** Why the store is unavailable, as /readyz says it: the first reason along `error`'s causes. */
export function unavailableReason(error: unknown): string {
  for (let e = error, depth = 0; e instanceof Error && depth < 8; e = e.cause, depth++)
    if (e instanceof StoreUnavailableError && e.reason !== undefined) return e.reason;
  return 'the store does not accept writes';
}

/**
 * Whether the store keeps checkpoints (save, restore, reset). Adapters that do not refuse them;
 * the server says so plainly instead of trying (PostgreSQL for now: docs/interface-decisions.md 79a).
 */
export type StoreCapabilities =
  | { readonly checkpoints: true }
  /** `why`: one sentence for operators (logged at start, answered by a reset). */
  | { readonly checkpoints: false; readonly why: string };

/**
 * A checkpoint's name: a letter or digit, then letters, digits, '.', '_' or '-', at most 64 in
 * all. No separator and no leading dot, so a name can never leave the checkpoint directory.
 */
export const CHECKPOINT_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;

export interface CheckpointInfo {
  readonly name: string;
  /** When it was saved (the exchange clock). */
  readonly createdAt: Micros;
  /** Its size: the database image it holds. */
  readonly bytes: number;
}

export type CheckpointProblem = 'invalid_name' | 'not_found' | 'incompatible';

/** A checkpoint that cannot be used as asked (no I/O trouble: that is StoreUnavailableError). */
export class CheckpointError extends Error {
  override readonly name = 'CheckpointError';
  constructor(
    readonly problem: CheckpointProblem,
    message: string,
  ) {
    super(message);
  }
}

export interface Store {
  /** Reads the state the engine must be restored to. */
  loadSnapshot(): EngineSnapshot;
  /** Writes one batch atomically and durably, or throws (StoreUnavailableError on I/O trouble) having written nothing. */
  commit(batch: CommitBatch): void;
  /** Every market's committed book sequence, by market id; a market absent here is at 0. */
  loadBookSequences(): BookSequence[];

  createUser(email: string | null, time: Micros): UserRecord;
  getUser(id: UserId): UserRecord | undefined;
  listUsers(): UserRecord[];

  createApiKey(record: NewApiKeyRecord): void;
  getApiKey(key: string): ApiKeyRecord | undefined;
  /** The record when it is in the API key cache, without a read (see CredentialStore.cachedApiKey). */
  cachedApiKey?(key: string): ApiKeyRecord | undefined;
  listApiKeys(userId: UserId): ApiKeyRecord[];
  revokeApiKey(key: string, time: Micros): boolean;
  /**
   * Accepts `nonce` (canonical decimal text, see CANONICAL_NONCE; throws RangeError otherwise) for
   * an active key when it is strictly greater than the last nonce accepted for that key, and
   * records it durably before returning true. One conditional UPDATE: two requests carrying the
   * same nonce can never both be accepted. False for a smaller or equal nonce, an unknown or a
   * revoked key.
   */
  acceptNonce(key: string, nonce: string): boolean;

  /**
   * The entry a reference names, whatever its asset: a reference identifies one operator action
   * per user and kind (the oldest entry, should older data hold several assets under one reference).
   */
  findLedgerEntry(userId: UserId, kind: LedgerKind, reference: string): LedgerEntry | undefined;

  /** Every referenced deposit and withdrawal: the oldest per (user, kind, reference), in commit order. */
  loadLedgerReferences(): LedgerEntry[];

  /** The record of a user's Idempotency-Key, however old (the caller judges expiry). */
  findIdempotencyRecord(userId: UserId, key: string): IdempotencyRecord | undefined;
  /** The command receipts that expire at or after `notBefore` (ms since the epoch), soonest expiry first. */
  loadCommandReceipts(notBefore: number): CommandReceipt[];

  getOrder(id: OrderId): OrderState | undefined;
  /** The newest of the user's orders with this client order id (open or not), if any. */
  findOrderByClientId(userId: UserId, clientOrderId: string): OrderState | undefined;
  /** Newest first. */
  listOrders(filter: OrderFilter, page?: Page): Iterable<OrderState>;
  countOrders(filter: OrderFilter): number;
  /** Trades of each given order, oldest first. */
  tradesOfOrders(ids: readonly OrderId[]): Map<OrderId, Trade[]>;

  getUserTrade(userId: UserId, id: TradeId): UserTrade | undefined;
  /** Newest first. A self-matched trade cannot exist (self-trade prevention), so each trade appears once. */
  listUserTrades(filter: TradeFilter, page?: Page): Iterable<UserTrade>;
  countUserTrades(filter: TradeFilter): number;

  /** Newest first (oldest first with `oldestFirst`). */
  listPublicTrades(filter: PublicTradeFilter): Trade[];

  /**
   * Candles with start > since (exclusive), oldest first, at most `limit` of them: the most
   * recent (`keep` 'newest', the default) or the oldest ('oldest', for paging forward).
   */
  listCandles(
    marketId: MarketId,
    interval: Interval,
    since: number,
    limit: number,
    keep?: CandleEnd,
  ): Candle[];
  /** The newest candle of each interval of a market (to resume aggregation after a restart). */
  latestCandles(marketId: MarketId): Candle[];

  /**
   * Saves the whole state under `name` (replacing a checkpoint of that name), read in one
   * transaction: exactly what is committed. Throws CheckpointError for an invalid name.
   */
  saveCheckpoint(name: string, time: Micros): CheckpointInfo;
  /**
   * Replaces the venue state (catalogue, balances, totals, orders, trades, candles, ledger,
   * idempotency records, id sequences) with the checkpoint's, in one transaction: all or nothing.
   * Users and API keys are kept as they are now (credentials are not rolled back). Book sequences
   * are not rolled back either: in the same transaction, every market of the restored catalogue
   * gets its current sequence plus one (1 when it had none), so they never go back (decision 77). The caller
   * (the sequencer) reloads everything it derived from the store. Throws CheckpointError when the
   * checkpoint is absent or was written by another schema version.
   */
  restoreCheckpoint(name: string): void;
  /** By name. */
  listCheckpoints(): CheckpointInfo[];
  /** False when there was no such checkpoint. */
  deleteCheckpoint(name: string): boolean;

  close(): void;
}
