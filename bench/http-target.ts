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
 *
 * BENCH_SERVER_DIST=DIR runs the compiled server of DIR (a checkout's `dist/src`, as `npm start`
 * runs it) instead of this checkout's `src` through tsx: `bench:http -- --compare REF` measures two
 * builds with the same harness. BENCH_CPU_PROFILE=FILE: the first SIGUSR2 starts V8's sampling
 * profiler in this process, the second writes the profile to FILE (`bench:stages`).
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { Session } from 'node:inspector';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import Fastify from 'fastify';
import pg from 'pg';
import { OpenSpotClient } from '../src/client/client.js';
import type { loadConfig as LoadConfig } from '../src/config/config.js';
import type { createLogger as CreateLogger } from '../src/logger.js';
import type { startServer as StartServer } from '../src/server.js';
import type { SqliteStore as SqliteStoreClass } from '../src/store/sqlite/sqlite-store.js';
import { LOCAL_VENUE_ENV } from '../test/support/local-venue-env.js';
import { withDatabase } from '../test/support/postgres.js';

const mode = process.argv[2];

/** The server's modules: this checkout's sources, or a build's (BENCH_SERVER_DIST). */
async function serverModules(): Promise<{
  loadConfig: typeof LoadConfig;
  createLogger: typeof CreateLogger;
  startServer: typeof StartServer;
  SqliteStore: typeof SqliteStoreClass;
}> {
  const dist = process.env.BENCH_SERVER_DIST?.trim();
  const load = (path: string) =>
    dist ? import(pathToFileURL(join(dist, `${path}.js`)).href) : import(`../src/${path}.js`);
  const [config, logger, server, sqlite] = await Promise.all([
    load('config/config'),
    load('logger'),
    load('server'),
    load('store/sqlite/sqlite-store'),
  ]);
  return {
    loadConfig: config.loadConfig,
    createLogger: logger.createLogger,
    startServer: server.startServer,
    SqliteStore: sqlite.SqliteStore,
  };
}

/** The real server (the test fixture's composition), with funded traders made through the admin API. */
async function startBenchServer(env: Record<string, string>, dir: string) {
  const modules = await serverModules();
  const fullEnv = {
    PORT: '0',
    HOST: '127.0.0.1',
    DATA_DIR: dir,
    LOG_LEVEL: 'silent',
    ...LOCAL_VENUE_ENV,
    // The store's throughput setting, to measure it: SQLITE_JOURNAL_BATCHES=16 npm run bench:…
    ...(process.env.SQLITE_JOURNAL_BATCHES === undefined
      ? {}
      : { SQLITE_JOURNAL_BATCHES: process.env.SQLITE_JOURNAL_BATCHES }),
    ...env,
  };
  const config = modules.loadConfig(fullEnv);
  const server = await modules.startServer(config, modules.createLogger(config.logLevel), fullEnv);
  const admin = async (method: string, path: string, body?: unknown) => {
    const response = await fetch(`${server.url}/admin/v1${path}`, {
      method,
      headers: {
        authorization: `Bearer ${server.adminToken}`,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await response.text();
    if (!response.ok) throw new Error(`${method} ${path}: ${response.status} ${text}`);
    return JSON.parse(text) as unknown;
  };
  return {
    url: server.url,
    adminToken: server.adminToken,
    SqliteStore: modules.SqliteStore,
    close: () => server.close(),
    async trader(funds: Record<string, string>) {
      const user = (await admin('POST', '/users', {})) as { id: number };
      const key = (await admin('POST', `/users/${user.id}/api-keys`, { scopes: ['read', 'trade'] })) as {
        api_key: string;
        api_secret: string;
      };
      for (const [asset, amount] of Object.entries(funds))
        await admin('POST', `/users/${user.id}/deposits`, { asset, amount });
      return { apiKey: key.api_key, apiSecret: key.api_secret };
    },
  };
}

/** What the SQLite commits took while the profiler ran: wall time, and the process's CPU time. */
const commitTimes = { commits: 0, wallUs: 0, cpuUs: 0 };

/**
 * BENCH_CPU_PROFILE: SIGUSR2 starts the sampling profiler (every 100 µs), the next one writes
 * `{ profile, commits }` (renamed into place once complete, so the reader never sees half a file).
 * `commits` is what SqliteStore.commit took meanwhile: a sampling profiler counts a thread blocked
 * in fsync as busy, and the difference between the commits' wall and CPU time is that wait.
 */
function profileOnSignal(file: string): void {
  const session = new Session();
  session.connect();
  const post = (method: string, params?: object) =>
    new Promise<unknown>((resolve, reject) =>
      session.post(method, params, (error, result) => (error ? reject(error) : resolve(result))),
    );
  let running = false;
  process.on('SIGUSR2', async () => {
    if (!running) {
      running = true;
      Object.assign(commitTimes, { commits: 0, wallUs: 0, cpuUs: 0 });
      await post('Profiler.enable');
      await post('Profiler.setSamplingInterval', { interval: 100 });
      await post('Profiler.start');
      return;
    }
    running = false;
    const { profile } = (await post('Profiler.stop')) as { profile: unknown };
    writeFileSync(`${file}.part`, JSON.stringify({ profile, commits: commitTimes }));
    renameSync(`${file}.part`, file);
  });
}

/** Times every SqliteStore.commit (wall and CPU) into commitTimes. */
function timeCommits(store: typeof SqliteStoreClass): void {
  const commit = store.prototype.commit;
  store.prototype.commit = function timedCommit(this: SqliteStoreClass, batch) {
    const cpu0 = process.cpuUsage();
    const wall0 = performance.now();
    try {
      commit.call(this, batch);
    } finally {
      const cpu = process.cpuUsage(cpu0);
      commitTimes.commits++;
      commitTimes.wallUs += (performance.now() - wall0) * 1000;
      commitTimes.cpuUs += cpu.user + cpu.system;
    }
  };
}
const profileFile = process.env.BENCH_CPU_PROFILE?.trim();
if (profileFile) profileOnSignal(profileFile);

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
  const t = await startBenchServer(env, dir);
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
  if (mode === 'openspot-uncommitted') t.SqliteStore.prototype.commit = () => {};
  else if (profileFile) timeCommits(t.SqliteStore);
  process.stdout.write(
    `${JSON.stringify({ url: t.url, traders, adminToken: t.adminToken, database: database?.name })}\n`,
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
