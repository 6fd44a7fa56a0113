/**
 * Subscribe and unsubscribe: channel lookup, private channel authorization, the per-connection
 * limit, and the snapshot that follows a successful subscription.
 */
import { verifyChannelAuth } from './channel-auth.js';
import type { ChannelGrants } from './channel-grants.js';
import { type ChannelProvider, isPrivateChannel, type ResolvedChannel } from './channels.js';
import type { ClientConnection } from './connection.js';
import {
  CloseCode,
  dataFrame,
  errorFrame,
  excerpt,
  type SubscriptionRefusal,
  subscriptionErrorFrame,
  subscriptionSucceededFrame,
} from './frames.js';
import type { WsLogger } from './logger.js';
import type { ChannelRegistry } from './registry.js';

/** Pusher's own limit on channel names; longer names are refused before any lookup. */
export const MAX_CHANNEL_NAME_LENGTH = 164;
/** The event name of the first message after a subscription (equal to the payload's `type`). */
export const SNAPSHOT_EVENT = 'snapshot';

export interface SubscriptionContext {
  readonly appKey: string;
  readonly appSecret: string;
  readonly provider: ChannelProvider;
  readonly registry: ChannelRegistry;
  readonly maxSubscriptionsPerConnection: number;
  readonly logger: WsLogger;
  /** When given, a private token must also have been issued for this connection to a key still active. */
  readonly grants?: ChannelGrants | undefined;
}

const refusal = (status: number, type: string, error: string): SubscriptionRefusal => ({
  type,
  error,
  status,
});

/** Why a subscription is refused, 'flood' when the client should be dropped, or undefined when allowed. */
function admission(
  context: SubscriptionContext,
  connection: ClientConnection,
  channel: string,
  auth: string | undefined,
  resolved: ResolvedChannel | undefined,
): SubscriptionRefusal | 'flood' | undefined {
  if (resolved === undefined) return refusal(404, 'AuthError', `Unknown channel: ${excerpt(channel)}`);
  if (isPrivateChannel(channel)) {
    if (auth === undefined) return refusal(401, 'AuthError', 'Private channel: auth is required');
    if (!verifyChannelAuth(context.appKey, context.appSecret, connection.socketId, channel, auth))
      return refusal(403, 'AuthError', 'Invalid auth signature for this socket and channel');
    const grant = context.grants?.check(connection.socketId, channel);
    if (grant === 'not-issued')
      return refusal(403, 'AuthError', 'Invalid auth signature for this socket and channel');
    if (grant === 'revoked') return refusal(403, 'AuthError', 'Authorization revoked');
  }
  const max = context.maxSubscriptionsPerConnection;
  if (connection.channels.has(channel) || connection.channels.size < max) return undefined;
  connection.refusedOverLimit += 1;
  // A client that keeps asking after being told no is flooding.
  if (connection.refusedOverLimit > max) return 'flood';
  return refusal(429, 'LimitReached', `At most ${max} subscriptions per connection`);
}

export function subscribe(
  context: SubscriptionContext,
  connection: ClientConnection,
  channel: string,
  auth: string | undefined,
): void {
  const resolved = channel.length <= MAX_CHANNEL_NAME_LENGTH ? context.provider.resolve(channel) : undefined;
  const verdict = admission(context, connection, channel, auth, resolved);
  if (verdict === 'flood') {
    // 4100: pusher-js backs off a second before reconnecting.
    connection.send(errorFrame(CloseCode.overCapacity, 'Too many subscription attempts'));
    connection.close(CloseCode.overCapacity, 'Too many subscription attempts');
  } else if (verdict !== undefined) {
    context.logger.debug(
      { socketId: connection.socketId, channel, status: verdict.status },
      'subscription refused',
    );
    connection.send(subscriptionErrorFrame(channel, verdict));
  } else if (resolved !== undefined) {
    // Subscribing again is allowed (Pusher answers again); it re-sends the snapshot, which is
    // what a client that re-subscribes to resynchronize wants.
    const join = () => {
      if (!connection.isOpen) return;
      context.provider.catchUp?.();
      context.registry.add(connection, channel, resolved);
      connection.send(subscriptionSucceededFrame(channel));
      sendSnapshot(context, connection, channel, resolved);
    };
    // Catch-up, registration and snapshot in one synchronous run between two commits.
    if (context.provider.betweenCommits === undefined) join();
    else context.provider.betweenCommits(join);
  }
}

function sendSnapshot(
  context: SubscriptionContext,
  connection: ClientConnection,
  channel: string,
  resolved: ResolvedChannel,
): void {
  let payload: unknown;
  try {
    payload = context.provider.snapshot(channel, resolved);
  } catch (error) {
    // A failed read (store trouble) must not cost the subscription: updates still flow.
    context.logger.error({ err: error, channel }, 'snapshot failed');
    return;
  }
  if (payload !== undefined) connection.send(dataFrame(channel, SNAPSHOT_EVENT, payload));
}

export function unsubscribe(
  context: SubscriptionContext,
  connection: ClientConnection,
  channel: string,
): void {
  context.registry.remove(connection, channel);
}
