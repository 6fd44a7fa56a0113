/**
 * The committed feed: every batch the sequencer committed, numbered, as plain data. It is the one
 * thing the readers of market state consume (the MarketView, the WebSocket fan-out), so they never
 * read the store or the live engine; and it is what the scale-out issue publishes on a JetStream
 * stream, which is why an entry is plain data (arrays, no Maps, no class instances) and
 * `encodeFeedEntry` / `decodeFeedEntry` carry its BigInts (candle sums) exactly.
 *
 * Numbering: `sequence` goes up by one per entry, with no hole. It counts the entries of this
 * engine run and starts at 0 when the engine starts (the state it starts from is the MarketView
 * snapshot at sequence 0); it is not persisted, because nothing consumes it across a restart yet:
 * a reader in this process lives exactly as long as the engine. The scale-out issue, whose
 * gateways outlive an engine, must persist it with each commit (see docs/architecture.md).
 *
 * Entries:
 * - `batch`: one committed batch, in commit order.
 * - `reset`: the whole market state was replaced (a checkpoint restore); it carries the new state
 *   as a snapshot, and whatever a reader derived from the old one is void.
 * A subscriber that asks for entries the feed no longer holds gets a `gap` message and no
 * subscription: it must start again from a snapshot. Nothing is ever skipped silently.
 */
import type { MarketId } from '../domain/types.js';
import type { BalanceState, EngineEvent, Trade } from '../engine/types.js';
import type { Candle } from '../market-data/candle.js';
import type { MarketSnapshot } from './market-view.js';
import type { LevelChange } from './ports.js';

/** One market's changed levels in a batch, and its book's sequence after the last of them. */
export interface FeedBookChanges {
  readonly marketId: MarketId;
  readonly sequence: number;
  readonly changes: readonly LevelChange[];
}

export interface FeedTrades {
  readonly marketId: MarketId;
  /** In engine order. */
  readonly trades: readonly Trade[];
}

/** One committed batch: everything its readers need, nothing they must look up elsewhere. */
export interface FeedBatch {
  readonly kind: 'batch';
  readonly sequence: number;
  /** The engine's events, in engine order (orders, trades, deposits, catalogue changes). */
  readonly events: readonly EngineEvent[];
  /** Per market, every level whose total changed, in the order of their first changes. */
  readonly books: readonly FeedBookChanges[];
  /** Candles the batch touched, in their new state. */
  readonly candles: readonly Candle[];
  /** The batch's trades per market (the same trades as in `events`). */
  readonly trades: readonly FeedTrades[];
  /** Every balance the batch changed, as it is after the batch. */
  readonly balances: readonly BalanceState[];
}

/** The whole market state was replaced (a checkpoint restore): `snapshot` is the new state. */
export interface FeedReset {
  readonly kind: 'reset';
  readonly sequence: number;
  readonly snapshot: MarketSnapshot;
}

export type FeedEntry = FeedBatch | FeedReset;

/** The entries a subscriber asked for are no longer held: it must start again from a snapshot. */
export interface FeedGap {
  readonly kind: 'gap';
  /** The first sequence asked for. */
  readonly requested: number;
  /** The oldest sequence still held (head + 1 when none is). */
  readonly oldest: number;
}

export type FeedMessage = FeedEntry | FeedGap;

export interface SubscribeOptions {
  /**
   * Deliver each batch once the replies of its requests are written (the WebSocket fan-out),
   * rather than at the commit itself, before any reply (the read models replies depend on).
   */
  readonly afterReplies?: boolean;
}

export interface CommittedFeed {
  /**
   * The sequence of the newest entry (0 before the first); with `afterReplies`, of the newest
   * entry whose replies are written (what such a subscriber has been served up to).
   */
  head(options?: SubscribeOptions): number;
  /**
   * Delivers every entry from `fromSequence` on, in order: the held ones at once, then each new
   * one as it is committed. Asking for entries no longer held delivers one `gap` message and
   * subscribes nothing. `fromSequence` past `head() + 1` is a caller's bug (RangeError).
   * Returns the function that ends the subscription.
   */
  subscribe(
    fromSequence: number,
    onMessage: (message: FeedMessage) => void,
    options?: SubscribeOptions,
  ): () => void;
}

interface Subscriber {
  readonly onMessage: (message: FeedMessage) => void;
  /** The next sequence this subscriber is owed. */
  next: number;
}

type Logger = { error(obj: object, msg: string): void };

/**
 * Entries held for subscribers that start from a recent snapshot. Few: in this process a reader
 * subscribes at the head, and a held entry keeps its batch's objects alive (promoted by the
 * garbage collector instead of dying young), which the order path pays for.
 */
const DEFAULT_RETAINED = 128;

