/**
 * Per-address limits on WebSocket connections, checked on the HTTP upgrade request: at most
 * `maxConnectionsPerIp` open connections per client address, and at most `upgradesPerSecondPerIp`
 * new ones per second (token bucket, burst `upgradeBurstPerIp`). 0 turns a limit off.
 *
 * How a client over a limit is told:
 * - normally the handshake is completed only to say no: `pusher:error` 4100 and close 4100, on
 *   which pusher-js backs off one second, then reconnects. A plain HTTP 429 is to pusher-js a
 *   failed transport: measured with pusher-js 8.6, it tries again only after its 15 s transport
 *   timeout and reports the connection `unavailable` meanwhile — a long outage for a client that
 *   only had to wait a second (docs/security.md, WebSocket connections per address);
 * - but a refused socket lives until the client answers the close frame (at most the close grace
 *   period). An address that already has `maxRefusingPerIp` refused sockets still closing is not
 *   behaving like pusher-js: it gets `HTTP 429` with `Retry-After` and no handshake at all, so a
 *   client that ignores refusals costs one short HTTP answer per attempt.
 *
 * The address is the socket's peer, or with TRUST_PROXY the left-most X-Forwarded-For entry —
 * what Fastify's `request.ip` gives the HTTP limits. Memory: one small entry per address with a
 * socket open (dropped at zero), and the token buckets' own bound (src/http/rate-limit.ts).
 */
import type { IncomingMessage } from 'node:http';
import { TokenBuckets } from '../http/rate-limit.js';

export interface IpLimits {
  /** Open connections per client address; 0: no limit. */
  readonly maxConnectionsPerIp: number;
  /** New connections per second per client address; 0: no limit. */
  readonly upgradesPerSecondPerIp: number;
  /** Upgrades at once after a quiet period (≥ 1); default twice the rate. */
  readonly upgradeBurstPerIp?: number;
}

export type RefusalReason = 'per_ip' | 'upgrade_rate';

export type UpgradeVerdict =
  | { readonly kind: 'accept' }
  /** Complete the handshake, then close with 4100 and this message. */
  | { readonly kind: 'refuse'; readonly reason: RefusalReason; readonly message: string }
  /** Answer HTTP 429 without upgrading. */
  | { readonly kind: 'reject'; readonly reason: RefusalReason; readonly retryAfterSeconds: number };

/** Refused sockets one address may keep in their closing handshake before it gets bare 429s. */
export const MAX_REFUSING_PER_IP = 10;

interface Counts {
  open: number;
  refusing: number;
}

export class IpAdmission {
  readonly #limits: IpLimits;
  readonly #buckets: TokenBuckets | undefined;
  readonly #counts = new Map<string, Counts>();
  readonly #maxRefusing: number;

  constructor(limits: IpLimits, options: { maxRefusingPerIp?: number; now?: () => number } = {}) {
    this.#limits = limits;
    const rate = limits.upgradesPerSecondPerIp;
    this.#buckets =
      rate > 0
        ? new TokenBuckets({
            ratePerSecond: rate,
            burst: limits.upgradeBurstPerIp ?? Math.max(1, 2 * rate),
            now: options.now,
          })
        : undefined;
    this.#maxRefusing = options.maxRefusingPerIp ?? MAX_REFUSING_PER_IP;
  }

  /** The verdict for one upgrade request from `ip`; spends one token of its upgrade budget. */
  check(ip: string): UpgradeVerdict {
    const counts = this.#counts.get(ip);
    const refusing = counts?.refusing ?? 0;
    const taken = this.#buckets?.take(ip);
    if (taken !== undefined && !taken.ok) {
      return refusing < this.#maxRefusing
        ? { kind: 'refuse', reason: 'upgrade_rate', message: 'Too many connection attempts' }
        : { kind: 'reject', reason: 'upgrade_rate', retryAfterSeconds: taken.retryAfterSeconds };
    }
    const max = this.#limits.maxConnectionsPerIp;
    if (max > 0 && (counts?.open ?? 0) >= max) {
      return refusing < this.#maxRefusing
        ? { kind: 'refuse', reason: 'per_ip', message: 'Too many connections from this address' }
        : { kind: 'reject', reason: 'per_ip', retryAfterSeconds: 1 };
    }
    return { kind: 'accept' };
  }

  /** A socket of `ip` was upgraded: an accepted connection, or one upgraded only to be refused. */
  opened(ip: string, refused: boolean): void {
    let counts = this.#counts.get(ip);
    if (counts === undefined) {
      counts = { open: 0, refusing: 0 };
      this.#counts.set(ip, counts);
    }
    if (refused) counts.refusing += 1;
    else counts.open += 1;
  }

  /** That socket is closed. */
  closed(ip: string, refused: boolean): void {
    const counts = this.#counts.get(ip);
    if (counts === undefined) return;
    if (refused) counts.refusing -= 1;
    else counts.open -= 1;
    if (counts.open <= 0 && counts.refusing <= 0) this.#counts.delete(ip);
  }

  /** Addresses with a socket open (for tests). */
  get addresses(): number {
    return this.#counts.size;
  }
}

/** The client address of an upgrade request, as Fastify's `request.ip` computes it. */
export function clientAddress(request: IncomingMessage, trustProxy: boolean): string {
  if (trustProxy) {
    const header = request.headers['x-forwarded-for'];
    const first = (Array.isArray(header) ? header[0] : header)?.split(',', 1)[0]?.trim();
    if (first !== undefined && first !== '') return first;
  }
  return request.socket.remoteAddress ?? 'unknown';
}

/** The bare answer to an upgrade refused before the handshake. */
export function tooManyUpgrades(retryAfterSeconds: number): string {
  const body = '{"error":"Too Many Requests"}';
  return (
    'HTTP/1.1 429 Too Many Requests\r\n' +
    `Retry-After: ${retryAfterSeconds}\r\n` +
    'Content-Type: application/json\r\n' +
    `Content-Length: ${body.length}\r\n` +
    'Connection: close\r\n\r\n' +
    body
  );
}
