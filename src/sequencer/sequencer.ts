/**
 * The exchange: the engine wrapped in a sequencer that commits before it answers.
 *
 * request -> submit (queued) -> [next turn of the event loop] apply the whole queue to the engine
 * -> drain changes -> append the batch to the commit log (one group commit, awaited) -> hand it to
 * the committed feed (`feed`, which keeps the readers' MarketView, `view`) -> resolve every waiting
 * request -> [once their replies are written] release it to the fan-out (WebSocket).
 * The commit is asynchronous (a database across the network), so a batch is a *step*: from the
 * moment the engine applies it until its commit settled (and, after a failure, the engine is back
 * at the committed state), no other batch is applied, and the commands that arrive meanwhile wait
 * in the queue: they form the next group commit, which grows with the load. Readers of engine
 * state (the book, balances) either run between steps (`readCommitted`, the listeners) or read the
 * committed read models (last prices, statistics, the catalogue), so none sees state a crash could
 * still undo. A batch's effects are acknowledged together.
 * If the commit fails, the engine is rebuilt from the store (the last committed state) and every
 * command of the batch is refused: nothing unacknowledged is half-applied. A command that throws
 * while the engine applies it is refused alone (see applyAndCommit): one bad command never costs
 * its batch-mates their answer, nor the exchange its availability.
 *
 * After a failure the exchange is "unavailable": it refuses every command at once (503) without
 * touching the engine, and probes the store with a probe commit every `probeIntervalMs` until a
 * write succeeds again (disk space freed, file writable again), then accepts commands again. When
 * the rebuild itself fails, the engine holds state that was never committed; nothing is applied on
 * top of it until a later rebuild succeeds (the probe retries it), so the store never receives a
 * change set computed from uncommitted state.
 */
import type { Logger } from 'pino';
import type { MarketId, Micros, Price, UserId } from '../domain/types.js';
import { Engine } from '../engine/engine.js';
import { InternalStateError } from '../engine/engine-state.js';
import { TransferReferences } from '../engine/transfer-references.js';
import type {
  BalanceState,
  ChangeSet,
  Command,
  CommandResult,
  EngineEvent,
  EngineOptions,
  Sequences,
  Trade,
} from '../engine/types.js';
import { type Candle, INTERVALS } from '../market-data/candle.js';
import { CandleAggregator } from '../market-data/candles.js';
import type { AsyncStore, CommitLog, CredentialStore, HistoryQueries } from '../store/ports.js';
import {
  type BookSequence,
  type CheckpointInfo,
  type CommandReceipt,
  type CommitBatch,
  type IdempotencyRecord,
  type LedgerEntry,
  StoreUnavailableError,
} from '../store/store.js';
import { type Clock, MICROS_PER_DAY, systemClock } from './clock.js';
import { type FeedBookChanges, type FeedTrades, InProcessFeed } from './committed-feed.js';
import { DeadlineTimer } from './deadline-timer.js';
import { followFeed, type MarketSnapshot, MarketView, RECENT_TRADES, RecentTrades } from './market-view.js';
import type {
  BookView,
  Catalogue,
  CommandIdentity,
  CommittedBatch,
  Exchange,
  IdempotencyRequest,
  LedgerRequest,
  LevelChange,
  OnceResult,
  PlaceOrder,
} from './ports.js';
import { canonicalSnapshot } from './snapshot-canonical.js';
import { TradeStatsBook } from './trade-stats.js';

export interface ExchangeOptions {
  /**
   * The store, through its asynchronous ports: the sequencer commits to and loads from it, the
   * readers query its history and credentials. SQLite: `asyncStore(SqliteStore.open(…))`.
   */
  readonly store: AsyncStore;
  readonly clock?: Clock;
  readonly logger?: Pick<Logger, 'info' | 'warn' | 'error'>;
  /** While the store is unavailable, how often to try a write (and, if needed, the rebuild). Default 1000 ms. */
  readonly probeIntervalMs?: number;
  /**
   * The engine's settings (the open-order limit per user): every engine that applies this venue's
   * commands must use the same, so they are given once here and used at every restore.
   */
  readonly engine?: EngineOptions;
  /** How long one commit may be pending before the exchange stops saying it is ready. Default 3000 ms. */
  readonly commitOverdueMs?: number;
}

const DEFAULT_PROBE_INTERVAL_MS = 1000;
/** "A few seconds": a commit takes milliseconds; one pending this long is stuck (a lock, a silent network). */
const DEFAULT_COMMIT_OVERDUE_MS = 3000;

/**
 * Turns of the event loop a flush may be put off while commands keep arriving. Under load, the
 * requests the next poll brings (already received, still to be parsed and authenticated) then
 * join the batch and share its commit (one fsync) instead of waiting for the next one; when
 * nothing new came in, the batch is committed at once.
 */
const MAX_FLUSH_DEFERRALS = 3;

export type SubmitResult = CommandResult & {
  /**
   * True when a deposit or withdrawal with the same reference (same user and kind) was already
   * recorded: nothing new happened. `recorded` is then that earlier entry (it may differ from the
   * request in asset or amount, which the caller reports as a conflict).
   */
  readonly duplicate?: boolean;
  /** A deposit's or withdrawal's ledger entry: the one just committed, or the earlier one for a duplicate. */
  readonly recorded?: LedgerEntry;
};

/** How long an Idempotency-Key's record answers retries. */
export const IDEMPOTENCY_TTL_MICROS = MICROS_PER_DAY;

interface Pending {
  readonly command: Command;
  readonly ledger: LedgerRequest | undefined;
  /** Set for an order placed under an Idempotency-Key: its record is committed with the order. */
  readonly idempotency: IdempotencyRequest | undefined;
  /** Set for a command sent under an id: its answer is committed with it (a CommandReceipt). */
  readonly identity?: CommandIdentity | undefined;
  readonly resolve: (result: SubmitResult) => void;
  readonly reject: (error: Error) => void;
}