/**
 * The feed inside the engine's process. The sequencer calls `publish` at the commit (before any
 * reply) and `release` once a batch's replies are written; entries are held (the newest
 * `retained`) so that a subscriber that starts late catches up from where its snapshot stands.
 */
export class InProcessFeed implements CommittedFeed {
  private readonly entries: FeedEntry[] = [];
  /** Sequence of entries[0]. */
  private first = 1;
  private last = 0;
  /** The newest sequence whose replies are written (afterReplies subscribers are served up to it). */
  private released = 0;
  private readonly atCommit = new Set<Subscriber>();
  private readonly afterReplies = new Set<Subscriber>();

  constructor(
    private readonly logger?: Logger,
    private readonly retained = DEFAULT_RETAINED,
  ) {
    if (!Number.isSafeInteger(retained) || retained < 1)
      throw new RangeError(`invalid retention: ${retained}`);
  }

  head(options?: SubscribeOptions): number {
    return options?.afterReplies === true ? this.released : this.last;
  }

  /** The number the next entry takes. */
  nextSequence(): number {
    return this.last + 1;
  }

  /** Appends an entry (its sequence must be the next) and delivers it to the at-commit subscribers. */
  publish(entry: FeedEntry): void {
    if (entry.sequence !== this.last + 1)
      throw new RangeError(`feed entry ${entry.sequence} does not follow ${this.last}`);
    this.entries.push(entry);
    this.last = entry.sequence;
    if (this.entries.length > this.retained) {
      this.entries.splice(0, this.entries.length - this.retained);
      this.first = this.last - this.entries.length + 1;
    }
    this.deliver(this.atCommit, this.last);
    // A reset answers no request: nothing to wait for.
    if (entry.kind === 'reset') this.release(entry.sequence);
  }

  /** The replies of every entry up to `sequence` are written: serve the afterReplies subscribers. */
  release(sequence: number): void {
    if (sequence > this.released) this.released = Math.min(sequence, this.last);
    this.deliver(this.afterReplies, this.released);
  }

  subscribe(
    fromSequence: number,
    onMessage: (message: FeedMessage) => void,
    options?: SubscribeOptions,
  ): () => void {
    if (!Number.isSafeInteger(fromSequence) || fromSequence < 1 || fromSequence > this.last + 1)
      throw new RangeError(`cannot subscribe from ${fromSequence}: the feed is at ${this.last}`);
    if (fromSequence < this.first) {
      onMessage({ kind: 'gap', requested: fromSequence, oldest: this.first });
      return () => undefined;
    }
    const subscriber: Subscriber = { onMessage, next: fromSequence };
    const set = options?.afterReplies === true ? this.afterReplies : this.atCommit;
    set.add(subscriber);
    this.catchUp(subscriber, set === this.afterReplies ? this.released : this.last);
    return () => set.delete(subscriber);
  }

  private deliver(subscribers: Set<Subscriber>, upTo: number): void {
    for (const subscriber of subscribers) this.catchUp(subscriber, upTo);
  }

  private catchUp(subscriber: Subscriber, upTo: number): void {
    while (subscriber.next <= upTo) {
      const sequence = subscriber.next;
      if (sequence < this.first) {
        // Fell behind what is held (it could not be served for longer than the retention).
        subscriber.onMessage({ kind: 'gap', requested: sequence, oldest: this.first });
        this.atCommit.delete(subscriber);
        this.afterReplies.delete(subscriber);
        return;
      }
      subscriber.next = sequence + 1;
      try {
        subscriber.onMessage(this.entries[sequence - this.first]!);
      } catch (error) {
        // The batch is committed; one failing reader must not cost the others their entry.
        this.logger?.error({ err: error, sequence }, 'a feed subscriber failed');
      }
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Serialisation: JSON with the BigInts kept exact.

/** The one key an encoded BigInt has; no domain record has a key starting with `$`. */
const BIGINT_KEY = '$bigint';

/** An entry as JSON text; BigInts become `{"$bigint":"123"}`, everything else is JSON already. */
export function encodeFeedEntry(entry: FeedEntry): string {
  return JSON.stringify(entry, (_key, value: unknown) =>
    typeof value === 'bigint' ? { [BIGINT_KEY]: value.toString() } : value,
  );
}

/** The inverse of `encodeFeedEntry`. */
export function decodeFeedEntry(text: string): FeedEntry {
  return JSON.parse(text, (_key, value: unknown) => {
    if (value !== null && typeof value === 'object' && !Array.isArray(value)) {
      const encoded = (value as Record<string, unknown>)[BIGINT_KEY];
      if (typeof encoded === 'string' && Object.keys(value).length === 1) return BigInt(encoded);
    }
    return value;
  }) as FeedEntry;
}
