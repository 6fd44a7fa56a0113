/**
 * The PostgreSQL store as a gateway opens it: history, balances and credentials, and nothing
 * that writes engine state. Any number of readers may run beside the one engine:
 *
 * - it never takes (nor waits for) the writer lock, and has no commit: engine state written through
 *   a reader does not type-check, because the class has no `CommitLog` method to call;
 * - it never migrates: it refuses to open unless the schema is exactly the one this release knows
 *   (an older one is migrated by the engine or `openspot db migrate`, a newer one needs a newer
 *   gateway), so a gateway never reads columns that mean something else;
 * - what it writes (users, API keys, nonces) is one SQL statement each, atomic in PostgreSQL
 *   whatever the number of processes (queries.ts);
 * - a key revoked through another process stops working here within `apiKeyCacheMs`.
 *
 * Read-your-writes across processes: the engine acknowledges a command after its commit
 * returned, and a commit is visible to every new statement once it returned (READ COMMITTED), so
 * a read on any reader after the acknowledgment finds it. A streaming replica would lose that.
 */
import type pg from 'pg';
import type { BalanceQueries, CredentialStore, HistoryQueries } from '../ports.js';

import { databaseName, openReadPool, parseDatabaseUrl, toStoreError } from './connection.js';
import { readerApplicationName } from './lock.js';
import { PG_SCHEMA_VERSION, pgSchemaVersion } from './migrations.js';
import { PostgresQueries } from './queries.js';

export interface PostgresReaderOptions {
  /** postgres://user[:password]@host[:port]/database (DATABASE_URL, the engine's database). */
  readonly url: string;
  /** Connections of the pool (default 8: a gateway only reads). */
  readonly poolSize?: number;
  /** How long to wait for a connection, in milliseconds (default 5000). */
  readonly connectTimeoutMs?: number;
  /** Reported in pg_stat_activity; default `openspot reader pid=… host=…`. */
  readonly applicationName?: string;
  /**
   * How long an API key record read here is trusted, in milliseconds (default 500): a key revoked
   * through another gateway or the engine stops authenticating here within that time.
   */
  readonly apiKeyCacheMs?: number;
}

/** The schema is not the one this release reads: refused at open, before any query. */
export class SchemaVersionError extends Error {
  override readonly name = 'SchemaVersionError';
  constructor(
    message: string,
    readonly found: number,
    readonly expected: number,
  ) {
    super(message);
  }
}

export const DEFAULT_API_KEY_CACHE_MS = 500;

/** What a gateway may do with the database. Deliberately not `CommitLog`. */
export type GatewayStore = HistoryQueries & CredentialStore & BalanceQueries & { close(): Promise<void> };

export class PostgresReader extends PostgresQueries implements GatewayStore {
  readonly #database: string;

  private constructor(pool: pg.Pool, database: string, apiKeyCacheMs: number) {
    super(pool, apiKeyCacheMs);
    this.#database = database;
  }

  /**
   * Opens the pool and checks the schema version (one connection, one query). Throws
   * SchemaVersionError for a schema other than this release's, StoreUnavailableError when the
   * server cannot be reached.
   */
  static async open(options: PostgresReaderOptions): Promise<PostgresReader> {
    const url = parseDatabaseUrl(options.url);
    const apiKeyCacheMs = options.apiKeyCacheMs ?? DEFAULT_API_KEY_CACHE_MS;
    if (!(apiKeyCacheMs >= 0)) throw new RangeError(`invalid apiKeyCacheMs: ${apiKeyCacheMs}`);
    const pool = openReadPool({
      url,
      applicationName: options.applicationName ?? readerApplicationName(),
      size: options.poolSize ?? 8,
      connectTimeoutMs: options.connectTimeoutMs ?? 5000,
    });
    const database = databaseName(url);
    try {
      checkSchemaVersion(database, await pgSchemaVersion(pool));
    } catch (error) {
      await pool.end().catch(() => undefined);
      throw toStoreError(error);
    }
    return new PostgresReader(pool, database, apiKeyCacheMs);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.pool.end().catch(() => undefined);
  }

  /**
   * The sealed secret of the newest API key still in use (undefined: none): what a gateway opens
   * at start and now and then, to learn that its SECRETS_KEY is the engine's.
   */
  async newestSealedSecret(): Promise<string | undefined> {
    const [row] = await this.rows<{ sealed_secret: string }>(
      'SELECT sealed_secret FROM api_keys WHERE revoked_at IS NULL ORDER BY created_at DESC LIMIT 1',
    );
    return row?.sealed_secret;
  }

  /** For messages and tests: the database this reader reads. */
  get database(): string {
    return this.#database;
  }
}

/** Throws SchemaVersionError unless `found` is this release's schema version. */
export function checkSchemaVersion(database: string, found: number, expected = PG_SCHEMA_VERSION): void {
  if (found === expected) return;
  if (found === 0)
    throw new SchemaVersionError(
      `PostgreSQL database ${database} has no OpenSpot schema: start the engine (it migrates) or run \`openspot db migrate\` first; a gateway never migrates`,
      found,
      expected,
    );
  if (found < expected)
    throw new SchemaVersionError(
      `PostgreSQL database ${database} has schema version ${found}, older than this release's (${expected}): upgrade the engine first (it migrates) or run \`openspot db migrate\`; a gateway never migrates`,
      found,
      expected,
    );
  throw new SchemaVersionError(
    `PostgreSQL database ${database} has schema version ${found}, newer than this release's (${expected}): it was migrated by a newer release; upgrade this gateway to that release`,
    found,
    expected,
  );
}
