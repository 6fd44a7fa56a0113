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
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { AssetCode, MarketId, Micros, OrderId, UserId } from '../../src/domain/types.js';
import { CancelReason } from '../../src/domain/types.js';
import { Engine } from '../../src/engine/engine.js';
import type { Command, CommandResult, EngineOptions, OrderState } from '../../src/engine/types.js';
import { ASSETS, MARKETS, newEngine } from './fixtures.js';
import { ReferenceBook } from './reference-book.js';
import { Generator, USERS } from './stream.js';

const FULL_CHECK_EVERY = 250;

function checkBooks(engine: Engine, ref: ReferenceBook): void {
  for (const m of MARKETS) {
    const id = m.id as MarketId;
    const bid = engine.bestPrice(id, 'buy');
    const ask = engine.bestPrice(id, 'sell');
    if (bid !== null && ask !== null)
      assert.ok(bid < ask, `engine book ${m.id} crossed at rest: bid ${bid} >= ask ${ask}`);
    assert.equal(bid, ref.bestPrice(m.id, 'buy'), `best bid of market ${m.id}`);
    assert.equal(ask, ref.bestPrice(m.id, 'sell'), `best ask of market ${m.id}`);
  }
}

const ALL_USERS = [...USERS, 7, 99];

function checkLedger(engine: Engine, ref: ReferenceBook): void {
  for (const row of engine.audit()) {
    assert.ok(
      row.ok,
      `conservation broken: ${JSON.stringify(row, (_, v) => (typeof v === 'bigint' ? String(v) : v))}`,
    );
    assert.equal(row.fees, ref.fees.get(row.asset), `fees in ${row.asset}`);
    assert.equal(row.netDeposits, ref.netDeposits.get(row.asset), `net deposits in ${row.asset}`);
  }
  for (const userId of ALL_USERS) {
    for (const a of ASSETS) {
      const e = engine.balance(userId as UserId, a.code as AssetCode);
      const r = ref.balance(userId, a.code);
      assert.ok(e.available >= 0 && e.reserved >= 0, `engine balance negative: user ${userId} ${a.code}`);
      assert.ok(
        r.available >= 0n && r.reserved >= 0n,
        `reference balance negative: user ${userId} ${a.code}`,
      );
      if (BigInt(e.available) !== r.available || BigInt(e.reserved) !== r.reserved) {
        assert.fail(
          `balance of user ${userId} in ${a.code}: engine ${e.available}/${e.reserved}, reference ${r.available}/${r.reserved}`,
        );
      }
    }
  }
}

function checkFull(engine: Engine, ref: ReferenceBook): void {
  for (const m of MARKETS) {
    for (const side of ['buy', 'sell'] as const) {
      assert.deepEqual(
        engine.levels(m.id as MarketId, side),
        ref.levels(m.id, side),
        `levels ${m.id} ${side}`,
      );
    }
  }
  // In time priority, as a snapshot lists them (an amended order's priority is not its id).
  const expected: OrderState[] = [...ref.openOrders()]
    .sort((a, b) => a.priority - b.priority)
    .map((o) => ref.state(o));
  assert.deepEqual(engine.snapshot().openOrders, expected, 'open orders');
}

interface RunStats {
  accepted: number;
  rejected: number;
  trades: number;
  stp: number;
  /** Market buys that ended with part of their volume unexecuted (budget or book exhausted). */
  partialMarketBuys: number;
  /** Market buys refused because the funds bought less than ordermin. */
  fundsBelowOrdermin: number;
  marketNoLiquidity: number;
}

/** Every level of every book: "market side price" -> total. */
function allLevels(engine: Engine): Map<string, number> {
  const levels = new Map<string, number>();
  for (const m of MARKETS)
    for (const side of ['buy', 'sell'] as const)
      for (const [price, total] of engine.levels(m.id as MarketId, side))
        levels.set(`${m.id} ${side} ${price}`, total);
  return levels;
}

/**
 * Drains, and checks that the change set lists exactly the levels whose total changed since the
 * previous drain, each with its total then (amends and self-trade decrements move and shrink
 * orders in ways today's commands do not). Returns the levels now, for the next drain.
 */
function checkDrainedLevels(engine: Engine, before: Map<string, number>): Map<string, number> {
  const listed = engine
    .drainChanges()
    .levels.map((l) => `${l.marketId} ${l.side} ${l.price} ${l.before}`)
    .sort();
  const now = allLevels(engine);
  const changed: string[] = [];
  for (const key of new Set([...before.keys(), ...now.keys()]))
    if ((before.get(key) ?? 0) !== (now.get(key) ?? 0)) changed.push(`${key} ${before.get(key) ?? 0}`);
  assert.deepEqual(listed, changed.sort(), 'the drained level changes');
  return now;
}

/** What the controlled streams must exercise: how often each new outcome happened. */
type ControlStats = Record<string, number>;

