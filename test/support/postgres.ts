/**
 * PostgreSQL for tests. `TEST_DATABASE_URL` names a server and a database to connect to for
 * administration (here: postgres://postgres@127.0.0.1:5432/postgres); each test gets a fresh
 * database with a random name on that server, dropped when the test ends.
 *
 * - unset: the suites are skipped, with the reason shown by the test reporter (and printed once),
 *   so `npm test` works on a machine without PostgreSQL;
 * - set but unreachable: the tests FAIL (CI sets it, and must not pass without the database).
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { type Cleanup, serviceSuite, serviceUrl } from './service-suite.js';

export const TEST_DATABASE_URL: string | undefined = serviceUrl('TEST_DATABASE_URL');

export const POSTGRES_SKIP_REASON =
  'TEST_DATABASE_URL is not set: PostgreSQL suites skipped (set it, e.g. postgres://postgres@127.0.0.1:5432/postgres, to run them)';

/** Options for `describe`/`test`: `{ skip: reason }` without TEST_DATABASE_URL, otherwise `{}`. */
export const postgresSuite = serviceSuite(TEST_DATABASE_URL, POSTGRES_SKIP_REASON);

function adminUrl(): string {
  if (TEST_DATABASE_URL === undefined) throw new Error(POSTGRES_SKIP_REASON);
  return TEST_DATABASE_URL;
}

/** `url` with its database replaced by `database`. */
export function withDatabase(url: string, database: string): string {
  const u = new URL(url);
  u.pathname = `/${encodeURIComponent(database)}`;
  return u.toString();
}

async function admin<T>(run: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: adminUrl(), connectionTimeoutMillis: 5000 });
  client.on('error', () => undefined);
  await client.connect();
  try {
    return await run(client);
  } finally {
    await client.end().catch(() => undefined);
  }
}

/**
 * Creates an empty database with a random name and returns its URL; it is dropped (connections
 * forced out) when the test ends. Throws when the server cannot be reached: the test fails.
 */
export async function freshDatabase(t: Cleanup): Promise<string> {
  const name = `openspot_test_${randomBytes(6).toString('hex')}`;
  await admin((c) => c.query(`CREATE DATABASE ${name}`));
  t.after(async () => {
    await admin((c) => c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`));
  });
  return withDatabase(adminUrl(), name);
}

/** Runs one query on the given database (assertions that look past the store). */
export async function queryDatabase<R extends pg.QueryResultRow>(
  url: string,
  text: string,
  values?: unknown[],
): Promise<R[]> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 5000 });
  client.on('error', () => undefined);
  await client.connect();
  try {
    return (await client.query<R>(text, values)).rows;
  } finally {
    await client.end().catch(() => undefined);
  }
}

const perDirectory = new Map<string, { readonly url: string; drop(): Promise<void> }>();
let dropAtExit = false;

/**
 * The database a test server with data directory `dir` uses under TEST_STORE=postgres: created
 * on first use, the same one for a restart on the same directory. Dropped by `drop()` or, for
 * those a test kept (its own directory), when the test process has nothing left to do.
 */
export async function databaseFor(dir: string): Promise<{ readonly url: string; drop(): Promise<void> }> {
  const known = perDirectory.get(dir);
  if (known !== undefined) return known;
  const name = `openspot_test_${randomBytes(6).toString('hex')}`;
  await admin((c) => c.query(`CREATE DATABASE ${name}`));
  const entry = {
    url: withDatabase(adminUrl(), name),
    async drop() {
      if (perDirectory.get(dir) !== entry) return;
      perDirectory.delete(dir);
      await admin((c) => c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`));
    },
  };
  perDirectory.set(dir, entry);
  if (!dropAtExit) {
    dropAtExit = true;
    // 'beforeExit' may start asynchronous work: the databases still kept are dropped, once.
    process.once('beforeExit', () => {
      void Promise.allSettled([...perDirectory.values()].map((d) => d.drop()));
    });
  }
  return entry;
}

/**
 * Ends the server sessions of `url`'s database whose application_name is `applicationName`: their
 * connections drop (and a writer's advisory lock with them), as when the engine's host vanishes.
 */
export async function terminateSessions(url: string, applicationName: string): Promise<void> {
  await queryDatabase(
    url,
    'SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1 AND datname = current_database()',
    [applicationName],
  );
}
