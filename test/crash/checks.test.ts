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
});

after(() => rmSync(dir, { recursive: true, force: true }));

/** A copy of the store file with `sql` applied, read back. */
function damaged(sql: string) {
  const copy = join(dir, `damaged-${Math.random().toString(36).slice(2)}.db`);
  copyFileSync(file, copy);
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
