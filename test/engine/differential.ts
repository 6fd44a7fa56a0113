/**
 * The differential run behind engine-vs-reference.test.ts and conditional-vs-reference.test.ts: a
 * seeded random command stream (stream.ts) runs through the engine and through the naive reference
 * book (reference-book.ts); both must accept/reject alike, emit identical events (trades with
 * price, volume, cost, fees and ids; order states) and hold identical balances.
 *
 * Checked after EVERY command: same outcome and events, no negative balance, no crossed book at
 * rest in either implementation, conservation per asset (`engine.audit()`, all ok) and every
 * user's balance in every asset equal to the reference's, fee and net-deposit totals equal.
 * Checked every 250 commands and at the end: the aggregated levels of every book and the full
 * state of every open order (waiting conditional orders included).
 *
 * With the order controls (and with conditional orders, which imply them): the results of
 * batches, the deadlines that fired before a refusal, every user's dead man's switch, each
 * market's last trade price, the engine's own invariants (validateInternalState), the levels and
 * the orders each drain lists (exactly those that changed, orders in their reference state: a
 * trailing stop that followed the price without an event included), and a restore from the snapshot every `restoreEvery` commands (same
 * state hash, then carrying on with the restored engine).
 */
import assert from 'node:assert/strict';
import type { AssetCode, MarketId, Micros, OrderId, UserId } from '../../src/domain/types.js';
import { Engine } from '../../src/engine/engine.js';
import type {
  Command,
  CommandResult,
  EngineEvent,
  EngineOptions,
  EngineSnapshot,
  OrderState,
} from '../../src/engine/types.js';
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
  // Messages are built only on a failure: this runs after every command of every stream.
  for (const row of engine.audit()) {
    if (!row.ok)
      assert.fail(
        `conservation broken: ${JSON.stringify(row, (_, v) => (typeof v === 'bigint' ? String(v) : v))}`,
      );
    if (row.fees !== ref.fees.get(row.asset))
      assert.equal(row.fees, ref.fees.get(row.asset), `fees in ${row.asset}`);
    if (row.netDeposits !== ref.netDeposits.get(row.asset))
      assert.equal(row.netDeposits, ref.netDeposits.get(row.asset), `net deposits in ${row.asset}`);
  }
  for (const userId of ALL_USERS) {
    for (const a of ASSETS) {
      const e = engine.balance(userId as UserId, a.code as AssetCode);
      const r = ref.balance(userId, a.code);
      if (!(e.available >= 0 && e.reserved >= 0))
        assert.fail(`engine balance negative: user ${userId} ${a.code}`);
      if (!(r.available >= 0n && r.reserved >= 0n))
        assert.fail(`reference balance negative: user ${userId} ${a.code}`);
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

export interface RunStats {
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

/** What the previous drain left: every level's total, and the reference's state of every open order. */
interface AtDrain {
  readonly levels: Map<string, number>;
  readonly open: Map<number, string>;
}

function atDrain(engine: Engine, ref: ReferenceBook): AtDrain {
  return {
    levels: allLevels(engine),
    open: new Map(ref.openOrders().map((o) => [o.id, JSON.stringify(ref.state(o))])),
  };
}

/**
 * Drains, and checks the change set against what changed since the previous drain: exactly the
 * levels whose total changed, each with its total then (amends and self-trade decrements move and
 * shrink orders in ways today's commands do not); and exactly the orders an event named since
 * (`named`) or whose state changed without one (a trailing stop following the price), each in
 * its state now, as a store must write it. Returns what this drain leaves, for the next.
 */
function checkDrain(engine: Engine, ref: ReferenceBook, before: AtDrain, named: Set<number>): AtDrain {
  const changes = engine.drainChanges();
  const listed = changes.levels.map((l) => `${l.marketId} ${l.side} ${l.price} ${l.before}`).sort();
  const now = atDrain(engine, ref);
  const changed: string[] = [];
  for (const key of new Set([...before.levels.keys(), ...now.levels.keys()]))
    if ((before.levels.get(key) ?? 0) !== (now.levels.get(key) ?? 0))
      changed.push(`${key} ${before.levels.get(key) ?? 0}`);
  assert.deepEqual(listed, changed.sort(), 'the drained level changes');
  const expected = new Set(named);
  for (const [id, state] of now.open) if (before.open.get(id) !== state) expected.add(id);
  const drained = changes.orders.map((o) => o.id);
  assert.deepEqual(
    [...drained].sort((a, b) => a - b),
    [...expected].sort((a, b) => a - b),
    'the drained orders',
  );
  for (const o of changes.orders) assert.deepEqual(o, ref.state(ref.order(o.id)!), `drained order ${o.id}`);
  named.clear();
  return now;
}

/** Adds the ids of the orders `events` name (their states, trades' takers and makers) to `named`. */
function nameOrders(events: readonly EngineEvent[] | undefined, named: Set<number>): void {
  for (const e of events ?? []) {
    if (e.type === 'trade') {
      named.add(e.trade.takerOrderId);
      named.add(e.trade.makerOrderId);
    } else if ('order' in e) named.add(e.order.id);
  }
}

/** What the controlled streams must exercise: how often each new outcome happened. */
export type ControlStats = Record<string, number>;

function countControls(result: CommandResult, command: Command, counts: ControlStats): void {
  const add = (key: string) => {
    counts[key] = (counts[key] ?? 0) + 1;
  };
  if (!result.ok) add(`refused ${result.error.code}`);
  if (result.ok && command.kind === 'placeOrders')
    for (const item of result.results ?? [])
      add(item.ok ? 'batch item placed' : `batch item ${item.error.code}`);
  const events = result.events ?? [];
  /** Orders fired in this command, and whether one of them has traded since (a cascade). */
  const fired = new Set<number>();
  let firedTraded = false;
  for (const ev of events) {
    if (ev.type === 'orderDone' && ev.order.reason !== null) add(ev.order.reason);
    else if (ev.type === 'orderDone' && ev.order.timeInForce === 'FOK') add('FOK filled');
    else if (ev.type === 'orderAmended') add(`amended: ${ev.reason}`);
    else if (ev.type === 'cancelAllAfterFired') add('switch fired');
    if (ev.type === 'orderAmended' && isConditional(ev.order) && ev.order.triggered !== true)
      add('waiting amended');
    if (ev.type === 'orderDone' && isConditional(ev.order) && ev.order.triggered !== true)
      add(`waiting: ${ev.order.reason}`);
    if (ev.type === 'orderDone' && ev.order.triggered === true && ev.order.reason !== null)
      add(`fired: ${ev.order.reason}`);
    if (ev.type === 'trade' && fired.has(ev.trade.takerOrderId)) firedTraded = true;
    if (ev.type === 'orderTriggered') {
      add(`triggered ${ev.order.type}`);
      if (command.kind === 'amendOrder' || command.kind === 'placeOrders')
        add(`triggered by ${command.kind}`);
      if (firedTraded) add('triggered in a cascade');
      fired.add(ev.order.id);
      const done = events.some((d) => d.type === 'orderDone' && d.order.id === ev.order.id);
      if (!done) add('fired and rests');
    }
  }
}

const isConditional = (o: OrderState): boolean => o.type !== 'limit' && o.type !== 'market';

export interface StreamOptions {
  /** The order controls (issue 21). */
  readonly controls?: boolean;
  /** Conditional orders too (issue 22). */
  readonly conditional?: boolean;
  /** Restore the engine from its snapshot every this many commands (0: never). */
  readonly restoreEvery?: number;
  /** The engine's open-order limit per user with the controls (default 5, so it is reached often). */
  readonly maxOpenOrdersPerUser?: number;
}

export function run(
  seed: number,
  commands: number,
  stream: StreamOptions = {},
  counts: ControlStats = {},
): RunStats {
  const controls = stream.controls === true || stream.conditional === true;
  const restoreEvery = stream.restoreEvery ?? (controls ? 5000 : 0);
  const options: EngineOptions = controls ? { maxOpenOrdersPerUser: stream.maxOpenOrdersPerUser ?? 5 } : {};
  let engine = newEngine(options);
  const ref = new ReferenceBook(ASSETS, MARKETS, options.maxOpenOrdersPerUser);
  const gen = new Generator(seed, ref, { controls, conditional: stream.conditional === true });
  const stats: RunStats = {
    accepted: 0,
    rejected: 0,
    trades: 0,
    stp: 0,
    partialMarketBuys: 0,
    fundsBelowOrdermin: 0,
    marketNoLiquidity: 0,
  };
  const funding = gen.funding();
  let lastDrain = atDrain(engine, ref);
  const named = new Set<number>();
  let time = 1_700_000_000_000_000;
  for (let i = 0; i < commands; i++) {
    time += 1 + (i % 7);
    gen.now = time;
    const command = i < funding.length ? funding[i]! : gen.next();
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
      if (controls) nameOrders(e.events, named);
      if (controls && i % 50 === 49) lastDrain = checkDrain(engine, ref, lastDrain, named);
      else if (i % 1000 === 999) engine.drainChanges();
      if (controls && i % FULL_CHECK_EVERY === 0) {
        engine.validateInternalState();
        for (const userId of ALL_USERS)
          assert.equal(
            engine.cancelAllAfterTime(userId as UserId),
            ref.switchOf(userId),
            `switch of user ${userId}`,
          );
        for (const m of MARKETS)
          assert.equal(engine.lastPrice(m.id as MarketId), ref.lastPrice(m.id), `last price of ${m.id}`);
      }
      if (restoreEvery > 0 && i % restoreEvery === restoreEvery - 1) {
        // What changed since the last drain is the live engine's: drained (and checked) first.
        if (controls && i % 50 !== 49) lastDrain = checkDrain(engine, ref, lastDrain, named);
        // Through JSON, as a store keeps it: plain data only (offsets, flags, last prices).
        const restored = Engine.restore(
          JSON.parse(JSON.stringify(engine.snapshot())) as EngineSnapshot,
          options,
        );
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

  // Cancel everything that still rests: every reservation must go back to zero. Deadlines due by
  // then fire first (a tick), so each cancel finds its order open.
  const tick = engine.apply({ kind: 'tick' }, (time + 1) as Micros);
  assert.deepEqual(
    tick,
    { ok: true, events: ref.apply({ kind: 'tick' }, time + 1).events ?? [] },
    'last tick',
  );
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
