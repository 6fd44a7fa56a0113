/**
 * The Exchange port on a gateway: no engine, no store writer. Commands go to the engine over NATS
 * (CommandClient: answered after the commit); market state comes from a MarketView kept from the
 * engine's committed batches on JetStream, started from the engine's snapshot; history,
 * credentials and balances come from PostgreSQL (the PostgresReader), where every acknowledged
 * command is committed before its acknowledgment, so a read on any gateway after a 201 finds it.
 *
 * Numbering: this process has a committed feed of its own (an InProcessFeed, numbered from 0 at
 * start), into which each batch of the stream is re-numbered as it arrives; the adapters (HTTP
 * caches, the WebSocket fan-out) follow it exactly as they follow the engine's feed in one
 * process. What clients see — each book's own `sequence` — travels inside the batches unchanged.
 *
 * Gaps: a batch missing from the stream (retention, an overflow of the engine's publish queue, an
 * unreadable message) is never skipped: the gateway fetches a new snapshot, puts a `reset` entry
 * with it into its feed (the view reloads) and tells the `onRestored` listeners, which close
 * every WebSocket connection with 4200 so clients subscribe again from a snapshot. Batches the
 * snapshot already includes are then left out. A `reset` from the engine (a checkpoint restore,
 * an engine start) is handled the same way, unless it shows exactly what this view shows (see
 * continuesFrom): an engine restarted, or taken over by a standby, on the state the stream
 * already carried, whose book sequences (committed with their batches) go on from this view's.
 * Then nothing is reloaded and no listener is told: clients' books simply continue.
 */
import type { NatsConnection } from '@nats-io/transport-node';
import type { MarketId, UserId } from '../domain/types.js';
import type { BalanceState, Command, CommandResult } from '../engine/types.js';
import { type Clock, systemClock } from '../sequencer/clock.js';
import { type FeedBatch, type FeedEntry, InProcessFeed } from '../sequencer/committed-feed.js';
import { type MarketSnapshot, MarketView } from '../sequencer/market-view.js';
import type {
  BookView,
  Catalogue,
  CommittedBatch,
  Exchange,
  IdempotencyRequest,
  LedgerRequest,
  OnceResult,
  PlaceOrder,
} from '../sequencer/ports.js';
import { canonicalSnapshot } from '../sequencer/snapshot-canonical.js';
import type { GatewayStore } from '../store/postgres/reader.js';
import {
  type BatchGap,
  type BatchStreamConfig,
  type BatchSubscription,
  consumeBatches,
} from './batch-stream.js';
import type { ClusterKey } from './cluster-key.js';
import { type BatchEnvelope, readEvent, WireFormatError } from './codec.js';
import { CommandClient, EngineUnavailableError } from './command-client.js';
import type { ExactValue } from './exact-json.js';
import { EngineHeartbeats } from './heartbeat.js';
import type { RefusalAlarm } from './refusal-alarm.js';
import { type EngineSnapshot, fetchSnapshot, pingEngineStatus } from './snapshot.js';

/** How long a gateway's view may stay behind a reported commit before it is not ready. */
export const DEFAULT_MAX_LAG_MS = 5_000;
/** /readyz's reason while the view lags the engine's commits. */
export const LAGGING = 'view behind the engine';

type Logger = {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
  error(obj: object, msg: string): void;
};

