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
 * A chunk reply is one line of frame JSON, a newline (JSON text never holds a raw one), then the
 * chunk's raw bytes: no base64, and each reply fits in max_payload minus CHUNK_HEADROOM.
 */
import { createHash, randomBytes } from 'node:crypto';
import type { NatsConnection, Subscription } from '@nats-io/transport-node';
import type { MarketSnapshot } from '../sequencer/market-view.js';
import { batchSequence, WIRE_VERSION } from './codec.js';
import { fromExactJson, jsonBytes, parseJsonBytes, toExactJson, WireFormatError } from './exact-json.js';

export const DEFAULT_SNAPSHOT_SUBJECT = 'openspot.engine.snapshot';
/** Answered `1` while the engine takes commands (its store is writable), `0` otherwise. */
export const DEFAULT_PING_SUBJECT = 'openspot.engine.ping';

/** Bytes of each reply left for the chunk frame's JSON line (about 200 bytes) and the protocol's framing. */
export const CHUNK_HEADROOM = 4096;
/** NATS's default max_payload, used when the connection does not say. */
const DEFAULT_MAX_PAYLOAD = 1024 * 1024;
/** How long an encoded snapshot is kept after its last use (its head or one of its chunks was sent). */
export const SNAPSHOT_HOLD_MS = 30_000;
/** Encoded snapshots kept at once; past it the least recently used is dropped (its readers start again). */
export const MAX_HELD_SNAPSHOTS = 8;
/** Chunk requests a gateway keeps in flight. */
const CHUNKS_IN_FLIGHT = 4;

export interface EngineSnapshot {
  /** The last batch sequence of the stream the snapshot includes (0: none). */
  readonly sequence: number;
  readonly snapshot: MarketSnapshot;
}

export function encodeSnapshot(value: EngineSnapshot): Uint8Array {
  return jsonBytes({ v: WIRE_VERSION, t: 'snapshot', b: toExactJson(value) });
}

export function decodeSnapshot(bytes: Uint8Array): EngineSnapshot {
  const frame = parseJsonBytes(bytes);
  if (frame === null || typeof frame !== 'object' || Array.isArray(frame))
    throw new WireFormatError('$', 'expected a frame object');
  const { v, t, b } = frame as Record<string, unknown>;
  if (v !== WIRE_VERSION)
    throw new WireFormatError('$.v', `version ${String(v)}, this side speaks ${WIRE_VERSION}`);
  if (t !== 'snapshot') throw new WireFormatError('$.t', `expected a snapshot frame, got ${String(t)}`);
  const body = fromExactJson(b, '$.b');
  if (body === null || typeof body !== 'object' || Array.isArray(body) || body instanceof Map)
    throw new WireFormatError('$.b', 'expected an object');
  const { sequence, snapshot } = body as Record<string, unknown>;
  // 0 is a valid answer here (an engine that has published nothing yet).
  if (sequence !== 0) batchSequence(sequence, '$.b.sequence');
  if (snapshot === null || typeof snapshot !== 'object' || !Array.isArray((snapshot as MarketSnapshot).books))
    throw new WireFormatError('$.b.snapshot', 'expected a market snapshot');
  return { sequence: sequence as number, snapshot: snapshot as MarketSnapshot };
}

// ---------------------------------------------------------------------------------------------
// The chunk protocol's frames

type SnapshotFrameType =
  | 'snapshot-request'
  | 'snapshot-chunk-request'
  | 'snapshot-head'
  | 'snapshot-chunk'
  | 'snapshot-gone'
  | 'snapshot-refused';

interface Head {
  readonly id: string;
  readonly size: number;
  readonly chunks: number;
  readonly sha256: string;
  readonly subject: string;
}

const NEWLINE = 0x0a;
const ID_TEXT = /^[0-9a-f]{8,64}$/;
const SHA256_TEXT = /^[0-9a-f]{64}$/;

function frameBytes(type: SnapshotFrameType, body: object, data?: Uint8Array): Uint8Array {
  const line = jsonBytes({ v: WIRE_VERSION, t: type, b: toExactJson(body) });
  if (data === undefined) return line;
  const out = new Uint8Array(line.length + 1 + data.length);
  out.set(line, 0);
  out[line.length] = NEWLINE;
  out.set(data, line.length + 1);
  return out;
}

