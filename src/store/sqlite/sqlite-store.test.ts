import assert from 'node:assert/strict';
import { chmodSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import Database from 'better-sqlite3';
import type {
  Amount,
  MarketId,
  Micros,
  OrderId,
  Price,
  Side,
  TradeId,
  UserId,
  Volume,
} from '../../domain/types.js';
import type { Trade } from '../../engine/types.js';
import { type ApiKeyRecord, StoreUnavailableError, type UserTrade } from '../store.js';
import { isUnavailable, toStoreError } from './errors.js';
import {
  orderCountSql,
  orderListSql,
  publicTradesSql,
  SqliteStore,
  userTradeListSql,
} from './sqlite-store.js';
import {
  ALICE,
  ASSETS,
  BOB,
  BTC,
  BTCEUR,
  balance,
  batch,
  CAROL,
  CATALOGUE,
  candle,
  ETHEUR,
  EUR,
  ledger,
  MARKETS,
  order,
  ordersOf,
  T0,
  type TempStore,
  tempStore,
  totals,
  trade,
} from './test-fixtures.js';

const ids = (items: Iterable<{ readonly id: number }>): number[] => [...items].map((i) => i.id);
const tradeIds = (items: Iterable<UserTrade>): number[] => [...items].map((u) => u.trade.id);
const range = (from: number, to: number): number[] =>
  Array.from({ length: to - from + 1 }, (_, i) => from + i);

describe('SqliteStore: commit and loadSnapshot', () => {
  test('an empty database restores to an empty engine with the default sequences', (t) => {
    const { store } = tempStore(t);
    assert.deepEqual(store.loadSnapshot(), {
      assets: [],
      markets: [],
      balances: [],
      totals: [],
      openOrders: [],
      sequences: { nextOrderId: 1, nextTradeId: 1, nextMarketId: 1 },
    });
  });

  test("an order's fee excess (what its next fill's fee rounding needs) survives a restart", (t) => {
    const { store, path } = tempStore(t);
    store.commit(batch({ ...CATALOGUE, orders: [order(1, { feeExcess: 12_345_678 }), order(2)] }));
    // A later state of order 2 goes through the UPDATE path, not the INSERT.
    store.commit(
      batch({ orders: [order(2, { executed: 10 as Volume, fee: 1 as Amount, feeExcess: 99_999_999 })] }),
    );
    store.close();
    const reopened = SqliteStore.open({ path });
    t.after(() => reopened.close());
    assert.deepEqual(
      reopened.loadSnapshot().openOrders.map((o) => [o.id, o.feeExcess]),
      [
        [1, 12_345_678],
        [2, 99_999_999],
      ],
    );
  });

  test('round-trips the catalogue, balances, totals, open orders (by id) and sequences', (t) => {
    const { store, path } = tempStore(t);
    const sequences = { nextOrderId: 10, nextTradeId: 4, nextMarketId: 3 };
    store.commit(
      batch({
        ...CATALOGUE,
        orders: [order(7), order(2, { userId: BOB, side: 'sell' }), order(9, { marketId: ETHEUR }), order(4)],
        balances: [balance(BOB, BTC, 7, 3), balance(ALICE, EUR, 100, 20)],
        totals: [totals(EUR, 120), totals(BTC, 10, 0)],
        sequences,
      }),
    );
    store.commit(
      batch({
        orders: [
          order(4, { status: 'canceled', reason: 'canceled by user', closeTime: (T0 + 99) as Micros }),
        ],
        balances: [balance(ALICE, EUR, 120, 0)],
        totals: [totals(EUR, 120, 5)],
        sequences: { ...sequences, nextTradeId: 5 },
      }),
    );
    store.close();

    const reopened = SqliteStore.open({ path });
    t.after(() => reopened.close());
    const snapshot = reopened.loadSnapshot();
    assert.deepEqual(snapshot.assets, ASSETS);
    assert.deepEqual(snapshot.markets, MARKETS);
    assert.deepEqual(snapshot.balances, [balance(ALICE, EUR, 120, 0), balance(BOB, BTC, 7, 3)]);
    assert.deepEqual(snapshot.totals, [totals(BTC, 10, 0), totals(EUR, 120, 5)]);
    assert.deepEqual(snapshot.openOrders, [
      order(2, { userId: BOB, side: 'sell' }),
      order(7),
      order(9, { marketId: ETHEUR }),
    ]);
    assert.deepEqual(snapshot.sequences, { nextOrderId: 10, nextTradeId: 5, nextMarketId: 3 });
    assert.deepEqual(
      reopened.getOrder(4 as OrderId),
      order(4, { status: 'canceled', reason: 'canceled by user', closeTime: (T0 + 99) as Micros }),
    );
  });

  test('appends trades, upserts candles and records ledger entries', (t) => {
    const { store } = tempStore(t);
    const trades = [trade(1), trade(2, { takerSide: 'sell', takerType: 'market' })];
    store.commit(
      batch({
        ...CATALOGUE,
        trades,
        orders: ordersOf(trades),
        candles: [candle(60), candle(120)],
        ledger: [ledger({ reference: 'dep-1' })],
      }),
    );
    store.commit(batch({ candles: [candle(120, { close: 15 as Price, count: 3 })] }));
    assert.deepEqual(store.listPublicTrades({ marketId: BTCEUR }), [...trades].reverse());
    assert.deepEqual(store.listCandles(BTCEUR, 1, 0, 10), [
      candle(60),
      candle(120, { close: 15 as Price, count: 3 }),
    ]);
    assert.deepEqual(store.findLedgerEntry(ALICE, 'deposit', 'dep-1'), ledger({ reference: 'dep-1' }));
  });

  test('loads every referenced deposit and withdrawal once, the first recorded, in commit order', (t) => {
    const { store } = tempStore(t);
    store.commit(
      batch({
        ...CATALOGUE,
        ledger: [
          ledger({ reference: 'b' }),
          ledger({ reference: null }),
          ledger({ reference: 'a', kind: 'withdrawal', amount: 5 as Amount }),
        ],
      }),
    );
    // Older data may hold one reference under several assets: the first one names the action.
    store.commit(batch({ ledger: [ledger({ reference: 'b', asset: BTC, time: (T0 + 1) as Micros })] }));
    assert.deepEqual(store.loadLedgerReferences(), [
      ledger({ reference: 'b' }),
      ledger({ reference: 'a', kind: 'withdrawal', amount: 5 as Amount }),
    ]);
  });

  test('a batch of a few hundred orders and trades commits in one go', (t) => {
    const { store } = tempStore(t, { synchronous: 'NORMAL' });
    store.commit(batch(CATALOGUE));
    const trades = range(1, 400).map((i) => trade(i));
    store.commit(batch({ trades, orders: ordersOf(trades), balances: [balance(ALICE, EUR, 1)] }));
    assert.equal(store.countUserTrades({ userId: ALICE }), 400);
    assert.equal(store.countOrders({ userId: BOB, status: 'done' }), 400);
  });
});

describe('SqliteStore: failed commits', () => {
  /** Makes the trade with the given id fail to insert, after the batch has written other rows. */
  function failOnTrade(path: string, id: number): () => void {
    const db = new Database(path);
    db.exec(`CREATE TRIGGER fail_trade BEFORE INSERT ON trades WHEN NEW.id = ${id}
             BEGIN SELECT RAISE(ABORT, 'injected failure'); END`);
    return () => {
      db.exec('DROP TRIGGER fail_trade');
      db.close();
    };
  }

  test('a statement failing mid-batch writes nothing and leaves the store usable', (t) => {
    const { store, path } = tempStore(t);
    store.commit(batch({ ...CATALOGUE, orders: [order(1)], balances: [balance(ALICE, EUR, 10)] }));
    const before = store.loadSnapshot();

    const trades = [trade(1), trade(2), trade(3)];
    const failing = batch({
      trades,
      orders: [...ordersOf(trades), order(1, { status: 'closed' }), order(50)],
      balances: [balance(ALICE, EUR, 0), balance(BOB, EUR, 10)],
      totals: [totals(EUR, 10)],
      ledger: [ledger({ reference: 'r1' })],
      candles: [candle(60)],
      sequences: { nextOrderId: 51, nextTradeId: 4, nextMarketId: 3 },
    });
    const restore = failOnTrade(path, 2);
    assert.throws(
      () => store.commit(failing),
      (error: unknown) =>
        !(error instanceof StoreUnavailableError) &&
        error instanceof Error &&
        /injected failure/.test(error.message),
    );
    assert.deepEqual(store.loadSnapshot(), before);
    assert.deepEqual(store.listPublicTrades({ marketId: BTCEUR }), []);
    assert.equal(store.findLedgerEntry(ALICE, 'deposit', 'r1'), undefined);
    assert.deepEqual(store.latestCandles(BTCEUR), []);
    assert.equal(store.getOrder(50 as OrderId), undefined);

    restore();
    store.commit(failing);
    assert.equal(store.listPublicTrades({ marketId: BTCEUR }).length, 3);
    assert.deepEqual(store.loadSnapshot().sequences, { nextOrderId: 51, nextTradeId: 4, nextMarketId: 3 });
  });

  test('a fractional amount is refused, not stored as a float', (t) => {
    const { store } = tempStore(t);
    store.commit(batch(CATALOGUE));
    assert.throws(
      () => store.commit(batch({ balances: [balance(ALICE, EUR, 1.5)] })),
      /REAL value in INTEGER/,
    );
    assert.deepEqual(store.loadSnapshot().balances, []);
  });

  test('a reused ledger reference fails the whole batch; entries without a reference never collide', (t) => {
    const { store } = tempStore(t);
    store.commit(batch({ ...CATALOGUE, ledger: [ledger({ reference: 'r1' }), ledger(), ledger()] }));
    assert.throws(
      () =>
        store.commit(batch({ balances: [balance(ALICE, EUR, 1)], ledger: [ledger({ reference: 'r1' })] })),
      /UNIQUE constraint failed/,
    );
    assert.deepEqual(store.loadSnapshot().balances, []);
    // The same reference is free for another user, asset or kind.
    store.commit(
      batch({
        ledger: [
          ledger({ reference: 'r1', userId: BOB }),
          ledger({ reference: 'r1', asset: BTC }),
          ledger({ reference: 'r1', kind: 'withdrawal' }),
        ],
      }),
    );
    assert.equal(store.findLedgerEntry(BOB, 'deposit', 'r1')?.userId, BOB);
  });

  test('a market of an unknown asset is refused by the foreign key', (t) => {
    const { store } = tempStore(t);
    assert.throws(() => store.commit(batch({ markets: MARKETS })), /FOREIGN KEY constraint failed/);
    assert.deepEqual(store.loadSnapshot().markets, []);
  });

  test('a read-only database fails commits with StoreUnavailableError, keeping the cause', (t) => {
    const { store, path } = tempStore(t);
    store.commit(batch({ ...CATALOGUE, orders: [order(1)] }));
    const readonly = SqliteStore.open({ path, readonly: true });
    t.after(() => readonly.close());
    assert.deepEqual(readonly.loadSnapshot().openOrders, [order(1)]);
    assert.throws(
      () => readonly.commit(batch({ orders: [order(2)] })),
      (error: unknown) =>
        error instanceof StoreUnavailableError &&
        isUnavailable(error.cause) &&
        /^SQLITE_READONLY/.test(error.cause.code),
    );
    assert.throws(() => readonly.createUser(null, T0), StoreUnavailableError);
    assert.equal(store.getOrder(2 as OrderId), undefined);
  });

  test('a lock held past the busy timeout fails with StoreUnavailableError; the next commit succeeds', (t) => {
    const { store, path } = tempStore(t, { busyTimeoutMs: 20 });
    store.commit(batch(CATALOGUE));
    const other = new Database(path);
    t.after(() => other.close());
    other.exec('BEGIN IMMEDIATE');
    assert.throws(
      () => store.commit(batch({ orders: [order(1)] })),
      (error: unknown) => error instanceof StoreUnavailableError && /SQLITE_BUSY/.test(error.message),
    );
    other.exec('ROLLBACK');
    store.commit(batch({ orders: [order(1)] }));
    assert.equal(store.getOrder(1 as OrderId)?.id, 1);
  });

  test('opening a path SQLite cannot open fails with StoreUnavailableError', (t) => {
    const dir = mkdtempSync(join(tmpdir(), 'openspot-cantopen-'));
    t.after(() => rmSync(dir, { recursive: true, force: true }));
    // A directory is not a database file: SQLITE_CANTOPEN.
    assert.throws(
      () => SqliteStore.open({ path: dir }),
      (error: unknown) => error instanceof StoreUnavailableError && /SQLITE_CANTOPEN/.test(error.message),
    );
  });

  test('only I/O-type SQLite failures become StoreUnavailableError', () => {
    const unavailable = [
      'SQLITE_FULL',
      'SQLITE_IOERR',
      'SQLITE_IOERR_FSYNC',
      'SQLITE_READONLY',
      'SQLITE_READONLY_DBMOVED',
      'SQLITE_CANTOPEN',
      'SQLITE_BUSY',
      'SQLITE_BUSY_SNAPSHOT',
    ];
    for (const code of unavailable) {
      const cause = new Database.SqliteError('boom', code);
      const mapped = toStoreError(cause);
      assert.ok(mapped instanceof StoreUnavailableError, code);
      assert.equal(mapped.cause, cause);
    }
    for (const code of ['SQLITE_CONSTRAINT_UNIQUE', 'SQLITE_ERROR', 'SQLITE_CORRUPT', 'SQLITE_FULLX']) {
      const error = new Database.SqliteError('boom', code);
      assert.equal(toStoreError(error), error, code);
    }
    const plain = new TypeError('not sqlite');
    assert.equal(toStoreError(plain), plain);
  });
});

describe('SqliteStore: order queries', () => {
  let dir: string;
  let store: SqliteStore;
  // Alice: 600 orders on BTCEUR and ETHEUR, every third open, the others closed or canceled.
  const statusOf = (id: number) => (id % 3 === 0 ? 'open' : id % 3 === 1 ? 'closed' : 'canceled');
  const marketOf = (id: number): MarketId => (id % 2 === 0 ? BTCEUR : ETHEUR);
  const aliceIds = range(1, 600);
  const expected = (status: 'open' | 'done', marketId?: MarketId): number[] =>
    aliceIds
      .filter((id) => (status === 'open') === (statusOf(id) === 'open'))
      .filter((id) => marketId === undefined || marketOf(id) === marketId)
      .reverse();

  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'openspot-orders-'));
    store = SqliteStore.open({ path: join(dir, 'openspot.db') });
    store.commit(
      batch({
        ...CATALOGUE,
        orders: [
          ...aliceIds.map((id) => order(id, { status: statusOf(id), marketId: marketOf(id) })),
          order(601, { userId: BOB }),
          order(602, { userId: BOB, status: 'closed' }),
        ],
      }),
    );
  });
  after(() => {
    store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  test('list newest first for each status and market filter, with matching counts', () => {
    for (const status of ['open', 'done'] as const)
      for (const marketId of [undefined, BTCEUR, ETHEUR]) {
        const filter = { userId: ALICE, status, marketId };
        assert.deepEqual(ids(store.listOrders(filter)), expected(status, marketId), `${status} ${marketId}`);
        assert.equal(store.countOrders(filter), expected(status, marketId).length);
      }
    assert.deepEqual(ids(store.listOrders({ userId: BOB, status: 'open' })), [601]);
    assert.equal(store.countOrders({ userId: CAROL, status: 'done' }), 0);
    assert.deepEqual([...store.listOrders({ userId: CAROL, status: 'done' })], []);
  });

  test('pages with limit and offset, across the internal chunks', () => {
    const all = expected('done');
    for (const page of [
      { limit: 10, offset: 0 },
      { limit: 10, offset: 395 },
      { limit: 300, offset: 100 },
      { limit: 1000, offset: 3 },
      { limit: 0, offset: 0 },
      { limit: 5, offset: 10_000 },
    ])
      assert.deepEqual(
        ids(store.listOrders({ userId: ALICE, status: 'done' }, page)),
        all.slice(page.offset, page.offset + page.limit),
        JSON.stringify(page),
      );
  });

  test('lists can be iterated again, stopped early, and do not block commits in between', () => {
    const list = store.listOrders({ userId: ALICE, status: 'done' });
    let seen = 0;
    for (const _ of list) {
      if (++seen === 300) break;
      if (seen === 1) store.commit(batch({ orders: [order(603, { userId: CAROL })] }));
    }
    assert.equal(ids(list).length, expected('done').length);
    assert.equal(store.getOrder(603 as OrderId)?.userId, CAROL);
  });

  test('refuse a negative or fractional page', () => {
    assert.throws(
      () => store.listOrders({ userId: ALICE, status: 'open' }, { limit: -1, offset: 0 }),
      RangeError,
    );
    assert.throws(
      () => store.listOrders({ userId: ALICE, status: 'open' }, { limit: 1, offset: 0.5 }),
      RangeError,
    );
  });

  test('getOrder returns every field, or undefined', () => {
    assert.deepEqual(store.getOrder(3 as OrderId), order(3, { status: 'open', marketId: ETHEUR }));
    assert.equal(store.getOrder(9999 as OrderId), undefined);
  });
});

