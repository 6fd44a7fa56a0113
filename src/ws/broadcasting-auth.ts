/**
 * What POST /broadcasting/auth needs from the WebSocket side (the route itself lives in the HTTP
 * API): read the socket id the client sends (a JSON number per the interface, or a string), check
 * that the channel is the caller's own private channel, and sign it.
 */
import type { UserId } from '../domain/types.js';
import { signChannelAuth } from './channel-auth.js';
import { parseChannelName } from './channels.js';
import { isSocketId } from './socket-id.js';

/**
 * The socket id as text. A JSON number is turned back into its shortest decimal text, which is the
 * id we issued (socket-id.ts guarantees the round trip); anything else is not a socket id.
 */
export function socketIdFromBody(value: unknown): string | undefined {
  const text = typeof value === 'number' ? (Number.isFinite(value) ? String(value) : '') : value;
  return typeof text === 'string' && isSocketId(text) ? text : undefined;
}

export type ChannelAuthorization =
  | { readonly ok: true; readonly auth: string }
  /** 400: malformed socket id or channel name; 403: not this user's channel (the interface's Access Denied). */
  | { readonly ok: false; readonly status: 400 | 403 };

export function authorizeChannel(
  appKey: string,
  appSecret: string,
  userId: UserId | number,
  body: { readonly socket_id?: unknown; readonly channel_name?: unknown },
): ChannelAuthorization {
  const socketId = socketIdFromBody(body.socket_id);
  const channel = body.channel_name;
  if (socketId === undefined || typeof channel !== 'string') return { ok: false, status: 400 };
  const parsed = parseChannelName(channel);
  if (parsed?.kind !== 'executions' || parsed.userId !== userId) return { ok: false, status: 403 };
  return { ok: true, auth: signChannelAuth(appKey, appSecret, socketId, channel) };
}
