/**
 * NATS for tests. `TEST_NATS_URL` names a NATS server with JetStream (here nats://127.0.0.1:4222).
 *
 * - unset: the suites are skipped, with the reason shown by the test reporter (and printed once),
 *   so `npm test` works on a machine without NATS;
 * - set but unreachable: the tests FAIL (CI sets it, and must not pass without the server).
 *
 * Tests share the server with each other and with other processes: each uses names of its own
 * (`uniqueName`) and deletes the streams it created (`natsConnection` closes its connection).
 */
import { randomBytes } from 'node:crypto';
import { type AddressInfo, createConnection, createServer, type Socket } from 'node:net';
import { jetstreamManager } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { type Cleanup, serviceSuite, serviceUrl } from './service-suite.js';

export const TEST_NATS_URL: string | undefined = serviceUrl('TEST_NATS_URL');

export const NATS_SKIP_REASON =
  'TEST_NATS_URL is not set: NATS suites skipped (set it, e.g. nats://127.0.0.1:4222, to run them)';

/** Options for `describe`/`test`: `{ skip: reason }` without TEST_NATS_URL, otherwise `{}`. */
export const natsSuite = serviceSuite(TEST_NATS_URL, NATS_SKIP_REASON);

/** A connection to the test server, closed when the test ends. Throws (the test fails) when unreachable. */
export async function natsConnection(
  t: Cleanup,
  name = 'openspot-test',
  servers: string | undefined = TEST_NATS_URL,
): Promise<NatsConnection> {
  if (servers === undefined) throw new Error(NATS_SKIP_REASON);
  // Reconnects quickly and for ever: tests that cut a relay wait for the way back.
  const nc = await connect({
    servers,
    name,
    timeout: 5_000,
    reconnectTimeWait: 100,
    maxReconnectAttempts: -1,
  });
  t.after(async () => {
    if (!nc.isClosed()) await nc.close();
  });
  return nc;
}

/** A name no other test uses: letters, digits and `_` only, valid as a stream name and a subject token. */
export function uniqueName(prefix: string): string {
  return `${prefix}_${randomBytes(6).toString('hex')}`;
}

/**
 * Deletes the stream `name` when the test ends, over a connection of its own (the test's own
 * connections may be closed by then: cleanups run in the order they were registered).
 */
export function deleteStreamAfter(t: Cleanup, name: string): void {
  t.after(async () => {
    if (TEST_NATS_URL === undefined) return;
    const nc = await connect({ servers: TEST_NATS_URL, name: 'openspot-test-cleanup', timeout: 5_000 });
    try {
      const jsm = await jetstreamManager(nc);
      await jsm.streams.delete(name).catch((error: unknown) => {
        if (!(error instanceof Error && /not found/i.test(error.message))) throw error;
      });
    } finally {
      await nc.close();
    }
  });
}

/**
 * A TCP relay in front of the test server: `cut()` drops every connection through it and refuses
 * new ones (what a client sees when NATS restarts or the network fails), `restore()` accepts
 * again on the same port. Lets a test take NATS away from one client without restarting the
 * shared server. Closed when the test ends.
 */
export async function natsRelay(
  t: Cleanup,
): Promise<{ url: string; cut(): Promise<void>; restore(): Promise<void> }> {
  if (TEST_NATS_URL === undefined) throw new Error(NATS_SKIP_REASON);
  const target = new URL(TEST_NATS_URL.replace(/^nats:/, 'http:'));
  const sockets = new Set<Socket>();
  const relay = (client: Socket) => {
    const upstream = createConnection({ host: target.hostname, port: Number(target.port || 4222) });
    sockets.add(client).add(upstream);
    const drop = () => {
      client.destroy();
      upstream.destroy();
      sockets.delete(client);
      sockets.delete(upstream);
    };
    client.on('error', drop).on('close', drop).pipe(upstream);
    upstream.on('error', drop).on('close', drop).pipe(client);
  };
  let server = createServer(relay);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  const close = () => new Promise<void>((resolve) => server.close(() => resolve()));
  t.after(async () => {
    for (const s of sockets) s.destroy();
    if (server.listening) await close();
  });
  return {
    url: `nats://127.0.0.1:${port}`,
    async cut() {
      const closed = close();
      for (const s of sockets) s.destroy();
      sockets.clear();
      await closed;
    },
    async restore() {
      server = createServer(relay);
      await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
    },
  };
}