/**
 * The exchange running in this process: the `Exchange` port adapters use, plus what its owner
 * (the composition root, tools, tests) may do — checkpoints, the store, the state checks, close.
 * Its counterpart on a gateway is `RemoteExchange` (src/cluster), the same port over NATS.
 */
export interface LocalExchange extends Exchange {
  submit(command: Command, ledger?: LedgerRequest, identity?: CommandIdentity): Promise<SubmitResult>;
  /** Saves the committed state as checkpoint `name` (store.saveCheckpoint), replacing one of that name. */
  saveCheckpoint(name: string): Promise<CheckpointInfo>;
  /**
   * Replaces the whole venue state with checkpoint `name`'s, as one step of the sequencer (see
   * restoreCheckpoint in the class), then reloads the engine and every read model and tells the
   * `onRestored` listeners. Rejects with CheckpointError or StoreUnavailableError, having changed nothing.
   */
  restoreCheckpoint(name: string): Promise<void>;
  /** By name. */
  listCheckpoints(): Promise<CheckpointInfo[]>;
  /** False when there was no such checkpoint. */
  deleteCheckpoint(name: string): Promise<boolean>;
  /**
   * While commands are refused (isWritable false): the store's last failure (the failed commit,
   * then each failed probe), for /readyz to say why (store.ts, unavailableReason). Undefined
   * while writable.
   */
  unavailableCause(): unknown;
  /**
   * What /readyz reports: writable (after a failure, once the probe's write succeeded: see
   * probeStep), and no commit pending longer than `commitOverdueMs` (a lock held in PostgreSQL
   * makes it not ready at once, while it waits).
   */
  isReady(): boolean;
  /** Why not ready, as unavailableCause says it (store.ts, unavailableReason); undefined when ready. */
  notReadyCause(): unknown;
  /** The commit log the sequencer loads from and commits to (for tools that inspect it). */
  readonly commitLog: CommitLog;
  /** The whole store (the composition root, tools and tests); adapters use `history` and `credentials`. */
  readonly store: AsyncStore;
  /** Commits whatever is queued, then stops accepting commands. */
  close(): Promise<void>;
  /** The engine's conservation audit (per asset); between steps only (see readCommitted). */
  audit(): ReturnType<Engine['audit']>;
  /**
   * The engine's state check (Engine.stateHash, TransferReferences.stateHash, validateInternalState),
   * between steps only (see readCommitted). O(orders + balances): about a second per 100,000
   * resting orders, during which nothing else runs — an operator's check, not a probe.
   */
  stateCheck(): EngineStateCheck;
  readonly clock: Clock;
}

/** What the engine's state check found (see LocalExchange.stateCheck). */
export interface EngineStateCheck {
  /** SHA-256 (hex) of everything an engine snapshot restores: equal to a restore of the committed state. */
  readonly stateHash: string;
  /** SHA-256 (hex) of the deposit/withdrawal references kept beside the engine. */
  readonly referencesHash: string;
  /** The first broken invariant, or null when the state is internally consistent. */
  readonly violation: string | null;
}

/** Loads the committed state through the commit log, then starts the sequencer. */
export async function openExchange(options: ExchangeOptions): Promise<LocalExchange> {
  const ports = options.store;
  const engine = Engine.restore(await ports.loadSnapshot(), options.engine);
  const references = TransferReferences.restore(await ports.loadLedgerReferences());
  const exchange = new Sequencer(options, ports, engine, references);
  await exchange.start();
  return exchange;
}

/** Thrown by a read of engine state made while a step is in flight: a bug of the caller (see readCommitted). */
export class UncommittedReadError extends Error {
  override readonly name = 'UncommittedReadError';
  constructor() {
    super('engine state read while a batch is being committed; read it through readCommitted');
  }
}

/** The sequencer: the engine, stepped one group commit at a time (see the header). */
class Sequencer implements LocalExchange {
  readonly store: AsyncStore;
  readonly clock: Clock;
  private readonly ports: AsyncStore;
  readonly history: HistoryQueries;
  readonly credentials: CredentialStore;
  private engine: Engine;
  /** Deposit and withdrawal references committed so far: restored and replaced with the engine. */
  private references: TransferReferences<LedgerEntry>;
  private candles = new CandleAggregator([]);
  /**
   * Statistics, last prices and the newest trades as loaded from the store (at start, after a
   * rebuild or a restore): what a MarketView snapshot taken here starts with. Not kept per batch:
   * the view follows the batches, and readers ask it.
   */
  private stats = new TradeStatsBook();
  private readonly lastPrices = new Map<MarketId, Price>();
  private recentTrades = new RecentTrades();
  /** Every committed batch, numbered: what the readers' MarketView (and later, gateways) follow. */
  readonly feed: InProcessFeed;
  /** The read model HTTP and WebSocket readers read; kept from `feed` only (set by `start`). */
  view!: MarketView;

