/**
 * The gateways' reader (src/store/postgres/reader.ts) beside the one writer: it sees what the
 * writer committed at once, shares the nonce rule with other readers through SQL alone, works
 * while the writer holds its lock, never migrates, and refuses a schema it does not know.
 * Skipped, visibly, without TEST_DATABASE_URL (test/support/postgres.ts).
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import type { OrderId } from '../../src/domain/types.js';
import { migratePostgres, PG_MIGRATIONS, PG_SCHEMA_VERSION } from '../../src/store/postgres/migrations.js';
import { PostgresStore } from '../../src/store/postgres/postgres-store.js';
import { PostgresReader, SchemaVersionError } from '../../src/store/postgres/reader.js';
import {
  ALICE,
  BOB,
  BTC,
  balance,
  batch,
  CATALOGUE,
  EUR,
  order,
  T0,
} from '../../src/store/sqlite/test-fixtures.js';
import type { NewApiKeyRecord } from '../../src/store/store.js';
import { freshDatabase, postgresSuite, queryDatabase } from '../support/postgres.js';

interface Cleanup {
  after(fn: () => unknown): void;
}

async function openWriter(t: Cleanup, url: string): Promise<PostgresStore> {
  const store = await PostgresStore.open({ url });
  t.after(() => store.close());
  return store;
}

async function openReader(t: Cleanup, url: string, apiKeyCacheMs?: number): Promise<PostgresReader> {
  const reader = await PostgresReader.open({
    url,
    ...(apiKeyCacheMs === undefined ? {} : { apiKeyCacheMs }),
  });
  t.after(() => reader.close());
  return reader;
}

const KEY: NewApiKeyRecord = {
  key: 'gateway-key',
  userId: ALICE,
  sealedSecret: 'sealed',
  scopes: ['read', 'trade'],
  createdAt: T0,
  revokedAt: null,
  nonceRequired: true,
};

describe('PostgreSQL reader (gateways)', postgresSuite(), () => {
  test('finds what the writer committed as soon as the commit returned, in its own pool', async (t) => {
    const url = await freshDatabase(t);
    const writer = await openWriter(t, url);
    await writer.commit(batch(CATALOGUE));
    const reader = await openReader(t, url);
    for (let id = 1; id <= 20; id++) {
      await writer.commit(
        batch({
          orders: [order(id)],
          balances: [balance(ALICE, EUR, 1000 - id, id), balance(ALICE, BTC, id)],
        }),
      );
      // No wait, no retry: read-your-writes after the commit returned.
      assert.equal((await reader.getOrder(id as OrderId))?.id, id);
      assert.deepEqual(await reader.balancesOf(ALICE), [
        balance(ALICE, BTC, id),
        balance(ALICE, EUR, 1000 - id, id),
      ]);
    }
    assert.equal(await reader.countOrders({ userId: ALICE, status: 'open' }), 20);
    assert.deepEqual(await reader.balancesOf(BOB), []);
  });

  test('two readers accepting the same nonces concurrently never both accept one', async (t) => {
    const url = await freshDatabase(t);
    const writer = await openWriter(t, url);
    await writer.commit(batch(CATALOGUE));
    const a = await openReader(t, url);
    const b = await openReader(t, url);
    const user = await a.createUser(null, T0);
    await a.createApiKey({ ...KEY, userId: user.id });
    const values = Array.from({ length: 60 }, (_, i) => String(i + 1));
    // Every value sent through both readers at once, all in flight together.
    const outcomes = await Promise.all(
      values.map(async (nonce) => {
        const [viaA, viaB] = await Promise.all([
          a.acceptNonce(KEY.key, nonce),
          b.acceptNonce(KEY.key, nonce),
        ]);
        return { nonce, viaA, viaB };
      }),
    );
    for (const { nonce, viaA, viaB } of outcomes)
      assert.ok(!(viaA && viaB), `nonce ${nonce} accepted by both gateways`);
    // The largest one has nothing greater racing it: exactly one reader accepted it.
    const last = outcomes.at(-1);
    assert.ok(last !== undefined && last.viaA !== last.viaB);
    const [row] = await queryDatabase<{ last_nonce: string }>(
      url,
      'SELECT last_nonce::text AS last_nonce FROM api_keys WHERE key = $1',
      [KEY.key],
    );
    assert.equal(row?.last_nonce, '60');
    assert.equal(await a.acceptNonce(KEY.key, '60'), false);
    assert.equal(await b.acceptNonce(KEY.key, '61'), true);
  });

  test('works while the writer holds its lock, and never takes or waits for it', async (t) => {
    const url = await freshDatabase(t);
    const writer = await openWriter(t, url);
    await writer.commit(batch({ ...CATALOGUE, orders: [order(1)] }));
    const started = performance.now();
    const reader = await openReader(t, url);
    const user = await reader.createUser('gw@example.com', T0);
    assert.deepEqual(await writer.getUser(user.id), user);
    assert.equal((await reader.getOrder(1 as OrderId))?.id, 1);
    assert.ok(performance.now() - started < 5000);
    // Only the writer's session holds an advisory lock.
    const locks = await queryDatabase<{ application_name: string }>(
      url,
      `SELECT a.application_name FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
       WHERE l.locktype = 'advisory' AND l.granted AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())`,
    );
    assert.equal(locks.length, 1);
    assert.match(locks[0]?.application_name ?? '', /^openspot engine/);
    // Engine state cannot be written through a reader: it has no commit log at all.
    // @ts-expect-error PostgresReader exposes no CommitLog method.
    assert.equal(typeof reader.commit, 'undefined');
    // @ts-expect-error nor loadSnapshot: a gateway's books come from the engine, not from here.
    assert.equal(typeof reader.loadSnapshot, 'undefined');
  });

  test('a key revoked through another process stops authenticating within the cache time', async (t) => {
    const url = await freshDatabase(t);
    const writer = await openWriter(t, url);
    await writer.commit(batch(CATALOGUE));
    const a = await openReader(t, url, 200);
    const b = await openReader(t, url, 200);
    const user = await b.createUser(null, T0);
    await a.createApiKey({ ...KEY, userId: user.id, nonceRequired: false });
    assert.equal((await b.getApiKey(KEY.key))?.revokedAt, null);
    assert.equal(await a.revokeApiKey(KEY.key, T0), true);
    await sleep(250);
    assert.equal((await b.getApiKey(KEY.key))?.revokedAt, T0);
  });

  test('refuses a database without the schema, and never creates it', async (t) => {
    const url = await freshDatabase(t);
    const refused = await PostgresReader.open({ url }).then(
      (r) => r.close().then(() => undefined),
      (error: unknown) => error,
    );
    assert.ok(refused instanceof SchemaVersionError, String(refused));
    assert.match(refused.message, /has no OpenSpot schema.*openspot db migrate.*a gateway never migrates/);
    const [tables] = await queryDatabase<{ n: number }>(
      url,
      "SELECT count(*)::int AS n FROM pg_tables WHERE schemaname = 'public'",
    );
    assert.equal(tables?.n, 0);
  });

  test('refuses an older schema (and leaves it as it is) and a newer one, each with what to do', async (t) => {
    const url = await freshDatabase(t);
    const client = new pg.Client({ connectionString: url });
    client.on('error', () => undefined);
    await client.connect();
    t.after(() => client.end().catch(() => undefined));
    await migratePostgres(client, PG_MIGRATIONS.slice(0, PG_SCHEMA_VERSION - 1));
    const older = await PostgresReader.open({ url }).then(
      () => undefined,
      (error: unknown) => error,
    );
    assert.ok(older instanceof SchemaVersionError, String(older));
    assert.equal(older.found, PG_SCHEMA_VERSION - 1);
    assert.match(
      older.message,
      new RegExp(`schema version ${PG_SCHEMA_VERSION - 1}, older than this release's`),
    );
    assert.match(older.message, /openspot db migrate/);
    const [version] = await queryDatabase<{ v: number }>(
      url,
      'SELECT max(version) AS v FROM schema_migrations',
    );
    assert.equal(version?.v, PG_SCHEMA_VERSION - 1);

    await migratePostgres(client);
    await client.query(
      "INSERT INTO schema_migrations (version, description) VALUES ($1, 'from the future')",
      [PG_SCHEMA_VERSION + 1],
    );
    const newer = await PostgresReader.open({ url }).then(
      () => undefined,
      (error: unknown) => error,
    );
    assert.ok(newer instanceof SchemaVersionError, String(newer));
    assert.match(newer.message, /newer than this release's.*upgrade this gateway/);
  });
});
