/**
 * Committed batches over JetStream: the engine publishes each committed batch, with its global
 * batch sequence number, to one stream; every gateway consumes it from the sequence it needs.
 *
 * On the stream, a batch is one message on `subject`, its body the codec's batch envelope, with
 * three headers: `OpenSpot-Batch-Sequence` (read without decoding the body), `OpenSpot-Mac` (a MAC
 * under the cluster key over the subject, that sequence and the body: cluster-key.ts) and
 * `Nats-Msg-Id` = `<sequence>.<the MAC's first 16 characters>` (the server drops a republished
 * batch within the duplicate window; a message someone else slipped in under the same sequence
 * cannot take a genuine batch's id).
 *
 * Only batches whose MAC verifies are ours: a message on the subject that does not verify (forged,
 * garbage, written under another key) is set aside — reported to `onSetAside`, never delivered,
 * never taken for the stream's end or for a fork — so no message on the stream can stop or wedge
 * a publisher or a consumer.
 *
 * The publisher keeps the stream's batch sequences strictly increasing, whoever publishes:
 * - every publish carries `Nats-Expected-Last-Sequence` (the stream's last message as this side
 *   knows it), so a message slipped in by another publisher makes it re-read the stream before
 *   it writes anything;
 * - a batch sequence already in the stream is never written again: it must be byte-for-byte the
 *   batch stored there (a publish retried after a lost ack), otherwise the publisher throws
 *   StreamForkError and stops — two engines disagree about history, and that must not go unnoticed.
 *
 * The consumer (an ordered consumer, recreated by the client after a disconnect) delivers batches
 * in order and checks the batch sequence of each: a batch that is not the next one expected is
 * reported to `onGap` before it is delivered — never skipped silently — so the reader can
 * re-snapshot. Batches older than the expected one (already delivered) are left out.
 */
import { Buffer } from 'node:buffer';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  type ConsumerMessages,
  DeliverPolicy,
  DiscardPolicy,
  JetStreamApiError,
  type JetStreamClient,
  type JetStreamManager,
  type JsMsg,
  jetstream,
  jetstreamManager,
  RetentionPolicy,
  StorageType,
  type StoredMsg,
  type StreamInfo,
} from '@nats-io/jetstream';
import { headers, type MsgHdrs, type NatsConnection } from '@nats-io/transport-node';
import { type ClusterKey, MAC_HEADER } from './cluster-key.js';
import { type BatchEnvelope, batchSequence, decodeBatch, encodeBatch, WireFormatError } from './codec.js';
import { ConnectionWatch, type RequestFailures } from './connection-watch.js';
import type { ExactValue } from './exact-json.js';

export const BATCH_SEQUENCE_HEADER = 'OpenSpot-Batch-Sequence';

export interface BatchStreamConfig {
  /** The stream's name. */
  readonly stream: string;
  /** The one subject the batches are published on (the stream holds only this subject). */
  readonly subject: string;
  /** Batches older than this are removed (a gateway further behind re-snapshots). */
  readonly maxAgeMs: number;
  /** The stream's size limit; the oldest batches go first. */
  readonly maxBytes: number;
  /** How long the server remembers a batch sequence to drop a republished batch. */
  readonly duplicateWindowMs: number;
  readonly storage: 'file' | 'memory';
  /** Copies kept by a NATS cluster (1 on a single server). */
  readonly replicas: number;
}

/**
 * Retention by limits: a day of batches, at most 1 GiB, oldest first. The stream is a catch-up
 * buffer, not the record (PostgreSQL is): it must cover a gateway's restart or a NATS blip, and a
 * gateway further behind than that re-snapshots (docs/cluster.md).
 */
export const DEFAULT_BATCH_STREAM: BatchStreamConfig = {
  stream: 'OPENSPOT_BATCHES',
  subject: 'openspot.batches',
  maxAgeMs: 24 * 60 * 60 * 1000,
  maxBytes: 1024 * 1024 * 1024,
  duplicateWindowMs: 2 * 60 * 1000,
  storage: 'file',
  replicas: 1,
};

const NANOS_PER_MS = 1_000_000;
/** JetStream's API error code for a failed Nats-Expected-Last-Sequence check. */
const WRONG_LAST_SEQUENCE = 10071;

/** The stream holds the same batch sequence with other contents: history has forked. Fatal for a publisher. */
export class StreamForkError extends Error {
  override readonly name = 'StreamForkError';
}

