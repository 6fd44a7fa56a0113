/**
 * Engine.stateHash() and Engine.validateInternalState():
 * - after every command of random streams (fast-check) the invariants hold, and an engine restored
 *   from a snapshot (through JSON, as a store keeps it) hashes like the live one, then and after
 *   both carry on;
 * - the hash is of the state, not of the path: engines that reach the same state differently hash
 *   alike, and any change to a balance, an order, a total or a counter changes it;
 * - the check can fail: a snapshot tampered with each way a bug could break the state is refused
 *   with a description of what is wrong, and so is a corrupted book side.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import type {
  Amount,
  AssetCode,
  MarketId,
  Micros,
  OrderId,
  Price,
  UserId,
  Volume,
} from '../../src/domain/types.js';
import { BookSide, type RestingOrder } from '../../src/engine/book-side.js';
import { Engine } from '../../src/engine/engine.js';
import { InternalStateError } from '../../src/engine/engine-state.js';
import { OrderIndex } from '../../src/engine/order-index.js';
import type { Command, EngineSnapshot, OrderState } from '../../src/engine/types.js';
import { applyAll, funding, streamArb, T0, viaJson } from './arbitraries.js';
import { ASSETS, MARKETS, mulberry32, newEngine } from './fixtures.js';
import { ReferenceBook } from './reference-book.js';
import { Generator } from './stream.js';

const seen = { restingAtCut: 0, commands: 0 };

test('after every command the state is valid; a restored engine hashes like the live one', () => {
  fc.assert(
    fc.property(streamArb, fc.nat(), (stream, cut) => {
      const commands = [...funding(), ...stream];
      const split = cut % (commands.length + 1);
      const live = newEngine();
      let restored: Engine | null = null;
      commands.forEach((command, i) => {
        if (i === split) {
          seen.restingAtCut += live.snapshot().openOrders.length;
          restored = Engine.restore(viaJson(live.snapshot()));
          restored.validateInternalState();
          assert.equal(restored.stateHash(), live.stateHash(), 'restored at the cut');
        }
        const time = (T0 + i) as Micros;
        const result = live.apply(command, time);
        live.validateInternalState();
        if (restored !== null) {
          assert.deepEqual((restored as Engine).apply(command, time), result);
          (restored as Engine).validateInternalState();
        }
        seen.commands++;
        // Drains change no state: the hash must not see them.
        if (i % 37 === 36) live.drainChanges();
      });
      const end = restored ?? Engine.restore(viaJson(live.snapshot()));
      assert.equal(end.stateHash(), live.stateHash(), 'after carrying on');
    }),
    { numRuns: 150 },
  );
  assert.ok(seen.restingAtCut > 1_000 && seen.commands > 20_000, JSON.stringify(seen));
});

const deposit = (userId: number, asset: string, amount: number): Command => ({
  kind: 'deposit',
  userId: userId as UserId,
  asset: asset as AssetCode,
  amount: amount as Amount,
});

const limit = (userId: number, side: 'buy' | 'sell', price: number, volume: number): Command => ({
  kind: 'placeOrder',
  userId: userId as UserId,
  marketId: 1 as MarketId,
  side,
  type: 'limit',
  price: price as Price,
  volume: volume as Volume,
});

function run(commands: readonly Command[]): Engine {
  const engine = newEngine();
  for (const r of applyAll(engine, commands)) assert.ok(r.ok, JSON.stringify(r));
  return engine;
}

test('the hash is of the state, not of how the engine got there', () => {
  const a = run([deposit(1, 'EUR', 500), deposit(2, 'BTC', 5000), limit(2, 'sell', 300_000, 1000)]);
  // Accounts opened in the other order, a refused order that opens an empty account, drains.
  const b = newEngine();
  assert.equal(b.apply(limit(9, 'buy', 300_000, 1000), T0 as Micros).ok, false);
  b.drainChanges();
  b.apply(deposit(2, 'BTC', 5000), T0 as Micros);
  b.drainChanges();
  b.apply(deposit(1, 'EUR', 500), T0 as Micros);
  b.apply(limit(2, 'sell', 300_000, 1000), (T0 + 2) as Micros);
  assert.equal(b.stateHash(), a.stateHash());
  assert.equal(Engine.restore(viaJson(a.snapshot())).stateHash(), a.stateHash());
  // Same balances and book, but one more order id issued (placed and canceled): another state.
  const c = run([
    deposit(1, 'EUR', 500),
    deposit(2, 'BTC', 5000),
    limit(2, 'sell', 300_000, 1000),
    limit(2, 'sell', 310_000, 1000),
    { kind: 'cancelOrder', userId: 2 as UserId, orderId: 2 as OrderId },
  ]);
  assert.deepEqual(c.levels(1 as MarketId, 'sell'), a.levels(1 as MarketId, 'sell'));
  assert.notEqual(c.stateHash(), a.stateHash());
});

type Mutation = (s: Mutable<EngineSnapshot>) => boolean;
type Mutable<T> = { -readonly [K in keyof T]: T[K] extends readonly (infer E)[] ? Mutable<E>[] : T[K] };

/** Each changes one thing a state can differ in; false when the snapshot has nothing to change. */
const MUTATIONS: Record<string, Mutation> = {
  'a balance': (s) => {
    const b = s.balances[0];
    if (b === undefined) return false;
    b.available = (b.available + 1) as Amount;
    return true;
  },
  'collected fees': (s) => {
    s.totals[1]!.fees = (s.totals[1]!.fees + 1) as Amount;
    return true;
  },
  'the next trade id': (s) => {
    s.sequences = { ...s.sequences, nextTradeId: s.sequences.nextTradeId + 1 };
    return true;
  },
  "an order's remaining volume": (s) => {
    const o = s.openOrders.find((x) => x.executed > 0);
    if (o === undefined) return false;
    o.executed = (o.executed - 1) as Volume;
    return true;
  },
  "an order's owner": (s) => {
    const o = s.openOrders[0];
    if (o === undefined) return false;
    o.userId = (o.userId + 10) as UserId;
    return true;
  },
  "an order's fee excess": (s) => {
    const o = s.openOrders[0];
    if (o === undefined) return false;
    o.feeExcess = o.feeExcess === 0 ? 1 : o.feeExcess - 1;
    return true;
  },
  "an order's time": (s) => {
    const o = s.openOrders[0];
    if (o === undefined) return false;
    o.openTime = (o.openTime + 1) as Micros;
    return true;
  },
  'time priority within a level': (s) => {
    // Two orders at one price, listed (and so queued) the other way round, ids swapped with them.
    for (let i = 0; i < s.openOrders.length; i++) {
      for (let j = i + 1; j < s.openOrders.length; j++) {
        const [x, y] = [s.openOrders[i]!, s.openOrders[j]!];
        if (x.marketId !== y.marketId || x.side !== y.side || x.price !== y.price || x.userId === y.userId)
          continue;
        s.openOrders[i] = { ...y, id: x.id };
        s.openOrders[j] = { ...x, id: y.id };
        return true;
      }
    }
    return false;
  },
};