/** A frame's type and fields (exactly `keys`), and the raw bytes after its line (empty without any). */
function readFrame(
  bytes: Uint8Array,
  types: readonly SnapshotFrameType[],
  keys: Readonly<Record<SnapshotFrameType, readonly string[]>>,
): { type: SnapshotFrameType; fields: Record<string, unknown>; data: Uint8Array } {
  const end = bytes.indexOf(NEWLINE);
  const json = parseJsonBytes(end === -1 ? bytes : bytes.subarray(0, end));
  if (json === null || typeof json !== 'object' || Array.isArray(json))
    throw new WireFormatError('$', 'expected a frame object');
  const { v, t, b } = json as Record<string, unknown>;
  if (v !== WIRE_VERSION)
    throw new WireFormatError('$.v', `version ${String(v)}, this side speaks ${WIRE_VERSION}`);
  if (!types.includes(t as SnapshotFrameType))
    throw new WireFormatError(
      '$.t',
      `a ${JSON.stringify(t)} message where ${types.join(' or ')} was expected`,
    );
  if (Object.keys(json).length !== 3) throw new WireFormatError('$', 'unexpected fields beside v, t and b');
  const type = t as SnapshotFrameType;
  const body = fromExactJson(b, '$.b');
  if (body === null || typeof body !== 'object' || Array.isArray(body) || body instanceof Map)
    throw new WireFormatError('$.b', 'expected an object');
  const fields = body as Record<string, unknown>;
  const wanted = keys[type];
  for (const key of Object.keys(fields))
    if (!wanted.includes(key)) throw new WireFormatError(`$.b.${key}`, 'unknown field');
  for (const key of wanted)
    if (!Object.hasOwn(fields, key)) throw new WireFormatError(`$.b.${key}`, 'missing');
  return { type, fields, data: end === -1 ? new Uint8Array(0) : bytes.subarray(end + 1) };
}

const FIELDS: Readonly<Record<SnapshotFrameType, readonly string[]>> = {
  'snapshot-request': [],
  'snapshot-chunk-request': ['id', 'chunk'],
  'snapshot-head': ['id', 'size', 'chunks', 'sha256', 'subject'],
  'snapshot-chunk': ['id', 'chunk'],
  'snapshot-gone': ['id'],
  'snapshot-refused': ['reason'],
};

function count(value: unknown, path: string, min: number): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < min)
    throw new WireFormatError(path, `expected an integer of at least ${min}`);
  return value;
}

function text(value: unknown, path: string, pattern: RegExp): string {
  if (typeof value !== 'string' || !pattern.test(value))
    throw new WireFormatError(path, `expected ${pattern}`);
  return value;
}

const sha256 = (bytes: Uint8Array): string => createHash('sha256').update(bytes).digest('hex');

// ---------------------------------------------------------------------------------------------
// The engine side

/** The engine no longer holds the snapshot a gateway was reading (expired or dropped): start again. */
export class SnapshotGoneError extends Error {
  override readonly name = 'SnapshotGoneError';
}

/** The chunks did not add up to the snapshot the head announced (size, place or hash). */
export class SnapshotTransferError extends Error {
  override readonly name = 'SnapshotTransferError';
}

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

interface Held {
  readonly id: string;
  readonly sequence: number;
  readonly bytes: Uint8Array;
  readonly sha256: string;
  readonly chunkBytes: number;
  readonly chunks: number;
  expires: number;
  timer: ReturnType<typeof setTimeout> | undefined;
}

/**
 * The engine's side of the chunk protocol, without the transport: `answer` takes a request's
 * bytes and returns the reply's. A snapshot is encoded once per new request and shared by the
 * requests that find the engine at the same sequence (a fleet of gateways starting together
 * costs one encoding); `take()` must return the same state for the same sequence.
 */
export class SnapshotChunks {
  private readonly held = new Map<string, Held>();
  private readonly holdMs: number;
  private readonly maxHeld: number;
  private readonly now: () => number;

  constructor(
    private readonly take: () => EngineSnapshot,
    private readonly options: SnapshotChunksOptions,
  ) {
    this.holdMs = options.holdMs ?? SNAPSHOT_HOLD_MS;
    this.maxHeld = options.maxHeld ?? MAX_HELD_SNAPSHOTS;
    this.now = options.now ?? Date.now;
  }

  /** The reply to a request (`snapshot-refused` for one it cannot read). */
  answer(request: Uint8Array): Uint8Array {
    let id: string;
    let chunk: number;
    try {
      const { type, fields } = readFrame(request, ['snapshot-request', 'snapshot-chunk-request'], FIELDS);
      if (type === 'snapshot-request') return this.head();
      id = text(fields.id, '$.b.id', ID_TEXT);
      chunk = count(fields.chunk, '$.b.chunk', 0);
    } catch (error) {
      if (!(error instanceof WireFormatError)) throw error;
      this.options.onRefused?.(error);
      return frameBytes('snapshot-refused', { reason: error.message });
    }
    const held = this.use(id);
    if (held === undefined || chunk >= held.chunks) return frameBytes('snapshot-gone', { id });
    return frameBytes('snapshot-chunk', { id, chunk }, this.slice(held, chunk));
  }

