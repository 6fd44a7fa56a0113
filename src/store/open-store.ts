/**
 * The store the configuration selects, behind the asynchronous ports: PostgreSQL when
 * DATABASE_URL is set, otherwise SQLite in DATA_DIR (or in memory), as by default. One place for
 * the choice, so the composition root only opens "the store".
 */
import { join } from 'node:path';
import type { Config } from '../config/config.js';
import { asyncStore } from './async-store.js';
import type { AsyncStore } from './ports.js';
import { PostgresStore } from './postgres/postgres-store.js';
import { PostgresReader } from './postgres/reader.js';
import { lockDataDir } from './sqlite/data-dir-lock.js';
import { openWithReserve } from './sqlite/disk-reserve.js';
import { JournaledSqliteStore, reservePathOf } from './sqlite/journaled-store.js';
import { SqliteStore } from './sqlite/sqlite-store.js';

export type StoreSettings = Pick<Config, 'databaseUrl' | 'dataDir' | 'sqliteSynchronous'> &
  Partial<Pick<Config, 'databaseCommitTimeoutMs' | 'sqliteJournalBatches'>>;

export interface OpenedStore {
  readonly kind: 'sqlite' | 'postgres';
  readonly store: AsyncStore;
}

/** A standby engine's wait for the writer lock (PostgreSQL only; see PostgresStoreOptions). */
export interface StandbySettings {
  /** Ends the wait: the open rejects with the signal's reason. */
  readonly signal?: AbortSignal;
  /** Told who holds the lock when the wait starts: for the log. */
  readonly onLockWait?: (holder: string) => void;
  /** How often to try the lock (PostgresStoreOptions.lockPollMs). */
  readonly lockPollMs?: number;
}

/**
 * Opens the configured store. PostgreSQL: connects, takes the writer lock (refusing, with the
 * holder's name, when another engine has it; waiting for it with `standby`) and migrates. An
 * in-memory server never uses PostgreSQL: asking for both is refused rather than silently
 * ignoring one.
 */
export async function openConfiguredStore(
  settings: StoreSettings,
  inMemory = false,
  standby?: StandbySettings,
  /** PostgreSQL: another engine wrote while this one was disconnected (PostgresStoreOptions). */
  onSuperseded?: (message: string) => void,
): Promise<OpenedStore> {
  if (settings.databaseUrl !== undefined) {
    if (inMemory) throw new Error('an in-memory server cannot use DATABASE_URL: unset one of them');
    const wait = standby === undefined ? {} : { waitForLock: true, ...standby };
    return {
      kind: 'postgres',
      store: await PostgresStore.open({
        url: settings.databaseUrl,
        ...wait,
        onSuperseded,
        ...(settings.databaseCommitTimeoutMs === undefined
          ? {}
          : { commitTimeoutMs: settings.databaseCommitTimeoutMs }),
      }),
    };
  }
  if (standby !== undefined)
    throw new Error(
      'a standby engine needs DATABASE_URL: it waits for the writer lock of a PostgreSQL database (an SQLite store belongs to one process)',
    );
  if (inMemory)
    // Checkpoints are kept in memory too: nothing is written to DATA_DIR.
    return { kind: 'sqlite', store: asyncStore(SqliteStore.open({ path: ':memory:' })) };
  // Before the database is touched: a second process on this DATA_DIR is refused, naming the first.
  const lock = lockDataDir(settings.dataDir);
  let sqlite: JournaledSqliteStore;
  try {
    sqlite = openJournaledSqlite(settings);
  } catch (error) {
    lock.release();
    throw error;
  }
  const store: AsyncStore = { ...asyncStore(sqlite), commit: (batch) => sqlite.commitAsync(batch) };
  return {
    kind: 'sqlite',
    store: {
      ...store,
      close: async () => {
        try {
          await store.close();
        } finally {
          lock.release();
        }
      },
    },
  };
}

/**
 * A gateway's store: the engine's PostgreSQL database, read (and credentials written) without
 * the writer lock, never migrated (reader.ts). Refused without DATABASE_URL: an SQLite store
 * belongs to the one process that opened it.
 */
export async function openGatewayStore(settings: Pick<Config, 'databaseUrl'>): Promise<PostgresReader> {
  if (settings.databaseUrl === undefined)
    throw new Error("a gateway needs DATABASE_URL: it reads the engine's PostgreSQL database");
  return PostgresReader.open({ url: settings.databaseUrl });
}

/**
 * DATA_DIR's database behind its commit journal (sqlite/journaled-store.ts), the journaled commits
 * the tables lack written first; the reserve's room is given back should opening need it.
 */
function openJournaledSqlite(settings: StoreSettings): JournaledSqliteStore {
  const path = join(settings.dataDir, 'openspot.db');
  const tables = openWithReserve(reservePathOf(path), () =>
    SqliteStore.open({
      path,
      synchronous: settings.sqliteSynchronous,
      checkpointDir: join(settings.dataDir, 'checkpoints'),
    }),
  );
  try {
    return JournaledSqliteStore.open(tables, path, {
      sync: settings.sqliteSynchronous === 'FULL',
      ...(settings.sqliteJournalBatches === undefined ? {} : { projectEvery: settings.sqliteJournalBatches }),
    });
  } catch (error) {
    tables.close();
    throw error;
  }
}
