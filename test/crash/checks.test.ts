/**
 * The crash test is only as good as its checks: a store written by the real exchange passes them,
 * and each kind of damage a half-applied batch could leave is caught.
 */
import assert from 'node:assert/strict';
import { copyFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import Database from 'better-sqlite3';
import type { Amount, AssetCode, Micros, OrderId, Price, UserId, Volume } from '../../src/domain/types.js';
import { seedCatalogue } from '../../src/sequencer/seed.js';
import { openExchange } from '../../src/sequencer/sequencer.js';
import { asyncStore } from '../../src/store/async-store.js';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { bookFromOrders, bookFromParts, bookHash } from './book-hash.js';
import { checkLedger, committedBooks, readCommitted, replayCheck } from './committed-state.js';

let dir: string;
let file: string;
/** A store where orders were amended, and what those orders were placed with. */
let amendedFile: string;
const placedAs = new Map<number, { price: number; volume: number }>();

before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'openspot-checks-'));
  file = join(dir, 'openspot.db');
  const store = SqliteStore.open({ path: file });
  let time = 1_700_000_000_000_000;
  const clock = () => {
    time += 1_000_000;
    return time as Micros;
  };
  const exchange = await openExchange({ store: asyncStore(store), clock });
  await seedCatalogue(exchange, undefined);
  const market = exchange.catalogue.marketByName('BTCEUR')!.id;
  for (const userId of [1, 2, 3] as UserId[]) {
    for (const [asset, amount] of [
      ['EUR', 1_000_000_0000],
      ['BTC', 10_0000000000],
    ] as const)
      await exchange.submit({ kind: 'deposit', userId, asset: asset as AssetCode, amount: amount as Amount });
  }
  const place = (
    userId: number,
    side: 'buy' | 'sell',
    price: number,
    volume: number,
    type: 'limit' | 'market' = 'limit',
  ) =>
    exchange.submit({
      kind: 'placeOrder',
      userId: userId as UserId,
      marketId: market,
      side,
      type,
      price: price as Price,
      volume: volume as Volume,
    });
  // Several in one batch (group commit), then crossing orders, a market order, a cancel. Prices
  // and volumes are not round, so every cost and fee needs rounding: a rounding rule the checks
  // got wrong (or the engine did) shows here.
  await Promise.all([
    place(1, 'buy', 299_037, 5_012_347),
    place(1, 'buy', 298_013, 7_003_561),
    place(2, 'sell', 301_009, 4_000_173),
  ]);
  await place(3, 'sell', 298_521, 6_011_009); // fills order 1 fully, rests the rest
  await place(2, 'buy', 0, 2_003_917, 'market'); // takes the rest of 4, then meets its own ask 3 (self-trade prevention)
  await place(3, 'buy', 302_011, 1_000_429);
  await exchange.submit({ kind: 'cancelOrder', userId: 1 as UserId, orderId: 2 as OrderId });
  await place(1, 'sell', 297_003, 1_500_083); // takes user 3's bid, rests the rest
  await exchange.close();
  store.close();
  await writeAmendedStore(clock);
});

/**
 * Amends of each kind, each order amended once: a buy lowered between two partial fills (its hold
 * then depends on how many came before the amend), a buy raised (to the back of its level, behind
 * a younger order), a sell moved across the book (it trades as the taker at the amend), a cancel
 * of the order it traded with, and a sell moved onto its own user's bid alone (no trade: the bid
 * is canceled by self-trade prevention at the time of the amend).
 */