  /**
   * The committed catalogue: the view's, which moves at the commit of a batch that changes it
   * (before its replies) and is reloaded by a reset, so an asset or market whose creation is
   * still being committed is not seen yet.
   */
  get catalogue(): Catalogue {
    return this.view.catalogue;
  }
  /** A restore replaced the state and the feed has not said so yet (the rebuild failed). */
  private resetDue = false;
  /**
   * Each market's book sequence as committed: loaded from the store (at start, after a rebuild or
   * a restore) and advanced once a batch that carries the new values is committed.
   */
  private readonly bookSequences = new Map<MarketId, number>();
  private readonly listeners = new Set<(batch: CommittedBatch) => void>();
  /** Listeners called at commit, before any reply (see onCommitted). */
  private readonly immediateListeners = new Set<(batch: CommittedBatch) => void>();
  private readonly restoredListeners = new Set<() => void>();
  /** Committed batches not yet passed to the listeners, oldest first (see publishCommitted). */
  private unpublished: CommittedBatch[] = [];
  private publicationScheduled = false;
  private queue: Pending[] = [];
  /** Idempotency-Keys (user, key) queued and not yet committed or refused, with their answer. */
  private readonly keysInFlight = new Map<
    string,
    { readonly fingerprint: string; readonly answer: Promise<OnceResult> }
  >();
  private flushScheduled = false;
  /** Times the pending flush was put off, and the queue length when it last was. */
  private deferrals = 0;
  private queuedAtDeferral = 0;
  /**
   * True from the moment a step (a batch, a restore, a probe) may change the engine until the
   * engine equals the committed state again: no other step starts, and engine reads wait.
   */
  private stepping = false;
  /** Counts the steps that changed the committed state (batches committed, restores). */
  private commits = 0;
  /** Called when the step in flight ends (readers and steps waiting for their turn). */
  private stepWaiters: Array<() => void> = [];
  /** False from a failed commit until a write succeeds again; commands are refused meanwhile. */
  private writable = true;
  /** The latest store failure while not writable (see unavailableCause). */
  private lastFailure: unknown;
  /** When the commit in flight started (performance.now()), if one is. */
  private commitStartedAt: number | undefined;
  private readonly commitOverdueMs: number;
  /**
   * True when a failed commit could not be followed by a rebuild: the engine (or the candle
   * aggregator) may hold uncommitted effects, so nothing may be applied or committed on top of it.
   */
  private stale = false;
  private probeTimer: ReturnType<typeof setInterval> | undefined;
  private readonly probeIntervalMs: number;
  private readonly engineOptions: EngineOptions;
  /** Armed for the engine's next deadline (a GTD expiry, a dead man's switch): see armDeadline. */
  private readonly deadlineTimer: DeadlineTimer;
  /** A tick sent by the timer is queued or being applied: no second one meanwhile. */
  private tickPending = false;
  private closed = false;
  private readonly logger: ExchangeOptions['logger'];

  constructor(
    options: ExchangeOptions,
    ports: AsyncStore,
    engine: Engine,
    references: TransferReferences<LedgerEntry>,
  ) {
    this.store = ports;
    this.ports = ports;
    this.history = ports;
    this.credentials = ports;
    this.clock = options.clock ?? systemClock();
    this.logger = options.logger;
    this.probeIntervalMs = options.probeIntervalMs ?? DEFAULT_PROBE_INTERVAL_MS;
    this.engineOptions = options.engine ?? {};
    this.deadlineTimer = new DeadlineTimer(this.clock, () => this.tick());
    if (!Number.isSafeInteger(this.probeIntervalMs) || this.probeIntervalMs <= 0)
      throw new RangeError(`invalid probe interval: ${this.probeIntervalMs}`);
    this.commitOverdueMs = options.commitOverdueMs ?? DEFAULT_COMMIT_OVERDUE_MS;
    if (!Number.isSafeInteger(this.commitOverdueMs) || this.commitOverdueMs <= 0)
      throw new RangeError(`invalid commit overdue time: ${this.commitOverdueMs}`);
    this.engine = engine;
    this.references = references;
    this.feed = new InProcessFeed(this.logger);
    // First of each set: the feed (and the view it keeps) moves before any other listener runs.
    this.immediateListeners.add((batch) => this.feed.publish(batch));
    this.listeners.add((batch) => this.feed.release(batch.sequence));
  }

  /** Loads the read models, then finds out whether the store takes writes. */
  async start(): Promise<void> {
    await this.loadReadModels();
    this.view = MarketView.fromSnapshot(this.marketSnapshot());
    followFeed(this.view, this.feed, this.logger);
    // Whether the store takes writes is only known by writing: one that cannot (a full disk) is
    // reported unwritable from the start (/readyz 503) and probed until it can.
    if (!(await this.tryWrite())) {
      this.writable = false;
      this.logger?.warn('the store does not accept writes; commands are refused until it does');
      this.startProbing();
    }
    // Deadlines loaded with the state (expiries, switches armed before a restart or a failover).
    this.armDeadline();
  }

  /**
   * Arms the deadline timer for the engine's next deadline, between steps. Not while a tick is
   * on its way (its step re-arms), nor while the store takes no writes (a tick would be refused
   * at once, again and again): the probe's successful step re-arms it.
   */
  private armDeadline(): void {
    if (this.closed || this.stepping || this.tickPending) return;
    if (!this.writable || this.stale) {
      this.deadlineTimer.stop();
      return;
    }
    this.deadlineTimer.set(this.engine.nextDeadline());
  }

  /** The deadline came: a `tick` makes the engine fire whatever is due at the batch's time. */
  private tick(): void {
    if (this.closed || this.tickPending) return;
    this.tickPending = true;
    const settled = () => {
      this.tickPending = false;
      this.armDeadline();
    };
    this.enqueue({ kind: 'tick' }, undefined, undefined).then(settled, (error: unknown) => {
      this.logger?.warn({ err: error }, 'a deadline tick could not be committed; it is sent again');
      settled();
    });
  }

  private async loadReadModels(): Promise<void> {
    const now = this.clock();
    // Built afresh: after a checkpoint restore, markets may have no trade, or another history.
    const stats = new TradeStatsBook();
    const lastPrices = new Map<MarketId, Price>();
    const recentTrades = new RecentTrades();
    const latest: Candle[] = [];
    const bookSequences = await this.ports.loadBookSequences();
    for (const market of this.engine.marketList()) {
      const newest = await this.ports.latestCandles(market.id);
      latest.push(...newest);
      const sinceSeconds = Math.floor((now - MICROS_PER_DAY) / 1_000_000) - 60;
      stats.record(await this.ports.listCandles(market.id, 1, sinceSeconds, 1441));
      stats.record(newest);
      const trades = await this.ports.listPublicTrades({ marketId: market.id, limit: RECENT_TRADES });
      const last = trades[0];
      if (last !== undefined) lastPrices.set(market.id, last.price);
      recentTrades.add(market.id, trades.reverse());
    }
    // Swapped in at once, once everything is read: a failed read leaves the old models whole.
    this.stats = stats;
    this.lastPrices.clear();
    for (const [id, price] of lastPrices) this.lastPrices.set(id, price);
    this.candles = new CandleAggregator(latest);
    this.recentTrades = recentTrades;
    this.bookSequences.clear();
    for (const { marketId, sequence } of bookSequences) this.bookSequences.set(marketId, sequence);
  }

