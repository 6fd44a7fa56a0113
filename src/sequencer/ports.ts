/**
 * What the adapters (HTTP API, WebSocket server, admin API, simulator) may ask of the exchange.
 * Writes go through `submit`, which resolves only after the command's effects are committed.
 * Reads see committed state only: market state from the MarketView (`view`), which the committed
 * feed (`feed`) keeps; engine state through `readCommitted` (it waits for the commit in flight);
 * the rest from committed read models (catalogue) and the store (history, credentials).
 */
import type {
  AssetSpec,
  MarketId,
  MarketSpec,
  OrderId,
  Price,
  Side,
  UserId,
  Volume,
} from '../domain/types.js';
import type { BalanceState, BookLevels, Command, CommandResult } from '../engine/types.js';
import type { CredentialStore, HistoryQueries } from '../store/ports.js';
import type { LedgerKind } from '../store/store.js';
import type { CommittedFeed, FeedBatch } from './committed-feed.js';
import type { MarketView } from './market-view.js';

export interface Catalogue {
  assets(): readonly AssetSpec[];
  asset(code: string): AssetSpec | undefined;
  markets(): readonly MarketSpec[];
  market(id: MarketId): MarketSpec | undefined;
  /** Looks a market up by its joined (`BTCEUR`) or slash (`BTC/EUR`) name; case-sensitive, as codes are. */
  marketByName(name: string): MarketSpec | undefined;
}

/** A deposit or withdrawal with an optional idempotency reference. */
export interface LedgerRequest {
  readonly reference?: string;
}

/** A client's Idempotency-Key for one order request (see Exchange.submitOnce). */
export interface IdempotencyRequest {
  /** The key as the client sent it (validated at the edge). */
  readonly key: string;
  /** SHA-256 (64 hex digits) of the canonical order request: what makes a retry "the same". */
  readonly fingerprint: string;
}

/**
 * A command sent under a unique id (a gateway's, over NATS: src/cluster). When the command is
 * applied, its answer is committed with its effects, in the same transaction (a CommandReceipt in
 * the store), so that a resend of the id — to this engine or, after a failover, to the one that
 * took over — is answered from that record instead of being applied a second time.
 */
export interface CommandIdentity {
  /** The gateway's id of the command (22 base64url characters). */
  readonly id: string;
  /** Milliseconds since the Unix epoch after which no engine takes a request of this id. */
  readonly expires: number;
  /** Receipts that expired before this (ms since the epoch) may be deleted with the commit. */
  readonly forgetBefore: number;
  /** The answer to keep, as the caller will send it (text), from the command's result. */
  readonly encode: (result: CommandResult) => string;
}

/** How an order request under an Idempotency-Key was answered. */
export type OnceResult =
  /** This request was executed (or it joined the identical one in flight): its result. */
  | { readonly kind: 'executed'; readonly result: CommandResult }
  /** The key already created this order (committed within the last 24 hours): nothing was placed. */
  | { readonly kind: 'replayed'; readonly orderId: OrderId }
  /** The key belongs to a different order request (committed or in flight): nothing was placed. */
  | { readonly kind: 'mismatch' };

/** One changed level of a committed batch: one `order-book` update message. */
export interface LevelChange {
  readonly side: Side;
  readonly price: Price;
  /** The level's total before the batch (0: there was no level). */
  readonly before: Volume;
  /** The level's total after the batch; 0 means the level is gone. */
  readonly volume: Volume;
  /** The book's sequence number once this change is applied: +1 per change, per market. */
  readonly sequence: number;
}

/**
 * What one committed batch changed, handed to listeners after the commit, in engine order: the
 * committed feed's own entry (FeedBatch), so the listeners, the feed and the stream a gateway
 * reads carry one form of a batch, with no conversion between them.
 */
export type CommittedBatch = FeedBatch;

/** Trade statistics over a window (today since 00:00 UTC, or the last 24 hours). */
export interface TradeStats {
  readonly open: Price | null;
  readonly high: Price | null;
  readonly low: Price | null;
  readonly last: Price | null;
  /** Sum of trade volumes in lots (a BigInt: sums over many trades are unbounded). */
  readonly volume: bigint;
  /** Sum of trade costs in quote units. */
  readonly quoteVolume: bigint;
  /** Sum of price × volume in ticks × lots: the exact VWAP is notional / volume. */
  readonly notional: bigint;
  readonly count: number;
}