export interface RemoteExchangeOptions {
  readonly nc: NatsConnection;
  readonly store: GatewayStore;
  readonly logger: Logger;
  /** Commands go out, and batches are taken, only with a MAC under this key. */
  readonly key: ClusterKey;
  /** Told of every stream message set aside (not verified under the key). */
  readonly alarm?: RefusalAlarm;
  readonly clock?: Clock;
  readonly stream?: Partial<BatchStreamConfig>;
  readonly commandSubject?: string;
  readonly snapshotSubject?: string;
  readonly pingSubject?: string;
  /**
   * Where the engine beats (heartbeat.ts): a command the engine that fell silent (or was replaced)
   * never answered is sent again at once. Without it, the ping's no-responders does that, each second.
   */
  readonly heartbeatSubject?: string;
  readonly commandTimeoutMs?: number;
  /** How often the engine is asked whether it takes commands, and its last commit (ms, default 1000). */
  readonly pingIntervalMs?: number;
  /**
   * How long this view may stay behind a commit the engine reported before /readyz fails (ms,
   * default 5000): a stalled, forked or frozen feed takes the gateway out of its load balancer.
   */
  readonly maxLagMs?: number;
  /** How long to wait for the engine's first snapshot before giving up (ms, default 60 s). */
  readonly startTimeoutMs?: number;
}

export class RemoteExchange implements Exchange {
  readonly clock: Clock;
  readonly feed: InProcessFeed;
  readonly view: MarketView;
  readonly history: GatewayStore;
  readonly credentials: GatewayStore;
  private readonly commands: CommandClient;
  /** The last stream batch sequence the view includes. */
  private engineSequence: number;
  private subscription: BatchSubscription | undefined;
  private readonly immediate = new Set<(batch: CommittedBatch) => void>();
  private readonly afterReplies = new Set<(batch: CommittedBatch) => void>();
  private readonly restored = new Set<() => void>();
  private commits = 0;
  private closed = false;
  /** False after a command found no engine (or no NATS), until one is answered again. */
  private engineReachable = true;
  private resnapshotting: Promise<void> | undefined;
  private pingTimer: ReturnType<typeof setInterval> | undefined;
  private readonly readinessChecks: Array<() => string | undefined> = [];
  /** The oldest commit the engine reported that this view does not include yet, and when it was reported. */
  private behind: { readonly sequence: number; readonly since: number } | undefined;

  private constructor(
    private readonly options: RemoteExchangeOptions,
    first: EngineSnapshot,
    private readonly heartbeats: EngineHeartbeats | undefined,
  ) {
    this.clock = options.clock ?? systemClock();
    this.history = options.store;
    this.credentials = options.store;
    this.commands = new CommandClient(options.nc, {
      key: options.key,
      ...(heartbeats === undefined ? {} : { heartbeats }),
      ...(options.commandSubject === undefined ? {} : { subject: options.commandSubject }),
      ...(options.commandTimeoutMs === undefined ? {} : { timeoutMs: options.commandTimeoutMs }),
    });
    this.feed = new InProcessFeed(options.logger);
    this.view = MarketView.fromSnapshot({ ...first.snapshot, sequence: 0 });
    this.engineSequence = first.sequence;
    this.feed.subscribe(1, (message) => {
      if (message.kind !== 'gap') this.view.apply(message);
    });
  }

  /** Fetches the engine's snapshot (waiting for an engine to answer), then follows the stream. */
  static async open(options: RemoteExchangeOptions): Promise<RemoteExchange> {
    const deadline = Date.now() + (options.startTimeoutMs ?? 60_000);
    let first: EngineSnapshot | undefined;
    let told = false;
    while (first === undefined) {
      try {
        first = await fetchSnapshot(options.nc, snapshotOptions(options));
      } catch (error) {
        if (Date.now() > deadline)
          throw new Error('no engine answered the snapshot request', { cause: error });
        if (!told) options.logger.info({}, 'waiting for the engine to answer (snapshot request)');
        told = true;
        await new Promise((resolve) => setTimeout(resolve, 500));
      }
    }
    const heartbeats =
      options.heartbeatSubject === undefined
        ? undefined
        : await EngineHeartbeats.watch(options.nc, { subject: options.heartbeatSubject, key: options.key });
    const exchange = new RemoteExchange(options, first, heartbeats);
    await exchange.follow(first.sequence + 1);
    exchange.watchEngine();
    return exchange;
  }

