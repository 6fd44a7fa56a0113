/**
 * The wire format of Pusher Channels protocol 7: decoding what clients send and encoding what the
 * server sends. Pure functions, no socket in sight, so every frame shape is testable on its own.
 */

/** Clients may use the canonical prefix or the interface's neutral one; both mean the same event. */
const CLIENT_PREFIXES = ['pusher:', 'channelservice:'] as const;

/** Close and error codes, as pusher-js acts on them (see docs/interface-decisions.md, part W). */
export const CloseCode = {
  /** Unknown app key: the client gives up. */
  unknownApp: 4001,
  /** A frame larger than the limit: the client gives up (retrying would send it again). */
  frameTooLarge: 4009,
  /** Over capacity or too slow: the client backs off one second, then reconnects. */
  overCapacity: 4100,
  /** Server going away (shutdown): the client reconnects at once. */
  goingAway: 4200,
  /** No answer to our ping: the client reconnects at once. */
  pongTimeout: 4201,
} as const;

/** A short excerpt of a client-chosen string, to quote it in an error message. */
export const excerpt = (text: string): string => (text.length > 64 ? `${text.slice(0, 64)}…` : text);

/** `pusher:error` code for a frame that is rejected while the connection stays open. */
export const REJECTED_FRAME_CODE = 4301;

export type ClientFrame =
  | { readonly kind: 'subscribe'; readonly channel: string; readonly auth: string | undefined }
  | { readonly kind: 'unsubscribe'; readonly channel: string }
  | { readonly kind: 'ping' }
  | { readonly kind: 'pong' }
  /** `client-*` events (whispers): not supported, answered with an error. */
  | { readonly kind: 'clientEvent'; readonly event: string }
  /** A well-formed frame with an event we do not know (e.g. `pusher:signin`). */
  | { readonly kind: 'unknown'; readonly event: string }
  | { readonly kind: 'invalid'; readonly reason: string };

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** Client `data` is an object per the protocol; some clients send it JSON-encoded, so accept both. */
function dataObject(data: unknown): Record<string, unknown> | undefined {
  if (isRecord(data)) return data;
  if (typeof data !== 'string') return undefined;
  try {
    const parsed: unknown = JSON.parse(data);
    return isRecord(parsed) ? parsed : undefined;
  } catch {
    return undefined;
  }
}

function stripPrefix(event: string): string | undefined {
  for (const prefix of CLIENT_PREFIXES) if (event.startsWith(prefix)) return event.slice(prefix.length);
  return undefined;
}

function channelFrame(kind: 'subscribe' | 'unsubscribe', data: unknown): ClientFrame {
  const body = dataObject(data);
  const channel = body?.channel;
  if (typeof channel !== 'string' || channel.length === 0)
    return { kind: 'invalid', reason: `${kind} needs data.channel` };
  if (kind === 'unsubscribe') return { kind, channel };
  const auth = body?.auth;
  return { kind, channel, auth: typeof auth === 'string' && auth.length > 0 ? auth : undefined };
}

/** Decodes one text frame; never throws. */
export function parseClientFrame(text: string): ClientFrame {
  let message: unknown;
  try {
    message = JSON.parse(text);
  } catch {
    return { kind: 'invalid', reason: 'Invalid JSON' };
  }
  if (!isRecord(message) || typeof message.event !== 'string')
    return { kind: 'invalid', reason: 'A frame must be an object with a string event' };
  const event = message.event;
  if (event.startsWith('client-')) return { kind: 'clientEvent', event };
  switch (stripPrefix(event)) {
    case 'subscribe':
      return channelFrame('subscribe', message.data);
    case 'unsubscribe':
      return channelFrame('unsubscribe', message.data);
    case 'ping':
      return { kind: 'ping' };
    case 'pong':
      return { kind: 'pong' };
    default:
      return { kind: 'unknown', event };
  }
}

// Server → client. Server events always use the canonical `pusher:` / `pusher_internal:` names,
// because that is what pusher-js and laravel-echo dispatch on.

export function connectionEstablishedFrame(socketId: string, activityTimeoutSeconds: number): string {
  // `data` is a JSON string inside the JSON frame: canonical Pusher, and what pusher-js expects.
  const data = JSON.stringify({ socket_id: socketId, activity_timeout: activityTimeoutSeconds });
  return JSON.stringify({ event: 'pusher:connection_established', data });
}

export function errorFrame(code: number, message: string): string {
  return JSON.stringify({ event: 'pusher:error', data: { code, message } });
}

export const PING_FRAME = JSON.stringify({ event: 'pusher:ping', data: {} });
export const PONG_FRAME = JSON.stringify({ event: 'pusher:pong', data: {} });

export function subscriptionSucceededFrame(channel: string): string {
  return JSON.stringify({ event: 'pusher_internal:subscription_succeeded', channel, data: '{}' });
}

export interface SubscriptionRefusal {
  readonly type: string;
  readonly error: string;
  readonly status: number;
}

export function subscriptionErrorFrame(channel: string, refusal: SubscriptionRefusal): string {
  // An object `data` (not a string): Echo's `.error()` callback receives it as is.
  return JSON.stringify({ event: 'pusher:subscription_error', channel, data: refusal });
}

/** A data message: `data` is the JSON text of the payload, which the client parses. */
export function dataFrame(channel: string, event: string, payload: unknown): string {
  return JSON.stringify({ event, channel, data: JSON.stringify(payload) });
}