  /**
   * The market state as committed, for a MarketView to start from, at the feed's current
   * sequence. Read from the engine and the read models directly: callers take it between steps
   * (start) or inside the step that changed the state (a restore).
   */
  private marketSnapshot(): MarketSnapshot {
    const engine = this.engine;
    const markets = engine.marketList();
    const candles: Candle[] = [];
    for (const market of markets)
      for (const interval of INTERVALS) {
        const candle = this.candles.current(market.id, interval);
        if (candle !== undefined) candles.push(candle);
      }
    return {
      sequence: this.feed.head(),
      assets: [...engine.assetList()],
      markets,
      books: markets.map((market) => ({
        marketId: market.id,
        sequence: this.bookSequences.get(market.id) ?? 0,
        bids: engine.levels(market.id, 'buy', 0),
        asks: engine.levels(market.id, 'sell', 0),
      })),
      lastPrices: [...this.lastPrices].map(([marketId, price]) => ({ marketId, price })),
      candles,
      statsCandles: this.stats.candles(),
      recentTrades: this.recentTrades.snapshot(),
      balances: engine.snapshot().balances.filter((b) => b.available !== 0 || b.reserved !== 0),
    };
  }

  /** Tells the feed (and so every view) that the state was replaced: a reset entry with the new state. */
  private publishReset(): void {
    this.resetDue = false;
    this.feed.publish({ kind: 'reset', sequence: this.feed.nextSequence(), snapshot: this.marketSnapshot() });
  }

  submit(command: Command, ledger?: LedgerRequest, identity?: CommandIdentity): Promise<SubmitResult> {
    return this.enqueue(command, ledger, undefined, identity);
  }

  submitOnce(
    command: PlaceOrder,
    request: IdempotencyRequest,
    identity?: CommandIdentity,
  ): Promise<OnceResult> {
    // Keys queued but not yet committed are in `keysInFlight`; committed keys are read from the
    // commit log before the command is queued (never in the middle of a batch), so a duplicate of
    // either kind is caught before it reaches the engine.
    const id = `${command.userId}\u0000${request.key}`;
    const inFlight = this.keysInFlight.get(id);
    if (inFlight !== undefined)
      return inFlight.fingerprint === request.fingerprint ? inFlight.answer : Promise.resolve(KEY_MISMATCH);
    const answer = this.ports
      .findIdempotencyRecord(command.userId, request.key)
      .then((recorded): Promise<OnceResult> | OnceResult => {
        if (recorded !== undefined && recorded.time > this.clock() - IDEMPOTENCY_TTL_MICROS)
          return recorded.fingerprint === request.fingerprint
            ? { kind: 'replayed', orderId: recorded.orderId }
            : KEY_MISMATCH;
        return this.enqueue(command, undefined, request, identity).then(
          (result): OnceResult => ({ kind: 'executed', result }),
        );
      });
    // Registered before the lookup settles: an identical request arriving meanwhile joins this one.
    const entry = { fingerprint: request.fingerprint, answer };
    this.keysInFlight.set(id, entry);
    // Settled means committed (the record is in the store), replayed, or refused (nothing to remember).
    const settle = () => {
      if (this.keysInFlight.get(id) === entry) this.keysInFlight.delete(id);
    };
    answer.then(settle, settle);
    return answer;
  }

  private enqueue(
    command: Command,
    ledger: LedgerRequest | undefined,
    idempotency: IdempotencyRequest | undefined,
    identity?: CommandIdentity,
  ): Promise<SubmitResult> {
    if (this.closed) return Promise.reject(new StoreUnavailableError('The exchange is shutting down.'));
    return new Promise((resolve, reject) => {
      this.queue.push({ command, ledger, idempotency, identity, resolve, reject });
      // While a step is in flight the queue only grows: the step's end schedules the next flush.
      if (!this.flushScheduled && !this.stepping) this.scheduleFlush();
    });
  }

  private scheduleFlush(grown = false): void {
    this.flushScheduled = true;
    setImmediate(() => this.flush(grown));
  }

  /**
   * Applies and commits everything queued, as one batch (put off a few turns while more arrives,
   * unless `now`: a restore or close that must not wait). Returns the step.
   */
  private flush(now = false): Promise<void> | undefined {
    this.flushScheduled = false;
    if (this.stepping) return undefined; // the step in flight schedules the next flush when it ends
    // Listeners read the engine (top of book, statistics): they must see it as the batch left it.
    this.publishCommitted();
    if (!now && this.queue.length > this.queuedAtDeferral && this.deferrals < MAX_FLUSH_DEFERRALS) {
      this.deferrals++;
      this.queuedAtDeferral = this.queue.length;
      this.scheduleFlush();
      return undefined;
    }
    this.deferrals = 0;
    this.queuedAtDeferral = 0;
    const batch = this.queue;
    this.queue = [];
    if (batch.length === 0) return undefined;
    if (!this.writable) {
      // Refused before the engine sees it: nothing to undo, no rebuild per batch during an outage.
      const refusal = new StoreUnavailableError('The store cannot accept writes right now; retry later.');
      for (const pending of batch) pending.reject(refusal);
      return undefined;
    }
    this.stepping = true;
    return this.step(batch);
  }

