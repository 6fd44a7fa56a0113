/**
 * A PostgreSQL commit blocked by a lock another session holds: /readyz (LocalExchange.isReady)
 * says not ready within a few seconds, while the commit still waits; the commit fails at
 * DATABASE_COMMIT_TIMEOUT_MS (default 10 s, was 30 s) rather than holding every order for half a
 * minute; once the lock is gone, commands and readiness come back by themselves.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import pg from 'pg';
import { loadConfig } from '../../src/config/config.js';
import type { Amount, AssetCode, UserId } from '../../src/domain/types.js';
import { seedCatalogue } from '../../src/sequencer/seed.js';
import { openExchange } from '../../src/sequencer/sequencer.js';
import { openConfiguredStore } from '../../src/store/open-store.js';
import { StoreUnavailableError, unavailableReason } from '../../src/store/store.js';
import { waitUntil } from '../support/polling.js';
import { freshDatabase, postgresSuite } from '../support/postgres.js';

const COMMIT_TIMEOUT_MS = 6000;

test('DATABASE_COMMIT_TIMEOUT_MS: 10 s by default, 1 s to 10 min', () => {
  assert.equal(loadConfig({}).databaseCommitTimeoutMs, 10_000);
  assert.equal(loadConfig({ DATABASE_COMMIT_TIMEOUT_MS: '2500' }).databaseCommitTimeoutMs, 2500);
  assert.throws(() => loadConfig({ DATABASE_COMMIT_TIMEOUT_MS: '999' }), /between 1000 and 600000/);
});

test('a commit held by a lock: not ready within seconds, failed at the commit timeout, then back', {
  ...postgresSuite(),
  timeout: 120_000,
}, async (t) => {
  const url = await freshDatabase(t);
  const dataDir = mkdtempSync(join(tmpdir(), 'openspot-commit-stall-'));
  t.after(() => rmSync(dataDir, { recursive: true, force: true }));
  const { store } = await openConfiguredStore({
    databaseUrl: url,
    dataDir,
    sqliteSynchronous: 'FULL',
    databaseCommitTimeoutMs: COMMIT_TIMEOUT_MS,
  });
  const exchange = await openExchange({ store, probeIntervalMs: 200 });
  t.after(async () => {
    await exchange.close();
    await store.close();
  });
  await seedCatalogue(exchange, undefined);
  const deposit = () =>
    exchange.submit({
      kind: 'deposit',
      userId: 1 as UserId,
      asset: 'EUR' as AssetCode,
      amount: 10_000 as Amount,
    });
  assert.ok((await deposit()).ok);
  assert.equal(exchange.isReady(), true);

  // Another session holds a lock every commit needs (the sequences live in `meta`); reads go on.
  const locker = new pg.Client({ connectionString: url });
  // The database is dropped at the end, ending this session too: not an error of the test.
  locker.on('error', () => undefined);
  await locker.connect();
  t.after(() => locker.end().catch(() => undefined));
  await locker.query('BEGIN');
  await locker.query('LOCK TABLE meta IN EXCLUSIVE MODE');

  const started = Date.now();
  const blocked = deposit();
  blocked.catch(() => undefined);
  await waitUntil(() => !exchange.isReady(), 'readiness to fail while the commit waits', COMMIT_TIMEOUT_MS);
  const notReadyAfter = Date.now() - started;
  assert.ok(notReadyAfter < COMMIT_TIMEOUT_MS - 1000, `not ready only after ${notReadyAfter} ms`);
  assert.equal(unavailableReason(exchange.notReadyCause()), 'commit pending too long');

  await assert.rejects(blocked, StoreUnavailableError);
  const failedAfter = Date.now() - started;
  assert.ok(
    failedAfter >= COMMIT_TIMEOUT_MS - 100 && failedAfter < COMMIT_TIMEOUT_MS + 10_000,
    `the commit failed after ${failedAfter} ms`,
  );
  assert.equal(exchange.isReady(), false);

  await locker.query('ROLLBACK');
  await locker.end();
  await waitUntil(() => exchange.isWritable(), 'the store to take writes again', 30_000);
  assert.ok((await deposit()).ok);
  assert.equal(exchange.isReady(), true);
});
