/**
 * The Pusher Channels protocol 7 server: shares the HTTP server (and port) of the REST API by
 * taking its `upgrade` requests for `/app/<appKey>`. Connection lifecycle lives here; frames,
 * subscriptions, fan-out and keepalive each have their own module.
 */
import type { IncomingMessage, Server } from 'node:http';
import type { Duplex } from 'node:stream';
import { type RawData, type WebSocket, WebSocketServer } from 'ws';
import type { UserId } from '../domain/types.js';
import type { ChannelGrants } from './channel-grants.js';
import { type ChannelProvider, isPrivateChannel } from './channels.js';
import { ClientConnection, type Transport } from './connection.js';
import { Batch, publishToChannel } from './fanout.js';
import type { WsFaults } from './faults.js';
import {
  type ClientFrame,
  CloseCode,
  connectionEstablishedFrame,
  errorFrame,
  excerpt,
  PONG_FRAME,
  parseClientFrame,
  REJECTED_FRAME_CODE,
  subscriptionErrorFrame,
} from './frames.js';
import {
  clientAddress,
  IpAdmission,
  type RefusalReason,
  tooManyUpgrades,
  type UpgradeVerdict,
} from './ip-admission.js';
import { startKeepalive } from './keepalive.js';
import { silentLogger, type WsLogger } from './logger.js';
import { createFrameGate, frameBurst } from './rate-limit.js';
import { ChannelRegistry } from './registry.js';
import { nextSocketId } from './socket-id.js';
import { inTurn, type SubscriptionContext, subscribe, unsubscribe } from './subscriptions.js';

export interface RealtimeLimits {
  readonly maxConnections: number;
  readonly maxSubscriptionsPerConnection: number;
  /** Largest client frame accepted; larger ones close the connection with 4009. */
  readonly maxFrameBytes: number;
  /** Bytes waiting to be written to one client beyond which it is cut off with 4100. */
  readonly maxBufferedBytes: number;
  /** Client frames per second per connection, 0 for no limit (policy: rate-limit.ts). */
  readonly maxFramesPerSecond: number;
  /** Open connections per client address, 0 for no limit (policy: ip-admission.ts). */
  readonly maxConnectionsPerIp: number;
  /** New connections per second per client address, 0 for no limit. */
  readonly upgradesPerSecondPerIp: number;
  /** Burst of new connections per client address (default twice the rate). */
  readonly upgradeBurstPerIp?: number;
}

export const DEFAULT_LIMITS: RealtimeLimits = {
  maxConnections: 10_000,
  maxSubscriptionsPerConnection: 100,
  // Client frames are subscribe/ping frames of a few hundred bytes; 16 KiB is generous.
  maxFrameBytes: 16 * 1024,
  // Room for a full book snapshot plus a burst of updates.
  maxBufferedBytes: 4 * 1024 * 1024,
  // Off unless configured (the server's config defaults WS_MAX_FRAMES_PER_SECOND to 50).
  maxFramesPerSecond: 0,
  // Off unless configured (config: WS_MAX_CONNECTIONS_PER_IP 100, WS_UPGRADES_PER_SECOND_PER_IP 20).
  maxConnectionsPerIp: 0,
  upgradesPerSecondPerIp: 0,
};

export interface RealtimeServerOptions {
  /** The HTTP server of the REST API; its `upgrade` event is taken over. */
  readonly server: Server;
  readonly appKey: string;
  readonly appSecret: string;
  readonly provider: ChannelProvider;
  /** Advertised in `connection_established`, and the idle time after which the server pings. Default 30. */
  readonly activityTimeoutSeconds?: number;
  /** Overrides of the keepalive timing in ms (tests use short ones). */
  readonly keepalive?: { readonly idleMs?: number; readonly pongTimeoutMs?: number };
  readonly limits?: Partial<RealtimeLimits>;
  /** How long a closing client gets to answer the close frame before the socket is destroyed. Default 5000. */
  readonly closeGraceMs?: number;
  readonly logger?: WsLogger;
  /**
   * The tokens /broadcasting/auth issued, per connection (src/ws/channel-grants.ts). Given by the
   * OpenSpot server; without it a valid HMAC alone opens a private channel (a plain Pusher server).
   */
  readonly channelGrants?: ChannelGrants;
  /** Take the client address from X-Forwarded-For (TRUST_PROXY), as the HTTP limits do. */
  readonly trustProxy?: boolean;
  /** Told of every connection refused by a per-address limit (metrics). */
  readonly onRefused?: (reason: RefusalReason) => void;
  /** Fault injection for rehearsing failures (src/chaos); none when absent. */
  readonly faults?: WsFaults;
}

