/** The configured store: SQLite without DATABASE_URL, PostgreSQL with it (needs TEST_DATABASE_URL). */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { openConfiguredStore } from '../../src/store/open-store.js';
import { WriterLockHeldError } from '../../src/store/postgres/lock.js';
import { batch, CATALOGUE } from '../../src/store/sqlite/test-fixtures.js';
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
