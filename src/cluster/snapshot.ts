/**
 * The engine's market snapshot over NATS request/reply: how a gateway starts, and how it repairs
 * a gap in the batch stream. The snapshot is the engine's MarketView as plain data and the batch
 * sequence it includes: a view built from it applies the stream from `sequence + 1` on.
 *
 * The snapshot frame: `{"v":2,"t":"snapshot","b":{sequence, snapshot}}` in exact JSON
 * (exact-json.ts), so the BigInt sums of candles travel exactly. A venue's snapshot (books, recent
 * trades, candles, every non-zero balance) can be far larger than one NATS message (the server's
 * max_payload, 1 MiB by default), so it travels in chunks (wire version 2):
 *
 * 1. the gateway asks on the snapshot subject (`snapshot-request`, empty body); the engine takes
 *    the snapshot synchronously (so it is consistent), encodes it once, keeps the bytes under a
 *    random id for a short time (SNAPSHOT_HOLD_MS after the last use) and answers `snapshot-head`:
 *    {id, size, chunks, sha256, subject} and the first chunk;
 * 2. the gateway asks for chunks 1 … chunks−1 on `subject` (the answering engine's own subject,
 *    so no other process can answer for an id it does not hold): `snapshot-chunk-request`
 *    {id, chunk} → `snapshot-chunk` {id, chunk} and the bytes, or `snapshot-gone` {id} when the
 *    engine no longer holds that snapshot;
 *    a request the engine cannot read (another version, say) is answered `snapshot-refused`
 *    {reason}, so the asking side fails at once with the reason rather than after a timeout;
 * 3. the gateway checks every chunk's place and length, the total size and the SHA-256, and only
 *    then decodes. Anything wrong (a chunk that does not come, a snapshot gone, a bad hash) rejects
 *    the whole fetch: its caller asks again from step 1, never uses part of a snapshot.
 *
 * Steps 1–3 past the snapshot request are chunked.ts, shared with a command reply too large for
 * one message. A chunk reply is one line of frame JSON, a newline (JSON text never holds a raw
 * one), then the chunk's raw bytes: no base64, and each reply fits in max_payload minus
 * CHUNK_HEADROOM.
 *
 * While the NATS connection is down, the fetch and the ping fail at once (connection-watch.ts)
 * instead of waiting out their timeouts: the NATS client answers neither.
 */
import { randomBytes } from 'node:crypto';
import { errors, type NatsConnection, type Subscription } from '@nats-io/transport-node';
import type { MarketSnapshot } from '../sequencer/market-view.js';
import {
  ChunkGoneError,
  ChunkHolder,
  type ChunkRequester,
  ChunkTransferError,
  fetchChunks,
  frameBytes,
  HEAD_FIELDS,
  REFUSED_FIELDS,
  readFrame,
  readHead,
  refused,
} from './chunked.js';
import { batchSequence } from './codec.js';
import { ConnectionWatch } from './connection-watch.js';
import { WireFormatError } from './exact-json.js';

export { CHUNK_HEADROOM } from './chunked.js';

export const DEFAULT_SNAPSHOT_SUBJECT = 'openspot.engine.snapshot';
/** Answered `1` while the engine takes commands (its store is writable), `0` otherwise. */
export const DEFAULT_PING_SUBJECT = 'openspot.engine.ping';

/** How long an encoded snapshot is kept after its last use (its head or one of its chunks was sent). */
export const SNAPSHOT_HOLD_MS = 30_000;
/** Encoded snapshots kept at once; past it the least recently used is dropped (its readers start again). */
export const MAX_HELD_SNAPSHOTS = 8;
export interface EngineSnapshot {
  /** The last batch sequence of the stream the snapshot includes (0: none). */
  readonly sequence: number;
  readonly snapshot: MarketSnapshot;
}

export function encodeSnapshot(value: EngineSnapshot): Uint8Array {
  return frameBytes('snapshot', value);
}

/** The snapshot's frame, read as every frame of the chunk protocol is (version, type, exactly its fields). */
export function decodeSnapshot(bytes: Uint8Array): EngineSnapshot {
  const { sequence, snapshot } = readFrame(bytes, { snapshot: ['sequence', 'snapshot'] }).fields;
  // 0 is a valid answer here (an engine that has published nothing yet).
  if (sequence !== 0) batchSequence(sequence, '$.b.sequence');
  if (snapshot === null || typeof snapshot !== 'object' || !Array.isArray((snapshot as MarketSnapshot).books))
    throw new WireFormatError('$.b.snapshot', 'expected a market snapshot');
  return { sequence: sequence as number, snapshot: snapshot as MarketSnapshot };
}

// ---------------------------------------------------------------------------------------------
// The engine side