describe('SqliteStore: trade queries', () => {
  let dir: string;
  let store: SqliteStore;
  // 700 trades alternating markets; Alice is taker of the even ones and maker of the odd ones.
  const tradeOf = (id: number): Trade => {
    const aliceTakes = id % 2 === 0;
    return trade(id, {
      marketId: id % 3 === 0 ? ETHEUR : BTCEUR,
      takerUserId: aliceTakes ? ALICE : BOB,
      makerUserId: aliceTakes ? BOB : ALICE,
      takerOrderId: (10_000 + id) as OrderId,
      // Maker order k rests and fills five trades.
      makerOrderId: (20_000 + Math.ceil(id / 5)) as OrderId,
      takerSide: id % 4 < 2 ? 'buy' : 'sell',
      takerFee: (id * 3) as Amount,
      makerFee: id as Amount,
    });
  };
  const trades = range(1, 700).map(tradeOf);
  const sideOf = (t: Trade, user: UserId): Side =>
    t.takerUserId === user ? t.takerSide : t.takerSide === 'buy' ? 'sell' : 'buy';

  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'openspot-trades-'));
    store = SqliteStore.open({ path: join(dir, 'openspot.db') });
    store.commit(batch({ ...CATALOGUE, trades, orders: ordersOf(trades) }));
  });
  after(() => {
    store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  test('listUserTrades: newest first, seen from the user side', () => {
    const mine = [...store.listUserTrades({ userId: ALICE })];
    assert.deepEqual(
      mine.map((u) => u.trade.id),
      range(1, 700).reverse(),
    );
    for (const u of mine) {
      const t = tradeOf(u.trade.id);
      assert.deepEqual(u.trade, t);
      assert.equal(u.taker, t.takerUserId === ALICE);
      assert.equal(u.orderId, u.taker ? t.takerOrderId : t.makerOrderId);
      assert.equal(u.fee, u.taker ? t.takerFee : t.makerFee);
      assert.equal(u.side, sideOf(t, ALICE));
    }
    assert.equal(store.countUserTrades({ userId: ALICE }), 700);
    assert.equal(store.countUserTrades({ userId: CAROL }), 0);
  });

  test('listUserTrades: market filter and pages', () => {
    const eth = range(1, 700)
      .filter((id) => id % 3 === 0)
      .reverse();
    assert.deepEqual(tradeIds(store.listUserTrades({ userId: BOB, marketIds: [ETHEUR] })), eth);
    assert.equal(store.countUserTrades({ userId: BOB, marketIds: [ETHEUR] }), eth.length);
    assert.equal(store.countUserTrades({ userId: BOB, marketIds: [ETHEUR, BTCEUR] }), 700);
    assert.deepEqual(tradeIds(store.listUserTrades({ userId: BOB, marketIds: [] })), []);
    assert.equal(store.countUserTrades({ userId: BOB, marketIds: [] }), 0);
    const all = range(1, 700).reverse();
    for (const page of [
      { limit: 50, offset: 0 },
      { limit: 50, offset: 650 },
      { limit: 500, offset: 7 },
    ])
      assert.deepEqual(
        tradeIds(store.listUserTrades({ userId: ALICE }, page)),
        all.slice(page.offset, page.offset + page.limit),
      );
    assert.deepEqual(
      tradeIds(store.listUserTrades({ userId: ALICE, marketIds: [ETHEUR] }, { limit: 2, offset: 1 })),
      eth.slice(1, 3),
    );
  });

  test('getUserTrade: for the maker, the taker, and nobody else', () => {
    const asTaker = store.getUserTrade(ALICE, 2 as TradeId);
    const asMaker = store.getUserTrade(BOB, 2 as TradeId);
    assert.equal(asTaker?.taker, true);
    assert.equal(asTaker?.orderId, 10_002);
    assert.equal(asTaker?.side, 'sell');
    assert.equal(asTaker?.fee, 6);
    assert.equal(asMaker?.taker, false);
    assert.equal(asMaker?.orderId, 20_001);
    assert.equal(asMaker?.side, 'buy');
    assert.equal(asMaker?.fee, 2);
    assert.equal(store.getUserTrade(CAROL, 2 as TradeId), undefined);
    assert.equal(store.getUserTrade(ALICE, 9999 as TradeId), undefined);
  });

  test('tradesOfOrders: taker and maker participation, oldest first, every id a key', () => {
    const result = store.tradesOfOrders([
      20_002 as OrderId,
      10_007 as OrderId,
      1 as OrderId,
      20_002 as OrderId,
    ]);
    assert.deepEqual([...result.keys()], [20_002, 10_007, 1]);
    assert.deepEqual(ids(result.get(20_002 as OrderId) ?? []), [6, 7, 8, 9, 10]);
    assert.deepEqual(ids(result.get(10_007 as OrderId) ?? []), [7]);
    assert.deepEqual(result.get(1 as OrderId), []);
  });

  test('tradesOfOrders: more ids than one IN list, a trade under both of its orders', () => {
    const takerIds = range(1, 700).map((id) => (10_000 + id) as OrderId);
    const makerIds = range(1, 140).map((k) => (20_000 + k) as OrderId);
    const result = store.tradesOfOrders([...takerIds, ...makerIds]);
    assert.equal(result.size, 840);
    for (const id of takerIds) assert.deepEqual(ids(result.get(id) ?? []), [id - 10_000]);
    for (const k of range(1, 140))
      assert.deepEqual(ids(result.get((20_000 + k) as OrderId) ?? []), range(5 * k - 4, 5 * k));
    assert.deepEqual(store.tradesOfOrders([]), new Map());
  });

  test('listPublicTrades: newest first, by taker side, since (inclusive) and limit', () => {
    const btc = trades.filter((t) => t.marketId === BTCEUR).reverse();
    assert.deepEqual(store.listPublicTrades({ marketId: BTCEUR }), btc);
    assert.deepEqual(store.listPublicTrades({ marketId: BTCEUR, limit: 3 }), btc.slice(0, 3));
    assert.deepEqual(
      store.listPublicTrades({ marketId: BTCEUR, takerSide: 'sell', limit: 4 }),
      btc.filter((t) => t.takerSide === 'sell').slice(0, 4),
    );
    const since = trade(650).time;
    assert.deepEqual(
      ids(store.listPublicTrades({ marketId: BTCEUR, since })),
      ids(btc.filter((t) => t.id >= 650)),
    );
    assert.deepEqual(store.listPublicTrades({ marketId: BTCEUR, limit: 0 }), []);
    assert.deepEqual(store.listPublicTrades({ marketId: 9 as MarketId }), []);
    assert.throws(() => store.listPublicTrades({ marketId: BTCEUR, limit: -1 }), RangeError);
  });

  test('list queries walk indexes in id order instead of sorting', () => {
    const db = new Database(join(dir, 'openspot.db'), { readonly: true });
    try {
      const plans = [
        orderListSql(['closed', 'canceled'], false),
        orderListSql(['closed', 'canceled'], true),
        orderListSql(['open'], false),
        orderListSql(['open'], true),
        orderCountSql(['closed', 'canceled'], true),
        orderCountSql(['open'], false),
        userTradeListSql(false),
        userTradeListSql(true),
        publicTradesSql('trades_by_market', false),
      ];
      for (const sql of plans) {
        const detail = db
          .prepare(`EXPLAIN QUERY PLAN ${sql}`)
          .all({ user: 1, market: 1, markets: '[1]', before: 1e9, limit: 10, offset: 0, side: null })
          .map((row) => (row as { detail: string }).detail)
          .join('\n');
        assert.doesNotMatch(detail, /TEMP B-TREE/, sql);
        assert.doesNotMatch(detail, /SCAN (orders|trades)/, sql);
      }
      const since = db
        .prepare(`EXPLAIN QUERY PLAN ${publicTradesSql('trades_by_market_time', true)}`)
        .all({ market: 1, since: 0, limit: 10, side: null })
        .map((row) => (row as { detail: string }).detail)
        .join('\n');
      assert.match(since, /trades_by_market_time \(market_id=\? AND time>\?\)/);
    } finally {
      db.close();
    }
  });
});