/** A batch larger than the server's max_payload: it cannot be published (readers will see a gap). */
export class BatchTooLargeError extends Error {
  override readonly name = 'BatchTooLargeError';
}

/**
 * No connection to NATS: the publish was not sent, or the connection dropped while it waited for
 * the stream's ack (which cannot come back on that connection). Fails at once; retry it (the
 * stream keeps one copy).
 */
export class PublishInterruptedError extends Error {
  override readonly name = 'PublishInterruptedError';
}

const PUBLISH_INTERRUPTED: RequestFailures = {
  notSent: () => new PublishInterruptedError('no connection to NATS: not sent'),
  lost: () => new PublishInterruptedError('the connection to NATS was lost before the stream acknowledged'),
};

/**
 * Creates the stream when it is missing; an existing stream keeps the limits an operator gave it,
 * but must hold exactly our subject, and gets direct get (the readers' lookups by sequence) turned on.
 */
export async function ensureBatchStream(
  jsm: JetStreamManager,
  config: BatchStreamConfig = DEFAULT_BATCH_STREAM,
): Promise<StreamInfo> {
  const existing = await streamInfo(jsm, config.stream);
  if (existing !== undefined) {
    const subjects = existing.config.subjects ?? [];
    if (subjects.length !== 1 || subjects[0] !== config.subject)
      throw new Error(
        `stream ${config.stream} holds subjects ${JSON.stringify(subjects)}, not only ${config.subject}: not a batch stream`,
      );
    if (existing.config.allow_direct === true) return existing;
    return jsm.streams.update(config.stream, { allow_direct: true });
  }
  try {
    return await jsm.streams.add({
      name: config.stream,
      subjects: [config.subject],
      retention: RetentionPolicy.Limits,
      discard: DiscardPolicy.Old,
      max_age: config.maxAgeMs * NANOS_PER_MS,
      max_bytes: config.maxBytes,
      duplicate_window: config.duplicateWindowMs * NANOS_PER_MS,
      storage: config.storage === 'file' ? StorageType.File : StorageType.Memory,
      num_replicas: config.replicas,
      allow_direct: true,
    });
  } catch (error) {
    // Another process created it meanwhile: use theirs (checked as above).
    const raced = await streamInfo(jsm, config.stream);
    if (raced === undefined) throw error;
    return ensureBatchStream(jsm, config);
  }
}

async function streamInfo(jsm: JetStreamManager, stream: string): Promise<StreamInfo | undefined> {
  try {
    return await jsm.streams.info(stream);
  } catch (error) {
    if (error instanceof JetStreamApiError && error.status === 404) return undefined;
    if (error instanceof Error && /stream not found/i.test(error.message)) return undefined;
    throw error;
  }
}

/**
 * Reading the stream as its publisher wrote it: the cluster key verifies each message, and one that
 * does not verify is set aside (`onSetAside`: the caller logs and counts it).
 */
export interface StreamAccess {
  readonly jsm: JetStreamManager;
  readonly config: BatchStreamConfig;
  readonly key: ClusterKey;
  readonly onSetAside?: (setAside: SetAside) => void;
}

/** A message on the batch subject that is not a batch of ours (its stream position and why). */
export interface SetAside {
  readonly streamSequence: number | undefined;
  readonly reason: 'unverified' | 'malformed';
}

/** The fields a batch's MAC covers beside its body. */
function batchMacFields(subject: string, sequence: string): string[] {
  return [subject, sequence];
}

/**
 * The batch sequence of a stored message when its MAC verifies (and its body says the same
 * sequence); undefined for a message that is not ours.
 */
export function verifiedBatchSequence(
  key: ClusterKey,
  subject: string,
  header: MsgHdrs | undefined,
  data: Uint8Array,
): { readonly sequence: number } | { readonly rejected: SetAside['reason'] } {
  const text = header?.get(BATCH_SEQUENCE_HEADER) ?? '';
  if (
    !/^[1-9]\d{0,15}$/.test(text) ||
    !key.verify('batch', batchMacFields(subject, text), data, header?.get(MAC_HEADER))
  )
    return { rejected: 'unverified' };
  const sequence = Number(text);
  if (!Number.isSafeInteger(sequence)) return { rejected: 'malformed' };
  return { sequence };
}

interface Located {
  readonly streamSequence: number;
  readonly batch: number;
  readonly data: Uint8Array;
}

