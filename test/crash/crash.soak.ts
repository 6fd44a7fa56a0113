/**
 * `npm run test:crash`: the HTTP crash test at length — CRASH_KILLS (default 25) SIGKILLs at
 * random moments under signed order/cancel load, each followed by a restart on the same data
 * directory and the full set of checks (see crash-run.ts). Not part of `npm test` (the file name
 * does not end in .test.ts); `crash-http.test.ts` is the short version that is.
 *
 *   CRASH_KILLS=40 CRASH_SEED=123 npm run test:crash
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { runCrashScenario } from './crash-run.js';
import { crashSeed, replayHint, withSeed } from './seed.js';

const KILLS = Number(process.env.CRASH_KILLS ?? 25);
const SEED = crashSeed();
const REPLAY = 'npm run test:crash';
// Printed before anything runs, so even a run that hangs or is killed can be replayed.
process.stderr.write(`${replayHint(SEED, REPLAY)}\n`);

test(`HTTP crash: ${KILLS} SIGKILLs under signed load, restart and check after each (seed ${SEED})`, {
  timeout: 60 * 60_000,
}, async (t) => {
  await withSeed(SEED, REPLAY, async () => {
    assert.ok(KILLS >= 1, 'CRASH_KILLS must be at least 1');
    const summary = await runCrashScenario({
      kills: KILLS,
      seed: SEED,
      minLoadMs: 200,
      maxLoadMs: 3000,
      log: (line) => t.diagnostic(line),
    });
    t.diagnostic(JSON.stringify(summary));
    assert.ok(summary.ackedOrders >= 20 * KILLS, `only ${summary.ackedOrders} acknowledged orders`);
    assert.ok(summary.ackedCancels > 0, 'no cancel was acknowledged');
    assert.ok(
      summary.unanswered.placements + summary.unanswered.cancels > 0,
      'no kill caught a request in flight',
    );
  });
});