test('any change to a balance, an order, a total or a counter changes the hash', () => {
  const changed = new Map<string, number>();
  fc.assert(
    fc.property(streamArb, fc.constantFrom(...Object.keys(MUTATIONS)), (stream, name) => {
      const engine = newEngine();
      applyAll(engine, [...funding(), ...stream]);
      const snapshot = viaJson(engine.snapshot()) as Mutable<EngineSnapshot>;
      if (!MUTATIONS[name]!(snapshot)) return;
      changed.set(name, (changed.get(name) ?? 0) + 1);
      assert.notEqual(Engine.restore(snapshot).stateHash(), engine.stateHash(), name);
    }),
    { numRuns: 300 },
  );
  for (const name of Object.keys(MUTATIONS))
    assert.ok((changed.get(name) ?? 0) >= 5, `${name}: ${changed.get(name)}`);
});

/** A small valid state: a resting buy of user 1 and a resting sell of user 2, in BTC/EUR. */
function twoSided(): EngineSnapshot {
  const engine = run([
    deposit(1, 'EUR', 10_000_000),
    deposit(2, 'BTC', 10_000_000),
    limit(1, 'buy', 299_000, 3000),
    limit(2, 'sell', 301_000, 3000),
  ]);
  engine.validateInternalState();
  return viaJson(engine.snapshot());
}