  /** How many encoded snapshots are held (for tests and metrics). */
  get size(): number {
    return this.held.size;
  }

  /** Drops every held snapshot (the engine stops answering). */
  clear(): void {
    for (const held of this.held.values()) clearTimeout(held.timer);
    this.held.clear();
  }

  private head(): Uint8Array {
    // Without a cheap sequence, the snapshot is taken to learn it (and encoded only if new).
    const snapshot = this.options.sequence === undefined ? this.take() : undefined;
    const sequence = snapshot?.sequence ?? this.options.sequence?.();
    let held = [...this.held.values()].find((h) => h.sequence === sequence);
    if (held !== undefined) held = this.use(held.id);
    held ??= this.hold(snapshot ?? this.take());
    return frameBytes(
      'snapshot-head',
      {
        id: held.id,
        size: held.bytes.length,
        chunks: held.chunks,
        sha256: held.sha256,
        subject: this.options.chunkSubject,
      },
      this.slice(held, 0),
    );
  }

  private hold(snapshot: EngineSnapshot): Held {
    const bytes = encodeSnapshot(snapshot);
    const maxPayload = this.options.maxPayload() ?? DEFAULT_MAX_PAYLOAD;
    // A tiny max_payload still moves the snapshot, a few bytes at a time.
    const chunkBytes = Math.max(maxPayload - CHUNK_HEADROOM, Math.ceil(maxPayload / 2), 1);
    const held: Held = {
      id: randomBytes(12).toString('hex'),
      sequence: snapshot.sequence,
      bytes,
      sha256: sha256(bytes),
      chunkBytes,
      chunks: Math.max(1, Math.ceil(bytes.length / chunkBytes)),
      expires: 0,
      timer: undefined,
    };
    while (this.held.size >= this.maxHeld) {
      const oldest = [...this.held.values()].reduce((a, b) => (a.expires <= b.expires ? a : b));
      this.drop(oldest.id);
    }
    this.held.set(held.id, held);
    this.touch(held);
    return held;
  }

  /** The held snapshot `id` with its hold renewed, or undefined when it expired or was dropped. */
  private use(id: string): Held | undefined {
    const held = this.held.get(id);
    if (held === undefined) return undefined;
    if (this.now() > held.expires) {
      this.drop(id);
      return undefined;
    }
    this.touch(held);
    return held;
  }

  private touch(held: Held): void {
    held.expires = this.now() + this.holdMs;
    // The timer frees the memory when nobody asks again; `use` judges expiry by `now` itself.
    clearTimeout(held.timer);
    held.timer = setTimeout(() => this.drop(held.id), this.holdMs + 1_000);
    held.timer.unref();
  }

  private drop(id: string): void {
    const held = this.held.get(id);
    if (held === undefined) return;
    clearTimeout(held.timer);
    this.held.delete(id);
  }

