/**
 * Subscribe and unsubscribe: channel lookup, private channel authorization, the per-connection
 * limit, and the snapshot that follows a successful subscription.
 */
import { verifyChannelAuth } from './channel-auth.js';
import type { ChannelGrants, GrantCheck } from './channel-grants.js';
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

type Verdict = SubscriptionRefusal | 'flood' | undefined;

/**
 * Why a subscription is refused, 'flood' when the client should be dropped, or undefined when
 * allowed; a promise when a private channel's key must be looked up in the credential store.
 */
function admission(
  context: SubscriptionContext,
  connection: ClientConnection,
  channel: string,
  auth: string | undefined,
  resolved: ResolvedChannel | undefined,
): Verdict | Promise<Verdict> {
  if (resolved === undefined) return refusal(404, 'AuthError', `Unknown channel: ${excerpt(channel)}`);
  if (isPrivateChannel(channel)) {
    if (auth === undefined) return refusal(401, 'AuthError', 'Private channel: auth is required');
    if (!verifyChannelAuth(context.appKey, context.appSecret, connection.socketId, channel, auth))
      return refusal(403, 'AuthError', 'Invalid auth signature for this socket and channel');
    const grant = context.grants?.check(connection.socketId, channel);
    if (grant instanceof Promise)
      return grant.then((g) => grantRefusal(g) ?? limitVerdict(context, connection, channel));
    const refused = grantRefusal(grant);
    if (refused !== undefined) return refused;
  }
  return limitVerdict(context, connection, channel);
}

function grantRefusal(grant: GrantCheck | undefined): SubscriptionRefusal | undefined {
  if (grant === 'not-issued')
    return refusal(403, 'AuthError', 'Invalid auth signature for this socket and channel');
  if (grant === 'revoked') return refusal(403, 'AuthError', 'Authorization revoked');
  return undefined;
}

function limitVerdict(context: SubscriptionContext, connection: ClientConnection, channel: string): Verdict {
  const max = context.maxSubscriptionsPerConnection;
  if (connection.channels.has(channel) || connection.channels.size < max) return undefined;
  connection.refusedOverLimit += 1;
  // A client that keeps asking after being told no is flooding.
  if (connection.refusedOverLimit > max) return 'flood';
  return refusal(429, 'LimitReached', `At most ${max} subscriptions per connection`);
}

/** Snapshots read again at most this many times when commits keep coming in while one is read. */
const SNAPSHOT_ATTEMPTS = 4;

/**
 * The frames of a connection still being answered (a private key's check, a snapshot read from
 * the store): the next ones wait their turn, so a connection's frames are answered in the order
 * they came, as a client expects. Without one pending, `answer` runs at once.
 */
const answering = new WeakMap<ClientConnection, Promise<void>>();

export function inTurn(connection: ClientConnection, answer: () => void | Promise<void>): void {
  const pending = answering.get(connection);
  const result = pending === undefined ? answer() : pending.then(answer);
  if (!(result instanceof Promise)) return;
  const settled: Promise<void> = result.then(
    () => undefined,
    () => undefined,
  );
  const done = settled.then(() => {
    if (answering.get(connection) === done) answering.delete(connection);
  });
  answering.set(connection, done);
}

export function subscribe(
  context: SubscriptionContext,
  connection: ClientConnection,
  channel: string,
  auth: string | undefined,
): void | Promise<void> {
  // A promise when the answer is still being prepared: the caller holds the connection's next
  // frames until it is sent (inTurn).
  return answerSubscribe(context, connection, channel, auth);
}

function answerSubscribe(
  context: SubscriptionContext,
  connection: ClientConnection,
  channel: string,
  auth: string | undefined,
): void | Promise<void> {
  if (!connection.isOpen) return;
  const resolved = channel.length <= MAX_CHANNEL_NAME_LENGTH ? context.provider.resolve(channel) : undefined;
  const verdict = admission(context, connection, channel, auth, resolved);
  if (!(verdict instanceof Promise)) return decide(context, connection, channel, resolved, verdict);
  return verdict.then(
    (v) => (connection.isOpen ? decide(context, connection, channel, resolved, v) : undefined),
    (error: unknown) => {
      // The key could not be checked (store trouble): refused, the client may try again.
      context.logger.error({ err: error, channel }, 'private channel check failed');
      connection.send(subscriptionErrorFrame(channel, refusal(503, 'AuthError', 'Try again later')));
    },
  );
}

function decide(
  context: SubscriptionContext,
  connection: ClientConnection,
  channel: string,
  resolved: ResolvedChannel | undefined,
  verdict: Verdict,
): void | Promise<void> {
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
    return betweenCommits(context, () => join(context, connection, channel, resolved, SNAPSHOT_ATTEMPTS));
  }
}

function betweenCommits(context: SubscriptionContext, run: () => void | Promise<void>): void | Promise<void> {
  return context.provider.betweenCommits === undefined ? run() : context.provider.betweenCommits(run);
}

/**
 * Catch-up, registration, the success frame and the snapshot, in one synchronous run between two
 * commits: the snapshot shows the state the subscriber's first update follows. A snapshot read
 * from the store (a promise) is taken at a commit mark; if a commit came in while it was read, it
 * is read again (a few times at most, then sent as it is).
 */
function join(
  context: SubscriptionContext,
  connection: ClientConnection,
  channel: string,
  resolved: ResolvedChannel,
  attempts: number,
): void | Promise<void> {
  if (!connection.isOpen) return;
  const pending = context.provider.catchUp?.();
  if (pending instanceof Promise && attempts > 0) {
    const again = () =>
      betweenCommits(context, () => join(context, connection, channel, resolved, attempts - 1));
    return pending.then(again, again);
  }
  const mark = context.provider.commitMark?.();
  let payload: unknown;
  try {
    payload = context.provider.snapshot(channel, resolved);
  } catch (error) {
    snapshotFailed(context, error, channel);
    payload = undefined;
  }
  if (!(payload instanceof Promise)) {
    open(context, connection, channel, resolved, payload);
    return;
  }
  return payload.then(
    (value: unknown) =>
      betweenCommits(context, () => {
        if (!connection.isOpen) return;
        if (attempts > 0 && context.provider.commitMark?.() !== mark)
          return join(context, connection, channel, resolved, attempts - 1);
        context.provider.catchUp?.();
        open(context, connection, channel, resolved, value);
      }),
    (error: unknown) =>
      betweenCommits(context, () => {
        snapshotFailed(context, error, channel);
        if (connection.isOpen) open(context, connection, channel, resolved, undefined);
      }),
  );
}

/** A failed read (store trouble) must not cost the subscription: updates still flow. */
function snapshotFailed(context: SubscriptionContext, error: unknown, channel: string): void {
  context.logger.error({ err: error, channel }, 'snapshot failed');
}

function open(
  context: SubscriptionContext,
  connection: ClientConnection,
  channel: string,
  resolved: ResolvedChannel,
  payload: unknown,
): void {
  context.registry.add(connection, channel, resolved);
  connection.send(subscriptionSucceededFrame(channel));
  if (payload !== undefined) connection.send(dataFrame(channel, SNAPSHOT_EVENT, payload));
}

export function unsubscribe(
  context: SubscriptionContext,
  connection: ClientConnection,
  channel: string,
): void {
  context.registry.remove(connection, channel);
}