function located(access: StreamAccess, m: StoredMsg): Located | undefined {
  const verified = verifiedBatchSequence(access.key, access.config.subject, m.header, m.data);
  if ('rejected' in verified) {
    access.onSetAside?.({ streamSequence: m.seq, reason: verified.rejected });
    return undefined;
  }
  return { streamSequence: m.seq, batch: verified.sequence, data: m.data };
}

/** The first batch of ours stored at stream sequence `from` or later, or undefined past the end. */
async function batchAtOrAfter(access: StreamAccess, from: number): Promise<Located | undefined> {
  for (let seq = from; ; ) {
    const m: StoredMsg | null = await access.jsm.direct.getMessage(access.config.stream, {
      seq,
      next_by_subj: access.config.subject,
    });
    if (m === null) return undefined;
    const batch = located(access, m);
    if (batch !== undefined) return batch;
    seq = m.seq + 1;
  }
}

/**
 * How many messages back from the stream's end a publisher looks for its last batch. Past it (a
 * stream written under another key, a flood of forged messages), it numbers from 1 again; readers
 * of the old messages restart (docs/cluster.md: change CLUSTER_KEY with the stream purged).
 */
export const MAX_SET_ASIDE_AT_END = 10_000;

/** The stream's last batch of ours and the stream's last sequence (what the next publish expects). */
async function streamEnd(access: StreamAccess): Promise<{
  readonly last: Located | undefined;
  readonly lastStreamSequence: number;
  readonly first: number;
}> {
  const { jsm, config } = access;
  const info = await jsm.streams.info(config.stream);
  const { state } = info;
  if (state.messages === 0)
    return { last: undefined, lastStreamSequence: state.last_seq, first: state.first_seq };
  const end = await jsm.streams.getMessage(config.stream, { last_by_subj: config.subject });
  // Not ours at the end (forged, garbage, deleted): step back, message by message, to our last batch.
  let seq = end?.seq ?? 0;
  for (let looked = 0; seq >= state.first_seq && looked < MAX_SET_ASIDE_AT_END; looked += 1, seq -= 1) {
    const m = looked === 0 ? end : await jsm.streams.getMessage(config.stream, { seq });
    const last = m === null ? undefined : located(access, m);
    if (last !== undefined) return { last, lastStreamSequence: state.last_seq, first: state.first_seq };
  }
  return { last: undefined, lastStreamSequence: state.last_seq, first: state.first_seq };
}

/**
 * Where the batch `target` is, or the first one after it (retention may have removed it, the
 * source may never have published it); undefined when every stored batch is older. Batch
 * sequences increase along the stream (the publisher sees to it), so a guess from the last
 * batch's position usually hits, and a binary search finds it otherwise.
 */
export async function locateBatch(
  access: StreamAccess,
  target: number,
): Promise<{ readonly found: Located | undefined; readonly lastStreamSequence: number }> {
  const end = await streamEnd(access);
  const { last } = end;
  if (last === undefined || last.batch < target)
    return { found: undefined, lastStreamSequence: end.lastStreamSequence };
  const guess = last.streamSequence - (last.batch - target);
  if (guess >= end.first) {
    const hit = await batchAtOrAfter(access, guess);
    if (hit !== undefined && hit.batch === target)
      return { found: hit, lastStreamSequence: end.lastStreamSequence };
  }
  // The smallest stream sequence whose first batch at or after it is >= target (the last one is).
  let lo = end.first;
  let hi = last.streamSequence;
  let best: Located = last;
  while (lo <= hi) {
    const mid = lo + Math.floor((hi - lo) / 2);
    const m = await batchAtOrAfter(access, mid);
    if (m !== undefined && m.batch >= target) {
      best = m;
      hi = mid - 1;
    } else {
      lo = (m?.streamSequence ?? mid) + 1;
    }
  }
  return { found: best, lastStreamSequence: end.lastStreamSequence };
}

// ---------------------------------------------------------------------------------------------
// Publishing

export interface PublishOutcome {
  /** Where the batch is in the stream (undefined: it was published before and has aged out). */
  readonly streamSequence: number | undefined;
  /** True when the stream already held this batch (a republish): nothing was added. */
  readonly duplicate: boolean;
}

