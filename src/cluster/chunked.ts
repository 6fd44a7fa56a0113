/**
 * Bytes larger than one NATS message (the server's max_payload, 1 MiB by default), moved by
 * request/reply in chunks. Two transfers use it: the engine's market snapshot (snapshot.ts) and a
 * command reply too large for one message (command-service.ts → command-client.ts). Each has a
 * kind, the prefix of its frames' types: `snapshot-…` and `reply-…`.
 *
 * The engine side (ChunkHolder) encodes once, keeps the bytes under a random id for a short time
 * and answers, in place of the bytes:
 * - `<kind>-head` {id, size, chunks, sha256, subject}, then a newline and the first chunk;
 * - on `subject` (the answering engine's own, so no other process can answer for an id it does
 *   not hold), `<kind>-chunk-request` {id, chunk} with `<kind>-chunk` {id, chunk}, a newline and
 *   the bytes, or `<kind>-gone` {id} when it no longer holds them, or `<kind>-refused` {reason}
 *   when it cannot read the request (another version, say: the asking side fails at once).
 *
 * The reading side (readHead, fetchChunks) asks for chunks 1 … chunks−1 (a few in flight), checks
 * every chunk's id, place and length, then the total size and the SHA-256, and only then hands the
 * bytes over: anything wrong rejects the whole transfer, never yields part of it.
 *
 * Each reply is one line of frame JSON (`{"v":2,"t":…,"b":…}` in exact JSON; JSON text never
 * holds a raw newline), a newline, then raw bytes (no base64), and fits max_payload minus
 * CHUNK_HEADROOM. A frame followed by bytes is the only one with a newline in it (`isChunkedFrame`).
 */
import { createHash, randomBytes } from 'node:crypto';
import { frame, record, unframe } from './codec.js';
import { WireFormatError } from './exact-json.js';

/** Bytes of each reply left for the chunk frame's JSON line (about 200 bytes) and the protocol's framing. */
export const CHUNK_HEADROOM = 4096;
/** NATS's default max_payload, used when the connection does not say. */
export const DEFAULT_MAX_PAYLOAD = 1024 * 1024;
/** Chunk requests a reader keeps in flight. */
const CHUNKS_IN_FLIGHT = 4;

/** The transfers, each the prefix of its frame types. */
export type TransferKind = 'snapshot' | 'reply';

/** The fields of each frame of the chunk protocol. */
export const HEAD_FIELDS = ['id', 'size', 'chunks', 'sha256', 'subject'] as const;
const CHUNK_REQUEST_FIELDS = ['id', 'chunk'] as const;
const CHUNK_FIELDS = ['id', 'chunk'] as const;
const GONE_FIELDS = ['id'] as const;
export const REFUSED_FIELDS = ['reason'] as const;

const NEWLINE = 0x0a;
const ID_TEXT = /^[0-9a-f]{8,64}$/;
const SHA256_TEXT = /^[0-9a-f]{64}$/;

// ---------------------------------------------------------------------------------------------
// Frames

/** A frame's bytes: its JSON line, and when `data` is given a newline and those raw bytes. */
export function frameBytes(type: string, body: object, data?: Uint8Array): Uint8Array {
  const line = frame(type, body);
  if (data === undefined) return line;
  const out = new Uint8Array(line.length + 1 + data.length);
  out.set(line, 0);
  out[line.length] = NEWLINE;
  out.set(data, line.length + 1);
  return out;
}

/** True for a frame followed by raw bytes (a head or a chunk): no other frame holds a newline. */
export function isChunkedFrame(bytes: Uint8Array): boolean {
  return bytes.indexOf(NEWLINE) !== -1;
}

export interface ReadFrame<T extends string> {
  readonly type: T;
  readonly fields: Record<string, unknown>;
  /** The raw bytes after the frame's line (empty without any). */
  readonly data: Uint8Array;
}

/** A frame of one of the `accepted` types, with exactly that type's fields (WireFormatError otherwise). */
export function readFrame<T extends string>(
  bytes: Uint8Array,
  accepted: Readonly<Record<T, readonly string[]>>,
): ReadFrame<T> {
  const end = bytes.indexOf(NEWLINE);
  const { type, body } = unframe(end === -1 ? bytes : bytes.subarray(0, end), Object.keys(accepted) as T[]);
  const fields = record(body, '$.b', accepted[type]);
  return { type, fields, data: end === -1 ? new Uint8Array(0) : bytes.subarray(end + 1) };
}

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

