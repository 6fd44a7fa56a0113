/**
 * `npm run test:crash`: the HTTP crash test at length — CRASH_KILLS (default 25) SIGKILLs at
 * random moments under signed order/cancel load, each followed by a restart on the same data
 * directory and the full set of checks (see crash-run.ts). Not part of `npm test` (the file name
 * does not end in .test.ts); `crash-http.test.ts` is the short version that is.
 *
 *   CRASH_KILLS=40 CRASH_SEED=123 npm run test:crash
 *
 * `-- --store postgres`: the same on PostgreSQL (a fresh database on TEST_DATABASE_URL, dropped
 * after), plus CRASH_PG_RESTARTS (default 3) restarts of the local PostgreSQL cluster itself
 * (`pg_ctlcluster <version> main restart`, so: root, and nothing else relying on the cluster
 * meanwhile) under load, spread over the run; after each, with the server still running, the
 * same checks, and the served books against the committed ones.
 *
 *   TEST_DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres npm run test:crash -- --store postgres
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parseArgs } from 'node:util';
import { runCrashScenario } from './crash-run.js';
import type { StoreKind } from './crash-store.js';
import { crashSeed, replayHint, withSeed } from './seed.js';

const { values } = parseArgs({
  options: { store: { type: 'string', default: 'sqlite' } },
  strict: false,
});
if (values.store !== 'sqlite' && values.store !== 'postgres')
  throw new Error(`--store must be sqlite or postgres, not ${String(values.store)}`);
const STORE = values.store as StoreKind;
const KILLS = Number(process.env.CRASH_KILLS ?? 25);
const RESTARTS = STORE === 'postgres' ? Number(process.env.CRASH_PG_RESTARTS ?? 3) : 0;
const SEED = crashSeed();
const REPLAY = STORE === 'postgres' ? 'npm run test:crash -- --store postgres' : 'npm run test:crash';
// Printed before anything runs, so even a run that hangs or is killed can be replayed.
process.stderr.write(`${replayHint(SEED, REPLAY)}\n`);

/** The rounds whose load meets a PostgreSQL restart: spread evenly, never the first. */
function restartRounds(kills: number, restarts: number): number[] {
  return Array.from({ length: restarts }, (_, i) =>
    Math.max(2, Math.round(((i + 1) * kills) / (restarts + 1))),
  );
}

const title =
  STORE === 'postgres'
    ? `HTTP crash on PostgreSQL: ${KILLS} SIGKILLs and ${RESTARTS} PostgreSQL restarts under signed load (seed ${SEED})`
    : `HTTP crash: ${KILLS} SIGKILLs under signed load, restart and check after each (seed ${SEED})`;

test(title, { timeout: 60 * 60_000 }, async (t) => {
  await withSeed(SEED, REPLAY, async () => {
    assert.ok(KILLS >= 1, 'CRASH_KILLS must be at least 1');
    const rounds = restartRounds(KILLS, RESTARTS);
    assert.equal(new Set(rounds).size, RESTARTS, 'CRASH_KILLS must leave a round for every restart');
    const summary = await runCrashScenario({
      kills: KILLS,
      seed: SEED,
      minLoadMs: 200,
      maxLoadMs: 3000,
      store: STORE,
      ...(RESTARTS > 0 ? { outages: { rounds, kind: 'restart' as const } } : {}),
      log: (line) => t.diagnostic(line),
    });
    t.diagnostic(JSON.stringify(summary));
    assert.ok(summary.ackedOrders >= 20 * KILLS, `only ${summary.ackedOrders} acknowledged orders`);
    assert.ok(summary.ackedCancels > 0, 'no cancel was acknowledged');
    assert.equal(summary.outages, RESTARTS);
    assert.ok(
      summary.unanswered.placements + summary.unanswered.cancels > 0,
      'no kill caught a request in flight',
    );
  });
});