async function writeAmendedStore(clock: () => Micros): Promise<void> {
  amendedFile = join(dir, 'amended.db');
  const store = SqliteStore.open({ path: amendedFile });
  const exchange = await openExchange({ store: asyncStore(store), clock });
  await seedCatalogue(exchange, undefined);
  const market = exchange.catalogue.marketByName('BTCEUR')!.id;
  for (const userId of [1, 2, 3] as UserId[])
    for (const [asset, amount] of [
      ['EUR', 1_000_000_0000],
      ['BTC', 10_0000000000],
    ] as const)
      await exchange.submit({ kind: 'deposit', userId, asset: asset as AssetCode, amount: amount as Amount });
  const place = async (userId: number, side: 'buy' | 'sell', price: number, volume: number) => {
    const result = await exchange.submit({
      kind: 'placeOrder',
      userId: userId as UserId,
      marketId: market,
      side,
      type: 'limit',
      price: price as Price,
      volume: volume as Volume,
    });
    assert.ok(result.ok);
    const accepted = result.events.find((e) => e.type === 'orderAccepted');
    assert.ok(accepted?.type === 'orderAccepted');
    placedAs.set(accepted.order.id, { price, volume });
    return accepted.order.id;
  };
  const amend = async (userId: number, orderId: OrderId, change: { price?: number; volume?: number }) => {
    const result = await exchange.submit({
      kind: 'amendOrder',
      userId: userId as UserId,
      orderId,
      ...(change.price === undefined ? {} : { price: change.price as Price }),
      ...(change.volume === undefined ? {} : { volume: change.volume as Volume }),
    });
    assert.ok(result.ok, JSON.stringify(result));
  };
  const lowered = await place(1, 'buy', 296_037, 10_012_347);
  await place(2, 'sell', 296_037, 3_000_173); // fills part of it
  await amend(1, lowered, { volume: 6_012_347 });
  await place(3, 'sell', 296_037, 1_000_429); // fills a little more of it after the amend
  const raised = await place(1, 'buy', 298_013, 2_003_561);
  await place(2, 'buy', 298_013, 1_000_011); // younger, at the same price
  await amend(1, raised, { volume: 4_003_561 }); // now behind it
  await place(3, 'sell', 298_013, 1_500_083); // fills the younger one first
  const moved = await place(3, 'sell', 305_011, 2_000_127);
  const maker = await place(2, 'buy', 298_511, 2_500_007);
  await amend(3, moved, { price: 297_011 }); // crosses: takes part of the best bid
  await exchange.submit({ kind: 'cancelOrder', userId: 2 as UserId, orderId: maker });
  // A move that crosses only its own user's bid: no trade, the bid canceled by self-trade prevention.
  await place(3, 'buy', 299_901, 500_003);
  const selfCrossing = await place(3, 'sell', 310_007, 700_001);
  await amend(3, selfCrossing, { price: 299_901 });
  await exchange.close();
  store.close();
}

after(() => rmSync(dir, { recursive: true, force: true }));

/** A copy of the store file with `sql` applied, read back. */
function damaged(sql: string) {
  return damagedFile(file, sql);
}

function damagedFile(original: string, sql: string) {
  const copy = join(dir, `damaged-${Math.random().toString(36).slice(2)}.db`);
  copyFileSync(original, copy);
  const db = new Database(copy);
  db.exec(sql);
  db.close();
  try {
    return readCommitted(copy);
  } finally {
    rmSync(copy, { force: true });
  }
}

test('a store written by the exchange passes every check', () => {
  const c = readCommitted(file);
  assert.ok(c.trades.length >= 3, 'the fixture trades');
  assert.ok(
    c.orders.some((o) => o.status === 'open'),
    'the fixture leaves open orders',
  );
  assert.deepEqual(checkLedger(c), []);
  assert.deepEqual(replayCheck(c), []);
  // The fixture exercises the rounding: some fee is not a whole multiple of its exact value.
  const market = c.markets.find((m) => m.base === 'BTC' && m.quote === 'EUR')!;
  assert.ok(
    c.trades.some((t) => (BigInt(t.cost) * BigInt(market.taker_fee)) % 100_000_000n !== 0n),
    'a fee that needs rounding',
  );
  assert.ok(
    c.orders.some((o) => o.fee_excess > 0),
    'an order charged beyond its exact fee',
  );
});

test('damage a half-applied batch could leave is caught', () => {
  const cases: [string, string, RegExp][] = [
    [
      'a balance off by one unit',
      `UPDATE balances SET available = available + 1 WHERE user_id = 2 AND asset = 'EUR'`,
      /balance 2\/EUR/,
    ],
    [
      'a trade without its order updates',
      'DELETE FROM trades WHERE id = (SELECT max(id) FROM trades)',
      /trades sum to|replay/,
    ],
    [
      'a reservation not released',
      `UPDATE orders SET reserved = reserved + 5 WHERE status = 'open' AND id = (SELECT min(id) FROM orders WHERE status = 'open')`,
      /reserves|reserved/,
    ],
    [
      'a cancel without its release',
      `UPDATE orders SET status = 'canceled', reason = 'canceled by user', close_time = open_time, reserved = 0 WHERE id = (SELECT min(id) FROM orders WHERE status = 'open')`,
      /reserved|replay/,
    ],
    [
      'an order whose batch was lost',
      'DELETE FROM orders WHERE id = (SELECT max(id) FROM orders)',
      /missing|gap|refers|nextOrderId/,
    ],
    [
      'a fee rounded down instead of up',
      `UPDATE trades SET taker_fee = taker_fee - 1 WHERE id = 1`,
      /taker fee/,
    ],
    [
      'fees not collected',
      `UPDATE asset_totals SET fees = fees - 1 WHERE asset = 'EUR'`,
      /fees|conservation/,
    ],
  ];
  for (const [what, sql, expected] of cases) {
    const problems = [...checkLedger(damaged(sql)), ...replayCheck(damaged(sql))];
    assert.ok(problems.length > 0, `${what}: not detected`);
    assert.match(problems.join('\n'), expected, `${what}: ${problems.join('; ')}`);
  }
});