export interface PublisherOptions {
  /** Every batch carries a MAC under it; only batches it verifies count as the stream's. */
  readonly key: ClusterKey;
  readonly timeoutMs?: number;
  /** A message on the subject that is not a batch of ours, met while reading the stream. */
  readonly onSetAside?: (setAside: SetAside) => void;
}

export class BatchPublisher {
  private lastBatch: number | undefined;
  private lastStreamSequence: number;
  private readonly js: JetStreamClient;
  /**
   * The client neither fails a request in flight when its connection drops nor gets an answer to
   * one made while disconnected: each waits for its whole timeout. After a NATS restart the
   * engine's publish queue sat behind such publishes for 3 s (5 s from the stop) while commands
   * were taken again within 0.3 s, so gateways served a frozen book. As the CommandClient does,
   * a publish goes through the connection's watch: refused while disconnected and failed at the
   * disconnect; the queue retries it once the connection is back.
   */
  private readonly watch: ConnectionWatch;

  private constructor(
    private readonly nc: NatsConnection,
    private readonly access: StreamAccess,
    end: { readonly last: Located | undefined; readonly lastStreamSequence: number },
    private readonly timeoutMs: number,
  ) {
    this.lastBatch = end.last?.batch;
    this.lastStreamSequence = end.lastStreamSequence;
    this.js = jetstream(nc);
    this.watch = ConnectionWatch.of(nc);
  }

  /**
   * Ensures the stream and reads where it ends: its last batch of ours (messages after it that do
   * not verify under the key are set aside, and the next publish goes after them).
   */
  static async open(
    nc: NatsConnection,
    config: Partial<BatchStreamConfig>,
    options: PublisherOptions,
  ): Promise<BatchPublisher> {
    const full = { ...DEFAULT_BATCH_STREAM, ...config };
    const jsm = await jetstreamManager(nc);
    await ensureBatchStream(jsm, full);
    const access: StreamAccess = {
      jsm,
      config: full,
      key: options.key,
      ...(options.onSetAside === undefined ? {} : { onSetAside: options.onSetAside }),
    };
    return new BatchPublisher(nc, access, await streamEnd(access), options.timeoutMs ?? 5_000);
  }

  get config(): BatchStreamConfig {
    return this.access.config;
  }

  /** The last batch sequence in the stream as this publisher knows it (undefined: none). */
  get lastPublished(): number | undefined {
    return this.lastBatch;
  }

  /**
   * Publishes one batch; resolves once the stream has stored it (or already held it). Safe to
   * call again with the same batch after a failure: the stream keeps one copy. Rejects with
   * StreamForkError (fatal: stop publishing), BatchTooLargeError (this batch cannot be published),
   * PublishInterruptedError (no connection, or it dropped before the ack: retry), or the client's
   * error when NATS or JetStream did not answer (retry later).
   */
  async publish(sequence: number, payload: ExactValue): Promise<PublishOutcome> {
    return this.publishEncoded(sequence, encodeBatch({ sequence, payload }));
  }

  /**
   * Publishes `payload` as the batch after the last one in the stream, whatever that is when it
   * arrives, and resolves with the batch sequence it took. For an engine's first message, its
   * `reset`: a whole state, meaningful under any number. A batch that the previous engine sent
   * just before it died can reach the server after this publisher read the stream's end; it then
   * holds the number the reset expected, and the reset goes after it instead of being taken for
   * a fork (which would stop the new engine and leave the venue without one).
   */
  async publishAtEnd(payload: ExactValue, attempts = 5): Promise<number> {
    for (let attempt = 1; ; attempt += 1) {
      const sequence = (this.lastBatch ?? 0) + 1;
      try {
        await this.publish(sequence, payload);
        return sequence;
      } catch (error) {
        if (!(error instanceof StreamForkError) || attempt >= attempts) throw error;
        await this.refresh();
      }
    }
  }

