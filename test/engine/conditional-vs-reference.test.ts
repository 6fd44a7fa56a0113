/**
 * Differential test of conditional orders (issue 22): seeded random streams with every order
 * control and every conditional type (stream.ts's `conditional`: stop-loss, take-profit, their
 * -limit types and trailing stops in ticks and basis points, triggers near the last price so they
 * fire and cascade, refusals, cancels, cancel-all, switches, GTD expiries and amends of waiting
 * orders) run through the engine and the BigInt reference book (reference-book.ts, which keeps
 * waiting orders in an array and scans it at every trade), with every check of differential.ts:
 * identical events (orderTriggered and the fired orders' trades included), batch results,
 * balances, books, open orders (triggers, trailing best prices) and last prices.
 *
 * Thousands of short streams, each restoring the engine from its snapshot every 97 commands, and
 * a few long ones restoring every 5,000 (one with 50 open orders per user instead of 5, so more
 * orders wait at once and cascades run deeper). Each test also requires the streams to have reached
 * every conditional outcome, so a generator that stopped producing one fails here.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { setImmediate as yieldToLoop } from 'node:timers/promises';
import { CancelReason } from '../../src/domain/types.js';
import { type ControlStats, run } from './differential.js';

/** Every conditional outcome the conditional streams must reach, at least `min` times in all. */
function checkConditionalCoverage(counts: ControlStats, min: number, report: string): void {
  const at = (key: string) => counts[key] ?? 0;
  for (const key of [
    'triggered stop-loss',
    'triggered take-profit',
    'triggered stop-loss-limit',
    'triggered take-profit-limit',
    'triggered trailing-stop',
    'triggered in a cascade',
    'fired and rests',
    'waiting amended',
    `waiting: ${CancelReason.user}`,
    `waiting: ${CancelReason.cancelAll}`,
    `waiting: ${CancelReason.expired}`,
    `waiting: ${CancelReason.deadMansSwitch}`,
    'refused trigger_would_fire',
    'refused invalid_trigger_price',
    'refused invalid_trailing_offset',
    'refused price_not_allowed',
    'refused invalid_conditional_controls',
    'batch item trigger_would_fire',
    'triggered by amendOrder',
    'triggered by placeOrders',
    `fired: ${CancelReason.noLiquidity}`,
    `fired: ${CancelReason.selfTrade}`,
    `fired: ${CancelReason.user}`,
  ])
    assert.ok(at(key) >= min, `few "${key}": ${report}`);
}

const CONDITIONAL_SEEDS = [11, 2026, 31337];
const CONDITIONAL_COMMANDS = 20_000;

for (const seed of CONDITIONAL_SEEDS) {
  test(`engine matches the reference book with conditional orders: seed ${seed}, ${CONDITIONAL_COMMANDS} commands, restored every 5,000`, async () => {
    await yieldToLoop();
    const counts: ControlStats = {};
    const stats = run(seed, CONDITIONAL_COMMANDS, { conditional: true, restoreEvery: 5000 }, counts);
    const report = JSON.stringify({ stats, counts });
    assert.ok(stats.trades > 1_000, `few trades: ${report}`);
    checkConditionalCoverage(counts, 5, report);
    console.log(`conditional seed ${seed}: ${report}`);
  });
}

test('engine matches the reference book with conditional orders: seed 4242, 20000 commands, 50 open orders per user (more waiting at once, deeper cascades)', async () => {
  await yieldToLoop();
  const counts: ControlStats = {};
  const stats = run(
    4242,
    20_000,
    { conditional: true, restoreEvery: 5000, maxOpenOrdersPerUser: 50 },
    counts,
  );
  const report = JSON.stringify({ stats, counts });
  checkConditionalCoverage(counts, 5, report);
  assert.ok((counts['triggered in a cascade'] ?? 0) >= 100, `few cascades: ${report}`);
  console.log(`conditional seed 4242, 50 open orders per user: ${report}`);
});

/** Thousands of short streams, in a few tests so each stays well within its time budget. */
const SHORT_STREAMS = Number(process.env.SHORT_STREAMS ?? 500);
const SHORT_COMMANDS = 200;

for (const first of [100_000, 200_000, 300_000, 400_000]) {
  test(`engine matches the reference book with conditional orders: ${SHORT_STREAMS} streams of ${SHORT_COMMANDS} commands from seed ${first}`, async () => {
    await yieldToLoop();
    const counts: ControlStats = {};
    const cpu = process.cpuUsage();
    for (let seed = first; seed < first + SHORT_STREAMS; seed++)
      run(seed, SHORT_COMMANDS, { conditional: true, restoreEvery: 97 }, counts);
    const report = JSON.stringify(counts);
    checkConditionalCoverage(counts, 5, report);
    const { user, system } = process.cpuUsage(cpu);
    console.log(
      `${SHORT_STREAMS} short conditional streams from seed ${first} in ${((user + system) / 1000).toFixed(0)} ms of CPU: ${report}`,
    );
  });
}