/** The reading side's error for a refusal: the engine could not read what it was sent. */
export function refused(reason: unknown): WireFormatError {
  return new WireFormatError('$', `the engine refused the request (${String(reason)})`);
}

/** The engine no longer holds the bytes a reader was fetching (expired or dropped). */
export class ChunkGoneError extends Error {
  override readonly name = 'ChunkGoneError';
}

/** The chunks did not add up to what the head announced (size, place or hash). */
export class ChunkTransferError extends Error {
  override readonly name = 'ChunkTransferError';
}

// ---------------------------------------------------------------------------------------------
// The engine side

export interface ChunkHolderOptions {
  readonly kind: TransferKind;
  /** Where this engine answers chunk requests (the head names it). */
  readonly chunkSubject: string;
  /** The largest reply allowed (the connection's max_payload); read at each new transfer. */
  readonly maxPayload: () => number | undefined;
  /** How long bytes are kept after their last use (their head or one of their chunks was sent). */
  readonly holdMs: number;
  /** Transfers kept at once; past it the least recently used is dropped (its reader fails). */
  readonly maxHeld: number;
  /** Bytes kept at once, summed; past it the least recently used go (the newest is always kept). */
  readonly maxBytes?: number;
  /** Drop a transfer once each of its chunks was sent (one reader: a command reply). */
  readonly dropWhenSent?: boolean;
  /** Told of each request refused as unreadable (the engine logs it). */
  readonly onRefused?: (error: WireFormatError) => void;
  /** The clock expiry is judged by (tests move it). */
  readonly now?: () => number;
}

/** One held transfer, as its holder's user sees it. */
export interface HeldTransfer<Tag> {
  readonly id: string;
  readonly tag: Tag;
  readonly size: number;
  readonly chunks: number;
}

interface Held<Tag> extends HeldTransfer<Tag> {
  readonly bytes: Uint8Array;
  readonly sha256: string;
  readonly chunkBytes: number;
  /** Chunks not sent yet (kept only when dropped once sent). */
  readonly unsent: Set<number> | undefined;
  expires: number;
  timer: ReturnType<typeof setTimeout> | undefined;
}

/**
 * The engine's side of the chunk protocol, without the transport: `hold` keeps encoded bytes,
 * `head` is the reply that announces them, `answer` takes a chunk request's bytes and returns the
 * reply's. `Tag` is what the user keeps with each transfer (the snapshot's sequence).
 */
export class ChunkHolder<Tag = undefined> {
  private readonly held = new Map<string, Held<Tag>>();
  private heldBytes = 0;
  private readonly now: () => number;
  private emptied: Array<() => void> = [];
  private readonly types: {
    readonly head: string;
    readonly request: string;
    readonly chunk: string;
    readonly gone: string;
    readonly refused: string;
  };

  constructor(private readonly options: ChunkHolderOptions) {
    this.now = options.now ?? Date.now;
    const kind = options.kind;
    this.types = {
      head: `${kind}-head`,
      request: `${kind}-chunk-request`,
      chunk: `${kind}-chunk`,
      gone: `${kind}-gone`,
      refused: `${kind}-refused`,
    };
  }

  /** Keeps `bytes` (encoded once by the caller) for readers to fetch; hashed here. */
  hold(bytes: Uint8Array, tag: Tag): HeldTransfer<Tag> {
    const maxPayload = this.options.maxPayload() ?? DEFAULT_MAX_PAYLOAD;
    // A tiny max_payload still moves the bytes, a few at a time.
    const chunkBytes = Math.max(maxPayload - CHUNK_HEADROOM, Math.ceil(maxPayload / 2), 1);
    const chunks = Math.max(1, Math.ceil(bytes.length / chunkBytes));
    const held: Held<Tag> = {
      id: randomBytes(12).toString('hex'),
      tag,
      size: bytes.length,
      chunks,
      bytes,
      sha256: sha256(bytes),
      chunkBytes,
      unsent:
        this.options.dropWhenSent === true ? new Set(Array.from({ length: chunks }, (_, i) => i)) : undefined,
      expires: 0,
      timer: undefined,
    };
    const maxBytes = this.options.maxBytes ?? Number.POSITIVE_INFINITY;
    while (
      this.held.size > 0 &&
      (this.held.size >= this.options.maxHeld || this.heldBytes + bytes.length > maxBytes)
    ) {
      const oldest = [...this.held.values()].reduce((a, b) => (a.expires <= b.expires ? a : b));
      this.drop(oldest.id);
    }
    this.held.set(held.id, held);
    this.heldBytes += bytes.length;
    this.touch(held);
    return held;
  }

