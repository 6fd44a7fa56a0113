/**
 * At most `maxPerIp` open HTTP connections per client address (HTTP_MAX_CONNECTIONS_PER_IP).
 * Half-sent requests from a few addresses (slowloris) used to hold every file descriptor of the
 * process until Node's header timeout freed them; now each address holds at most its share.
 *
 * Counted at the TCP level, before any byte is read, so the address is the socket's peer — never
 * X-Forwarded-For, which does not exist yet. Behind a proxy every connection comes from the proxy:
 * docs/deployment.md says what it must do instead. A connection that becomes a WebSocket leaves
 * the count at its upgrade: the WebSocket limits (src/ws/ip-admission.ts) take over.
 *
 * A connection over the limit is answered at once, 429 in shape E with `Connection: close`, and
 * closed as soon as that is written: it costs the server one small write, not a descriptor held
 * for the attacker. Memory: one entry per address with a connection open.
 */
import type { Server } from 'node:http';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { errorE } from './errors.js';

const BODY = JSON.stringify(errorE(429, 'Too Many Requests').body);
const REFUSAL =
  'HTTP/1.1 429 Too Many Requests\r\n' +
  'Content-Type: application/json; charset=utf-8\r\n' +
  `Content-Length: ${Buffer.byteLength(BODY)}\r\n` +
  'Retry-After: 1\r\n' +
  'Connection: close\r\n\r\n' +
  BODY;

export interface ConnectionLimit {
  /** Open HTTP connections of an address (for tests and metrics). */
  openOf(address: string): number;
}

export function limitConnectionsPerIp(
  server: Server,
  maxPerIp: number,
  onRefused: () => void = () => {},
): ConnectionLimit {
  const open = new Map<string, number>();
  /** Sockets still counted, so that an upgrade and the close do not both release one. */
  const counted = new WeakSet<Duplex>();
  const release = (socket: Duplex, address: string) => {
    if (!counted.delete(socket)) return;
    const left = (open.get(address) ?? 1) - 1;
    if (left <= 0) open.delete(address);
    else open.set(address, left);
  };
  if (maxPerIp > 0) {
    server.on('connection', (socket: Socket) => {
      const address = socket.remoteAddress;
      // Already gone (reset before this ran): nothing to count.
      if (address === undefined) return;
      const count = open.get(address) ?? 0;
      if (count >= maxPerIp) {
        onRefused();
        socket.on('error', () => {});
        socket.end(REFUSAL);
        // Closed once written, whether or not the client ever reads or closes its side.
        socket.destroySoon();
        return;
      }
      open.set(address, count + 1);
      counted.add(socket);
      socket.once('close', () => release(socket, address));
    });
    server.on('upgrade', (request: { socket: Socket }, socket: Duplex) => {
      const address = request.socket.remoteAddress;
      if (address !== undefined) release(socket, address);
    });
  }
  return { openOf: (address) => open.get(address) ?? 0 };
}