describe('SqliteStore: candles', () => {
  test('listCandles: start after since, the most recent `limit`, oldest first', (t) => {
    const { store } = tempStore(t);
    const starts = range(1, 10).map((i) => i * 60);
    store.commit(
      batch({
        ...CATALOGUE,
        candles: [
          ...starts.map((s) => candle(s)),
          candle(300, { interval: 5 }),
          candle(120, { marketId: ETHEUR }),
        ],
      }),
    );
    const starts_ = (list: { start: number }[]) => list.map((c) => c.start);
    assert.deepEqual(starts_(store.listCandles(BTCEUR, 1, 0, 100)), starts);
    assert.deepEqual(starts_(store.listCandles(BTCEUR, 1, 0, 3)), [480, 540, 600]);
    assert.deepEqual(starts_(store.listCandles(BTCEUR, 1, 300, 100)), [360, 420, 480, 540, 600]);
    assert.deepEqual(starts_(store.listCandles(BTCEUR, 1, 600, 100)), []);
    assert.deepEqual(starts_(store.listCandles(BTCEUR, 5, 0, 100)), [300]);
    assert.deepEqual(store.listCandles(BTCEUR, 1, 0, 0), []);
  });

  test('latestCandles: the newest candle of each interval, in interval order', (t) => {
    const { store } = tempStore(t);
    store.commit(
      batch({
        ...CATALOGUE,
        candles: [
          candle(10080 * 60, { interval: 10080 }),
          candle(60),
          candle(120),
          candle(0, { interval: 60 }),
          candle(3600, { interval: 60 }),
          candle(999_960, { marketId: ETHEUR }),
        ],
      }),
    );
    assert.deepEqual(store.latestCandles(BTCEUR), [
      candle(120),
      candle(3600, { interval: 60 }),
      candle(10080 * 60, { interval: 10080 }),
    ]);
    assert.deepEqual(store.latestCandles(9 as MarketId), []);
  });

  test('candle sums past 2^63 (beyond SQLite integers) are kept exactly across a reopen', (t) => {
    const { store, path } = tempStore(t);
    const huge = {
      volume: 2n ** 64n + 7n,
      quoteVolume: 2n ** 70n + 1n,
      notional: 2n ** 110n + 3n,
    };
    store.commit(batch({ ...CATALOGUE, candles: [candle(60, huge)] }));
    assert.deepEqual(store.listCandles(BTCEUR, 1, 0, 10), [candle(60, huge)]);
    store.close();
    const reopened = SqliteStore.open({ path });
    t.after(() => reopened.close());
    assert.deepEqual(reopened.latestCandles(BTCEUR), [candle(60, huge)]);
  });
});