  /** As publish, with the envelope already encoded (encodeBatch({ sequence, payload })). */
  async publishEncoded(sequence: number, bytes: Uint8Array): Promise<PublishOutcome> {
    batchSequence(sequence, 'sequence');
    const maxPayload = this.nc.info?.max_payload;
    if (maxPayload !== undefined && bytes.length > maxPayload)
      throw new BatchTooLargeError(
        `batch ${sequence} is ${bytes.length} bytes, over the server's max_payload ${maxPayload}`,
      );
    for (let attempt = 0; ; attempt += 1) {
      if (this.lastBatch !== undefined && sequence <= this.lastBatch)
        return this.alreadyStored(sequence, bytes);
      const h = headers();
      const mac = this.access.key.mac('batch', batchMacFields(this.config.subject, String(sequence)), bytes);
      h.set(BATCH_SEQUENCE_HEADER, String(sequence));
      h.set(MAC_HEADER, mac);
      try {
        const ack = await this.watch.request(
          () =>
            this.js.publish(this.config.subject, bytes, {
              msgID: `${sequence}.${mac.slice(3, 19)}`,
              expect: { lastSequence: this.lastStreamSequence },
              headers: h,
              timeout: this.timeoutMs,
            }),
          PUBLISH_INTERRUPTED,
        );
        if (ack.duplicate) {
          // The server remembers this sequence: our own earlier publish whose ack was lost, or another's.
          await this.sameAsStored(sequence, ack.seq, bytes);
          await this.refresh();
          return { streamSequence: ack.seq, duplicate: true };
        }
        this.lastBatch = sequence;
        this.lastStreamSequence = ack.seq;
        return { streamSequence: ack.seq, duplicate: false };
      } catch (error) {
        if (!(error instanceof JetStreamApiError && error.code === WRONG_LAST_SEQUENCE) || attempt >= 3)
          throw error;
        // Someone else wrote to the stream: read where it ends now, then decide again.
        await this.refresh();
      }
    }
  }

  private async refresh(): Promise<void> {
    const end = await streamEnd(this.access);
    this.lastBatch = end.last?.batch;
    this.lastStreamSequence = end.lastStreamSequence;
  }

  private async alreadyStored(sequence: number, bytes: Uint8Array): Promise<PublishOutcome> {
    const { found } = await locateBatch(this.access, sequence);
    if (found === undefined || found.batch !== sequence)
      return { streamSequence: undefined, duplicate: true };
    await this.sameAsStored(sequence, found.streamSequence, bytes);
    return { streamSequence: found.streamSequence, duplicate: true };
  }

  private async sameAsStored(sequence: number, streamSequence: number, bytes: Uint8Array): Promise<void> {
    const stored = await this.access.jsm.streams.getMessage(this.config.stream, { seq: streamSequence });
    if (stored !== null && Buffer.from(stored.data).equals(Buffer.from(bytes))) return;
    throw new StreamForkError(
      `batch ${sequence} is already in stream ${this.config.stream} with other contents: another engine has published a different history`,
    );
  }
}

export type DropReason = 'too_large' | 'overflow';

export interface PublishQueueOptions {
  /** Batches kept while NATS is unreachable; past this, the oldest are dropped (readers see a gap). */
  readonly maxQueued?: number;
  readonly retryDelayMs?: number;
  readonly onDropped?: (sequence: number, reason: DropReason) => void;
  /** A publish failed and will be retried (NATS or JetStream down). */
  readonly onRetry?: (error: unknown) => void;
  /** The stream forked: publishing has stopped for good. The engine should stop. */
  readonly onFatal?: (error: StreamForkError) => void;
}

/**
 * Publishes batches in order in the background, so a commit never waits for NATS: `enqueue`
 * returns at once; a publish that fails for want of NATS is retried until it succeeds (the
 * stream's dedup makes the retry safe). Bounded: a long outage drops the oldest batches, which
 * gateways then see as a gap and repair by re-snapshotting.
 */
export class BatchPublishQueue {
  private readonly queue: QueuedBatch[] = [];
  /** The batch being published (kept out of `queue`, so an overflow never drops it mid-flight). */
  private current: QueuedBatch | undefined;
  private running: Promise<void> | undefined;
  private stopped = false;
  private fatal: StreamForkError | undefined;
  private readonly maxQueued: number;
  private readonly retryDelayMs: number;
  private idle: Array<() => void> = [];

  constructor(
    private readonly publisher: BatchPublisher,
    private readonly options: PublishQueueOptions = {},
  ) {
    this.maxQueued = options.maxQueued ?? 10_000;
    this.retryDelayMs = options.retryDelayMs ?? 250;
  }

  /** Batches not yet published (the one in flight included). */
  get backlog(): number {
    return this.queue.length + (this.current === undefined ? 0 : 1);
  }

  get failed(): StreamForkError | undefined {
    return this.fatal;
  }