export interface BookView {
  /** Increases by one with every changed level of a committed batch (one `order-book` update each). */
  readonly sequence: number;
  readonly bids: BookLevels;
  readonly asks: BookLevels;
}

export interface Exchange {
  readonly catalogue: Catalogue;
  /** Every committed batch, numbered, as plain data: what the read models are kept from. */
  readonly feed: CommittedFeed;
  /**
   * The market read model (books, tickers, candles, recent trades, balances, catalogue), kept
   * from `feed` alone: what HTTP market data, the wallet and the WebSocket server read.
   */
  readonly view: MarketView;
  /** Paged history (orders, trades, candles, ledger), committed rows only. */
  readonly history: HistoryQueries;
  /** Users, API keys, nonces. */
  readonly credentials: CredentialStore;

  /**
   * Applies a command and resolves after it is committed. Rejects with StoreUnavailableError if it
   * could not be. With `identity`, an applied command's answer is committed with it (CommandIdentity).
   */
  submit(command: Command, ledger?: LedgerRequest, identity?: CommandIdentity): Promise<CommandResult>;
  /**
   * Places an order at most once per (user, Idempotency-Key) within 24 hours. The key's record
   * (fingerprint, order id) is committed with the order itself, so a retry after a lost answer
   * finds it even across a crash. A request identical to one still in flight waits for that one
   * and gets its result. Only a created order is recorded: a refusal leaves the key unused.
   */
  submitOnce(
    command: PlaceOrder,
    request: IdempotencyRequest,
    identity?: CommandIdentity,
  ): Promise<OnceResult>;

  /**
   * Runs `read` when no batch is being committed (at once when none is; otherwise once the commit
   * in flight has settled), so engine state read inside it — `book`, `balances` — is committed
   * state. Readers outside the commit listeners read the engine through it; a direct read while a
   * commit is in flight throws (UncommittedReadError).
   */
  readCommitted<T>(read: () => T): T | Promise<T>;
  /**
   * Changes whenever the committed state does (a batch committed, a checkpoint restored): a reader
   * that read the store asynchronously compares it before and after to know whether its read
   * still matches the engine and the feed.
   */
  commitMark(): number;

  /** Aggregated levels, best first; `maxLevels` per side (0 = all). Engine state: see readCommitted. */
  book(marketId: MarketId, maxLevels: number): BookView;
  /** Every asset of the catalogue for this user (zero when never funded). Engine state: see readCommitted. */
  balances(userId: UserId): BalanceState[];
  /**
   * Where the engine runs in another process (a gateway): the user's balances as committed in the
   * store, every asset of the catalogue, so that a read after a 201 from any process sees its
   * effects. Absent in the engine's own process, where `balances` is committed state already.
   */
  committedBalances?(userId: UserId): Promise<BalanceState[]>;

  /**
   * Called after each commit, in commit order, once the replies of the batch's requests are
   * written (in a later turn of the event loop, before the next batch is applied). With
   * `immediate`, called at the commit itself, before any reply: for cheap bookkeeping a reply's
   * reader depends on (a cache to invalidate). Returns an unsubscribe function.
   */
  onCommitted(
    listener: (batch: CommittedBatch) => void,
    options?: { readonly immediate?: boolean },
  ): () => void;
  /**
   * Passes every committed batch still waiting for its turn to the listeners now. A reader that
   * must see the listeners' output in step with the state (a new subscription's snapshot, whose
   * sequence number the next update follows) calls it first.
   */
  publishCommitted(): void;
  /** True while the store accepts writes (false after an I/O failure until it recovers). */
  isWritable(): boolean;
  /**
   * Called when a checkpoint restore has replaced the whole state (catalogue, books, balances,
   * history): whatever a listener derived from the old state is void. Returns an unsubscribe function.
   */
  onRestored(listener: () => void): () => void;
}

export type PlaceOrder = Extract<Command, { kind: 'placeOrder' }>;

export type { LedgerKind };
