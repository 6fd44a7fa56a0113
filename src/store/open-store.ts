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
import { SqliteStore } from './sqlite/sqlite-store.js';

export type StoreSettings = Pick<Config, 'databaseUrl' | 'dataDir' | 'sqliteSynchronous'>;

export interface OpenedStore {
  readonly kind: 'sqlite' | 'postgres';
  readonly store: AsyncStore;
}

/**
 * Opens the configured store. PostgreSQL: connects, takes the writer lock (refusing, with the
 * holder's name, when another engine has it) and migrates. An in-memory server never uses
 * PostgreSQL: asking for both is refused rather than silently ignoring one.
 */
export async function openConfiguredStore(settings: StoreSettings, inMemory = false): Promise<OpenedStore> {
  if (settings.databaseUrl !== undefined) {
    if (inMemory) throw new Error('an in-memory server cannot use DATABASE_URL: unset one of them');
    return { kind: 'postgres', store: await PostgresStore.open({ url: settings.databaseUrl }) };
  }
  const sqlite = SqliteStore.open({
    path: inMemory ? ':memory:' : join(settings.dataDir, 'openspot.db'),
    synchronous: settings.sqliteSynchronous,
    // In memory, checkpoints are kept in memory too (nothing is written to DATA_DIR).
    ...(inMemory ? {} : { checkpointDir: join(settings.dataDir, 'checkpoints') }),
  });
  return { kind: 'sqlite', store: asyncStore(sqlite) };
}