  /** Queues one batch (encoded now: a payload that is not plain data throws here, to the caller). */
  enqueue(sequence: number, payload: ExactValue): void {
    if (this.fatal !== undefined) throw this.fatal;
    if (this.stopped) throw new Error('the publish queue is closed');
    this.queue.push({ sequence, bytes: encodeBatch({ sequence, payload }) });
    while (this.queue.length > this.maxQueued) {
      const dropped = this.queue.shift()!;
      this.options.onDropped?.(dropped.sequence, 'overflow');
    }
    this.running ??= this.run();
  }

  /** Resolves once every batch queued so far is published (or dropped), or the queue failed or closed. */
  async flushed(): Promise<void> {
    if (this.running === undefined) return;
    await new Promise<void>((resolve) => this.idle.push(resolve));
  }

  /** Stops publishing; batches still queued are left unpublished (readers see them as a gap). */
  async close(): Promise<void> {
    this.stopped = true;
    await this.running;
  }

  private async run(): Promise<void> {
    try {
      while (!this.stopped && this.fatal === undefined) {
        const next = this.current ?? this.queue.shift();
        if (next === undefined) break;
        this.current = next;
        try {
          await this.publisher.publishEncoded(next.sequence, next.bytes);
          this.current = undefined;
        } catch (error) {
          if (error instanceof StreamForkError) {
            this.fatal = error;
            this.options.onFatal?.(error);
          } else if (error instanceof BatchTooLargeError) {
            this.current = undefined;
            this.options.onDropped?.(next.sequence, 'too_large');
          } else {
            this.options.onRetry?.(error);
            await sleep(this.retryDelayMs);
          }
        }
      }
    } finally {
      // Synchronously after the last check of the queue: an enqueue from now on starts a new run.
      this.running = undefined;
      const waiting = this.idle;
      this.idle = [];
      for (const resolve of waiting) resolve();
    }
  }
}

interface QueuedBatch {
  readonly sequence: number;
  readonly bytes: Uint8Array;
}

// ---------------------------------------------------------------------------------------------
// Consuming

export interface BatchGap {
  /** The batch sequence that should have come next. */
  readonly expected: number;
  /** The batch that came instead (delivered right after this report); undefined when unknown. */
  readonly next: number | undefined;
  /** `missing`: batches expected..next-1 are not in the stream; `malformed`: a stored message could not be read. */
  readonly reason: 'missing' | 'malformed';
  readonly error?: WireFormatError;
}

export interface ConsumeOptions<P> {
  /** Only batches with a MAC under this key are delivered; other messages are set aside. */
  readonly key: ClusterKey;
  /** A message on the subject that is not a batch of ours: skipped, no gap (nothing of ours is missing). */
  readonly onSetAside?: (setAside: SetAside) => void;
  /** The first batch sequence wanted (the one after the reader's snapshot). */
  readonly from: number;
  /** Called for each batch in order; awaited before the next one (backpressure). */
  readonly onBatch: (batch: BatchEnvelope<P>) => void | Promise<void>;
  /** Called before delivery goes on past batches this reader will never get. */
  readonly onGap: (gap: BatchGap) => void | Promise<void>;
  /** Validates a payload's shape (default: any plain data). */
  readonly readPayload?: (value: ExactValue, path: string) => P;
  readonly config?: Partial<BatchStreamConfig>;
  /**
   * How long one pull request waits for batches (ms, at least 1000; default 5000). After a
   * disconnect the client notices a lost pull by two missed heartbeats (half of this each) and
   * asks again: this bounds how long a reconnected gateway can sit without batches. The client's
   * default (30 s) left one stalled that long in the outage test.
   */
  readonly pullExpiresMs?: number;
}

/** Opens a consumer whose first message is batch `from` (or the first one after it, or the next one published). */
type OpenAt = (from: number) => Promise<ConsumerMessages>;

export class BatchSubscription {
  private expected: number;
  private stopping = false;
  private messages: ConsumerMessages;
  private stopWatching: () => void = () => undefined;
  /** Settles when the subscription ends: resolves on stop(), rejects if a callback threw. */
  readonly done: Promise<void>;

  constructor(
    first: ConsumerMessages,
    from: number,
    private readonly openAt: OpenAt,
    private readonly nc: NatsConnection,
    private readonly options: ConsumeOptions<unknown>,
    /** The batch subject (a batch's MAC covers it). */
    private readonly subject: string,
  ) {
    this.messages = first;
    this.expected = from;
    this.watchReconnects();
    this.done = this.run();
    // `done` is for whoever wants it; an unobserved failure must not crash the process.
    this.done.catch(() => undefined);
  }

