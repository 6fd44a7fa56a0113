/**
 * Differential test: seeded random command streams run through the engine and through the naive
 * reference book (reference-book.ts); both must accept/reject alike, emit identical events (trades
 * with price, volume, cost, fees and ids; order states) and hold identical balances.
 *
 * Checked after EVERY command: same outcome and events, no negative balance, no crossed book at
 * rest in either implementation, conservation per asset (`engine.audit()`, all ok) and every
 * user's balance in every asset equal to the reference's, fee and net-deposit totals equal.
 * Checked every 250 commands and at the end: the aggregated levels of every book and the full
 * state of every open order.
 *
 * A second set of streams adds every order control (issue 21; stream.ts's `controls`): there the
 * results of batches, the deadlines that fired before a refusal, every user's dead man's switch,
 * the engine's own invariants (validateInternalState) and, every 5,000 commands, a restore from
 * its snapshot (same state hash, then carrying on with the restored engine) are checked too.
 *
 * The run itself is differential.ts's; conditional-vs-reference.test.ts adds conditional orders.
 * Each test yields to the event loop first, so the file's synchronous runs do not add up to one
 * block the test budgets' watchdog would take for a hang.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { setImmediate as yieldToLoop } from 'node:timers/promises';
import { CancelReason } from '../../src/domain/types.js';
import { type ControlStats, run } from './differential.js';

const CONTROL_SEEDS = [3, 1234, 777];
const CONTROL_COMMANDS = 20_000;

for (const seed of CONTROL_SEEDS) {
  test(`engine matches the reference book with every order control: seed ${seed}, ${CONTROL_COMMANDS} commands`, async () => {
    await yieldToLoop();
    const counts: ControlStats = {};
    const stats = run(seed, CONTROL_COMMANDS, { controls: true }, counts);
    const at = (key: string) => counts[key] ?? 0;
    const report = JSON.stringify({ stats, counts });
    assert.ok(stats.trades > 1_000, `few trades: ${report}`);
    for (const reason of [
      CancelReason.immediateOrCancel,
      CancelReason.fillOrKill,
      CancelReason.postOnly,
      CancelReason.expired,
      CancelReason.deadMansSwitch,
      CancelReason.cancelAll,
      CancelReason.selfTrade,
      CancelReason.selfTradeNewest,
      CancelReason.selfTradeBoth,
      CancelReason.selfTradeDecrement,
    ])
      assert.ok(at(reason) >= 5, `few orders ended with "${reason}": ${report}`);
    for (const key of [
      'FOK filled',
      'amended: amended by user',
      'amended: self-trade prevention (decrement)',
      'switch fired',
      'batch item placed',
      'refused too_many_open_orders',
      'refused order_value_too_small',
      'refused duplicate_client_order_id',
      'refused volume_not_above_executed',
      'refused invalid_expire_time',
      'refused invalid_batch',
    ])
      assert.ok(at(key) >= 3, `few "${key}": ${report}`);
    console.log(`controls seed ${seed}: ${report}`);
  });
}

const SEEDS = [1, 42, 20240601, 987654321, 7];
const PER_SEED = 30_000;

for (const seed of SEEDS) {
  test(`engine matches the reference book: seed ${seed}, ${PER_SEED} commands`, async () => {
    await yieldToLoop();
    const started = performance.now();
    const stats = run(seed, PER_SEED);
    const ms = performance.now() - started;
    // Each stream must actually exercise the interesting paths.
    assert.ok(stats.trades > 5_000, `few trades: ${JSON.stringify(stats)}`);
    assert.ok(stats.stp > 100, `few self-trade cancels: ${JSON.stringify(stats)}`);
    assert.ok(stats.partialMarketBuys > 10, `few partial market buys: ${JSON.stringify(stats)}`);
    assert.ok(stats.fundsBelowOrdermin > 10, `few market buys refused for funds: ${JSON.stringify(stats)}`);
    assert.ok(stats.rejected > 500, `few rejections: ${JSON.stringify(stats)}`);
    console.log(`seed ${seed}: ${JSON.stringify(stats)} in ${ms.toFixed(0)} ms`);
  });
}
