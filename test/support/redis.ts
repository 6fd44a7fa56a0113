/**
 * Redis for tests. `TEST_REDIS_URL` names the server (here: redis://127.0.0.1:6379); each test
 * uses keys under a random prefix, so suites never see each other's buckets.
 *
 * - unset: the suites are skipped, with the reason shown by the test reporter (and printed once),
 *   so `npm test` works on a machine without Redis;
 * - set but unreachable: the tests FAIL (CI sets it, and must not pass without the server).
 */
import { randomBytes } from 'node:crypto';
import { createServer, type Server, Socket } from 'node:net';
import { serviceSuite, serviceUrl } from './service-suite.js';

export const TEST_REDIS_URL: string | undefined = serviceUrl('TEST_REDIS_URL');

export const REDIS_SKIP_REASON =
  'TEST_REDIS_URL is not set: Redis suites skipped (set it, e.g. redis://127.0.0.1:6379, to run them)';

/** Options for `describe`/`test`: `{ skip: reason }` without TEST_REDIS_URL, otherwise `{}`. */
export const redisSuite = serviceSuite(TEST_REDIS_URL, REDIS_SKIP_REASON);

export function redisUrl(): string {
  if (TEST_REDIS_URL === undefined) throw new Error(REDIS_SKIP_REASON);
  return TEST_REDIS_URL;
}

/** A key prefix no other test uses. */
export const testPrefix = (): string => `openspot:test:${randomBytes(6).toString('hex')}:`;

/**
 * A TCP proxy in front of the test Redis, to take it away from a client without touching the
 * server (others' tests use it): `down()` closes every connection and refuses new ones, `stall()`
 * keeps connections open but passes nothing (a server that stopped answering), `up()` restores.
 */
export class RedisProxy {
  readonly #target: URL;
  readonly #sockets = new Set<Socket>();
  #server: Server | undefined;
  #port = 0;
  #stalled = false;

  private constructor(target: string) {
    this.#target = new URL(target);
  }

  static async start(target: string): Promise<RedisProxy> {
    const proxy = new RedisProxy(target);
    await proxy.up();
    return proxy;
  }

  /** The URL clients use: the target's, through the proxy. */
  get url(): string {
    const u = new URL(this.#target.toString());
    u.hostname = '127.0.0.1';
    u.port = String(this.#port);
    return u.toString();
  }

  async up(): Promise<void> {
    this.#stalled = false;
    if (this.#server !== undefined) return;
    const server = createServer((client) => this.#pipe(client));
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.#port, '127.0.0.1', () => resolve());
    });
    const address = server.address();
    if (typeof address === 'object' && address !== null) this.#port = address.port;
    this.#server = server;
  }

  async down(): Promise<void> {
    const server = this.#server;
    this.#server = undefined;
    for (const socket of this.#sockets) socket.destroy();
    this.#sockets.clear();
    if (server !== undefined) await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  stall(): void {
    this.#stalled = true;
  }

  #pipe(client: Socket): void {
    const upstream = new Socket();
    this.#sockets.add(client);
    this.#sockets.add(upstream);
    const end = () => {
      client.destroy();
      upstream.destroy();
      this.#sockets.delete(client);
      this.#sockets.delete(upstream);
    };
    client.on('error', end).on('close', end);
    upstream.on('error', end).on('close', end);
    upstream.connect(Number(this.#target.port || 6379), this.#target.hostname);
    client.on('data', (chunk) => {
      if (!this.#stalled) upstream.write(chunk);
    });
    upstream.on('data', (chunk) => {
      if (!this.#stalled) client.write(chunk);
    });
  }
}