test('amends: the checks pass when told what amended orders were placed with, and see a half-applied one', () => {
  const c = readCommitted(amendedFile);
  assert.ok(c.orders.filter((o) => o.priority !== null).length >= 2, 'orders moved by an amend');
  assert.ok(c.meta.get('nextOrderId')! > c.orders.length + 1, 'the moves took numbers of the id sequence');
  const moved = c.orders.find((o) => o.priority !== null && o.side === 'sell')!;
  assert.ok(
    c.trades.some((t) => t.taker_order_id === moved.id && t.time !== moved.open_time),
    'the moved sell traded as the taker at its amend',
  );
  assert.ok(
    c.orders.some(
      (o) => o.reason === 'self-trade prevention' && o.close_time !== null && o.close_time > o.open_time,
    ),
    'a move canceled its own crossing bid',
  );
  const lowered = c.orders.find((o) => o.id === 1)!;
  assert.ok(
    lowered.status === 'open' && lowered.executed > 3_000_173,
    'the lowered buy filled after its amend',
  );
  assert.deepEqual(checkLedger(c, placedAs), []);
  assert.deepEqual(replayCheck(c, placedAs), []);
  // Without the originals, the history does not add up.
  assert.notDeepEqual(replayCheck(c), []);

  const cases: [string, string, RegExp][] = [
    ['a move without its priority', `UPDATE orders SET priority = NULL WHERE id = ${moved.id}`, /replay|gap/],
    [
      'an amend that changed the price but not the queue',
      `UPDATE orders SET priority = priority + 100 WHERE id = ${moved.id}`,
      /replay|nextOrderId|gap/,
    ],
    [
      'a lowered volume whose hold was not resized',
      `UPDATE orders SET reserved = reserved + 7 WHERE id = 1; UPDATE balances SET reserved = reserved + 7, available = available - 7 WHERE user_id = 1 AND asset = 'EUR'`,
      /replay: order 1 /,
    ],
    ['a lowered volume lost', 'UPDATE orders SET volume = 10012347 WHERE id = 1', /replay|reserves/],
    [
      'the newest order lost, its move with it',
      'DELETE FROM orders WHERE id = (SELECT max(id) FROM orders)',
      /order id sequence is at/,
    ],
  ];
  for (const [what, sql, expected] of cases) {
    const d = damagedFile(amendedFile, sql);
    const problems = [...checkLedger(d, placedAs), ...replayCheck(d, placedAs)];
    assert.ok(problems.length > 0, `${what}: not detected`);
    assert.match(problems.join('\n'), expected, `${what}: ${problems.join('; ')}`);
  }
});

test('the book hash sees levels, queue order, owners and remaining volume', () => {
  const c = readCommitted(file);
  const books = committedBooks(c);
  const hash = bookHash(books);
  assert.equal(bookHash([...books].reverse()), hash, 'market order does not matter');
  const btc = books.find((b) => b.pair === 'BTC/EUR')!;
  const others = books.filter((b) => b !== btc);
  const rebuilt = bookFromParts(btc.pair, btc.bids, btc.asks, [...btc.orders].reverse());
  assert.equal(bookHash([...others, rebuilt]), hash, 'orders are put in priority order');
  const [first, ...rest] = btc.orders;
  assert.ok(first !== undefined);
  for (const changed of [
    { ...first, remaining: first.remaining - 1n },
    { ...first, userId: first.userId + 1 },
    { ...first, id: first.id + 1000 },
  ])
    assert.notEqual(bookHash([...others, bookFromOrders(btc.pair, [changed, ...rest])]), hash);
  assert.ok(btc.asks.length > 0, 'the fixture leaves asks');
  const wrongLevels = bookFromParts(btc.pair, btc.bids, btc.asks.slice(1), btc.orders);
  assert.notEqual(bookHash([...others, wrongLevels]), hash, 'levels are part of the hash');
});
