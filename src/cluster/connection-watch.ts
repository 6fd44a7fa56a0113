/**
 * Whether a NATS connection is up, as its status events say, shared by everything on that
 * connection (the command client, the batch publisher and subscriptions, the readiness ping, the
 * snapshot fetch, a chunked reply).
 *
 * The NATS client neither answers nor fails a request made while it is disconnected (it buffers
 * the message for the reconnect), nor one waiting for its answer when the connection drops: each
 * waits out its whole timeout. A caller that must not wait asks through `request`, which refuses
 * at once while disconnected and fails at the disconnect a request already waiting.
 *
 * The watch starts at its first use on a connection; `connectNats` (engine-node.ts) starts it at
 * the connection, so no disconnect goes unseen. Started on a connection that is down already, it
 * takes it as up until the next status event: the request then waits out its timeout, as before.
 */
import type { NatsConnection } from '@nats-io/transport-node';

/** A request refused or failed because the NATS connection is down. */
export class NatsDisconnectedError extends Error {
  override readonly name = 'NatsDisconnectedError';
}

export interface RequestFailures {
  /** The connection is down (or closed, or draining): `start` was not called, nothing was sent. */
  readonly notSent: () => Error;
  /** The connection dropped while waiting for the answer: it may have been sent and acted on. */
  readonly lost: () => Error;
}

const DEFAULT_FAILURES: RequestFailures = {
  notSent: () => new NatsDisconnectedError('not connected to NATS: nothing was sent'),
  lost: () => new NatsDisconnectedError('the connection to NATS was lost before the answer came'),
};

export class ConnectionWatch {
  private static readonly watches = new WeakMap<NatsConnection, ConnectionWatch>();
  /** False from a disconnect until the reconnect. */
  private up = true;
  /** Requests waiting for an answer: failed at once when the connection drops. */
  private readonly waiting = new Set<() => void>();
  /** Told of each reconnect (a batch subscription reopens its consumer). */
  private readonly reconnected = new Set<() => void>();

  private constructor(private readonly nc: NatsConnection) {
    void this.watch();
  }

  /** The one watch of `nc` (started on first use). */
  static of(nc: NatsConnection): ConnectionWatch {
    let watch = ConnectionWatch.watches.get(nc);
    if (watch === undefined) {
      watch = new ConnectionWatch(nc);
      ConnectionWatch.watches.set(nc, watch);
    }
    return watch;
  }

  /** Whether a request sent now can be answered: connected, not closed, not draining. */
  get connected(): boolean {
    return this.up && !this.nc.isClosed() && !this.nc.isDraining();
  }

  /**
   * `start()`'s answer; at once `notSent()` while the connection is down (`start` is not called),
   * or `lost()` as soon as it drops while the answer is awaited.
   */
  async request<T>(start: () => Promise<T>, failures: RequestFailures = DEFAULT_FAILURES): Promise<T> {
    if (!this.connected) throw failures.notSent();
    let fail: () => void = () => undefined;
    const lost = new Promise<never>((_resolve, reject) => {
      fail = () => reject(failures.lost());
    });
    this.waiting.add(fail);
    try {
      const answer = start();
      answer.catch(() => undefined); // settled later when the connection was lost first
      return await Promise.race([answer, lost]);
    } finally {
      this.waiting.delete(fail);
    }
  }

  /** Calls `listener` at each reconnect, until the function returned is called. */
  onReconnect(listener: () => void): () => void {
    this.reconnected.add(listener);
    return () => void this.reconnected.delete(listener);
  }

  private async watch(): Promise<void> {
    for await (const status of this.nc.status()) {
      if (status.type === 'disconnect') {
        this.up = false;
        // An answer in flight cannot come back on this connection: say so now, not after the timeout.
        const waiting = [...this.waiting];
        this.waiting.clear();
        for (const fail of waiting) fail();
      } else if (status.type === 'reconnect') {
        this.up = true;
        for (const listener of [...this.reconnected]) listener();
      }
    }
  }
}
