/**
 * `openspot db copy --from FILE --to URL`: moves a venue from SQLite (src/store/postgres/copy.ts).
 *
 * `openspot db migrate`: brings the PostgreSQL schema that DATABASE_URL names up to this release's
 * version and does nothing else (no server, no writer lock: a running engine is not disturbed; a
 * concurrent start waits on the migration lock, then finds the schema current). The server also
 * migrates at start; this lets an operator do it as a separate, reviewed step of a deployment.
 */
import type { Command } from 'commander';
import pg from 'pg';
import { databaseName, EXACT_TYPES, parseDatabaseUrl, redactUrl } from '../store/postgres/connection.js';
import { copySqliteToPostgres } from '../store/postgres/copy.js';
import { migratePostgres, PG_MIGRATIONS, PG_SCHEMA_VERSION } from '../store/postgres/migrations.js';

export interface MigrateReport {
  readonly database: string;
  readonly applied: number[];
  readonly version: number;
}

/** Runs the migrations against `url`; the report says which versions were applied. */
export async function migrateDatabase(url: string): Promise<MigrateReport> {
  const client = new pg.Client({
    connectionString: parseDatabaseUrl(url),
    application_name: `openspot db migrate pid=${process.pid}`,
    connectionTimeoutMillis: 10_000,
    types: EXACT_TYPES,
  });
  client.on('error', () => undefined);
  try {
    await client.connect();
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    throw new Error(`cannot connect to ${redactUrl(url)}: ${reason}`, { cause: error });
  }
  try {
    const applied = await migratePostgres(client);
    return { database: databaseName(url), applied, version: PG_SCHEMA_VERSION };
  } finally {
    await client.end().catch(() => undefined);
  }
}

export function registerDbCommands(program: Command, json: () => boolean): void {
  const db = program.command('db').description('the PostgreSQL database named by DATABASE_URL');
  db.command('migrate')
    .description(
      `apply the schema migrations (up to version ${PG_SCHEMA_VERSION}) to $DATABASE_URL, and nothing else`,
    )
    .action(async () => {
      const url = process.env.DATABASE_URL?.trim();
      if (url === undefined || url === '')
        throw new Error('DATABASE_URL is not set (postgres://user@host:5432/database)');
      const report = await migrateDatabase(url);
      const described = report.applied.map(
        (v) => `  ${v}: ${PG_MIGRATIONS.find((m) => m.version === v)?.description ?? ''}`,
      );
      const text =
        report.applied.length === 0
          ? `database ${report.database} is up to date (schema version ${report.version})`
          : `database ${report.database} migrated to schema version ${report.version}; applied:\n${described.join('\n')}`;
      process.stdout.write(`${json() ? JSON.stringify(report, null, 2) : text}\n`);
    });

  db.command('copy')
    .description(
      'copy a venue from a SQLite database file to an empty PostgreSQL database, then compare them',
    )
    .requiredOption('--from <file>', 'the SQLite database (DATA_DIR/openspot.db); stop its server first')
    .requiredOption('--to <url>', 'postgres://… of an empty database')
    .action(async (o: { from: string; to: string }) => {
      const report = await copySqliteToPostgres(o.from, o.to);
      const rows = Object.entries(report.rows).map(([table, n]) => `  ${table}: ${n}`);
      const text = `copied ${o.from} to ${report.to}\n${rows.join('\n')}\nverified (engine state and row counts equal): ${report.verified ? 'yes' : 'NO'}`;
      process.stdout.write(`${json() ? JSON.stringify(report, null, 2) : text}\n`);
      if (!report.verified) process.exitCode = 3;
    });
}