describe('SqliteStore: users, API keys, ledger', () => {
  test('users: create, get, list; emails unique, null emails allowed', (t) => {
    const { store } = tempStore(t);
    const a = store.createUser('a@example.com', T0);
    const b = store.createUser(null, (T0 + 1) as Micros);
    const c = store.createUser(null, (T0 + 2) as Micros);
    assert.deepEqual(a, { id: 1, email: 'a@example.com', createdAt: T0 });
    assert.deepEqual([b.id, c.id], [2, 3]);
    assert.deepEqual(store.getUser(2 as UserId), b);
    assert.equal(store.getUser(99 as UserId), undefined);
    assert.deepEqual(store.listUsers(), [a, b, c]);
    assert.throws(() => store.createUser('a@example.com', T0), /UNIQUE/);
  });

  test('API keys: create, get, list, revoke once', (t) => {
    const { store } = tempStore(t);
    const user = store.createUser(null, T0);
    const key = (name: string, scopes: ApiKeyRecord['scopes']): ApiKeyRecord => ({
      key: name,
      userId: user.id,
      sealedSecret: `sealed:${name}`,
      scopes,
      createdAt: T0,
      revokedAt: null,
      ipAllowlist: null,
      nonceRequired: false,
    });
    store.createApiKey(key('k1', ['read']));
    store.createApiKey(key('k2', ['read', 'trade']));
    store.createApiKey(key('k3', []));
    assert.deepEqual(store.getApiKey('k2'), key('k2', ['read', 'trade']));
    assert.deepEqual(store.getApiKey('k3'), key('k3', []));
    assert.equal(store.getApiKey('nope'), undefined);
    assert.deepEqual(
      store.listApiKeys(user.id).map((k) => k.key),
      ['k1', 'k2', 'k3'],
    );
    assert.deepEqual(store.listApiKeys(99 as UserId), []);

    const revokedAt = (T0 + 5) as Micros;
    assert.equal(store.revokeApiKey('k1', revokedAt), true);
    assert.equal(store.revokeApiKey('k1', (T0 + 9) as Micros), false);
    assert.equal(store.revokeApiKey('nope', revokedAt), false);
    assert.equal(store.getApiKey('k1')?.revokedAt, revokedAt);

    assert.throws(() => store.createApiKey(key('k1', ['read'])), /UNIQUE|PRIMARY KEY/);
    assert.throws(() => store.createApiKey({ ...key('k4', ['read']), userId: 99 as UserId }), /FOREIGN KEY/);
    assert.throws(() => store.createApiKey(key('k5', ['admin' as never])), RangeError);
  });

  test('API keys: a key read before its revocation reads as revoked right after it', (t) => {
    const { store } = tempStore(t);
    const user = store.createUser(null, T0);
    store.createApiKey({
      key: 'k1',
      userId: user.id,
      sealedSecret: 'sealed:k1',
      scopes: ['read', 'trade'],
      createdAt: T0,
      revokedAt: null,
    });
    for (let i = 0; i < 3; i++) assert.equal(store.getApiKey('k1')?.revokedAt, null);
    assert.equal(store.revokeApiKey('k1', (T0 + 5) as Micros), true);
    assert.equal(store.getApiKey('k1')?.revokedAt, T0 + 5);
    assert.throws(() => (store.getApiKey('k1')!.scopes as string[]).push('admin'), TypeError);
  });

  test('API keys: IP allow-list and nonce flag are stored, default to any address and no nonce', (t) => {
    const { store, path } = tempStore(t);
    const user = store.createUser(null, T0);
    const base = { userId: user.id, scopes: ['read'] as const, createdAt: T0, revokedAt: null };
    store.createApiKey({ ...base, key: 'plain', sealedSecret: 's' });
    store.createApiKey({
      ...base,
      key: 'locked',
      sealedSecret: 's',
      ipAllowlist: ['10.0.0.0/8', '2001:db8::/32', '10.0.0.0/8', '127.0.0.1'],
      nonceRequired: true,
    });
    assert.equal(store.getApiKey('plain')?.ipAllowlist, null);
    assert.equal(store.getApiKey('plain')?.nonceRequired, false);
    const locked = store.getApiKey('locked');
    assert.deepEqual(locked?.ipAllowlist, ['10.0.0.0/8', '2001:db8::/32', '127.0.0.1']);
    assert.equal(locked?.nonceRequired, true);
    // The cached record's list cannot be changed by a caller.
    assert.throws(() => (store.getApiKey('locked')!.ipAllowlist as string[]).push('0.0.0.0/0'), TypeError);
    assert.deepEqual(
      store.listApiKeys(user.id).map((k) => [k.key, k.ipAllowlist, k.nonceRequired]),
      [
        ['plain', null, false],
        ['locked', ['10.0.0.0/8', '2001:db8::/32', '127.0.0.1'], true],
      ],
    );
    for (const bad of [[], [''], ['10.0.0.1,10.0.0.2'], ['10.0.0.1 ']]) {
      assert.throws(
        () => store.createApiKey({ ...base, key: `bad-${bad.join()}`, sealedSecret: 's', ipAllowlist: bad }),
        RangeError,
      );
    }
    // The last nonce lives only in the table.
    const db = new Database(path, { readonly: true });
    t.after(() => db.close());
    assert.equal(db.prepare("SELECT last_nonce FROM api_keys WHERE key = 'locked'").pluck().get(), null);
  });

  test('acceptNonce: only strictly increasing nonces, compared exactly up to 20 digits', (t) => {
    const { store } = tempStore(t);
    const user = store.createUser(null, T0);
    const base = { userId: user.id, scopes: ['read', 'trade'] as const, createdAt: T0, revokedAt: null };
    store.createApiKey({ ...base, key: 'k', sealedSecret: 's', nonceRequired: true });
    store.createApiKey({ ...base, key: 'other', sealedSecret: 's', nonceRequired: true });

    assert.equal(store.acceptNonce('k', '5'), true);
    assert.equal(store.acceptNonce('k', '5'), false, 'the same nonce twice');
    assert.equal(store.acceptNonce('k', '4'), false, 'a smaller one');
    assert.equal(store.acceptNonce('k', '10'), true, 'longer is greater (not "10" < "5" as text)');
    assert.equal(store.acceptNonce('k', '9'), false);
    // Beyond 2^53 and 2^64: still exact.
    assert.equal(store.acceptNonce('k', '9007199254740993'), true);
    assert.equal(store.acceptNonce('k', '9007199254740992'), false);
    assert.equal(store.acceptNonce('k', '18446744073709551616'), true);
    assert.equal(store.acceptNonce('k', '18446744073709551615'), false);
    assert.equal(store.acceptNonce('k', '99999999999999999999'), true);
    assert.equal(store.acceptNonce('k', '99999999999999999999'), false, 'the largest nonce is accepted once');
    // Per key.
    assert.equal(store.acceptNonce('other', '1'), true);
    // Unknown and revoked keys never accept.
    assert.equal(store.acceptNonce('nope', '1'), false);
    store.revokeApiKey('other', (T0 + 1) as Micros);
    assert.equal(store.acceptNonce('other', '2'), false);
    // Only canonical decimal text.
    for (const bad of ['', '01', '-1', '1.5', ' 1', '1e3', '123456789012345678901', 'abc']) {
      assert.throws(() => store.acceptNonce('k', bad), RangeError, bad);
    }
    assert.throws(() => store.acceptNonce('k', 7 as unknown as string), RangeError);
  });

  test('acceptNonce is durable: a reopened store still refuses an old nonce', (t) => {
    const { store, path } = tempStore(t);
    const user = store.createUser(null, T0);
    store.createApiKey({
      key: 'k',
      userId: user.id,
      sealedSecret: 's',
      scopes: ['read'],
      createdAt: T0,
      revokedAt: null,
      nonceRequired: true,
    });
    assert.equal(store.acceptNonce('k', '1700000000000000'), true);
    store.close();
    const reopened = SqliteStore.open({ path });
    t.after(() => reopened.close());
    assert.equal(reopened.acceptNonce('k', '1700000000000000'), false);
    assert.equal(reopened.acceptNonce('k', '1700000000000001'), true);
  });

  test('acceptNonce after a cached read: the cache never decides a nonce', (t) => {
    const { store } = tempStore(t);
    const user = store.createUser(null, T0);
    store.createApiKey({
      key: 'k',
      userId: user.id,
      sealedSecret: 's',
      scopes: ['read'],
      createdAt: T0,
      revokedAt: null,
      nonceRequired: true,
    });
    const first = store.getApiKey('k');
    assert.equal(store.acceptNonce('k', '1'), true);
    assert.equal(store.getApiKey('k'), first, 'the record is still served from the cache');
    assert.equal(store.acceptNonce('k', '1'), false);
  });

  test('findLedgerEntry: by user, kind and reference, whatever the asset (the oldest first)', (t) => {
    const { store } = tempStore(t);
    const entry = ledger({ kind: 'withdrawal', reference: 'w-7', amount: 42 as Amount, asset: BTC });
    store.commit(batch({ ...CATALOGUE, ledger: [entry, ledger({ reference: null })] }));
    // Older data may hold one reference under two assets (the unique index includes the asset).
    store.commit(batch({ ledger: [ledger({ kind: 'withdrawal', reference: 'w-7', asset: EUR })] }));
    assert.deepEqual(store.findLedgerEntry(ALICE, 'withdrawal', 'w-7'), entry);
    assert.equal(store.findLedgerEntry(ALICE, 'deposit', 'w-7'), undefined);
    assert.equal(store.findLedgerEntry(BOB, 'withdrawal', 'w-7'), undefined);
  });
});

