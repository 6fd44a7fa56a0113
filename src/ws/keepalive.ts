/**
 * Server-side keepalive. A connection silent for `idleMs` gets `pusher:ping`; if nothing at all
 * arrives within `pongTimeoutMs` after that, it is closed with 4201 (pusher-js reconnects at
 * once). This finds dead peers that TCP alone would keep for hours. One timer sweeps every
 * connection instead of one timer per connection.
 */
import type { ClientConnection } from './connection.js';
import { CloseCode, PING_FRAME } from './frames.js';

export interface KeepaliveOptions {
  readonly idleMs: number;
  readonly pongTimeoutMs: number;
}

/** One pass over the connections at time `now` (monotonic ms). */
export function sweepConnections(
  connections: Iterable<ClientConnection>,
  now: number,
  options: KeepaliveOptions,
): void {
  for (const connection of connections) {
    if (!connection.isOpen) continue;
    if (connection.pingSentAt !== undefined) {
      if (now - connection.pingSentAt >= options.pongTimeoutMs)
        connection.close(CloseCode.pongTimeout, 'Pong reply not received');
    } else if (now - connection.lastActivity >= options.idleMs) {
      connection.pingSentAt = now;
      connection.send(PING_FRAME);
    }
  }
}

/** Starts the periodic sweep; returns the function that stops it. */
export function startKeepalive(
  connections: () => Iterable<ClientConnection>,
  now: () => number,
  options: KeepaliveOptions,
): () => void {
  // A quarter of the shortest deadline keeps lateness small; at least 10 ms, at most 1 s apart.
  const period = Math.max(10, Math.min(1000, Math.min(options.idleMs, options.pongTimeoutMs) / 4));
  const timer = setInterval(() => sweepConnections(connections(), now(), options), period);
  // The keepalive alone must not keep the process running.
  timer.unref();
  return () => clearInterval(timer);
}