  /** One batch: apply, await its commit, then answer. Runs with `stepping` set; ends it. */
  private async step(batch: readonly Pending[]): Promise<void> {
    let applied: AppliedBatch;
    try {
      applied = await this.applyAndCommit(batch);
    } catch (error) {
      // A failed commit (or store read, or anything thrown after the engine pass): the engine may
      // hold part of the batch, so it is rebuilt from the last committed state and the whole
      // batch is refused. A command that throws in the engine is handled in applyAndCommit.
      await this.recoverFromFailedCommit(error);
      this.endStep();
      const failure =
        error instanceof StoreUnavailableError
          ? error
          : new StoreUnavailableError('The store could not commit.', { cause: error });
      for (const pending of batch) pending.reject(failure);
      return;
    }
    const { results, events, changes, trades, touched, ledger, books } = applied;
    this.commits += 1;
    for (const entry of ledger) this.references.record(entry);
    const committed: CommittedBatch | undefined =
      events.length > 0 && (this.listeners.size > 0 || this.immediateListeners.size > 0)
        ? {
            kind: 'batch',
            sequence: this.feed.nextSequence(),
            events,
            books,
            candles: touched,
            trades,
            balances: changes.balances,
          }
        : undefined;
    for (const { marketId, sequence } of books) this.bookSequences.set(marketId, sequence);
    // The engine equals the committed state again: readers may read it from here on.
    this.endStep();
    if (committed !== undefined) this.callListeners(this.immediateListeners, committed);
    for (let i = 0; i < batch.length; i++) {
      const result = results[i]!;
      if (result instanceof Error) batch[i]!.reject(result);
      else batch[i]!.resolve(result);
    }
    if (committed !== undefined && this.listeners.size > 0) {
      // Sequence numbers and level totals are taken now, from the state just committed; the
      // listeners run after the replies: those are written by this turn's microtasks (the
      // requests' continuations), and fanning out to many subscribers first would delay them.
      this.unpublished.push(committed);
      this.schedulePublication();
    }
  }

  /** The step in flight is over: wake whoever waits for its end, and flush what queued meanwhile. */
  private endStep(): void {
    this.stepping = false;
    const waiters = this.stepWaiters;
    this.stepWaiters = [];
    for (const wake of waiters) wake();
    this.armDeadline();
    if (this.unpublished.length > 0) this.schedulePublication();
    // Not at once: the step's replies are being written, and their clients' next commands arrive
    // within a turn or two. Flushed at once, what queued during the commit would leave as one
    // group and those as the next, each waiting for the other's commit (half-sized batches, twice
    // the commits, with a store whose commit is asynchronous); the flush waits while the queue grows.
    if (this.queue.length > 0 && !this.flushScheduled) this.scheduleFlush();
  }

  /** Resolves when no step is in flight (at once, in a microtask, when none is). */
  private stepEnded(): Promise<void> {
    if (!this.stepping) return Promise.resolve();
    return new Promise((wake) => this.stepWaiters.push(wake));
  }

  /** Runs `step` as a step of its own, once the one in flight (if any) has ended. */
  private async exclusive<T>(step: () => Promise<T>): Promise<T> {
    while (this.stepping) await this.stepEnded();
    this.stepping = true;
    try {
      return await step();
    } finally {
      this.endStep();
    }
  }

  commitMark(): number {
    return this.commits;
  }

  readCommitted<T>(read: () => T): T | Promise<T> {
    if (!this.stepping) return read();
    return this.stepEnded().then(() => this.readCommitted(read));
  }

  /** Engine state may be read only between steps; a read during one is a caller's bug. */
  private committedEngine(): Engine {
    if (this.stepping) throw new UncommittedReadError();
    return this.engine;
  }

  private schedulePublication(): void {
    if (this.publicationScheduled) return;
    this.publicationScheduled = true;
    setImmediate(() => this.publishCommitted());
  }

  publishCommitted(): void {
    this.publicationScheduled = false;
    // During a step the engine is ahead of the batches to publish; the step's end schedules them.
    if (this.stepping) return;
    if (this.unpublished.length === 0) return;
    const batches = this.unpublished;
    this.unpublished = [];
    for (const batch of batches) this.callListeners(this.listeners, batch);
  }

  private callListeners(listeners: Iterable<(batch: CommittedBatch) => void>, batch: CommittedBatch): void {
    for (const listener of listeners) {
      try {
        listener(batch);
      } catch (error) {
        this.logger?.error({ err: error }, 'a commit listener failed');
      }
    }
  }

  /**
   * Applies a batch to the engine and commits its changes; rejects (engine possibly half-changed)
   * when the commit, or anything but one command's own application, fails.
   *
   * A command whose application throws (a bug, or an input no check foresaw) is refused alone: the
   * engine may hold part of its effects, so it is restored from the store (the last committed
   * state) and the batch is applied again without it. The engine is deterministic and the time is
   * the batch's, so the batch-mates get exactly the results they would have had.
   */
  private async applyAndCommit(batch: readonly Pending[]): Promise<AppliedBatch> {
    const time = this.clock();
    const failed = new Map<number, SubmitResult | Error>();
    for (;;) {
      const applied = this.applyBatch(batch, time, failed);
      if (applied instanceof CommandFailure) {
        failed.set(applied.index, this.failedCommandAnswer(batch[applied.index]!.command, applied.cause));
        // Rejects (a store read failing) into the whole-batch path: rebuild, probe, 503.
        this.engine = Engine.restore(await this.ports.loadSnapshot(), this.engineOptions);
        continue;
      }
      const { results, events, ledger, idempotencyKeys, receipts } = applied;
      const changes = this.engine.drainChanges();
      const trades = tradesByMarket(events);
      const touched: Candle[] = [];
      for (const { marketId, trades: list } of trades) touched.push(...this.candles.apply(marketId, list));
      const books = this.bookUpdates(changes.levels);
      const bookSequences: BookSequence[] = books.map(({ marketId, sequence }) => ({ marketId, sequence }));
      const commit: CommitBatch = {
        changes,
        events,
        ledger,
        candles: touched,
        idempotencyKeys,
        idempotencyExpiredBefore: (time - IDEMPOTENCY_TTL_MICROS) as Micros,
        bookSequences,
        ...(receipts.length === 0
          ? {}
          : {
              commandReceipts: receipts,
              commandReceiptsExpiredBefore: batch.reduce(
                (bound, pending) => Math.max(bound, pending.identity?.forgetBefore ?? bound),
                0,
              ),
            }),
      };
      // A batch that changed nothing (only refusals, duplicates) writes nothing; it says nothing
      // about the store either, so `writable` is left as it is.
      if (events.length > 0 || ledger.length > 0 || changes.orders.length > 0) {
        await this.timedCommit(commit);
      }
      return { results, events, changes, trades, touched, ledger, books };
    }
  }

