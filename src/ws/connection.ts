/**
 * One client connection: its socket, its subscriptions and its keepalive state. Every frame to
 * the client goes through `send`, which is where a slow consumer is cut off before it can make
 * the server buffer without bound.
 */
import { WebSocket } from 'ws';
import type { WsFaults } from './faults.js';
import { CloseCode } from './frames.js';

export interface ConnectionOptions {
  /** Cut the client off once this many bytes wait to be written to it. */
  readonly maxBufferedBytes: number;
  /** After a server-initiated close, how long the client has to finish the closing handshake. */
  readonly closeGraceMs: number;
  /** Called once, when the server starts closing the connection: stop routing messages to it. */
  readonly onClosing: (connection: ClientConnection, code: number, reason: string) => void;
  /** Fault injection (src/chaos): sees every frame while a WebSocket fault is set. */
  readonly faults?: WsFaults | undefined;
}

/** The raw byte stream under the WebSocket (what `handleUpgrade` was given): only its corking is used. */
export interface Transport {
  cork(): void;
  uncork(): void;
}

export class ClientConnection {
  /** Names of the channels this connection is subscribed to (the registry keeps the reverse index). */
  readonly channels = new Set<string>();
  /** Monotonic ms of the last inbound frame. */
  lastActivity: number;
  /** Monotonic ms at which we sent `pusher:ping` and are still waiting for any answer. */
  pingSentAt: number | undefined;
  /** Subscriptions refused for the per-connection limit; past a threshold the client is flooding. */
  refusedOverLimit = 0;
  private closing = false;
  private corked = false;
  private terminateTimer: NodeJS.Timeout | undefined;

  constructor(
    readonly socketId: string,
    private readonly socket: WebSocket,
    private readonly options: ConnectionOptions,
    now: number,
    /** When given, `cork` holds this connection's frames back so that `uncork` writes them at once. */
    private readonly transport?: Transport,
  ) {
    this.lastActivity = now;
  }

  /**
   * Holds outgoing frames in memory until `uncork`, which hands them to the kernel in one write.
   * ws corks around each frame itself; corks nest, so the frames of a whole batch are joined.
   * Returns false when there is nothing to cork (no transport, already corked, not open).
   */
  cork(): boolean {
    if (this.transport === undefined || this.corked || !this.isOpen) return false;
    this.corked = true;
    this.transport.cork();
    return true;
  }

  uncork(): void {
    if (!this.corked) return;
    this.corked = false;
    this.transport!.uncork();
  }

  get isOpen(): boolean {
    return !this.closing && this.socket.readyState === WebSocket.OPEN;
  }

  /** Any inbound frame proves the client alive. */
  touch(now: number): void {
    this.lastActivity = now;
    this.pingSentAt = undefined;
  }

  /**
   * Queues a text frame. A Buffer is sent as is (no copy per subscriber, see fanout.ts).
   * Returns false when nothing was sent: the connection is closing or was just cut off.
   */
  send(frame: string | Buffer): boolean {
    if (!this.isOpen) return false;
    const faults = this.options.faults;
    if (faults?.active === true && faults.intercept(this, frame)) return true;
    return this.write(frame);
  }

  /** `send` past fault injection: how the injector writes the frames it delayed. */
  write(frame: string | Buffer): boolean {
    if (!this.isOpen) return false;
    // `bufferedAmount` is what the socket has not yet handed to the kernel. A client that reads
    // too slowly makes it grow; past the limit we close with 4100 (pusher-js backs off 1 s and
    // reconnects, then gets a fresh snapshot) instead of holding its backlog in memory.
    if (this.socket.bufferedAmount > this.options.maxBufferedBytes) {
      this.close(CloseCode.overCapacity, 'Slow consumer');
      return false;
    }
    this.socket.send(frame, { binary: false });
    return true;
  }

  /** Starts the closing handshake; the socket is destroyed if it does not finish in time. */
  close(code: number, reason: string): void {
    if (this.closing) return;
    this.closing = true;
    this.options.onClosing(this, code, reason);
    if (this.socket.readyState === WebSocket.OPEN || this.socket.readyState === WebSocket.CONNECTING) {
      this.socket.close(code, reason);
    }
    // The close frame waits behind whatever is buffered; a dead or stalled peer never answers.
    this.terminateTimer = setTimeout(() => this.socket.terminate(), this.options.closeGraceMs);
    this.terminateTimer.unref();
  }

  /** The socket is closed: release the timer. */
  dispose(): void {
    this.closing = true;
    if (this.terminateTimer !== undefined) clearTimeout(this.terminateTimer);
  }
}
