/**
 * Private channel authorization, as Pusher defines it: the HTTP API signs `<socket_id>:<channel>`
 * with the app secret, the client hands the signature back in its subscribe frame, and the
 * WebSocket server checks it. The signature binds one channel to one connection.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';

/** `<appKey>:<hex HMAC-SHA256(appSecret, "<socket_id>:<channel>")>`, for POST /broadcasting/auth. */
export function signChannelAuth(
  appKey: string,
  appSecret: string,
  socketId: string,
  channel: string,
): string {
  const signature = createHmac('sha256', appSecret).update(`${socketId}:${channel}`).digest('hex');
  return `${appKey}:${signature}`;
}

/** Constant-time comparison, so response timing reveals nothing about the expected signature. */
export function verifyChannelAuth(
  appKey: string,
  appSecret: string,
  socketId: string,
  channel: string,
  auth: string,
): boolean {
  const expected = Buffer.from(signChannelAuth(appKey, appSecret, socketId, channel));
  const given = Buffer.from(auth);
  return given.length === expected.length && timingSafeEqual(given, expected);
}
