/**
 * The engine's market snapshot over NATS request/reply: how a gateway starts, and how it repairs
 * a gap in the batch stream. The reply is the engine's MarketView as plain data and the batch
 * sequence it includes: a view built from it applies the stream from `sequence + 1` on.
 *
 * Frame: `{"v":1,"t":"snapshot","b":{sequence, snapshot}}` in exact JSON (exact-json.ts), so the
 * BigInt sums of candles travel exactly. Like a batch, it must fit in the server's max_payload
 * (1 MiB by default): a venue whose books and balances are larger needs a larger max_payload.
 */
import type { NatsConnection, Subscription } from '@nats-io/transport-node';
import type { MarketSnapshot } from '../sequencer/market-view.js';
import { batchSequence, WIRE_VERSION } from './codec.js';
import { fromExactJson, jsonBytes, parseJsonBytes, toExactJson, WireFormatError } from './exact-json.js';

export const DEFAULT_SNAPSHOT_SUBJECT = 'openspot.engine.snapshot';
/** Answered `1` while the engine takes commands (its store is writable), `0` otherwise. */
export const DEFAULT_PING_SUBJECT = 'openspot.engine.ping';

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

/** The engine side: answers every snapshot request with `take()` (taken synchronously, so consistent). */
export function serveSnapshots(
  nc: NatsConnection,
  take: () => EngineSnapshot,
  subject = DEFAULT_SNAPSHOT_SUBJECT,
  onError?: (error: unknown) => void,
): Subscription {
  return nc.subscribe(subject, {
    callback: (error, msg) => {
      if (error !== null || msg.reply === undefined) return;
      try {
        msg.respond(encodeSnapshot(take()));
      } catch (failure) {
        onError?.(failure);
      }
    },
  });
}

/** The gateway side: one snapshot from the engine (rejects when none answers within `timeoutMs`). */
export async function fetchSnapshot(
  nc: NatsConnection,
  options: { readonly subject?: string; readonly timeoutMs?: number } = {},
): Promise<EngineSnapshot> {
  const reply = await nc.request(options.subject ?? DEFAULT_SNAPSHOT_SUBJECT, new Uint8Array(0), {
    timeout: options.timeoutMs ?? 5_000,
  });
  return decodeSnapshot(reply.data);
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