  /** The engine pass of a batch, skipping the commands in `failed`; the first command that throws stops it. */
  private applyBatch(
    batch: readonly Pending[],
    time: Micros,
    failed: ReadonlyMap<number, SubmitResult | Error>,
  ):
    | {
        results: Array<SubmitResult | Error>;
        events: EngineEvent[];
        ledger: LedgerEntry[];
        idempotencyKeys: IdempotencyRecord[];
        receipts: CommandReceipt[];
      }
    | CommandFailure {
    const results: Array<SubmitResult | Error> = [];
    const events: EngineEvent[] = [];
    const ledger: LedgerEntry[] = [];
    const idempotencyKeys: IdempotencyRecord[] = [];
    const receipts: CommandReceipt[] = [];
    const seenReferences = new Map<string, LedgerEntry>();
    for (let index = 0; index < batch.length; index++) {
      const pending = batch[index]!;
      const refused = failed.get(index);
      if (refused !== undefined) {
        results.push(refused);
        continue;
      }
      const duplicate = this.duplicateLedger(pending, seenReferences);
      if (duplicate !== undefined) {
        results.push(duplicate);
        continue;
      }
      let result: CommandResult;
      let receipt: CommandReceipt | undefined;
      try {
        result = this.engine.apply(pending.command, time);
        // Only an applied command is remembered: one refused changed nothing, and may be sent again.
        if (result.ok && pending.identity !== undefined)
          receipt = {
            id: pending.identity.id,
            expires: pending.identity.expires,
            reply: pending.identity.encode(result),
          };
      } catch (error) {
        return new CommandFailure(index, error);
      }
      if (receipt !== undefined) receipts.push(receipt);
      // A refusal may still carry events: deadlines due at the batch's time fired before the
      // command was refused (engine/types.ts, CommandResult); they are committed like any others.
      if (result.events !== undefined) for (const event of result.events) events.push(event);
      if (!result.ok) {
        results.push(result);
        continue;
      }
      const keyRecord = idempotencyRecord(pending, result.events, time);
      if (keyRecord !== undefined) idempotencyKeys.push(keyRecord);
      const entry = ledgerEntry(pending, time);
      if (entry === undefined) {
        results.push(result);
        continue;
      }
      results.push({ ...result, recorded: entry });
      ledger.push(entry);
      if (entry.reference !== null) seenReferences.set(referenceKey(entry), entry);
    }
    return { results, events, ledger, idempotencyKeys, receipts };
  }

  /**
   * The answer to a command whose application threw. A RangeError is what the exact-money code
   * throws for a value past 2^53 - 1: an input too large, refused as such (422 over HTTP). Anything
   * else is a fault of the server (500), not of the input. Logged with the command's kind only:
   * commands carry no secrets, but user ids and amounts have no place in an error log either.
   */
  private failedCommandAnswer(command: Command, cause: unknown): SubmitResult | Error {
    this.logger?.error(
      { err: cause, command: command.kind },
      'applying a command threw; it is refused alone and the rest of its batch is applied',
    );
    if (cause instanceof RangeError) {
      return {
        ok: false,
        error: {
          code: 'too_large',
          message: 'The amounts of this command are too large to be accounted exactly; nothing was changed.',
        },
      };
    }
    return new CommandFailedError(command.kind, { cause });
  }

  /**
   * The entry already recorded under this request's reference: earlier in the batch, or committed
   * (in memory, `references`: nothing is read from the store in the middle of a batch).
   */
  private duplicateLedger(
    pending: Pending,
    seen: ReadonlyMap<string, LedgerEntry>,
  ): SubmitResult | undefined {
    const { command, ledger } = pending;
    if (ledger?.reference === undefined || (command.kind !== 'deposit' && command.kind !== 'withdraw'))
      return undefined;
    const kind = command.kind === 'deposit' ? 'deposit' : 'withdrawal';
    const recorded =
      seen.get(referenceKey({ userId: command.userId, kind, reference: ledger.reference })) ??
      this.references.find(command.userId, kind, ledger.reference);
    return recorded === undefined ? undefined : { ok: true, events: [], duplicate: true, recorded };
  }

  private async recoverFromFailedCommit(error: unknown): Promise<void> {
    this.writable = false;
    this.lastFailure = error;
    this.logger?.error({ err: error }, 'commit failed; restoring the last committed state');
    this.stale = true;
    if (await this.rebuild()) this.reloadReadersIfChanged();
    this.startProbing();
  }

  /**
   * After a failed commit's rebuild. A commit whose connection broke may have reached the store
   * all the same (in doubt, decision 36): the engine, reloaded from the store, then holds a batch
   * the feed never carried, and the view (and every gateway's) would miss it for good, its book
   * sequences then jumping at the next batch. So the rebuilt state is compared with the view, as
   * a gateway compares an engine's reset (snapshot-canonical.ts): equal, nothing happens (the
   * usual case: the batch did not land); different, the feed carries a reset with the state from
   * the store and the `onRestored` listeners are told, as after a checkpoint restore. Only on a
   * failed commit: never on the commit path.
   */
  private reloadReadersIfChanged(): void {
    const now = this.clock();
    if (canonicalSnapshot(this.marketSnapshot(), now) === canonicalSnapshot(this.view.snapshot(), now))
      return;
    this.logger?.warn('the failed commit had reached the store: readers reload the committed state');
    this.commits += 1;
    this.publishReset();
    this.callRestoredListeners();
  }

  private callRestoredListeners(): void {
    for (const listener of this.restoredListeners) {
      try {
        listener();
      } catch (error) {
        this.logger?.error({ err: error }, 'a restore listener failed');
      }
    }
  }

  /** Rebuilds the engine and the read models from the store; false (still stale) when that fails. */
  private async rebuild(): Promise<boolean> {
    try {
      const engine = Engine.restore(await this.ports.loadSnapshot(), this.engineOptions);
      const references = TransferReferences.restore(await this.ports.loadLedgerReferences());
      this.engine = engine;
      this.references = references;
      await this.loadReadModels();
      this.stale = false;
      return true;
    } catch (reloadError) {
      this.lastFailure = reloadError;
      this.logger?.error(
        { err: reloadError },
        'could not reload the committed state; commands stay refused until it can be reloaded',
      );
      return false;
    }
  }