  private async follow(from: number): Promise<void> {
    this.subscription = await consumeBatches<FeedEntry>(this.options.nc, {
      from,
      key: this.options.key,
      onSetAside: ({ streamSequence, reason }) =>
        this.options.alarm?.refused('batch', reason, { streamSequence }) ??
        this.options.logger.warn({ streamSequence, reason }, 'a batch-stream message was set aside'),
      ...(this.options.stream === undefined ? {} : { config: this.options.stream }),
      readPayload: readFeedEntry,
      onBatch: (batch) => this.take(batch),
      onGap: (gap) => this.repair(gap),
    });
    this.subscription.done.catch((error: unknown) => {
      if (this.closed) return;
      // A batch this view could not take: start again from a snapshot rather than stand still.
      this.options.logger.error({ err: error }, 'the batch stream subscription failed; re-snapshotting');
      void this.resnapshot().then(() => (this.closed ? undefined : this.follow(this.engineSequence + 1)));
    });
  }

  private take(envelope: BatchEnvelope<FeedEntry>): void {
    if (envelope.sequence <= this.engineSequence) return; // included in the snapshot already
    this.engineSequence = envelope.sequence;
    const entry = envelope.payload;
    if (entry.kind === 'reset') {
      if (this.continuesFrom(entry.snapshot)) {
        this.options.logger.info(
          { batch: envelope.sequence },
          'the engine started on the state this gateway holds: continuing without a reload',
        );
        return;
      }
      this.warnIfBooksGoBack(entry.snapshot);
      this.reset(entry.snapshot);
      return;
    }
    const local: FeedBatch = { ...entry, sequence: this.feed.nextSequence() };
    this.feed.publish(local);
    this.commits += 1;
    for (const listener of this.immediate) this.call(listener, local);
    this.feed.release(local.sequence);
    for (const listener of this.afterReplies) this.call(listener, local);
  }

  /**
   * True when an engine's `reset` shows what this view shows, in everything a reader can see
   * (canonical encodings compared, snapshot-canonical.ts): books' levels and sequences, the
   * catalogue, prices, candles, statistics, recent trades, balances. Then the view, the caches
   * derived from it and every client's book are right as they are, and the next batch continues
   * them. Anything else (a batch the old engine committed but never published, a restore) is a
   * reload with its 4200 closes (decision 101).
   */
  private continuesFrom(snapshot: MarketSnapshot): boolean {
    const now = this.clock();
    try {
      return canonicalSnapshot(snapshot, now) === canonicalSnapshot(this.view.snapshot(), now);
    } catch (error) {
      // A reset of unexpected shape: reload from it, as before this comparison existed.
      this.options.logger.warn({ err: error }, 'could not compare the engine’s reset with this view');
      return false;
    }
  }

  /**
   * Book sequences are committed with their batches, so an engine's reset never carries one below
   * what the stream already published; should it (a database put back from an older backup), the
   * clients re-snapshot anyway, and the operator is told.
   */
  private warnIfBooksGoBack(snapshot: MarketSnapshot): void {
    for (const book of snapshot.books) {
      const shown = this.view.book(book.marketId, 1).sequence;
      if (book.sequence < shown)
        this.options.logger.warn(
          { marketId: book.marketId, from: shown, to: book.sequence },
          'the engine restarted with a book sequence below the one already published',
        );
    }
  }

  /** A hole in the stream: a new snapshot, never a view that silently misses a batch. */
  private async repair(gap: BatchGap): Promise<void> {
    this.options.logger.warn(
      { expected: gap.expected, next: gap.next ?? null, reason: gap.reason },
      'gap in the batch stream: re-snapshotting from the engine',
    );
    this.resnapshotting ??= this.resnapshot().finally(() => {
      this.resnapshotting = undefined;
    });
    await this.resnapshotting;
  }