  /** The batch sequence expected next. */
  get position(): number {
    return this.expected;
  }

  async stop(): Promise<void> {
    this.stopping = true;
    this.stopWatching();
    await this.messages.close();
    await this.done.catch(() => undefined);
  }

  /**
   * After a reconnect the consumer is opened again at the next expected batch instead of waiting
   * for the client to notice a lost pull request by missed heartbeats (seconds; it sometimes
   * stalled for the whole pull expiry). A batch seen twice meanwhile is left out by its sequence.
   */
  private watchReconnects(): void {
    this.stopWatching = ConnectionWatch.of(this.nc).onReconnect(() => {
      if (!this.stopping) void this.messages.close();
    });
  }

  private async run(): Promise<void> {
    try {
      for (;;) {
        for await (const m of this.messages) {
          if (this.stopping) break;
          await this.take(m);
        }
        if (this.stopping) return;
        this.messages = await this.reopen();
        // stop() may have come while the consumer was being opened again: it closed the old one.
        if (this.stopping) await this.messages.close();
      }
    } finally {
      if (!this.stopping) await this.messages.close().catch(() => undefined);
    }
  }

  /** Opens the consumer again at the next expected batch, retrying while NATS is not back. */
  private async reopen(): Promise<ConsumerMessages> {
    for (;;) {
      try {
        return await this.openAt(this.expected);
      } catch (error) {
        if (this.stopping || this.nc.isClosed()) throw error;
        await sleep(250);
      }
    }
  }

  private async take(m: JsMsg): Promise<void> {
    // Verified first: a message that is not ours is never delivered, and its numbers (header or
    // body) never move this reader's position.
    const verified = verifiedBatchSequence(this.options.key, this.subject, m.headers, m.data);
    if ('rejected' in verified) {
      this.options.onSetAside?.({ streamSequence: m.seq, reason: verified.rejected });
      return;
    }
    const { sequence } = verified;
    if (sequence < this.expected) return; // already delivered: not news
    let envelope: BatchEnvelope<unknown>;
    try {
      envelope =
        this.options.readPayload === undefined
          ? decodeBatch(m.data)
          : decodeBatch(m.data, this.options.readPayload);
      if (envelope.sequence !== sequence)
        throw new WireFormatError(
          '$.b.sequence',
          `batch ${envelope.sequence} under the header of batch ${sequence}`,
        );
    } catch (error) {
      if (!(error instanceof WireFormatError)) throw error;
      // Ours, yet unreadable here (another wire version): a gap, never skipped silently.
      await this.options.onGap({ expected: this.expected, next: undefined, reason: 'malformed', error });
      this.expected = sequence + 1;
      return;
    }
    if (sequence > this.expected)
      await this.options.onGap({ expected: this.expected, next: sequence, reason: 'missing' });
    await this.options.onBatch(envelope);
    this.expected = sequence + 1;
  }
}

/**
 * Consumes the batch stream from batch `from` (an ordered consumer: no server-side state to
 * clean up; the client recreates it after a disconnect from where it was). Ensures the stream
 * exists, so a gateway may start before the engine.
 */
export async function consumeBatches<P = ExactValue>(
  nc: NatsConnection,
  options: ConsumeOptions<P>,
): Promise<BatchSubscription> {
  const config = { ...DEFAULT_BATCH_STREAM, ...options.config };
  const from = batchSequence(options.from, 'from');
  const jsm = await jetstreamManager(nc);
  await ensureBatchStream(jsm, config);
  const access: StreamAccess = {
    jsm,
    config,
    key: options.key,
    ...(options.onSetAside === undefined ? {} : { onSetAside: options.onSetAside }),
  };
  const openAt: OpenAt = async (batch) => {
    const { found, lastStreamSequence } = await locateBatch(access, batch);
    const consumer = await jetstream(nc).consumers.get(config.stream, {
      deliver_policy: DeliverPolicy.StartSequence,
      opt_start_seq: found?.streamSequence ?? lastStreamSequence + 1,
    });
    return consumer.consume({ expires: options.pullExpiresMs ?? 5_000 });
  };
  const messages = await openAt(from);
  return new BatchSubscription(
    messages,
    from,
    openAt,
    nc,
    options as ConsumeOptions<unknown>,
    config.subject,
  );
}