  private startProbing(): void {
    if (this.probeTimer !== undefined || this.closed) return;
    this.probeTimer = setInterval(() => this.probe(), this.probeIntervalMs);
    // The probe alone must not keep the process alive (a stopping server closes the exchange).
    this.probeTimer.unref?.();
  }

  private stopProbing(): void {
    if (this.probeTimer !== undefined) clearInterval(this.probeTimer);
    this.probeTimer = undefined;
  }

  /**
   * While unavailable: rebuild if still needed, then try one write. The probe commits a batch that
   * changes no state (it rewrites the id sequences with their committed values, and the store's
   * write-probe row: tryWrite), which needs the same things a real commit needs: the write lock,
   * room for new pages in the WAL and a writable file. It is a step of its
   * own, taken when no other is in flight (a tick that finds one skips its turn), so the engine
   * holds exactly the committed state.
   */
  private probe(): void {
    if (this.closed) {
      this.stopProbing();
      return;
    }
    if (this.stepping) return;
    this.stepping = true;
    void this.probeStep().finally(() => this.endStep());
  }

  private async probeStep(): Promise<void> {
    if (this.stale && !(await this.rebuild())) return;
    if (this.resetDue) this.publishReset();
    if (!(await this.tryWrite())) return; // still unavailable; the failure was logged when it began
    if (this.closed) return;
    this.writable = true;
    this.stopProbing();
    this.logger?.info('the store accepts writes again; commands are accepted');
  }

  /**
   * One probe commit: true when the store took it. It changes nothing the exchange keeps, but it
   * writes as much as a real commit (CommitBatch.writeProbe): an empty commit may fit where no
   * real one does (a WAL that filled the disk reuses the frames of the failed commit), and this
   * probe is what brings the exchange back without any command arriving.
   */
  private async tryWrite(): Promise<boolean> {
    try {
      await this.timedCommit(probeBatch(this.engine.sequences()));
      return true;
    } catch (error) {
      this.lastFailure = error;
      return false;
    }
  }

  /**
   * The batch's level changes per market, each with the level's new total and its own number,
   * in the order the levels first changed: one update message per change, the book's sequence
   * going up by one with each. Computed once, before the commit: the new book sequences are
   * committed with the batch (so a restarted engine goes on from exactly what was published),
   * and the same numbers go out with it once committed. `bookSequences` itself moves only once
   * the commit succeeded.
   */
  private bookUpdates(levels: ChangeSet['levels']): FeedBookChanges[] {
    const books = new Map<MarketId, { marketId: MarketId; sequence: number; changes: LevelChange[] }>();
    for (const key of levels) {
      let book = books.get(key.marketId);
      if (book === undefined) {
        book = { marketId: key.marketId, sequence: this.bookSequences.get(key.marketId) ?? 0, changes: [] };
        books.set(key.marketId, book);
      }
      book.sequence += 1;
      book.changes.push({
        side: key.side,
        price: key.price,
        before: key.before,
        volume: this.engine.levelVolume(key.marketId, key.side, key.price),
        sequence: book.sequence,
      });
    }
    return [...books.values()];
  }

  book(marketId: MarketId, maxLevels: number): BookView {
    const engine = this.committedEngine();
    return {
      sequence: this.bookSequences.get(marketId) ?? 0,
      bids: engine.levels(marketId, 'buy', maxLevels),
      asks: engine.levels(marketId, 'sell', maxLevels),
    };
  }

  balances(userId: UserId): BalanceState[] {
    const engine = this.committedEngine();
    return engine
      .assetList()
      .map((asset) => ({ userId, asset: asset.code, ...engine.balance(userId, asset.code) }));
  }

  onCommitted(
    listener: (batch: CommittedBatch) => void,
    options?: { readonly immediate?: boolean },
  ): () => void {
    const set = options?.immediate === true ? this.immediateListeners : this.listeners;
    set.add(listener);
    return () => set.delete(listener);
  }

  isWritable(): boolean {
    return this.writable;
  }

  unavailableCause(): unknown {
    return this.writable ? undefined : this.lastFailure;
  }

  isReady(): boolean {
    return this.notReadyCause() === undefined;
  }

  notReadyCause(): unknown {
    if (!this.writable) return this.lastFailure;
    if (this.commitStartedAt !== undefined && performance.now() - this.commitStartedAt > this.commitOverdueMs)
      return COMMIT_OVERDUE;
    return undefined;
  }

  /** The store's commit, timed: a commit pending too long makes the exchange not ready (isReady). */
  private async timedCommit(batch: CommitBatch): Promise<void> {
    this.commitStartedAt = performance.now();
    try {
      await this.ports.commit(batch);
    } finally {
      this.commitStartedAt = undefined;
    }
  }

  onRestored(listener: () => void): () => void {
    this.restoredListeners.add(listener);
    return () => this.restoredListeners.delete(listener);
  }

  get commitLog(): CommitLog {
    return this.ports;
  }

  listCheckpoints(): Promise<CheckpointInfo[]> {
    return this.ports.listCheckpoints();
  }

  deleteCheckpoint(name: string): Promise<boolean> {
    return this.ports.deleteCheckpoint(name);
  }

  async saveCheckpoint(name: string): Promise<CheckpointInfo> {
    if (this.closed) throw new StoreUnavailableError('The exchange is shutting down.');
    // Every acknowledged command is committed already (a reply follows its commit); commands
    // still queued, or in the commit in flight, are not acknowledged: the store's one read
    // transaction sees the commit in flight whole or not at all.
    return this.ports.saveCheckpoint(name, this.clock());
  }