  private async resnapshot(): Promise<void> {
    // A fetch fails at once while NATS is away: tried every 500 ms, said once and then every 10 s.
    for (let failures = 0; ; failures += 1) {
      try {
        const fresh = await fetchSnapshot(this.options.nc, snapshotOptions(this.options));
        this.engineSequence = fresh.sequence;
        // What went missing may have changed nothing a reader sees (or not have been the
        // engine's): then clients continue, as when an engine's equal reset arrives (take);
        // anything else is a reload.
        if (this.continuesFrom(fresh.snapshot))
          this.options.logger.info(
            { batch: fresh.sequence },
            'the snapshot shows what this gateway holds: continuing without a reload',
          );
        else this.reset(fresh.snapshot);
        if (failures > 0) this.options.logger.info({ failures }, 'snapshot fetched after failed attempts');
        return;
      } catch (error) {
        if (this.closed) return;
        if (failures % 20 === 0)
          this.options.logger.warn(
            { err: error, failures: failures + 1 },
            'snapshot request failed; retrying',
          );
        await new Promise((resolve) => setTimeout(resolve, 500));
      }
    }
  }

  private reset(snapshot: MarketSnapshot): void {
    const sequence = this.feed.nextSequence();
    this.feed.publish({ kind: 'reset', sequence, snapshot: { ...snapshot, sequence } });
    this.commits += 1;
    for (const listener of this.restored) this.call(listener, undefined);
  }

  private call<T>(listener: (value: T) => void, value: T): void {
    try {
      listener(value);
    } catch (error) {
      this.options.logger.error({ err: error }, 'a committed-batch listener failed');
    }
  }

  /** The view's catalogue (one object for the view's life: a reset re-indexes it). */
  get catalogue(): Catalogue {
    return this.view.catalogue;
  }

  async submit(command: Command, ledger?: LedgerRequest): Promise<CommandResult> {
    return this.track(this.commands.submit(command, ledger));
  }

  async submitOnce(command: PlaceOrder, request: IdempotencyRequest): Promise<OnceResult> {
    return this.track(this.commands.submitOnce(command, request));
  }

  private async track<T>(answer: Promise<T>): Promise<T> {
    try {
      return await answer;
    } catch (error) {
      // Not delivered: no engine (or no NATS). Ready again once the engine answers a ping.
      if (error instanceof EngineUnavailableError && error.outcome === 'not_delivered')
        this.engineReachable = false;
      throw error;
    }
  }

  /** Runs at once: the view only moves between turns of the event loop, never during a read. */
  readCommitted<T>(read: () => T): T {
    return read();
  }

  commitMark(): number {
    return this.commits;
  }

  book(marketId: MarketId, maxLevels: number): BookView {
    return this.view.book(marketId, maxLevels);
  }

  balances(userId: UserId): BalanceState[] {
    return this.view.balances(userId);
  }

  /** Balances as committed in PostgreSQL (read-your-writes on any gateway), every asset of the catalogue. */
  async committedBalances(userId: UserId): Promise<BalanceState[]> {
    const rows = new Map((await this.options.store.balancesOf(userId)).map((b) => [b.asset, b]));
    return this.view.catalogue.assets().map(
      (asset) =>
        rows.get(asset.code) ?? {
          userId,
          asset: asset.code,
          available: 0 as BalanceState['available'],
          reserved: 0 as BalanceState['reserved'],
        },
    );
  }

  onCommitted(
    listener: (batch: CommittedBatch) => void,
    options?: { readonly immediate?: boolean },
  ): () => void {
    const set = options?.immediate === true ? this.immediate : this.afterReplies;
    set.add(listener);
    return () => set.delete(listener);
  }

  /** Nothing waits: each batch reaches every listener as it arrives. */
  publishCommitted(): void {}

  /**
   * Whether this gateway should get traffic: the engine answers (and NATS is connected), and every
   * readiness check added (addReadinessCheck) passes. /readyz answers 503 otherwise.
   */
  isWritable(): boolean {
    return this.notReadyReason() === undefined;
  }