  /** A held transfer whose tag matches, its hold renewed (undefined when none, or expired). */
  find(match: (tag: Tag) => boolean): HeldTransfer<Tag> | undefined {
    const found = [...this.held.values()].find((h) => match(h.tag));
    return found === undefined ? undefined : this.use(found.id);
  }

  /** The head frame announcing `transfer`, with its first chunk. */
  head(transfer: HeldTransfer<Tag>): Uint8Array {
    const held = this.held.get(transfer.id);
    if (held === undefined) throw new Error(`${this.options.kind} ${transfer.id} is not held`);
    const reply = frameBytes(
      this.types.head,
      {
        id: held.id,
        size: held.size,
        chunks: held.chunks,
        sha256: held.sha256,
        subject: this.options.chunkSubject,
      },
      this.slice(held, 0),
    );
    this.sent(held, 0);
    return reply;
  }

  /**
   * The reply to a chunk request (`<kind>-refused` for one it cannot read). `others`: further
   * request types with an empty body this holder's user answers itself (the snapshot request).
   */
  answer(request: Uint8Array, others: Readonly<Record<string, () => Uint8Array>> = {}): Uint8Array {
    let id: string;
    let chunk: number;
    try {
      const accepted: Record<string, readonly string[]> = {};
      for (const type of Object.keys(others)) accepted[type] = [];
      accepted[this.types.request] = CHUNK_REQUEST_FIELDS;
      const { type, fields } = readFrame(request, accepted);
      const other = Object.hasOwn(others, type) ? others[type] : undefined;
      if (other !== undefined) return other();
      id = text(fields.id, '$.b.id', ID_TEXT);
      chunk = count(fields.chunk, '$.b.chunk', 0);
    } catch (error) {
      if (!(error instanceof WireFormatError)) throw error;
      this.options.onRefused?.(error);
      return frameBytes(this.types.refused, { reason: error.message });
    }
    const held = this.use(id);
    if (held === undefined || chunk >= held.chunks) return frameBytes(this.types.gone, { id });
    const reply = frameBytes(this.types.chunk, { id, chunk }, this.slice(held, chunk));
    this.sent(held, chunk);
    return reply;
  }

  /** How many transfers are held (for tests and metrics). */
  get size(): number {
    return this.held.size;
  }

  /** How many bytes are held, summed. */
  get bytes(): number {
    return this.heldBytes;
  }

  /** Resolves when nothing is held (at once if nothing is). */
  whenEmpty(): Promise<void> {
    if (this.held.size === 0) return Promise.resolve();
    return new Promise((resolve) => this.emptied.push(resolve));
  }

  /** Lets go of one transfer (its head could not be sent: nobody will ask for it). */
  release(transfer: HeldTransfer<Tag>): void {
    this.drop(transfer.id);
  }

  /** Drops every held transfer (the engine stops answering). */
  clear(): void {
    for (const id of [...this.held.keys()]) this.drop(id);
  }

  /** The held transfer `id` with its hold renewed, or undefined when it expired or was dropped. */
  private use(id: string): Held<Tag> | undefined {
    const held = this.held.get(id);
    if (held === undefined) return undefined;
    if (this.now() > held.expires) {
      this.drop(id);
      return undefined;
    }
    this.touch(held);
    return held;
  }

  private sent(held: Held<Tag>, chunk: number): void {
    if (held.unsent === undefined) return;
    held.unsent.delete(chunk);
    // Its one reader has every chunk (or asks no more): the memory goes now, not at expiry.
    if (held.unsent.size === 0) this.drop(held.id);
  }

  private touch(held: Held<Tag>): void {
    held.expires = this.now() + this.options.holdMs;
    // The timer frees the memory when nobody asks again; `use` judges expiry by `now` itself.
    clearTimeout(held.timer);
    held.timer = setTimeout(() => this.drop(held.id), this.options.holdMs + 1_000);
    held.timer.unref();
  }