export interface RealtimeStats {
  readonly connections: number;
  readonly subscriptions: number;
  readonly channels: number;
}

export interface RealtimeServer {
  /** Sends `{event, channel, data: JSON.stringify(data)}` to every subscriber; returns how many. */
  publish(channel: string, event: string, data: unknown): number;
  /** Subscribers of a channel, so a publisher can skip building payloads nobody receives. */
  subscriberCount(channel: string): number;
  /**
   * Runs `publishes` (synchronous calls to `publish`) as one batch: each connection's frames of
   * the batch are written to its socket together, in publish order, when it returns.
   */
  batch<T>(publishes: () => T): T;
  /** Closes every connection with 4200 (clients reconnect at once); keeps accepting new ones. */
  closeAll(): void;
  /** Stops accepting, closes every connection with 4200 and resolves once all are gone. */
  close(): Promise<void>;
  stats(): RealtimeStats;
  /**
   * Ends every private subscription of a user (API key revoked): each gets a
   * `pusher:subscription_error` with status 403; the connections and public channels stay.
   * Returns the number of subscriptions ended.
   */
  disconnectUserPrivateChannels(userId: UserId | number): number;
}

const APP_PATH = /^\/app\/([^/?#]+)\/?$/;

/** The app key of an upgrade request for `/app/<key>` (query ignored), or undefined for other paths. */
export function appKeyOfUrl(url: string | undefined): string | undefined {
  const path = (url ?? '').split('?', 1)[0] ?? '';
  const match = APP_PATH.exec(path);
  if (match === null) return undefined;
  try {
    return decodeURIComponent(match[1]!);
  } catch {
    // A malformed escape cannot be a key we issued; the caller refuses it like any unknown key.
    return match[1]!;
  }
}

function rawDataToBuffer(data: RawData): Buffer {
  if (Buffer.isBuffer(data)) return data;
  if (Array.isArray(data)) return Buffer.concat(data);
  return Buffer.from(data);
}

export function createRealtimeServer(options: RealtimeServerOptions): RealtimeServer {
  const limits: RealtimeLimits = { ...DEFAULT_LIMITS, ...options.limits };
  const logger = options.logger ?? silentLogger;
  const activityTimeoutSeconds = options.activityTimeoutSeconds ?? 30;
  const closeGraceMs = options.closeGraceMs ?? 5000;
  const now = (): number => performance.now();
  const frameGate = createFrameGate({
    framesPerSecond: limits.maxFramesPerSecond,
    burst: frameBurst(limits.maxFramesPerSecond, limits.maxSubscriptionsPerConnection),
  });

  const perIp = new IpAdmission(limits);
  const registry = new ChannelRegistry();
  const connections = new Set<ClientConnection>();
  const faults = options.faults;
  faults?.attach(() => connections);
  const context: SubscriptionContext = {
    appKey: options.appKey,
    appSecret: options.appSecret,
    provider: options.provider,
    registry,
    maxSubscriptionsPerConnection: limits.maxSubscriptionsPerConnection,
    logger,
    grants: options.channelGrants,
  };

  // `maxPayload` is ws's hard limit: past it ws itself closes with 1009 before we see the frame.
  // It is set above our own limit so that ordinary oversized frames get the Pusher-style 4009.
  const wss = new WebSocketServer({
    noServer: true,
    maxPayload: limits.maxFrameBytes * 2,
    perMessageDeflate: false,
  });

  let shuttingDown = false;
  let closing: Promise<void> | undefined;
  let drained: (() => void) | undefined;

  const stopKeepalive = startKeepalive(() => connections, now, {
    idleMs: options.keepalive?.idleMs ?? activityTimeoutSeconds * 1000,
    pongTimeoutMs: options.keepalive?.pongTimeoutMs ?? 30_000,
  });

  /** Completes the handshake only to say no: close codes need an open WebSocket. */
  function refuse(socket: WebSocket, code: number, message: string): void {
    socket.on('error', () => {});
    socket.send(errorFrame(code, message));
    socket.close(code, message);
    const timer = setTimeout(() => socket.terminate(), closeGraceMs);
    timer.unref();
    socket.once('close', () => clearTimeout(timer));
  }

  function dispatch(connection: ClientConnection, frame: ClientFrame): void | Promise<void> {
    switch (frame.kind) {
      case 'subscribe':
        return subscribe(context, connection, frame.channel, frame.auth);
      case 'unsubscribe':
        unsubscribe(context, connection, frame.channel);
        return;
      case 'ping':
        connection.send(PONG_FRAME);
        return;
      case 'pong':
        return;
      case 'clientEvent':
        connection.send(errorFrame(REJECTED_FRAME_CODE, 'Client events are not supported'));
        return;
      case 'unknown':
        connection.send(errorFrame(REJECTED_FRAME_CODE, `Unsupported event: ${excerpt(frame.event)}`));
        return;
      case 'invalid':
        connection.send(errorFrame(REJECTED_FRAME_CODE, frame.reason));
        return;
    }
  }

  function onMessage(connection: ClientConnection, data: RawData, isBinary: boolean): void {
    connection.touch(now());
    // After the answers still being prepared for this connection's earlier frames (a snapshot
    // read from the store): frames are answered in the order they came.
    inTurn(connection, () => answer(connection, data, isBinary));
  }

  function answer(connection: ClientConnection, data: RawData, isBinary: boolean): void | Promise<void> {
    if (!connection.isOpen) return;
    const bytes = rawDataToBuffer(data);
    if (bytes.length > limits.maxFrameBytes) {
      connection.send(errorFrame(CloseCode.frameTooLarge, 'Frame too large'));
      connection.close(CloseCode.frameTooLarge, 'Frame too large');
      return;
    }
    // Over the per-connection rate: dropped, already answered with 4301 (or closed with 4100).
    if (!frameGate.admit(connection, now())) return;
    if (isBinary) {
      connection.send(errorFrame(REJECTED_FRAME_CODE, 'Binary frames are not supported'));
      return;
    }
    try {
      return dispatch(connection, parseClientFrame(bytes.toString('utf8')));
    } catch (error) {
      // A bug in handling one frame must not take the process (and every other client) down.
      logger.error({ err: error, socketId: connection.socketId }, 'frame handling failed');
    }
  }

  /** Why a new connection is refused, as [close code, message], or undefined when it is welcome. */
  function admission(appKey: string): readonly [number, string] | undefined {
    if (appKey !== options.appKey) return [CloseCode.unknownApp, 'Unknown app key'];
    if (shuttingDown) return [CloseCode.goingAway, 'Server shutting down'];
    if (connections.size >= limits.maxConnections)
      return [CloseCode.overCapacity, 'Over connection capacity'];
    return undefined;
  }

  function accept(
    socket: WebSocket,
    appKey: string,
    transport: Transport,
    ip: string,
    verdict: UpgradeVerdict,
  ): void {
    const appRefusal = admission(appKey);
    const refusal =
      appRefusal ??
      (verdict.kind === 'refuse' ? ([CloseCode.overCapacity, verdict.message] as const) : undefined);
    if (refusal !== undefined) {
      if (appRefusal === undefined && verdict.kind === 'refuse') options.onRefused?.(verdict.reason);
      // Counted until the client completes the close: a client that never does runs out of these.
      perIp.opened(ip, true);
      socket.once('close', () => perIp.closed(ip, true));
      refuse(socket, refusal[0], refusal[1]);
      return;
    }
    perIp.opened(ip, false);

    const connection = new ClientConnection(
      nextSocketId(),
      socket,
      {
        maxBufferedBytes: limits.maxBufferedBytes,
        closeGraceMs,
        faults,
        onClosing: (c, code, reason) => {
          // Stop routing messages at once; the socket may take a while to finish closing.
          registry.removeAll(c);
          if (
            code === CloseCode.overCapacity ||
            code === CloseCode.pongTimeout ||
            code === CloseCode.frameTooLarge
          )
            logger.warn({ socketId: c.socketId, code, reason }, 'closing connection');
        },
      },
      now(),
      transport,
    );
    connections.add(connection);
    options.channelGrants?.opened(connection.socketId);
    logger.debug({ socketId: connection.socketId }, 'connection opened');

    socket.on('message', (data, isBinary) => onMessage(connection, data, isBinary));
    // WebSocket-level pings and pongs are activity too.
    socket.on('ping', () => connection.touch(now()));
    socket.on('pong', () => connection.touch(now()));
    socket.on('error', (error) =>
      logger.debug({ err: error, socketId: connection.socketId }, 'socket error'),
    );
    socket.on('close', (code) => {
      perIp.closed(ip, false);
      registry.removeAll(connection);
      connections.delete(connection);
      options.channelGrants?.closed(connection.socketId);
      connection.dispose();
      logger.debug({ socketId: connection.socketId, code }, 'connection closed');
      if (connections.size === 0) drained?.();
    });

    connection.send(connectionEstablishedFrame(connection.socketId, activityTimeoutSeconds));
  }

  function onUpgrade(request: IncomingMessage, socket: Duplex, head: Buffer): void {
    const appKey = appKeyOfUrl(request.url);
    if (appKey === undefined) {
      // Not a Pusher path: this server owns the upgrade event, so answer instead of hanging.
      socket.on('error', () => {});
      socket.end('HTTP/1.1 404 Not Found\r\nConnection: close\r\nContent-Length: 0\r\n\r\n');
      return;
    }
    const ip = clientAddress(request, options.trustProxy ?? false);
    const verdict = perIp.check(ip);
    if (verdict.kind === 'reject') {
      options.onRefused?.(verdict.reason);
      socket.on('error', () => {});
      socket.end(tooManyUpgrades(verdict.retryAfterSeconds));
      return;
    }
    // The upgraded stream is the one ws writes to: the connection corks it during a batch.
    wss.handleUpgrade(request, socket, head, (ws) => accept(ws, appKey, socket, ip, verdict));
  }

  options.server.on('upgrade', onUpgrade);

  async function shutdown(): Promise<void> {
    shuttingDown = true;
    options.server.off('upgrade', onUpgrade);
    stopKeepalive();
    if (connections.size > 0) {
      const done = new Promise<void>((resolve) => {
        drained = resolve;
      });
      closeAll();
      // Every close ends within closeGraceMs (the socket is then destroyed), so this settles.
      await done;
    }
    await new Promise<void>((resolve) => wss.close(() => resolve()));
  }

  function closeAll(): void {
    for (const connection of connections) connection.close(CloseCode.goingAway, 'Server shutting down');
  }

  /** The batch being published, if any (batches do not nest: an inner one joins the outer). */
  let batch: Batch | undefined;

  return {
    publish: (channel, event, data) => publishToChannel(registry, channel, event, data, batch, faults),
    subscriberCount: (channel) => registry.count(channel),
    batch(publishes) {
      if (batch !== undefined) return publishes();
      const current = new Batch();
      batch = current;
      try {
        return publishes();
      } finally {
        batch = undefined;
        current.release();
      }
    },
    closeAll,
    close() {
      // Every caller gets the same promise: a second close() must not strand the first.
      closing ??= shutdown();
      return closing;
    },
    stats: () => ({
      connections: connections.size,
      subscriptions: registry.subscriptions,
      channels: registry.channelCount,
    }),
    disconnectUserPrivateChannels(userId) {
      let ended = 0;
      const channels = registry.channelsWhere(
        (name, resolved) => isPrivateChannel(name) && resolved.userId === userId,
      );
      for (const channel of channels) {
        for (const connection of [...(registry.subscribers(channel) ?? [])]) {
          registry.remove(connection, channel);
          connection.send(
            subscriptionErrorFrame(channel, {
              type: 'AuthError',
              error: 'Authorization revoked',
              status: 403,
            }),
          );
          ended += 1;
        }
      }
      if (ended > 0) logger.info({ userId, ended }, 'private subscriptions revoked');
      return ended;
    },
  };
}
