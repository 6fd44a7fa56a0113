/**
 * `openspot db migrate` against DATABASE_URL: applies the schema once, then reports it up to
 * date; refuses a URL that is not PostgreSQL's. Needs TEST_DATABASE_URL (skipped, visibly, without).
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { promisify } from 'node:util';
import { freshDatabase, postgresSuite, queryDatabase } from '../../test/support/postgres.js';
import { PG_SCHEMA_VERSION } from '../store/postgres/migrations.js';

const TSX = import.meta.resolve('tsx');
const CLI = join(import.meta.dirname, 'main.ts');
const run = promisify(execFile);

const migrate = (url: string, ...args: string[]) =>
  run(process.execPath, ['--import', TSX, CLI, ...args, 'db', 'migrate'], {
    env: { ...process.env, DATABASE_URL: url },
  });

describe('openspot db migrate', postgresSuite(), () => {
  test('migrates an empty database, then finds it up to date; the tables are there', async (t) => {
    const url = await freshDatabase(t);
    const first = await migrate(url);
    assert.match(first.stdout, new RegExp(`migrated to schema version ${PG_SCHEMA_VERSION}; applied:`));
    assert.match(first.stdout, /1: initial schema/);
    const again = JSON.parse((await migrate(url, '--json')).stdout) as { applied: number[]; version: number };
    assert.deepEqual(again, {
      database: new URL(url).pathname.slice(1),
      applied: [],
      version: PG_SCHEMA_VERSION,
    });
    const tables = await queryDatabase<{ n: number }>(
      url,
      "SELECT count(*)::int AS n FROM information_schema.tables WHERE table_schema = 'public' AND table_name IN ('orders', 'trades', 'balances', 'idempotency_keys')",
    );
    assert.equal(tables[0]?.n, 4);
  });
});

test('openspot db migrate refuses a URL that is not postgres://, without echoing it', async () => {
  await assert.rejects(
    migrate('mysql://root:hunter2@db/venue'),
    (error: { code: number; stderr: string }) => {
      assert.equal(error.code, 1);
      assert.match(error.stderr, /DATABASE_URL must start with postgres:\/\/ or postgresql:\/\//);
      assert.doesNotMatch(error.stderr, /hunter2/);
      return true;
    },
  );
});