function countControls(result: CommandResult, command: Command, counts: ControlStats): void {
  const add = (key: string) => {
    counts[key] = (counts[key] ?? 0) + 1;
  };
  if (!result.ok) add(`refused ${result.error.code}`);
  if (result.ok && command.kind === 'placeOrders')
    for (const item of result.results ?? [])
      add(item.ok ? 'batch item placed' : `batch item ${item.error.code}`);
  for (const ev of result.events ?? []) {
    if (ev.type === 'orderDone' && ev.order.reason !== null) add(ev.order.reason);
    else if (ev.type === 'orderDone' && ev.order.timeInForce === 'FOK') add('FOK filled');
    else if (ev.type === 'orderAmended') add(`amended: ${ev.reason}`);
    else if (ev.type === 'cancelAllAfterFired') add('switch fired');
  }
}

function run(seed: number, commands: number, controls = false, counts: ControlStats = {}): RunStats {
  const options: EngineOptions = controls ? { maxOpenOrdersPerUser: 5 } : {};
  let engine = newEngine(options);
  const ref = new ReferenceBook(ASSETS, MARKETS, options.maxOpenOrdersPerUser);
  const gen = new Generator(seed, ref, { controls });
  const stats: RunStats = {
    accepted: 0,
    rejected: 0,
    trades: 0,
    stp: 0,
    partialMarketBuys: 0,
    fundsBelowOrdermin: 0,
    marketNoLiquidity: 0,
  };
  const stream = gen.funding();
  let levelsAtDrain = allLevels(engine);
  let time = 1_700_000_000_000_000;
  for (let i = 0; i < commands; i++) {
    time += 1 + (i % 7);
    gen.now = time;
    const command = i < stream.length ? stream[i]! : gen.next();
    try {
      const e = engine.apply(command, time as Micros);
      const r = ref.apply(command, time);
      if (e.ok !== r.ok) {
        assert.fail(`outcome differs: engine ${JSON.stringify(e)}, reference ${JSON.stringify(r)}`);
      }
      if (controls) countControls(e, command, counts);
      if (e.ok && r.ok) {
        const codes = (results: typeof e.results) => results?.map((x) => (x.ok ? x : x.error.code));
        assert.deepEqual(codes(e.results), codes(r.results), 'batch results');
      }
      if (!e.ok && !r.ok) {
        assert.deepEqual(e.events, r.events, 'deadlines fired before the refusal');
        assert.equal(e.error.code, r.code, 'rejection code');
        stats.rejected++;
        if (command.kind === 'placeOrder' && command.type === 'market' && r.code === 'below_ordermin')
          stats.fundsBelowOrdermin++;
      } else if (e.ok && r.ok) {
        assert.deepEqual(e.events, r.events, 'events');
        stats.accepted++;
        for (const ev of e.events) {
          if (ev.type === 'trade') stats.trades++;
          else if (ev.type === 'orderDone') {
            if (ev.order.reason === 'self-trade prevention') stats.stp++;
            else if (
              ev.order.type === 'market' &&
              ev.order.side === 'buy' &&
              ev.order.status === 'closed' &&
              ev.order.executed < ev.order.volume
            )
              stats.partialMarketBuys++;
            else if (ev.order.reason === 'no liquidity') stats.marketNoLiquidity++;
          }
        }
      }
      checkBooks(engine, ref);
      checkLedger(engine, ref);
      if (i % FULL_CHECK_EVERY === 0) checkFull(engine, ref);
      if (controls && i % 50 === 49) levelsAtDrain = checkDrainedLevels(engine, levelsAtDrain);
      else if (i % 1000 === 999) engine.drainChanges();
      if (controls && i % FULL_CHECK_EVERY === 0) {
        engine.validateInternalState();
        for (const userId of ALL_USERS)
          assert.equal(
            engine.cancelAllAfterTime(userId as UserId),
            ref.switchOf(userId),
            `switch of user ${userId}`,
          );
      }
      if (controls && i % 5000 === 4999) {
        const restored = Engine.restore(engine.snapshot(), options);
        assert.equal(restored.stateHash(), engine.stateHash(), 'a restore reproduces the state');
        assert.equal(restored.nextDeadline(), engine.nextDeadline(), 'and the next deadline');
        engine = restored;
      }
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      throw new Error(`seed ${seed}, command #${i} ${JSON.stringify(command)}:\n${message}`);
    }
  }
  checkFull(engine, ref);

  // Cancel everything that still rests: every reservation must go back to zero.
  for (const o of [...ref.openOrders()]) {
    const command: Command = { kind: 'cancelOrder', userId: o.userId as UserId, orderId: o.id as OrderId };
    const e = engine.apply(command, (time + 1) as Micros);
    const r = ref.apply(command, time + 1);
    assert.ok(e.ok && r.ok);
    assert.deepEqual(e.events, r.events);
  }
  checkLedger(engine, ref);
  for (const userId of ALL_USERS) {
    for (const a of ASSETS) assert.equal(engine.balance(userId as UserId, a.code as AssetCode).reserved, 0);
  }
  return stats;
}

const CONTROL_SEEDS = [3, 1234, 777];
const CONTROL_COMMANDS = 20_000;

for (const seed of CONTROL_SEEDS) {
  test(`engine matches the reference book with every order control: seed ${seed}, ${CONTROL_COMMANDS} commands`, () => {
    const counts: ControlStats = {};
    const stats = run(seed, CONTROL_COMMANDS, true, counts);
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
  test(`engine matches the reference book: seed ${seed}, ${PER_SEED} commands`, () => {
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