  private slice(held: Held, chunk: number): Uint8Array {
    return held.bytes.subarray(
      chunk * held.chunkBytes,
      Math.min((chunk + 1) * held.chunkBytes, held.bytes.length),
    );
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
export type SnapshotRequester = (subject: string, data: Uint8Array) => Promise<Uint8Array>;

export interface FetchedSnapshot extends EngineSnapshot {
  /** The encoded snapshot's size in bytes, and how many chunks carried it. */
  readonly bytes: number;
  readonly chunks: number;
}

/**
 * Fetches one whole snapshot through `request`: the head from `subject`, the other chunks from the
 * subject the head names (a few in flight), checked chunk by chunk, then size and SHA-256, then
 * decoded. Rejects on any failure (SnapshotGoneError, SnapshotTransferError, WireFormatError, the
 * requester's own): the caller fetches again from the start.
 */
export async function assembleSnapshot(
  request: SnapshotRequester,
  subject = DEFAULT_SNAPSHOT_SUBJECT,
): Promise<FetchedSnapshot> {
  const first = readFrame(
    await request(subject, frameBytes('snapshot-request', {})),
    ['snapshot-head', 'snapshot-refused'],
    FIELDS,
  );
  if (first.type === 'snapshot-refused') throw refused(first.fields.reason);
  const head: Head = {
    id: text(first.fields.id, '$.b.id', ID_TEXT),
    size: count(first.fields.size, '$.b.size', 1),
    chunks: count(first.fields.chunks, '$.b.chunks', 1),
    sha256: text(first.fields.sha256, '$.b.sha256', SHA256_TEXT),
    subject: typeof first.fields.subject === 'string' ? first.fields.subject : '',
  };
  // Chunk requests go only to a subject under the snapshot subject (the answering engine's own).
  if (!head.subject.startsWith(`${subject}.`) || /[\s*>]/.test(head.subject))
    throw new WireFormatError('$.b.subject', `expected a subject under ${subject}.`);
  const chunkBytes = first.data.length;
  if (chunkBytes === 0 || Math.ceil(head.size / chunkBytes) !== head.chunks)
    throw new SnapshotTransferError(
      `snapshot ${head.id}: a first chunk of ${chunkBytes} bytes cannot make ${head.chunks} chunks of ${head.size} bytes`,
    );
  const parts: Uint8Array[] = new Array(head.chunks);
  parts[0] = first.data;
  let next = 1;
  let failed = false;
  const fetchRest = async (): Promise<void> => {
    while (next < head.chunks && !failed) {
      const chunk = next++;
      const reply = readFrame(
        await request(head.subject, frameBytes('snapshot-chunk-request', { id: head.id, chunk })),
        ['snapshot-chunk', 'snapshot-gone', 'snapshot-refused'],
        FIELDS,
      );
      if (reply.type === 'snapshot-refused') throw refused(reply.fields.reason);
      if (reply.fields.id !== head.id)
        throw new SnapshotTransferError(`asked for snapshot ${head.id}, got ${String(reply.fields.id)}`);
      if (reply.type === 'snapshot-gone')
        throw new SnapshotGoneError(`the engine no longer holds snapshot ${head.id}`);
      if (reply.fields.chunk !== chunk)
        throw new SnapshotTransferError(`asked for chunk ${chunk}, got ${String(reply.fields.chunk)}`);
      const expected = chunk === head.chunks - 1 ? head.size - chunk * chunkBytes : chunkBytes;
      if (reply.data.length !== expected)
        throw new SnapshotTransferError(
          `chunk ${chunk} of snapshot ${head.id} is ${reply.data.length} bytes, expected ${expected}`,
        );
      parts[chunk] = reply.data;
    }
  };
  // A few workers share the indices; the first failure rejects the whole fetch and stops the others.
  await Promise.all(
    Array.from({ length: Math.min(CHUNKS_IN_FLIGHT, head.chunks - 1) }, () =>
      fetchRest().catch((error: unknown) => {
        failed = true;
        throw error;
      }),
    ),
  );
  const bytes = head.chunks === 1 ? first.data : Buffer.concat(parts);
  if (bytes.length !== head.size)
    throw new SnapshotTransferError(`snapshot ${head.id} is ${bytes.length} bytes, announced ${head.size}`);
  if (sha256(bytes) !== head.sha256) throw new SnapshotTransferError(`snapshot ${head.id}: SHA-256 mismatch`);
  return { ...decodeSnapshot(bytes), bytes: head.size, chunks: head.chunks };
}

function refused(reason: unknown): WireFormatError {
  return new WireFormatError('$', `the engine refused the request (${String(reason)})`);
}

/** The gateway side: one whole snapshot from the engine (rejects on any failure; ask again). */
export async function fetchSnapshot(
  nc: NatsConnection,
  options: { readonly subject?: string; readonly timeoutMs?: number } = {},
): Promise<FetchedSnapshot> {
  const timeout = options.timeoutMs ?? 5_000;
  return assembleSnapshot(
    async (subject, data) => (await nc.request(subject, data, { timeout })).data,
    options.subject ?? DEFAULT_SNAPSHOT_SUBJECT,
  );
}

/** The engine side of the gateways' readiness probe. */
export function servePing(
  nc: NatsConnection,
  writable: () => boolean,
  subject = DEFAULT_PING_SUBJECT,
): Subscription {
  const yes = new TextEncoder().encode('1');
  const no = new TextEncoder().encode('0');
  return nc.subscribe(subject, {
    callback: (error, msg) => {
      if (error === null && msg.reply !== undefined) msg.respond(writable() ? yes : no);
    },
  });
}

/** True when an engine answered that it takes commands, within `timeoutMs`. */
export async function pingEngine(
  nc: NatsConnection,
  options: { readonly subject?: string; readonly timeoutMs?: number } = {},
): Promise<boolean> {
  if (nc.isClosed()) return false;
  try {
    const reply = await nc.request(options.subject ?? DEFAULT_PING_SUBJECT, new Uint8Array(0), {
      timeout: options.timeoutMs ?? 1_000,
    });
    return reply.data.length === 1 && reply.data[0] === 0x31;
  } catch {
    return false;
  }
}
