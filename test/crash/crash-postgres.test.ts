/**
 * The short HTTP crash test on PostgreSQL (`npm run test:postgres`; skipped, with the reason
 * shown, unless TEST_STORE=postgres and TEST_DATABASE_URL are set): the real server as a child
 * process on a fresh database, CRASH_KILLS SIGKILLs (default 3) under signed load, and before two
 * of them the database going away while the server runs: every session of the server's database
 * ended with `pg_terminate_backend` and new connections refused for 1.5 s (`ALTER DATABASE …
 * ALLOW_CONNECTIONS false`). Only the test's own database is touched, never the cluster (the other
 * suites use it meanwhile); `npm run test:crash -- --store postgres` restarts the cluster itself.
 *
 * What the outages must show (crash-run.ts, runOutage): commands answered 503 in the interface's
 * shape, /readyz 503 with `store: postgresql` and a reason, acknowledgements again without a
 * restart, nothing acknowledged lost, nothing applied twice, the books the running server serves
 * equal to the committed ones; and after every kill the same checks as on SQLite.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { TEST_DATABASE_URL } from '../support/postgres.js';
import { runCrashScenario } from './crash-run.js';
import { crashSeed, replayHint, withSeed } from './seed.js';

// @server-suite: scripts/run-tests.mjs --server-suites (`npm run test:postgres`) runs this file,
// although it starts its server as a child process rather than through server-fixture.
const KILLS = Number(process.env.CRASH_KILLS ?? 3);
const SEED = crashSeed();
const REPLAY = 'npm run test:postgres -- test/crash/crash-postgres';
const skip =
  process.env.TEST_STORE !== 'postgres' || TEST_DATABASE_URL === undefined
    ? 'PostgreSQL crash test: runs under `npm run test:postgres` (TEST_STORE=postgres and TEST_DATABASE_URL set)'
    : undefined;
if (skip !== undefined) process.stdout.write(`# ${skip}\n`);
else process.stderr.write(`${replayHint(SEED, REPLAY)}\n`);

test(`HTTP crash on PostgreSQL: ${KILLS} kills, 2 database outages under signed load (seed ${SEED})`, {
  timeout: 180_000,
  ...(skip === undefined ? {} : { skip }),
}, async (t) => {
  await withSeed(SEED, REPLAY, async () => {
    assert.ok(KILLS >= 2, 'CRASH_KILLS must be at least 2 (two rounds carry an outage)');
    const summary = await runCrashScenario({
      kills: KILLS,
      seed: SEED,
      minLoadMs: 300,
      maxLoadMs: 1200,
      store: 'postgres',
      outages: { rounds: [1, KILLS], kind: 'terminate', blockMs: 1500 },
      log: (line) => t.diagnostic(line),
    });
    t.diagnostic(JSON.stringify(summary));
    assert.equal(summary.outages, 2);
    assert.ok(summary.ackedOrders >= 20 * KILLS, `only ${summary.ackedOrders} acknowledged orders`);
    assert.ok(summary.unavailable.placements + summary.unavailable.cancels > 0, 'no command got a 503');
    assert.ok(
      summary.readyzDuringOutages.some((body) => /"store":"postgresql"/.test(body)),
      `/readyz said: ${summary.readyzDuringOutages.join(', ')}`,
    );
    assert.ok(summary.trades > 0, 'nothing traded');
    assert.ok(summary.conditional.acked > 0, 'no conditional order was acknowledged');
    assert.ok(summary.conditional.triggered > 0, 'no conditional order fired');
  });
});
