/**
 * A server for bench/http.ts, run in its own process so the load generator does not share its
 * event loop: `bare` is a bare Fastify route (the baseline), `openspot` the real server with a
 * fresh data directory, funded traders and a book to read. Prints one JSON line when ready (its
 * address, the traders, and the admin token, for GET /metrics).
 *
 * `openspot-postgres` is the same server on PostgreSQL: a fresh database with a random name on
 * the server BENCH_DATABASE_URL (or TEST_DATABASE_URL, or postgres://postgres@127.0.0.1:5432/postgres)
 * names, created here and dropped when the process is stopped (SIGTERM/SIGINT).
 *
 * Two variants of `openspot` exist only to show where an order request's time goes:
 *   `openspot-normal`: SQLITE_SYNCHRONOUS=normal (commits are not fsynced: they survive a crash of
 *     the process, not a power cut; an operator's option, see README);
 *   `openspot-uncommitted`: after the set-up, the store's commit does nothing at all. Not a server
 *     anyone may run (nothing is durable); it is the bound a durable server stays below.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Fastify from 'fastify';
import pg from 'pg';
import { OpenSpotClient } from '../src/client/client.js';
import { SqliteStore } from '../src/store/sqlite/sqlite-store.js';
import { withDatabase } from '../test/support/postgres.js';
import { startTestServer } from '../test/support/server-fixture.js';

const mode = process.argv[2];

/**
 * Closes the server and exits on SIGINT/SIGTERM, so `node --cpu-prof` gets to write its profile
 * (and the data directory is removed). A close that hangs does not keep the process alive, but
 * `abandon` (the bench database's drop) still runs first: a loaded machine can take longer than
 * the wait, and a database left behind would stay on a server others share.
 */
function exitOnSignal(close: () => Promise<unknown>, abandon: () => Promise<unknown> = async () => {}): void {
  let closing = false;
  const stop = () => {
    if (closing) return;
    closing = true;
    setTimeout(() => {
      setTimeout(() => process.exit(1), 5000).unref();
      abandon().finally(() => process.exit(1));
    }, 10_000).unref();
    close().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  };
  // on, not once: a second signal (a parent and its process group both signalled) must not end the
  // process in the middle of its clean-up.
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
}

if (mode === 'bare') {
  const app = Fastify();
  app.get('/bare', async () => ({ success: true, message: 'ok', code: 200 }));
  // The order pair's shape without the work (no signature check, no matching, nothing stored):
  // what the load generator itself can drive, the ceiling of the signed-order measurement.
  let nextId = 1;
  app.post('/v1/orders', async (_request, reply) => {
    reply.code(201).header('location', `/v1/orders/${nextId++}`);
    return { success: true, message: 'Order created', code: 201 };
  });
  app.delete('/v1/orders/:id', async () => ({ success: true, message: 'Order canceled', code: 200 }));
  await app.listen({ port: 0, host: '127.0.0.1' });
  exitOnSignal(() => app.close());
  const address = app.server.address();
  const port = typeof address === 'object' && address !== null ? address.port : 0;
  process.stdout.write(`${JSON.stringify({ url: `http://127.0.0.1:${port}` })}\n`);
} else if (
  mode === 'openspot' ||
  mode === 'openspot-normal' ||
  mode === 'openspot-uncommitted' ||
  mode === 'openspot-postgres'
) {
  const dir = mkdtempSync(join(tmpdir(), 'openspot-bench-'));
  const database = mode === 'openspot-postgres' ? await createDatabase() : undefined;
  const env: Record<string, string> =
    mode === 'openspot-normal'
      ? { SQLITE_SYNCHRONOUS: 'normal' }
      : database !== undefined
        ? { DATABASE_URL: database.url }
        : {};
  const t = await startTestServer(env, dir);
  exitOnSignal(
    async () => {
      try {
        await t.close();
      } finally {
        rmSync(dir, { recursive: true, force: true });
        await database?.drop();
      }
    },
    async () => database?.drop(),
  );
  const traders = [];
  for (let i = 0; i < 8; i++) traders.push(await t.trader({ EUR: '100000000', BTC: '10000' }));
  // A book with depth on both sides so /orderbook and /tickers have something to serialize.
  const clients = traders.map(
    (trader) =>
      new OpenSpotClient({ baseUrl: `${t.url}/v1`, apiKey: trader.apiKey, apiSecret: trader.apiSecret }),
  );
  for (let i = 0; i < 200; i++) {
    const buy = i % 2 === 0;
    await clients[i % clients.length]!.createOrder({
      pair: 'BTC/EUR',
      direction: buy ? 'buy' : 'sell',
      type: 'limit',
      volume: '0.01',
      price: buy ? `${29000 - (i % 50) * 10}` : `${31000 + (i % 50) * 10}`,
    });
  }
  if (mode === 'openspot-uncommitted') SqliteStore.prototype.commit = () => {};
  process.stdout.write(
    `${JSON.stringify({ url: t.url, traders, adminToken: t.server.adminToken, database: database?.name })}\n`,
  );
} else {
  throw new Error(
    `unknown mode ${mode}: bare, openspot, openspot-normal, openspot-uncommitted or openspot-postgres`,
  );
}

/** A fresh database for this run, and how to drop it (connections forced out). */
async function createDatabase(): Promise<{ name: string; url: string; drop(): Promise<void> }> {
  const adminUrl =
    process.env.BENCH_DATABASE_URL?.trim() ||
    process.env.TEST_DATABASE_URL?.trim() ||
    'postgres://postgres@127.0.0.1:5432/postgres';
  const name = `openspot_bench_${randomBytes(6).toString('hex')}`;
  const admin = async (sql: string) => {
    const client = new pg.Client({ connectionString: adminUrl, connectionTimeoutMillis: 5000 });
    client.on('error', () => undefined);
    await client.connect();
    try {
      await client.query(sql);
    } finally {
      await client.end().catch(() => undefined);
    }
  };
  await admin(`CREATE DATABASE ${name}`);
  return {
    name,
    url: withDatabase(adminUrl, name),
    drop: () => admin(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`),
  };
}