  /** Why this gateway is not ready, in a fixed phrase for /readyz; undefined when it is. */
  notReadyReason(): string | undefined {
    if (this.closed || this.options.nc.isClosed() || !this.engineReachable) return 'engine unreachable';
    if (this.lagging()) return LAGGING;
    for (const check of this.readinessChecks) {
      const reason = check();
      if (reason !== undefined) return reason;
    }
    return undefined;
  }

  /** A condition besides the engine's that takes this gateway out of its load balancer (a reason, or undefined). */
  addReadinessCheck(check: () => string | undefined): void {
    this.readinessChecks.push(check);
  }

  onRestored(listener: () => void): () => void {
    this.restored.add(listener);
    return () => this.restored.delete(listener);
  }

  /**
   * True when a commit the engine reported at least `maxLagMs` ago is still not in this view. The
   * oldest commit not yet seen is kept with when it was first reported: only this side's clock.
   */
  private lagging(): boolean {
    const behind = this.behind;
    if (behind === undefined) return false;
    if (this.engineSequence >= behind.sequence) {
      this.behind = undefined;
      return false;
    }
    return Date.now() - behind.since > (this.options.maxLagMs ?? DEFAULT_MAX_LAG_MS);
  }

  /** Asks the engine whether it takes commands, and its last commit, every `pingIntervalMs` (what isWritable reports). */
  private watchEngine(): void {
    const ping = async (): Promise<void> => {
      const sentAt = Date.now();
      const status = await pingEngineStatus(
        this.options.nc,
        this.options.pingSubject === undefined ? {} : { subject: this.options.pingSubject },
      );
      this.engineReachable = status.takesCommands;
      // No engine subscribed any more: commands sent before this ping went to one that is gone.
      if (status.noEngine === true) this.commands.engineLost(sentAt);
      const { committed } = status;
      this.lagging(); // forgets a commit already caught up with, so a newer one is tracked
      if (committed !== undefined && committed > this.engineSequence && this.behind === undefined)
        this.behind = { sequence: committed, since: Date.now() };
    };
    this.pingTimer = setInterval(() => void ping(), this.options.pingIntervalMs ?? 1_000);
    this.pingTimer.unref();
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    clearInterval(this.pingTimer);
    this.heartbeats?.close();
    await this.subscription?.stop();
  }
}

/**
 * A feed entry as the engine published it: its events checked field by field (codec.ts), the
 * rest for shape. A bad one is a WireFormatError, which the consumer reports as a gap (the
 * gateway then re-snapshots) instead of a view that takes half a batch.
 */
function readFeedEntry(value: ExactValue, path: string): FeedEntry {
  if (value === null || typeof value !== 'object' || Array.isArray(value) || value instanceof Map)
    throw new WireFormatError(path, 'expected a feed entry');
  const entry = value as Record<string, ExactValue>;
  if (entry.kind === 'reset') {
    const snapshot = entry.snapshot as Record<string, ExactValue> | null | undefined;
    if (snapshot === null || typeof snapshot !== 'object' || !Array.isArray(snapshot.books))
      throw new WireFormatError(`${path}.snapshot`, 'expected a market snapshot');
    return value as unknown as FeedEntry;
  }
  if (entry.kind !== 'batch') throw new WireFormatError(`${path}.kind`, 'expected batch or reset');
  for (const field of ['events', 'books', 'candles', 'trades', 'balances'])
    if (!Array.isArray(entry[field])) throw new WireFormatError(`${path}.${field}`, 'expected an array');
  (entry.events as ExactValue[]).forEach((event, i) => {
    readEvent(event, `${path}.events[${i}]`);
  });
  return value as unknown as FeedEntry;
}

function snapshotOptions(options: RemoteExchangeOptions): { subject?: string } {
  return options.snapshotSubject === undefined ? {} : { subject: options.snapshotSubject };
}
