/**
 * What only the PostgreSQL store has: the one-writer lock, reconnection after the database drops
 * a connection, its migrations, and its refusal of checkpoints. Skipped, visibly, without
 * TEST_DATABASE_URL (test/support/postgres.ts).
 */
import assert from 'node:assert/strict';
import { hostname } from 'node:os';
import { describe, test } from 'node:test';
import pg from 'pg';
import type { OrderId } from '../../src/domain/types.js';
import { arrayLiteral } from '../../src/store/postgres/commit-sql.js';
import { WriterLockHeldError } from '../../src/store/postgres/lock.js';
import { migratePostgres, PG_MIGRATIONS, PG_SCHEMA_VERSION } from '../../src/store/postgres/migrations.js';
import { PostgresStore } from '../../src/store/postgres/postgres-store.js';
import { MIGRATIONS as SQLITE_MIGRATIONS } from '../../src/store/sqlite/migrations.js';
import { ALICE, balance, batch, CATALOGUE, EUR, order } from '../../src/store/sqlite/test-fixtures.js';
import { CheckpointError, StoreUnavailableError } from '../../src/store/store.js';
import {
  freshDatabase,
  postgresSuite,
  queryDatabase,
  TEST_DATABASE_URL,
  terminateSessions,
} from '../support/postgres.js';

interface Cleanup {
  after(fn: () => unknown): void;
}

async function openStore(t: Cleanup, url: string, applicationName?: string): Promise<PostgresStore> {
  const store = await PostgresStore.open({
    url,
    ...(applicationName === undefined ? {} : { applicationName }),
  });
  t.after(() => store.close());
  return store;
}

describe('PostgreSQL store: one writer', postgresSuite(), () => {
  test('a second engine on the same database refuses to open, naming the holder, and writes nothing', async (t) => {
    const url = await freshDatabase(t);
    const first = await openStore(t, url);
    await first.commit(batch({ ...CATALOGUE, balances: [balance(ALICE, EUR, 5)] }));

    const refused = await PostgresStore.open({ url }).then(
      (second) => second.close().then(() => undefined),
      (error: unknown) => error,
    );
    assert.ok(refused instanceof WriterLockHeldError, String(refused));
    // The holder as pg_stat_activity shows it: this process, by pid and host.
    assert.match(
      refused.message,
      new RegExp(`openspot engine pid=${process.pid} host=${hostname().slice(0, 20)}`),
    );
    assert.match(refused.message, /already has a writer/);
    assert.deepEqual((await first.loadSnapshot()).balances, [balance(ALICE, EUR, 5)]);

    // Once the first closes (its session, and so the lock, ends), another writer may open.
    await first.close();
    const next = await openStore(t, url);
    assert.deepEqual((await next.loadSnapshot()).balances, [balance(ALICE, EUR, 5)]);
  });

  test('a writer whose connection was killed reconnects, retakes the lock at the next commit, and commits', async (t) => {
    const url = await freshDatabase(t);
    const store = await openStore(t, url, 'openspot test writer A');
    await store.commit(batch({ ...CATALOGUE, orders: [order(1)] }));
    await terminateSessions(url, 'openspot test writer A');
    // The lock went with the session: the next commit first takes it again on a new connection.
    let committed = false;
    for (let attempt = 0; attempt < 3 && !committed; attempt++) {
      try {
        await store.commit(batch({ orders: [order(2)] }));
        committed = true;
      } catch (error) {
        // The commit racing the termination may fail once, as 503, having written nothing.
        assert.ok(error instanceof StoreUnavailableError, String(error));
      }
    }
    assert.ok(committed);
    assert.equal((await store.getOrder(2 as OrderId))?.id, 2);
    const holders = await queryDatabase<{ n: number }>(
      url,
      // This database's only: suites running beside this one hold their own.
      `SELECT count(*)::int AS n FROM pg_locks WHERE locktype = 'advisory' AND granted
       AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`,
    );
    assert.equal(holders[0]?.n, 1);
  });

  test('while another engine holds the lock a writer that lost its connection gets 503 naming it, never writes again', async (t) => {
    const url = await freshDatabase(t);
    const a = await openStore(t, url, 'openspot test writer A');
    await a.commit(batch(CATALOGUE));
    await terminateSessions(url, 'openspot test writer A');
    // B takes over while A is away.
    const b = await openStore(t, url, 'openspot test writer B');
    const failure = await a.commit(batch({ orders: [order(7)] })).then(
      () => undefined,
      (error: unknown) => error,
    );
    assert.ok(failure instanceof StoreUnavailableError, String(failure));
    assert.match(failure.message, /openspot test writer B/);
    assert.equal(failure.reason, 'another engine took over');
    assert.equal(await b.getOrder(7 as OrderId), undefined);
  });

  test('a commit left without an answer times out as unavailable, is aborted on the server, and the next commit goes through', async (t) => {
    const url = await freshDatabase(t);
    const store = await PostgresStore.open({ url, commitTimeoutMs: 300 });
    t.after(() => store.close());
    await store.commit(batch({ ...CATALOGUE, orders: [order(1)] }));
    // Another session blocks the commit: it waits on a table lock, as it would behind a stalled server.
    const blocker = new pg.Client({ connectionString: url });
    blocker.on('error', () => undefined);
    await blocker.connect();
    await blocker.query('BEGIN');
    await blocker.query('LOCK TABLE meta IN ACCESS EXCLUSIVE MODE');
    await assert.rejects(store.commit(batch({ orders: [order(2)] })), StoreUnavailableError);
    await blocker.query('COMMIT');
    await blocker.end();
    await store.commit(batch({ orders: [order(3)] }));
    // The timed-out statement was aborted, not left to commit once the lock was released.
    assert.equal(await store.getOrder(2 as OrderId), undefined);
    assert.equal((await store.getOrder(3 as OrderId))?.id, 3);
  });

  test('readers survive their connections being killed', async (t) => {
    const url = await freshDatabase(t);
    const store = await openStore(t, url);
    await store.commit(batch({ ...CATALOGUE, orders: [order(1)] }));
    await store.getOrder(1 as OrderId);
    await queryDatabase(
      url,
      "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name LIKE 'openspot reader%' AND datname = current_database()",
    );
    await new Promise((resolve) => setTimeout(resolve, 100));
    assert.equal((await store.getOrder(1 as OrderId))?.id, 1);
  });

  test('an unreachable server fails with StoreUnavailableError', async () => {
    const failure = await PostgresStore.open({
      url: 'postgres://postgres@127.0.0.1:1/openspot',
      connectTimeoutMs: 2000,
    }).then(
      () => undefined,
      (error: unknown) => error,
    );
    assert.ok(failure instanceof StoreUnavailableError, String(failure));
    assert.equal(failure.reason, 'database unreachable');
  });

  test('a database that refuses connections is unavailable (with that reason), and commits resume once it allows them', async (t) => {
    const url = await freshDatabase(t);
    const name = new URL(url).pathname.slice(1);
    const store = await openStore(t, url, 'openspot test refused');
    await store.commit(batch({ ...CATALOGUE, orders: [order(1)] }));
    // ALLOW_CONNECTIONS false answers new connections with SQLSTATE 55000, a class that otherwise
    // means a caller's mistake: it must still be an outage (503), not an unexpected error (500).
    await queryDatabase(TEST_DATABASE_URL!, `ALTER DATABASE ${name} ALLOW_CONNECTIONS false`); // the drop at the end forces it anyway
    await queryDatabase(
      TEST_DATABASE_URL!,
      'SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1',
      [name],
    );
    for (const attempt of [
      () => store.commit(batch({ orders: [order(2)] })),
      () => store.getOrder(1 as OrderId),
    ]) {
      const failure = await attempt().then(
        () => undefined,
        (error: unknown) => error,
      );
      assert.ok(failure instanceof StoreUnavailableError, String(failure));
      assert.equal(failure.reason, 'database refuses connections');
    }
    await queryDatabase(TEST_DATABASE_URL!, `ALTER DATABASE ${name} ALLOW_CONNECTIONS true`);
    await store.commit(batch({ orders: [order(3)] }));
    assert.equal((await store.getOrder(3 as OrderId))?.id, 3);
    assert.equal(await store.getOrder(2 as OrderId), undefined);
  });
});

