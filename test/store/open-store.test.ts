/** The configured store: SQLite without DATABASE_URL, PostgreSQL with it (needs TEST_DATABASE_URL). */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import type { OrderId } from '../../src/domain/types.js';
import { openConfiguredStore, openGatewayStore } from '../../src/store/open-store.js';
import { WriterLockHeldError } from '../../src/store/postgres/lock.js';
import { batch, CATALOGUE, order } from '../../src/store/sqlite/test-fixtures.js';
import { freshDatabase, postgresSuite } from '../support/postgres.js';

test('without DATABASE_URL: SQLite in DATA_DIR, through the asynchronous ports', async (t) => {
  const dataDir = mkdtempSync(join(tmpdir(), 'openspot-open-store-'));
  t.after(() => rmSync(dataDir, { recursive: true, force: true }));
  const opened = await openConfiguredStore({ databaseUrl: undefined, dataDir, sqliteSynchronous: 'FULL' });
  assert.equal(opened.kind, 'sqlite');
  await opened.store.commit(batch(CATALOGUE));
  assert.equal((await opened.store.loadSnapshot()).assets.length, 3);
  await opened.store.close();
  const again = await openConfiguredStore({ databaseUrl: undefined, dataDir, sqliteSynchronous: 'FULL' });
  assert.equal((await again.store.loadSnapshot()).markets.length, 2);
  await again.store.close();
});

test('DATABASE_URL with an in-memory server is refused', async () => {
  await assert.rejects(
    openConfiguredStore(
      { databaseUrl: 'postgres://x@127.0.0.1/y', dataDir: '/nonexistent', sqliteSynchronous: 'FULL' },
      true,
    ),
    /in-memory server cannot use DATABASE_URL/,
  );
});

test('with DATABASE_URL: PostgreSQL, one writer', postgresSuite(), async (t) => {
  const url = await freshDatabase(t);
  const settings = { databaseUrl: url, dataDir: '/nonexistent', sqliteSynchronous: 'FULL' as const };
  const opened = await openConfiguredStore(settings);
  t.after(() => opened.store.close());
  assert.equal(opened.kind, 'postgres');
  await opened.store.commit(batch(CATALOGUE));
  assert.equal((await opened.store.loadSnapshot()).assets.length, 3);
  await assert.rejects(openConfiguredStore(settings), WriterLockHeldError);
});

test('a standby engine and a gateway need DATABASE_URL', async () => {
  const sqlite = { databaseUrl: undefined, dataDir: '/nonexistent', sqliteSynchronous: 'FULL' as const };
  await assert.rejects(openConfiguredStore(sqlite, false, {}), /standby engine needs DATABASE_URL/);
  await assert.rejects(openGatewayStore(sqlite), /gateway needs DATABASE_URL/);
});

test(
  'with DATABASE_URL: a standby waits for the writer, a gateway reads beside it',
  postgresSuite(),
  async (t) => {
    const url = await freshDatabase(t);
    const settings = { databaseUrl: url, dataDir: '/nonexistent', sqliteSynchronous: 'FULL' as const };
    const primary = await openConfiguredStore(settings);
    await primary.store.commit(batch({ ...CATALOGUE, orders: [order(1)] }));
    const gateway = await openGatewayStore(settings);
    t.after(() => gateway.close());
    assert.equal((await gateway.getOrder(1 as OrderId))?.id, 1);
    const holders: string[] = [];
    const standby = openConfiguredStore(settings, false, { onLockWait: (holder) => holders.push(holder) });
    for (let i = 0; i < 250 && holders.length === 0; i++) await sleep(20);
    assert.match(holders[0] ?? '', /openspot engine/);
    await primary.store.close();
    const opened = await standby;
    t.after(() => opened.store.close());
    assert.deepEqual(
      (await opened.store.loadSnapshot()).openOrders.map((o) => o.id),
      [1],
    );
  },
);