/** The engine no longer holds the snapshot a gateway was reading (expired or dropped): start again. */
export const SnapshotGoneError = ChunkGoneError;
/** The chunks did not add up to the snapshot the head announced (size, place or hash). */
export const SnapshotTransferError = ChunkTransferError;

export interface SnapshotChunksOptions {
  /** Where this engine answers chunk requests (the head names it). */
  readonly chunkSubject: string;
  /** The largest reply allowed (the connection's max_payload); read at each new snapshot. */
  readonly maxPayload: () => number | undefined;
  readonly holdMs?: number;
  readonly maxHeld?: number;
  /** The sequence `take()` would return, read without taking: a held snapshot at it is served as it is. */
  readonly sequence?: () => number;
  /** Told of each request refused as unreadable (the engine logs it). */
  readonly onRefused?: (error: WireFormatError) => void;
  /** The clock expiry is judged by (tests move it). */
  readonly now?: () => number;
}

/**
 * The engine's side of the snapshot transfer, without the transport: `answer` takes a request's
 * bytes and returns the reply's. A snapshot is encoded once per new request and shared by the
 * requests that find the engine at the same sequence (a fleet of gateways starting together
 * costs one encoding); `take()` must return the same state for the same sequence. The holding
 * and the chunks are chunked.ts's ChunkHolder, tagged with the snapshot's sequence.
 */
export class SnapshotChunks {
  private readonly holder: ChunkHolder<number>;

  constructor(
    private readonly take: () => EngineSnapshot,
    private readonly options: SnapshotChunksOptions,
  ) {
    this.holder = new ChunkHolder<number>({
      kind: 'snapshot',
      chunkSubject: options.chunkSubject,
      maxPayload: options.maxPayload,
      holdMs: options.holdMs ?? SNAPSHOT_HOLD_MS,
      maxHeld: options.maxHeld ?? MAX_HELD_SNAPSHOTS,
      ...(options.onRefused === undefined ? {} : { onRefused: options.onRefused }),
      ...(options.now === undefined ? {} : { now: options.now }),
    });
  }

  /** The reply to a request (`snapshot-refused` for one it cannot read). */
  answer(request: Uint8Array): Uint8Array {
    return this.holder.answer(request, { 'snapshot-request': () => this.head() });
  }

  /** How many encoded snapshots are held (for tests and metrics). */
  get size(): number {
    return this.holder.size;
  }

  /** Drops every held snapshot (the engine stops answering). */
  clear(): void {
    this.holder.clear();
  }

  private head(): Uint8Array {
    // Without a cheap sequence, the snapshot is taken to learn it (and encoded only if new).
    const snapshot = this.options.sequence === undefined ? this.take() : undefined;
    const sequence = snapshot?.sequence ?? this.options.sequence?.();
    let held = this.holder.find((heldSequence) => heldSequence === sequence);
    if (held === undefined) {
      const taken = snapshot ?? this.take();
      held = this.holder.hold(encodeSnapshot(taken), taken.sequence);
    }
    return this.holder.head(held);
  }
}

export interface ServedSnapshots {
  /** Stops answering and drops the held snapshots. */
  unsubscribe(): void;
}

/** The engine side: answers snapshot requests from `take()` (taken synchronously, so consistent). */
export function serveSnapshots(
  nc: NatsConnection,
  take: () => EngineSnapshot,
  subject = DEFAULT_SNAPSHOT_SUBJECT,
  onError?: (error: unknown) => void,
  options: {
    readonly holdMs?: number;
    readonly maxHeld?: number;
    readonly maxPayload?: number;
    /** The sequence `take()` would return, cheaply (saves taking a snapshot already held). */
    readonly sequence?: () => number;
  } = {},
): ServedSnapshots {
  // This engine's own chunk subject: a chunk request can only reach the process that holds the id.
  const chunkSubject = `${subject}.${randomBytes(8).toString('hex')}`;
  const chunks = new SnapshotChunks(take, {
    chunkSubject,
    maxPayload: () => options.maxPayload ?? nc.info?.max_payload,
    ...(options.holdMs === undefined ? {} : { holdMs: options.holdMs }),
    ...(options.maxHeld === undefined ? {} : { maxHeld: options.maxHeld }),
    ...(options.sequence === undefined ? {} : { sequence: options.sequence }),
    ...(onError === undefined ? {} : { onRefused: onError }),
  });
  const callback = (
    error: Error | null,
    msg: { reply?: string; data: Uint8Array; respond(d: Uint8Array): boolean },
  ) => {
    if (error !== null || msg.reply === undefined) return;
    try {
      msg.respond(chunks.answer(msg.data));
    } catch (failure) {
      // No answer: the gateway's request times out and it asks again.
      onError?.(failure);
    }
  };
  const subscriptions = [nc.subscribe(subject, { callback }), nc.subscribe(chunkSubject, { callback })];
  return {
    unsubscribe() {
      for (const s of subscriptions) s.unsubscribe();
      chunks.clear();
    },
  };
}

