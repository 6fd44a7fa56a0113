/**
 * The short HTTP crash test (part of `npm test`): the real server as a child process, killed with
 * SIGKILL under signed order/cancel load CRASH_KILLS times (default 3), restarted and checked after
 * each kill (see crash-run.ts). The long run is `npm run test:crash` (crash.soak.ts).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { runCrashScenario } from './crash-run.js';
import { crashSeed, replayHint, withSeed } from './seed.js';

const KILLS = Number(process.env.CRASH_KILLS ?? 3);
const SEED = crashSeed();
const REPLAY = 'npm test -- test/crash/crash-http';
// Printed before anything runs, so even a run that hangs or is killed can be replayed.
process.stderr.write(`${replayHint(SEED, REPLAY)}\n`);

test(`HTTP crash: SIGKILL under signed load, ${KILLS} kills, restart and check (seed ${SEED})`, {
  timeout: 120_000,
}, async (t) => {
  await withSeed(SEED, REPLAY, async () => {
    const summary = await runCrashScenario({
      kills: KILLS,
      seed: SEED,
      minLoadMs: 300,
      maxLoadMs: 1200,
      log: (line) => t.diagnostic(line),
    });
    t.diagnostic(JSON.stringify(summary));
    assert.ok(summary.ackedOrders >= 20 * KILLS, `only ${summary.ackedOrders} acknowledged orders`);
    assert.ok(summary.ackedCancels > 0, 'no cancel was acknowledged');
    for (const [kind, n] of Object.entries(summary.ackedControls))
      assert.ok(n > 0, `no ${kind} of the order controls was acknowledged`);
    assert.ok(summary.trades > 0, 'nothing traded');
    assert.ok(summary.conditional.acked > 0, 'no conditional order was acknowledged');
    assert.ok(summary.conditional.triggered > 0, 'no conditional order fired');
  });
});