describe('SqliteStore: lifecycle', () => {
  test('works in memory, and close is idempotent', () => {
    const store = SqliteStore.open({ path: ':memory:' });
    store.commit(batch({ ...CATALOGUE, orders: [order(1)] }));
    assert.deepEqual(ids(store.loadSnapshot().openOrders), [1]);
    store.close();
    store.close();
  });

  test('reopening continues from the stored state', (t) => {
    const first: TempStore = tempStore(t);
    first.store.commit(batch({ ...CATALOGUE, orders: [order(1)] }));
    const second = SqliteStore.open({ path: first.path });
    t.after(() => second.close());
    assert.deepEqual(ids(second.loadSnapshot().openOrders), [1]);
  });

  test('the database file and its -wal and -shm are created 0600, in a directory that already exists', (t) => {
    const dir = mkdtempSync(join(tmpdir(), 'openspot-mode-'));
    t.after(() => rmSync(dir, { recursive: true, force: true }));
    chmodSync(dir, 0o755);
    const path = join(dir, 'openspot.db');
    const store = SqliteStore.open({ path });
    t.after(() => store.close());
    store.commit(batch({ ...CATALOGUE, orders: [order(1)] }));
    for (const file of [path, `${path}-wal`, `${path}-shm`]) {
      assert.equal((statSync(file).mode & 0o777).toString(8), '600', file);
    }
  });

  test('an existing database file readable by others is narrowed to 0600 when opened', (t) => {
    const dir = mkdtempSync(join(tmpdir(), 'openspot-mode-'));
    t.after(() => rmSync(dir, { recursive: true, force: true }));
    const path = join(dir, 'openspot.db');
    SqliteStore.open({ path }).close();
    chmodSync(path, 0o644);
    writeFileSync(`${path}-wal`, '', { mode: 0o644 });
    chmodSync(`${path}-wal`, 0o644);
    const store = SqliteStore.open({ path });
    t.after(() => store.close());
    for (const file of [path, `${path}-wal`]) {
      assert.equal((statSync(file).mode & 0o777).toString(8), '600', file);
    }
  });
});