describe("PostgreSQL store: the commit's array parameters", postgresSuite(), () => {
  test('PostgreSQL reads back exactly the values the array literals were made of', async () => {
    const texts = ['buy', '', 'NULL', 'null', 'a,b}{ c', 'say "hi"', 'back\\slash\\', '\\"', 'é ü 💱', ' x '];
    const numbers = [0, 1, -1, 9007199254740991, -9007199254740991];
    const rows = await queryDatabase<{ t: (string | null)[]; n: (string | null)[]; b: boolean[] }>(
      TEST_DATABASE_URL!,
      'SELECT $1::text[] AS t, $2::bigint[] AS n, $3::boolean[] AS b',
      [arrayLiteral([...texts, null]), arrayLiteral([...numbers, null]), arrayLiteral([true, false])],
    );
    assert.deepEqual(rows[0]?.t, [...texts, null]);
    assert.deepEqual(rows[0]?.n, [...numbers.map(String), null]);
    assert.deepEqual(rows[0]?.b, [true, false]);
  });
});

describe('PostgreSQL store: schema', postgresSuite(), () => {
  test('the migrations carry the SQLite schema versions, applied once, recorded', async (t) => {
    // A new SQLite migration without its PostgreSQL twin fails here.
    assert.deepEqual(
      PG_MIGRATIONS.map((m) => m.version),
      SQLITE_MIGRATIONS.map((m) => m.version),
    );
    const url = await freshDatabase(t);
    const store = await openStore(t, url);
    await store.close();
    await (await openStore(t, url)).close();
    const rows = await queryDatabase<{ version: number }>(
      url,
      'SELECT version FROM schema_migrations ORDER BY version',
    );
    assert.deepEqual(
      rows.map((r) => r.version),
      PG_MIGRATIONS.map((m) => m.version),
    );
    // Money columns: integers and exact decimals only, never a floating-point type.
    const floats = await queryDatabase<{ column_name: string }>(
      url,
      "SELECT table_name || '.' || column_name AS column_name FROM information_schema.columns WHERE table_schema = 'public' AND data_type IN ('real', 'double precision')",
    );
    assert.deepEqual(floats, []);
  });

  test('v9 upgrades a v8 database: its orders stay as they were; conditional orders can be written', async (t) => {
    const url = await freshDatabase(t);
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    try {
      await migratePostgres(client, PG_MIGRATIONS.slice(0, 8));
      await client.query(`
        INSERT INTO assets (code, name, type, decimals, position) VALUES ('BTC', 'Bitcoin', 'crypto', 8, 1), ('EUR', 'Euro', 'fiat', 4, 2);
        INSERT INTO markets (id, base, quote, pair_decimals, lot_decimals, ordermin, maker_fee, taker_fee)
          VALUES (1, 'BTC', 'EUR', 1, 8, 1, 0, 0);
        INSERT INTO orders (id, user_id, market_id, side, type, price, volume, executed, status, reason, open_time,
            close_time, cost, fee, reserved, client_order_id)
          VALUES (1, 1, 1, 'buy', 'limit', 5000, 10, 0, 'open', NULL, 7, NULL, 0, 0, 5, 'keep-me');
      `);
    } finally {
      await client.end();
    }
    const store = await openStore(t, url);
    const [open] = (await store.loadSnapshot()).openOrders;
    assert.equal(open?.type, 'limit');
    assert.equal(open?.clientOrderId, 'keep-me');
    assert.equal(open?.triggerPrice, undefined);
    assert.equal(open?.triggered, undefined);
    const stop = order(2, {
      type: 'trailing-stop',
      price: 0 as never,
      triggerPrice: 4_900 as never,
      trailingOffset: { unit: 'bps', amount: 200 },
      trailingBest: 5_000 as never,
    });
    await store.commit(batch({ orders: [stop] }));
    assert.deepEqual(await store.getOrder(2 as OrderId), stop);
  });

  test('a role with the documented data grants only runs on a migrated schema, and is told to migrate a fresh one', async (t) => {
    const url = await freshDatabase(t);
    const fresh = await freshDatabase(t);
    await (await openStore(t, url)).close(); // migrated by the owner
    const role = `openspot_app_${process.pid}_${Date.now()}`;
    const database = new URL(url).pathname.slice(1);
    // As docs/operations.md ("Roles and grants") says.
    for (const sql of [
      `CREATE ROLE ${role} LOGIN`,
      `GRANT CONNECT ON DATABASE ${database} TO ${role}`,
      `GRANT USAGE ON SCHEMA public TO ${role}`,
      `GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO ${role}`,
      `GRANT USAGE ON ALL SEQUENCES IN SCHEMA public TO ${role}`,
    ])
      await queryDatabase(url, sql);
    t.after(async () => {
      for (const db of [url, fresh]) await queryDatabase(db, `DROP OWNED BY ${role}`).catch(() => undefined);
      await queryDatabase(TEST_DATABASE_URL ?? url, `DROP ROLE IF EXISTS ${role}`);
    });
    const as = (target: string) => {
      const u = new URL(target);
      u.username = role;
      return u.toString();
    };
    const store = await openStore(t, as(url));
    await store.commit(batch({ ...CATALOGUE, orders: [order(1)] }));
    const user = await store.createUser(null, 1 as never);
    await store.createApiKey({
      key: 'k',
      userId: user.id,
      sealedSecret: 's',
      scopes: ['read'],
      createdAt: 1 as never,
      revokedAt: null,
    });
    assert.equal(await store.acceptNonce('k', '1'), true);
    await store.close();
    await assert.rejects(
      PostgresStore.open({ url: as(fresh) }),
      /run `openspot db migrate` as the database owner/,
    );
  });

  test('a database written by a newer release is refused', async (t) => {
    const url = await freshDatabase(t);
    await (await openStore(t, url)).close();
    await queryDatabase(
      url,
      "INSERT INTO schema_migrations (version, description) VALUES ($1, 'from the future')",
      [PG_SCHEMA_VERSION + 1],
    );
    await assert.rejects(PostgresStore.open({ url }), /newer than this release supports/);
  });
});

describe('PostgreSQL store: checkpoints', postgresSuite(), () => {
  test('are refused with a clear message; none are listed', async (t) => {
    const store = await openStore(t, await freshDatabase(t));
    await assert.rejects(
      store.saveCheckpoint('x', 1 as never),
      (error: unknown) =>
        error instanceof CheckpointError && /not supported on the PostgreSQL store/.test(error.message),
    );
    await assert.rejects(store.restoreCheckpoint('x'), CheckpointError);
    assert.deepEqual(await store.listCheckpoints(), []);
    assert.equal(await store.deleteCheckpoint('x'), false);
    // Declared, so the server says so at start and on reset instead of trying.
    assert.equal(store.capabilities.checkpoints, false);
    assert.match(
      store.capabilities.checkpoints ? '' : store.capabilities.why,
      /not available on the PostgreSQL store yet/,
    );
  });
});
