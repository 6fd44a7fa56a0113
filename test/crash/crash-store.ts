/**
 * Where the crash scenario's server keeps its state, and how the test reads it back on its own:
 *
 * - `sqlite`: DATA_DIR/openspot.db, read through a private copy of the file (committed-state.ts);
 * - `postgres`: a fresh database with a random name on the server TEST_DATABASE_URL names
 *   (test/support/postgres.ts), read with the test's own SQL (committed-state-postgres.ts), and
 *   dropped at the end.
 *
 * And, on PostgreSQL, the database going away while the server runs (`outage`): the whole cluster
 * restarted (`pg_ctlcluster … restart`, which breaks every other user of the cluster: the long
 * soak only), or only this database's connections ended with `pg_terminate_backend` and new
 * ones refused for a while (`ALTER DATABASE … ALLOW_CONNECTIONS false`), which touches nothing
 * but the test's own database and is safe beside other suites.
 */
import { execFile } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import { databaseFor, TEST_DATABASE_URL } from '../support/postgres.js';
import { type Committed, readCommitted } from './committed-state.js';
import { readCommittedPostgres } from './committed-state-postgres.js';

export type StoreKind = 'sqlite' | 'postgres';

/**
 * - `restart`: `pg_ctlcluster <version> main restart` (every database of the cluster);
 * - `terminate`: this database's sessions ended, connections refused for `blockMs`, then allowed.
 */
export type OutageKind = 'restart' | 'terminate';

export interface CrashStore {
  readonly kind: StoreKind;
  /** Added to the server's environment. */
  readonly env: Readonly<Record<string, string>>;
  /** The committed state, read independently of the server (which must be gone, or idle). */
  read(): Promise<Committed>;
  /**
   * After a SIGKILL: waits until nothing of the dead server is left that could still commit or
   * hold the writer lock (on PostgreSQL, its sessions linger until the server notices the closed
   * socket). Nothing to wait for on SQLite.
   */
  settle(): Promise<void>;
  /** Makes the database go away and come back; resolves once it accepts connections again. */
  outage(kind: OutageKind, blockMs: number): Promise<void>;
  /** Drops what the run created (the database; the data directory is the caller's). */
  dispose(): Promise<void>;
}

export async function openCrashStore(kind: StoreKind, dataDir: string): Promise<CrashStore> {
  if (kind === 'sqlite') {
    const dbFile = join(dataDir, 'openspot.db');
    return {
      kind,
      env: {},
      read: async () => readCommitted(dbFile),
      settle: async () => undefined,
      outage: async () => {
        throw new Error('database outages are a PostgreSQL scenario');
      },
      dispose: async () => undefined,
    };
  }
  if (TEST_DATABASE_URL === undefined)
    throw new Error('TEST_DATABASE_URL is not set: the PostgreSQL crash scenario needs a server to use');
  const database = await databaseFor(dataDir);
  const name = new URL(database.url).pathname.slice(1);
  const others = `SELECT pid FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()`;
  return {
    kind,
    env: { DATABASE_URL: database.url },
    read: () => readCommittedPostgres(database.url),
    async settle() {
      const deadline = Date.now() + 30_000;
      while ((await adminQuery(others, [name])).length > 0) {
        if (Date.now() > deadline) throw new Error(`the killed server's sessions on ${name} did not end`);
        await sleep(50);
      }
    },
    async outage(outage, blockMs) {
      if (outage === 'restart') {
        await restartCluster();
        return;
      }
      await adminQuery(`ALTER DATABASE ${name} ALLOW_CONNECTIONS false`);
      try {
        await adminQuery(`SELECT pg_terminate_backend(pid) FROM (${others}) s`, [name]);
        await sleep(blockMs);
      } finally {
        await adminQuery(`ALTER DATABASE ${name} ALLOW_CONNECTIONS true`);
      }
    },
    async dispose() {
      await waitForCluster();
      // ALLOW_CONNECTIONS is set back in `outage`'s finally; the drop forces out what is left.
      await database.drop();
    },
  };
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** One statement on the administration database, retried while the cluster restarts. */
async function adminQuery(text: string, values?: unknown[]): Promise<pg.QueryResultRow[]> {
  if (TEST_DATABASE_URL === undefined) throw new Error('TEST_DATABASE_URL is not set');
  for (let attempt = 0; ; attempt++) {
    const client = new pg.Client({ connectionString: TEST_DATABASE_URL, connectionTimeoutMillis: 5000 });
    client.on('error', () => undefined);
    try {
      await client.connect();
      return (await client.query(text, values)).rows;
    } catch (error) {
      const code = (error as { code?: string }).code;
      const transient =
        code === 'ECONNREFUSED' || code === '57P03' || code === '57P01' || code === 'ECONNRESET';
      if (!transient || attempt >= 60) throw error;
      await sleep(500);
    } finally {
      await client.end().catch(() => undefined);
    }
  }
}

/** The local cluster's version (/etc/postgresql/<version>/main), newest when there are several. */
export function clusterVersion(): string {
  const versions = readdirSync('/etc/postgresql').sort((a, b) => Number(a) - Number(b));
  const version = versions.at(-1);
  if (version === undefined) throw new Error('no PostgreSQL cluster in /etc/postgresql');
  return version;
}

/** `pg_ctlcluster <version> main restart`; then waits until it accepts connections. */
export async function restartCluster(): Promise<void> {
  await promisify(execFile)('pg_ctlcluster', [
    '--skip-systemctl-redirect',
    clusterVersion(),
    'main',
    'restart',
  ]);
  await waitForCluster();
}

/**
 * Waits until the cluster accepts connections; starts it if it is down (a restart interrupted by
 * a failing test must not leave it stopped for everyone else).
 */
export async function waitForCluster(): Promise<void> {
  const ready = async () => {
    try {
      await promisify(execFile)('pg_isready', ['-h', '127.0.0.1', '-q']);
      return true;
    } catch {
      return false;
    }
  };
  for (let i = 0; i < 60; i++) {
    if (await ready()) return;
    if (i === 10)
      await promisify(execFile)('pg_ctlcluster', [
        '--skip-systemctl-redirect',
        clusterVersion(),
        'main',
        'start',
      ]).catch(() => undefined);
    await sleep(500);
  }
  throw new Error('PostgreSQL did not come back (pg_isready -h 127.0.0.1)');
}