describe('idempotency records', () => {
  const record = (key: string, time: number, orderId = 1) => ({
    userId: ALICE,
    key,
    fingerprint: 'a'.repeat(64),
    orderId: orderId as OrderId,
    time: time as Micros,
  });

  test('are written with the batch, found per user and key, replaced under the same key, and kept across a reopen', (t) => {
    const { store, path } = tempStore(t);
    store.commit({ ...batch(CATALOGUE), idempotencyKeys: [record('k1', 10), record('k2', 11, 2)] });
    assert.deepEqual(store.findIdempotencyRecord(ALICE, 'k1'), record('k1', 10));
    assert.equal(store.findIdempotencyRecord(BOB, 'k1'), undefined);
    store.commit({ ...batch({}), idempotencyKeys: [record('k1', 50, 7)] });
    assert.deepEqual(store.findIdempotencyRecord(ALICE, 'k1'), record('k1', 50, 7));
    store.close();
    const reopened = SqliteStore.open({ path });
    t.after(() => reopened.close());
    assert.deepEqual(reopened.findIdempotencyRecord(ALICE, 'k2'), record('k2', 11, 2));
  });

  test('older than the expiry are pruned at commit, at most 1000 per commit, oldest first', (t) => {
    const { store } = tempStore(t);
    const many = Array.from({ length: 1500 }, (_, i) => record(`k${i}`, i));
    store.commit({ ...batch(CATALOGUE), idempotencyKeys: many });
    store.commit({ ...batch({}), idempotencyExpiredBefore: 1400 as Micros });
    assert.equal(store.findIdempotencyRecord(ALICE, 'k999'), undefined);
    assert.deepEqual(store.findIdempotencyRecord(ALICE, 'k1000'), record('k1000', 1000));
    store.commit({ ...batch({}), idempotencyExpiredBefore: 1400 as Micros });
    assert.equal(store.findIdempotencyRecord(ALICE, 'k1399'), undefined);
    assert.deepEqual(store.findIdempotencyRecord(ALICE, 'k1400'), record('k1400', 1400));
  });
});