  /**
   * The restore is one step of the sequencer, like a batch, taken once the step in flight (if
   * any) has ended: the commands queued before it are applied and committed first (they were
   * submitted first), their batches are published, then the store swaps the state (one
   * transaction) and the engine and read models are rebuilt from it. No batch is applied and no
   * engine read is served until it ends, so no batch is ever half before and half after. Book
   * sequences go on from where they were, plus one (never backwards), and the `onRestored`
   * listeners drop what they derived from the old state (caches, subscriptions).
   */
  async restoreCheckpoint(name: string): Promise<void> {
    if (this.closed) throw new StoreUnavailableError('The exchange is shutting down.');
    while (this.stepping) await this.stepEnded();
    if (!this.writable || this.stale)
      throw new StoreUnavailableError('The store cannot accept writes right now; retry later.');
    if (this.queue.length > 0) await this.flush(true);
    await this.exclusive(async () => {
      this.publishStepPending();
      if (!this.writable) throw new StoreUnavailableError('The store could not commit; retry later.');
      // Rejects having changed nothing (one transaction): the engine still matches the store.
      await this.ports.restoreCheckpoint(name);
      this.commits += 1;
      if (!(await this.rebuild())) {
        // The store holds the checkpoint but the engine could not load it: as after a failed commit.
        this.writable = false;
        this.stale = true;
        this.startProbing();
      }
      // Book sequences: the store's restore added one to every market's (decision 77), in its
      // transaction, and the rebuild loaded them.
      // The feed says so before anyone is told of the restore (or, if the rebuild failed, once
      // the probe's rebuild succeeds): the view then shows the restored state.
      this.resetDue = true;
      if (!this.stale) this.publishReset();
      this.logger?.info({ checkpoint: name }, 'restored a checkpoint');
      this.callRestoredListeners();
    });
  }

  /**
   * Publishes what is due from inside a step that has not changed the engine yet (a restore's
   * start): the listeners then still see the engine as those batches left it.
   */
  private publishStepPending(): void {
    this.stepping = false;
    try {
      this.publishCommitted();
    } finally {
      this.stepping = true;
    }
  }

  audit(): ReturnType<Engine['audit']> {
    return this.committedEngine().audit();
  }

  stateCheck(): EngineStateCheck {
    const engine = this.committedEngine();
    let violation: string | null = null;
    try {
      engine.validateInternalState();
    } catch (error) {
      if (!(error instanceof InternalStateError)) throw error;
      violation = error.message;
    }
    return { stateHash: engine.stateHash(), referencesHash: this.references.stateHash(), violation };
  }

  async close(): Promise<void> {
    while (this.stepping) await this.stepEnded();
    if (this.queue.length > 0) await this.flush(true);
    this.publishCommitted();
    this.closed = true;
    this.stopProbing();
    this.deadlineTimer.stop();
  }
}

/** A command of a batch threw while the engine applied it. */
class CommandFailure {
  constructor(
    readonly index: number,
    readonly cause: unknown,
  ) {}
}

/**
 * A command could not be applied because of a fault in the server (not its input): it changed
 * nothing, and the rest of its batch was applied. Surfaces as a 500.
 */
export class CommandFailedError extends Error {
  override readonly name = 'CommandFailedError';
  constructor(kind: Command['kind'], options?: ErrorOptions) {
    super(`the ${kind} command could not be applied`, options);
  }
}

interface AppliedBatch {
  /** Per command: its result, or the error its request is refused with. */
  readonly results: Array<SubmitResult | Error>;
  readonly events: EngineEvent[];
  readonly changes: ChangeSet;
  readonly trades: FeedTrades[];
  readonly touched: Candle[];
  /** The batch's deposit and withdrawal entries, as committed. */
  readonly ledger: readonly LedgerEntry[];
  /** Per market whose levels changed: its numbered level changes and its new (committed) book sequence. */
  readonly books: FeedBookChanges[];
}

const COMMIT_OVERDUE = new StoreUnavailableError('a commit has been pending for too long', {
  reason: 'commit pending too long',
});

/** A commit that changes no state but still takes the write lock and writes (the probe). */
function probeBatch(sequences: Sequences): CommitBatch {
  return {
    changes: { orders: [], balances: [], totals: [], levels: [], sequences },
    events: [],
    ledger: [],
    candles: [],
    writeProbe: true,
  };
}

const KEY_MISMATCH: OnceResult = { kind: 'mismatch' };

/** The record of an order created under an Idempotency-Key, written in the order's own commit. */
function idempotencyRecord(
  pending: Pending,
  events: readonly EngineEvent[],
  time: Micros,
): IdempotencyRecord | undefined {
  if (pending.idempotency === undefined) return undefined;
  const accepted = events.find((e) => e.type === 'orderAccepted');
  if (accepted?.type !== 'orderAccepted') return undefined;
  return {
    userId: accepted.order.userId,
    key: pending.idempotency.key,
    fingerprint: pending.idempotency.fingerprint,
    orderId: accepted.order.id,
    time,
  };
}

function ledgerEntry(pending: Pending, time: Micros): LedgerEntry | undefined {
  const c = pending.command;
  if (c.kind !== 'deposit' && c.kind !== 'withdraw') return undefined;
  return {
    userId: c.userId,
    asset: c.asset,
    kind: c.kind === 'deposit' ? 'deposit' : 'withdrawal',
    amount: c.amount,
    reference: pending.ledger?.reference ?? null,
    time,
  };
}

/** A reference identifies one operator action per user and kind, whatever the asset. */
const referenceKey = (e: Pick<LedgerEntry, 'userId' | 'kind' | 'reference'>): string =>
  `${e.userId}\u0000${e.kind}\u0000${e.reference}`;

/** The batch's trades per market, markets in the order of their first trade, trades in engine order. */
function tradesByMarket(events: readonly EngineEvent[]): FeedTrades[] {
  const byMarket = new Map<MarketId, Trade[]>();
  for (const event of events) {
    if (event.type !== 'trade') continue;
    let list = byMarket.get(event.trade.marketId);
    if (list === undefined) {
      list = [];
      byMarket.set(event.trade.marketId, list);
    }
    list.push(event.trade);
  }
  return [...byMarket].map(([marketId, trades]) => ({ marketId, trades }));
}