// ---------------------------------------------------------------------------------------------
// The gateway side

/** One request/reply: the reply's bytes, or a rejection (no responder, timeout). */
export type SnapshotRequester = ChunkRequester;

export interface FetchedSnapshot extends EngineSnapshot {
  /** The encoded snapshot's size in bytes, and how many chunks carried it. */
  readonly bytes: number;
  readonly chunks: number;
}

/**
 * Fetches one whole snapshot through `request`: the head from `subject`, the other chunks from the
 * subject the head names (chunked.ts's fetchChunks: checked chunk by chunk, then size and
 * SHA-256), then decoded. Rejects on any failure (SnapshotGoneError, SnapshotTransferError,
 * WireFormatError, the requester's own): the caller fetches again from the start.
 */
export async function assembleSnapshot(
  request: SnapshotRequester,
  subject = DEFAULT_SNAPSHOT_SUBJECT,
): Promise<FetchedSnapshot> {
  const first = readFrame(await request(subject, frameBytes('snapshot-request', {})), {
    'snapshot-head': HEAD_FIELDS,
    'snapshot-refused': REFUSED_FIELDS,
  });
  if (first.type === 'snapshot-refused') throw refused(first.fields.reason);
  const head = readHead(first.fields, subject);
  const bytes = await fetchChunks(request, 'snapshot', head, first.data);
  return { ...decodeSnapshot(bytes), bytes: head.size, chunks: head.chunks };
}

/**
 * The gateway side: one whole snapshot from the engine (rejects on any failure; ask again). Each
 * request fails at once while the NATS connection is down, or as soon as it drops.
 */
export async function fetchSnapshot(
  nc: NatsConnection,
  options: { readonly subject?: string; readonly timeoutMs?: number } = {},
): Promise<FetchedSnapshot> {
  const timeout = options.timeoutMs ?? 5_000;
  const watch = ConnectionWatch.of(nc);
  return assembleSnapshot(
    async (subject, data) => (await watch.request(() => nc.request(subject, data, { timeout }))).data,
    options.subject ?? DEFAULT_SNAPSHOT_SUBJECT,
  );
}

/**
 * The engine side of the gateways' readiness probe: `1` (takes commands) or `0`, then a space and
 * the stream batch sequence of its last commit (a gateway whose view stays behind it is not ready).
 */
export function servePing(
  nc: NatsConnection,
  writable: () => boolean,
  subject = DEFAULT_PING_SUBJECT,
  committed?: () => number,
): Subscription {
  const encoder = new TextEncoder();
  return nc.subscribe(subject, {
    callback: (error, msg) => {
      if (error !== null || msg.reply === undefined) return;
      const takes = writable() ? '1' : '0';
      msg.respond(encoder.encode(committed === undefined ? takes : `${takes} ${committed()}`));
    },
  });
}

export interface EngineStatus {
  /** The engine answered that it takes commands. */
  readonly takesCommands: boolean;
  /** The stream batch sequence of its last commit, when it said. */
  readonly committed: number | undefined;
  /** NATS answered that nobody serves the ping: no engine is subscribed (one that was has died). */
  readonly noEngine?: true;
}

/**
 * What an engine answered within `timeoutMs`: whether it takes commands, and its last commit;
 * not taking commands at once while the NATS connection is down, or as soon as it drops.
 */
export async function pingEngineStatus(
  nc: NatsConnection,
  options: { readonly subject?: string; readonly timeoutMs?: number } = {},
): Promise<EngineStatus> {
  try {
    const reply = await ConnectionWatch.of(nc).request(() =>
      nc.request(options.subject ?? DEFAULT_PING_SUBJECT, new Uint8Array(0), {
        timeout: options.timeoutMs ?? 1_000,
      }),
    );
    const match = /^([01])(?: ([1-9]\d{0,15}|0))?$/.exec(new TextDecoder().decode(reply.data));
    if (match === null) return { takesCommands: false, committed: undefined };
    const committed = match[2] === undefined ? undefined : Number(match[2]);
    return {
      takesCommands: match[1] === '1',
      committed: committed !== undefined && Number.isSafeInteger(committed) ? committed : undefined,
    };
  } catch (error) {
    const noEngine = error instanceof errors.RequestError && error.isNoResponders();
    return { takesCommands: false, committed: undefined, ...(noEngine ? { noEngine } : {}) };
  }
}

/**
 * True when an engine answered that it takes commands, within `timeoutMs`. False at once while
 * the NATS connection is down, or as soon as it drops while waiting.
 */
export async function pingEngine(
  nc: NatsConnection,
  options: { readonly subject?: string; readonly timeoutMs?: number } = {},
): Promise<boolean> {
  return (await pingEngineStatus(nc, options)).takesCommands;
}