function refusal(tamper: (s: Mutable<EngineSnapshot>) => void): string {
  const snapshot = twoSided() as Mutable<EngineSnapshot>;
  tamper(snapshot);
  const engine = Engine.restore(snapshot);
  try {
    engine.validateInternalState();
  } catch (error) {
    assert.ok(error instanceof InternalStateError);
    return error.message;
  }
  assert.fail('the tampered state was found valid');
}

const balanceOf = (s: Mutable<EngineSnapshot>, userId: number, asset: string) =>
  s.balances.find((b) => b.userId === userId && b.asset === asset)!;
const order = (s: Mutable<EngineSnapshot>, side: 'buy' | 'sell'): Mutable<OrderState> =>
  s.openOrders.find((o) => o.side === side)!;

test('validateInternalState names the first invariant a state breaks', () => {
  assert.match(
    refusal((s) => {
      const b = balanceOf(s, 1, 'EUR');
      b.available = (b.available + 1) as Amount;
    }),
    /EUR is not conserved: balances 10000001 \+ fees 0 != net deposits 10000000/,
  );
  assert.match(
    refusal((s) => {
      const b = balanceOf(s, 1, 'EUR');
      b.available = (b.available + 1) as Amount;
      b.reserved = (b.reserved - 1) as Amount;
    }),
    /user 1 has \d+ EUR reserved, and its open orders hold \d+/,
  );
  assert.match(
    refusal((s) => {
      const b = balanceOf(s, 1, 'EUR');
      b.available = -5 as Amount;
    }),
    /user 1's available EUR is -5/,
  );
  assert.match(
    refusal((s) => {
      order(s, 'buy').price = 302_000 as Price;
    }),
    /the best bid 302000 is not below the best ask 301000/,
  );
  assert.match(
    refusal((s) => {
      order(s, 'sell').executed = 1000 as Volume;
    }),
    /order \d+ holds 3000 base units for 2000 lots of 1/,
  );
  assert.match(
    refusal((s) => {
      order(s, 'buy').reserved = 5 as Amount;
      balanceOf(s, 1, 'EUR').reserved = 5 as Amount;
    }),
    /holds 5 quote units, less than the \d+ its remaining volume costs/,
  );
  assert.match(
    refusal((s) => {
      order(s, 'sell').executed = 4000 as Volume;
    }),
    /rests with remaining volume -1000/,
  );
  assert.match(
    refusal((s) => {
      order(s, 'sell').id = 99 as OrderId;
    }),
    /order 99 is not below nextOrderId 3/,
  );
});

test('BookSide.checkStructure finds a corrupted level, queue or best level', () => {
  const build = (): [BookSide, RestingOrder[]] => {
    const side = new BookSide(true);
    const orders: RestingOrder[] = [];
    for (let i = 1; i <= 12; i++) {
      const o: RestingOrder = {
        id: i,
        priority: i,
        userId: 1,
        price: 100 + (i % 4),
        remaining: i,
        level: null,
        prev: null,
        next: null,
      };
      side.append(o);
      orders.push(o);
    }
    assert.equal(side.checkStructure(), null);
    return [side, orders];
  };
  let [side, orders] = build();
  side.level(101)!.total += 1;
  assert.equal(side.checkStructure(), 'level 101 totals 16 and its orders 15');
  [side, orders] = build();
  orders[4]!.next = null; // order 5 (price 101) loses the rest of its queue
  assert.equal(side.checkStructure(), 'level 101: its tail is not its last order');
  [side, orders] = build();
  side.level(102)!.count = 2;
  assert.match(side.checkStructure()!, /level 102 holds more orders than its count 2/);
  [side, orders] = build();
  side.best = side.level(100)!;
  assert.equal(side.checkStructure(), "the cached best level is 100, the tree's best 103");
  [side, orders] = build();
  orders[0]!.remaining = 0;
  side.level(101)!.total -= 1;
  assert.equal(side.checkStructure(), 'level 101: order 1 rests with remaining volume 0');
});

