/**
 * Helpers for the WebSocket tests: a fake channel provider, a server on an ephemeral port, and a
 * raw `ws` client that queues frames so a test can await the next one. Test code only.
 */
import { createServer, type Server } from 'node:http';
import { type AddressInfo, Socket } from 'node:net';
import pusherModule from 'pusher-js';
import { WebSocket } from 'ws';
import type { MarketId, UserId } from '../domain/types.js';
import { type ChannelProvider, parseChannelName, type ResolvedChannel } from './channels.js';
import { createRealtimeServer, type RealtimeServer, type RealtimeServerOptions } from './server.js';

// pusher-js's typings declare `exports.default` while its Node build assigns `module.exports`:
// take whichever the runtime has.
type PusherClass = typeof pusherModule.default;
export type Pusher = InstanceType<PusherClass>;
export const Pusher: PusherClass =
  (pusherModule as unknown as { default?: PusherClass }).default ?? (pusherModule as unknown as PusherClass);

/**
 * Records the host of every outgoing TCP connection this process makes from now on, to prove that
 * the client libraries contact nothing but our server; `stop()` ends the recording and returns them.
 */
export function recordOutgoingConnections(): { stop(): string[] } {
  const contacted = new Set<string>();
  const originalConnect = Socket.prototype.connect;
  Socket.prototype.connect = function (this: Socket, ...args: unknown[]) {
    const first = Array.isArray(args[0]) ? (args[0] as unknown[])[0] : args[0];
    const host = typeof first === 'object' && first !== null ? (first as { host?: unknown }).host : args[1];
    contacted.add(String(host ?? 'localhost'));
    return (originalConnect as (...a: unknown[]) => Socket).apply(this, args);
  } as typeof Socket.prototype.connect;
  return {
    stop() {
      Socket.prototype.connect = originalConnect;
      return [...contacted];
    },
  };
}

export const APP_KEY = 'test-key';
export const APP_SECRET = 'test-secret';

/** Knows the pair BTCEUR and any user; snapshots say which channel they are for. */
export const fakeProvider: ChannelProvider = {
  resolve(channel): ResolvedChannel | undefined {
    const parsed = parseChannelName(channel);
    if (parsed === undefined) return undefined;
    if (parsed.kind === 'executions') return { kind: 'executions', userId: parsed.userId };
    if (parsed.pair !== 'BTCEUR') return undefined;
    const marketId = 1 as MarketId;
    return parsed.kind === 'ohlc'
      ? { kind: 'ohlc', marketId, interval: parsed.interval }
      : { kind: parsed.kind, marketId };
  },
  snapshot(channel, resolved) {
    // trade channels have no snapshot here, to test that nothing is sent then.
    return resolved.kind === 'trade' ? undefined : { channel, type: 'snapshot' };
  },
};

export interface Harness {
  readonly http: Server;
  readonly realtime: RealtimeServer;
  readonly port: number;
  readonly url: string;
  stop(): Promise<void>;
}

export async function startHarness(
  overrides: Partial<Omit<RealtimeServerOptions, 'server'>> = {},
): Promise<Harness> {
  const http = createServer((_req, res) => {
    res.statusCode = 404;
    res.end();
  });
  const realtime = createRealtimeServer({
    server: http,
    appKey: APP_KEY,
    appSecret: APP_SECRET,
    provider: fakeProvider,
    closeGraceMs: 500,
    ...overrides,
  });
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  const { port } = http.address() as AddressInfo;
  return {
    http,
    realtime,
    port,
    url: `ws://127.0.0.1:${port}/app/${APP_KEY}?protocol=7&client=js&version=8.6.0&flash=false`,
    async stop() {
      await realtime.close();
      http.closeAllConnections();
      await new Promise<void>((resolve) => http.close(() => resolve()));
    },
  };
}

export interface Frame {
  readonly event: string;
  readonly channel?: string;
  readonly data?: unknown;
}

const isFrame = (value: unknown): value is Frame =>
  typeof value === 'object' && value !== null && typeof (value as { event?: unknown }).event === 'string';

/** A raw client that records every frame; `next` waits for the first unread frame matching a predicate. */
export class RawClient {
  private readonly frames: Frame[] = [];
  private readonly waiters = new Set<() => void>();
  readonly closed: Promise<{ code: number; reason: string }>;

  private constructor(readonly socket: WebSocket) {
    socket.on('message', (data) => {
      const parsed: unknown = JSON.parse(String(data));
      if (isFrame(parsed)) this.frames.push(parsed);
      for (const wake of this.waiters) wake();
    });
    this.closed = new Promise((resolve) => {
      socket.on('close', (code, reason) => {
        resolve({ code, reason: reason.toString() });
        for (const wake of this.waiters) wake();
      });
    });
    socket.on('error', () => {});
  }

  static async connect(url: string): Promise<RawClient> {
    const socket = new WebSocket(url);
    const client = new RawClient(socket);
    await new Promise<void>((resolve, reject) => {
      socket.once('open', () => resolve());
      socket.once('error', reject);
    });
    return client;
  }

  /** Connects and consumes `pusher:connection_established`; returns the socket id. */
  static async established(url: string): Promise<{ client: RawClient; socketId: string }> {
    const client = await RawClient.connect(url);
    const frame = await client.next((f) => f.event === 'pusher:connection_established');
    const data: unknown = JSON.parse(String(frame.data));
    return { client, socketId: (data as { socket_id: string }).socket_id };
  }

  send(message: unknown): void {
    this.socket.send(typeof message === 'string' ? message : JSON.stringify(message));
  }

  subscribe(channel: string, auth?: string, prefix = 'pusher:'): void {
    this.send({ event: `${prefix}subscribe`, data: { auth: auth ?? '', channel } });
  }

  /** Removes and returns the first frame matching `predicate`, waiting up to `timeoutMs`. */
  async next(predicate: (frame: Frame) => boolean = () => true, timeoutMs = 2000): Promise<Frame> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const index = this.frames.findIndex(predicate);
      if (index >= 0) return this.frames.splice(index, 1)[0]!;
      const remaining = deadline - Date.now();
      if (remaining <= 0 || this.socket.readyState === WebSocket.CLOSED)
        throw new Error(`no matching frame; received: ${JSON.stringify(this.frames).slice(0, 500)}`);
      await new Promise<void>((resolve) => {
        const wake = (): void => {
          clearTimeout(timer);
          this.waiters.delete(wake);
          resolve();
        };
        const timer = setTimeout(wake, remaining);
        this.waiters.add(wake);
      });
    }
  }

  /** Frames received and not yet consumed. */
  pending(): readonly Frame[] {
    return this.frames;
  }

  close(): void {
    this.socket.terminate();
  }
}

/** Resolves when `condition` holds, polling; rejects after `timeoutMs`. */
export async function waitFor(condition: () => boolean, timeoutMs = 2000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

export const userId = (n: number): UserId => n as UserId;