  private drop(id: string): void {
    const held = this.held.get(id);
    if (held === undefined) return;
    clearTimeout(held.timer);
    this.held.delete(id);
    this.heldBytes -= held.size;
    if (this.held.size > 0) return;
    const emptied = this.emptied;
    this.emptied = [];
    for (const resolve of emptied) resolve();
  }

  private slice(held: Held<Tag>, chunk: number): Uint8Array {
    return held.bytes.subarray(
      chunk * held.chunkBytes,
      Math.min((chunk + 1) * held.chunkBytes, held.bytes.length),
    );
  }
}

// ---------------------------------------------------------------------------------------------
// The reading side

/** One request/reply: the reply's bytes, or a rejection (no responder, timeout, disconnected). */
export type ChunkRequester = (subject: string, data: Uint8Array) => Promise<Uint8Array>;

/** What a head announces. */
export interface Head {
  readonly id: string;
  readonly size: number;
  readonly chunks: number;
  readonly sha256: string;
  /** Where the chunks are asked for. */
  readonly subject: string;
}

/**
 * A head's fields, checked: chunks are asked for only on a subject under `under.` (the engine's
 * own), so a damaged head cannot send requests elsewhere.
 */
export function readHead(fields: Record<string, unknown>, under: string): Head {
  const subject = typeof fields.subject === 'string' ? fields.subject : '';
  const head: Head = {
    id: text(fields.id, '$.b.id', ID_TEXT),
    size: count(fields.size, '$.b.size', 1),
    chunks: count(fields.chunks, '$.b.chunks', 1),
    sha256: text(fields.sha256, '$.b.sha256', SHA256_TEXT),
    subject,
  };
  if (!subject.startsWith(`${under}.`) || /[\s*>]/.test(subject))
    throw new WireFormatError('$.b.subject', `expected a subject under ${under}.`);
  return head;
}

/**
 * The whole bytes a head announced: its first chunk `first`, the others asked for on the head's
 * subject (a few in flight), each checked for id, place and length, then size and SHA-256.
 * Rejects on any failure (ChunkGoneError, ChunkTransferError, WireFormatError, the requester's
 * own), and asks for nothing more after the first.
 */
export async function fetchChunks(
  request: ChunkRequester,
  kind: TransferKind,
  head: Head,
  first: Uint8Array,
): Promise<Uint8Array> {
  const name = `${kind} ${head.id}`;
  const chunkBytes = first.length;
  if (chunkBytes === 0 || Math.ceil(head.size / chunkBytes) !== head.chunks)
    throw new ChunkTransferError(
      `${name}: a first chunk of ${chunkBytes} bytes cannot make ${head.chunks} chunks of ${head.size} bytes`,
    );
  const accepted = {
    [`${kind}-chunk`]: CHUNK_FIELDS,
    [`${kind}-gone`]: GONE_FIELDS,
    [`${kind}-refused`]: REFUSED_FIELDS,
  };
  const parts: Uint8Array[] = new Array(head.chunks);
  parts[0] = first;
  let next = 1;
  let failed = false;
  const fetchRest = async (): Promise<void> => {
    while (next < head.chunks && !failed) {
      const chunk = next++;
      const reply = readFrame(
        await request(head.subject, frameBytes(`${kind}-chunk-request`, { id: head.id, chunk })),
        accepted,
      );
      if (reply.type === `${kind}-refused`) throw refused(reply.fields.reason);
      if (reply.fields.id !== head.id)
        throw new ChunkTransferError(`asked for ${name}, got ${String(reply.fields.id)}`);
      if (reply.type === `${kind}-gone`) throw new ChunkGoneError(`the engine no longer holds ${name}`);
      if (reply.fields.chunk !== chunk)
        throw new ChunkTransferError(`asked for chunk ${chunk}, got ${String(reply.fields.chunk)}`);
      const expected = chunk === head.chunks - 1 ? head.size - chunk * chunkBytes : chunkBytes;
      if (reply.data.length !== expected)
        throw new ChunkTransferError(
          `chunk ${chunk} of ${name} is ${reply.data.length} bytes, expected ${expected}`,
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
  const bytes = head.chunks === 1 ? first : Buffer.concat(parts);
  if (bytes.length !== head.size)
    throw new ChunkTransferError(`${name} is ${bytes.length} bytes, announced ${head.size}`);
  if (sha256(bytes) !== head.sha256) throw new ChunkTransferError(`${name}: SHA-256 mismatch`);
  return bytes;
}