test('a long seeded stream keeps every invariant, and restores every 1,000 commands hash alike', () => {
  const engine = newEngine();
  const ref = new ReferenceBook(ASSETS, MARKETS);
  const gen = new Generator(777, ref);
  const prefix = gen.funding();
  for (let i = 0; i < 20_000; i++) {
    const command = i < prefix.length ? prefix[i]! : gen.next();
    ref.apply(command, T0 + i);
    engine.apply(command, (T0 + i) as Micros);
    if (i % 100 === 99) engine.validateInternalState();
    if (i % 1000 === 999)
      assert.equal(Engine.restore(viaJson(engine.snapshot())).stateHash(), engine.stateHash(), `#${i}`);
  }
});

test('on a deep book (5,000 orders preloaded, then orders, cancels and sweeps) likewise', () => {
  // The shape of bench:engine's deep scenario, small (as in event-stream-pin.test.ts).
  const engine = newEngine();
  const rnd = mulberry32(99);
  const users = 60;
  let t = T0;
  for (let u = 1; u <= users; u++)
    for (const a of ASSETS) engine.apply(deposit(u, a.code, 1e14), t++ as Micros);
  const placed: [number, number][] = [];
  let deepest = 0;
  for (let i = 0; i < 25_000; i++) {
    const mid = 300_000;
    const buy = rnd() < 0.5;
    const user = 1 + Math.floor(rnd() * users);
    const r = i < 5_000 ? 0 : rnd();
    const id = engine.sequences().nextOrderId;
    if (r >= 0.55 && r < 0.9 && placed.length > 0) {
      const [orderId, owner] = placed[Math.floor(rnd() * placed.length)]!;
      engine.apply(
        { kind: 'cancelOrder', userId: owner as UserId, orderId: orderId as OrderId },
        t++ as Micros,
      );
    } else {
      const volume = Math.floor(Math.exp(Math.log(1_000) + rnd() * Math.log(20_000)));
      const distance = i < 5_000 ? 2 + Math.floor(rnd() * 200) : Math.floor(-Math.log(1 - rnd()) * 25) - 1;
      const isLimit = r < 0.55;
      const price = isLimit ? (buy ? mid - distance : mid + distance) : 0;
      const command: Command = {
        kind: 'placeOrder',
        userId: user as UserId,
        marketId: 1 as MarketId,
        side: buy ? 'buy' : 'sell',
        type: isLimit ? 'limit' : 'market',
        price: price as Price,
        volume: volume as Volume,
      };
      engine.apply(command, t++ as Micros);
      placed.push([id, user]);
    }
    if (i % 500 === 499) engine.validateInternalState();
    if (i % 2500 === 2499) {
      const snapshot = engine.snapshot();
      deepest = Math.max(deepest, snapshot.openOrders.length);
      assert.equal(Engine.restore(viaJson(snapshot)).stateHash(), engine.stateHash(), `#${i}`);
    }
  }
  assert.ok(deepest > 4_000, `only ${deepest} orders rested`);
});

test('OrderIndex.checkStructure finds an entry at the wrong slot or a wrong count', () => {
  const index = new OrderIndex<{ id: number }>();
  const items = [1, 2, 700, 1500].map((id) => ({ id }));
  for (const item of items) index.set(item);
  index.delete(items[1]!);
  assert.equal(index.checkStructure(), null);
  (items[2] as { id: number }).id = 701;
  assert.equal(index.checkStructure(), 'order 701 is indexed under id 700');
  items[2]!.id = 700;
  index.delete(items[3]!);
  assert.equal(index.checkStructure(), null);
  // A count gone wrong (simulated: nothing public can do it).
  (index as unknown as { counts: number[] }).counts[0] = 5;
  assert.equal(index.checkStructure(), 'id page 0 counts 5 entries and holds 1');
});
