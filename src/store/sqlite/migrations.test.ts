import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import Database from 'better-sqlite3';
import type { Micros, OrderId } from '../../domain/types.js';
import { MIGRATIONS, type Migration, migrate, SCHEMA_VERSION, schemaVersion } from './migrations.js';
import { SqliteStore } from './sqlite-store.js';
import { ALICE, BTCEUR, balance, batch, CATALOGUE, ETHEUR, EUR, order } from './test-fixtures.js';

interface Cleanup {
  after(fn: () => void): void;
}

function tempPath(t: Cleanup): string {
  const dir = mkdtempSync(join(tmpdir(), 'openspot-migrations-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return join(dir, 'openspot.db');
}

function tables(db: Database.Database): string[] {
  return db
    .prepare<[], string>(
      "SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name",
    )
    .pluck()
    .all();
}

describe('migrations', () => {
  test('are numbered 1, 2, 3, ... and SCHEMA_VERSION is the last', () => {
    assert.deepEqual(
      MIGRATIONS.map((m) => m.version),
      MIGRATIONS.map((_, i) => i + 1),
    );
    assert.equal(SCHEMA_VERSION, MIGRATIONS.length);
  });

  test('create every table on a fresh database, in WAL mode', (t) => {
    const path = tempPath(t);
    SqliteStore.open({ path }).close();
    const db = new Database(path, { readonly: true });
    t.after(() => db.close());
    assert.equal(schemaVersion(db), SCHEMA_VERSION);
    assert.equal(db.pragma('journal_mode', { simple: true }), 'wal');
    assert.deepEqual(tables(db), [
      'api_keys',
      'asset_totals',
      'assets',
      'balances',
      'book_sequences',
      'cancel_all_after',
      'candles',
      'command_receipts',
      'idempotency_keys',
      'journal_state',
      'ledger_entries',
      'markets',
      'meta',
      'orders',
      'trades',
      'users',
      'write_probe', // created by the store, not a migration (write-probe.ts)
    ]);
    const indexes = db
      .prepare<[], string>("SELECT name FROM sqlite_schema WHERE type = 'index' AND name NOT LIKE 'sqlite_%'")
      .pluck()
      .all();
    for (const name of [
      'orders_by_user',
      'orders_open_by_user',
      'orders_open',
      'trades_by_market',
      'trades_by_market_time',
      'trades_by_taker_user',
      'trades_by_maker_user',
      'trades_by_taker_order',
      'trades_by_maker_order',
      'ledger_entries_by_reference',
      'ledger_entries_by_user_reference',
      'idempotency_keys_by_time',
    ])
      assert.ok(indexes.includes(name), name);
  });

  test('re-opening applies nothing and keeps the data', (t) => {
    const path = tempPath(t);
    const first = SqliteStore.open({ path });
    first.commit(batch({ ...CATALOGUE, orders: [order(1)], balances: [balance(ALICE, EUR, 5)] }));
    first.close();

    const db = new Database(path);
    t.after(() => db.close());
    assert.deepEqual(migrate(db), []);
    assert.equal(schemaVersion(db), SCHEMA_VERSION);

    const second = SqliteStore.open({ path });
    t.after(() => second.close());
    const snapshot = second.loadSnapshot();
    assert.deepEqual(
      snapshot.openOrders.map((o) => [o.id, o.marketId]),
      [[1, BTCEUR]],
    );
    assert.deepEqual(snapshot.balances, [balance(ALICE, EUR, 5)]);
  });

  test('apply only the missing migrations, in order', () => {
    const db = new Database(':memory:');
    const steps: Migration[] = [
      { version: 1, description: 'a', sql: 'CREATE TABLE a (x INTEGER) STRICT;' },
      { version: 2, description: 'b', sql: 'CREATE TABLE b (x INTEGER) STRICT;' },
    ];
    assert.deepEqual(migrate(db, steps.slice(0, 1)), [1]);
    assert.deepEqual(migrate(db, steps), [2]);
    assert.deepEqual(migrate(db, steps), []);
    assert.deepEqual(tables(db), ['a', 'b']);
    db.close();
  });

  test('a failing migration leaves the previous schema and version', () => {
    const db = new Database(':memory:');
    const steps: Migration[] = [
      { version: 1, description: 'good', sql: 'CREATE TABLE a (x INTEGER) STRICT;' },
      { version: 2, description: 'bad', sql: 'CREATE TABLE b (x INTEGER) STRICT; SELECT * FROM missing;' },
    ];
    assert.throws(() => migrate(db, steps), /no such table: missing/);
    assert.equal(schemaVersion(db), 0);
    assert.deepEqual(tables(db), []);
    db.close();
  });

  test('v2 upgrades a v1 database: existing keys allow any address and need no nonce', (t) => {
    const path = tempPath(t);
    const v1 = new Database(path);
    migrate(v1, MIGRATIONS.slice(0, 1));
    v1.prepare('INSERT INTO users (id, email, created_at) VALUES (1, NULL, 1)').run();
    v1.prepare(
      `INSERT INTO api_keys (key, user_id, sealed_secret, scopes, created_at, revoked_at)
       VALUES ('old', 1, 'sealed', 'read,trade', 1, NULL)`,
    ).run();
    v1.close();

    const store = SqliteStore.open({ path });
    t.after(() => store.close());
    const record = store.getApiKey('old');
    assert.equal(record?.ipAllowlist, null);
    assert.equal(record?.nonceRequired, false);
    assert.deepEqual(record?.scopes, ['read', 'trade']);
    // The new columns refuse what the code would never write.
    const db = new Database(path);
    t.after(() => db.close());
    assert.throws(() => db.prepare("UPDATE api_keys SET last_nonce = '012'").run(), /CHECK/);
    assert.throws(() => db.prepare("UPDATE api_keys SET last_nonce = '1a'").run(), /CHECK/);
    assert.throws(() => db.prepare(`UPDATE api_keys SET last_nonce = '${'1'.repeat(21)}'`).run(), /CHECK/);
    assert.throws(() => db.prepare('UPDATE api_keys SET nonce_required = 2').run(), /CHECK/);
    assert.throws(() => db.prepare("UPDATE api_keys SET ip_allowlist = ''").run(), /CHECK/);
  });

  test('v3 re-indexes the orders of a v2 database: lists, counts and the restore read the same', (t) => {
    const path = tempPath(t);
    const v2 = new Database(path);
    migrate(v2, MIGRATIONS.slice(0, 2));
    v2.exec(`INSERT INTO assets VALUES ('BTC', 'Bitcoin', 'crypto', 8), ('EUR', 'Euro', 'fiat', 2), ('ETH', 'Ether', 'crypto', 8);
      INSERT INTO markets VALUES (1, 'BTC', 'EUR', 1, 8, 1, 0, 0), (2, 'ETH', 'EUR', 1, 8, 1, 0, 0);`);
    const insert = v2.prepare(
      `INSERT INTO orders (id, user_id, market_id, side, type, price, volume, executed, status, reason,
         open_time, close_time, cost, fee, reserved)
       VALUES (?, ?, ?, 'buy', 'limit', 100, 1000, 0, ?, NULL, 1, NULL, 0, 0, 0)`,
    );
    // [id, user, market, status]
    for (const [id, user, market, status] of [
      [1, 1, 1, 'open'],
      [2, 1, 1, 'canceled'],
      [3, 1, 2, 'open'],
      [4, 2, 1, 'open'],
      [5, 1, 2, 'closed'],
    ] as const)
      insert.run(id, user, market, status);
    v2.close();

    const store = SqliteStore.open({ path });
    t.after(() => store.close());
    const ids = (list: Iterable<{ id: number }>) => [...list].map((o) => o.id);
    assert.deepEqual(ids(store.listOrders({ userId: ALICE, status: 'open' })), [3, 1]);
    assert.deepEqual(ids(store.listOrders({ userId: ALICE, status: 'open', marketId: BTCEUR })), [1]);
    assert.deepEqual(ids(store.listOrders({ userId: ALICE, status: 'done' })), [5, 2]);
    assert.deepEqual(ids(store.listOrders({ userId: ALICE, status: 'done', marketId: ETHEUR })), [5]);
    assert.equal(store.countOrders({ userId: ALICE, status: 'open' }), 2);
    assert.equal(store.countOrders({ userId: ALICE, status: 'done', marketId: BTCEUR }), 1);
    assert.deepEqual(ids(store.loadSnapshot().openOrders), [1, 3, 4]);
  });

  test('v4 turns the candle sums of a v3 database into exact TEXT and computes each notional from its trades', (t) => {
    const path = tempPath(t);
    const v3 = new Database(path);
    migrate(v3, MIGRATIONS.slice(0, 3));
    v3.exec(`INSERT INTO assets VALUES ('BTC', 'Bitcoin', 'crypto', 8), ('EUR', 'Euro', 'fiat', 2);
      INSERT INTO markets VALUES (1, 'BTC', 'EUR', 1, 8, 1, 0, 0);`);
    const trade = v3.prepare(
      `INSERT INTO trades (id, market_id, price, volume, cost, taker_order_id, maker_order_id, taker_user_id,
         maker_user_id, taker_side, taker_type, taker_fee, maker_fee, time)
       VALUES (?, 1, ?, ?, ?, 1, 2, 1, 2, 'buy', 'limit', 0, 0, ?)`,
    );
    const minute = 1_700_000_040; // a whole minute
    // Two trades in one minute at 60226.8 whose costs were rounded down; a third one the next
    // minute with a huge price × volume (beyond SQLite's 64-bit integers); the clock stepped back
    // for the fourth, which joined the current (second) minute's candle.
    trade.run(1, 602_268, 123, 7, minute * 1_000_000);
    trade.run(2, 602_268, 77, 4, minute * 1_000_000 + 1);
    trade.run(3, 900_000_000_000, 9_000_000_000_000, 1, (minute + 60) * 1_000_000);
    trade.run(4, 10, 5, 0, (minute + 1) * 1_000_000);
    const candle = v3.prepare(
      `INSERT INTO candles (market_id, interval, start, open, high, low, close, volume, quote_volume, count)
       VALUES (1, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    );
    candle.run(1, minute, 602_268, 602_268, 602_268, 602_268, 200, 11, 2);
    candle.run(1, minute + 60, 900_000_000_000, 900_000_000_000, 10, 10, 9_000_000_000_005, 1, 2);
    // A candle whose trades are not in the table: its VWAP becomes its close.
    candle.run(1, minute - 600, 50, 70, 40, 60, 3, 2, 1);
    v3.close();

    const store = SqliteStore.open({ path });
    t.after(() => store.close());
    const candles = store.listCandles(BTCEUR, 1, 0, 10);
    assert.deepEqual(
      candles.map((c) => [c.start, c.volume, c.quoteVolume, c.notional, c.count]),
      [
        [minute - 600, 3n, 2n, 180n, 1],
        [minute, 200n, 11n, 602_268n * 200n, 2],
        [minute + 60, 9_000_000_000_005n, 1n, 900_000_000_000n * 9_000_000_000_000n + 50n, 2],
      ],
    );
    const db = new Database(path);
    t.after(() => db.close());
    assert.equal(db.prepare('SELECT typeof(volume) FROM candles LIMIT 1').pluck().get(), 'text');
    // The columns refuse what the code would never write.
    assert.throws(() => db.prepare("UPDATE candles SET volume = '012'").run(), /CHECK/);
    assert.throws(() => db.prepare("UPDATE candles SET notional = '-1'").run(), /CHECK/);
    assert.throws(() => db.prepare("UPDATE candles SET quote_volume = '1e3'").run(), /CHECK/);
  });

  test('v5 gives orders a fee excess: open buys of a v4 database keep their fees within their floored hold', (t) => {
    const path = tempPath(t);
    const v4 = new Database(path);
    migrate(v4, MIGRATIONS.slice(0, 4));
    v4.exec(`INSERT INTO assets VALUES ('BTC', 'Bitcoin', 'crypto', 8), ('EUR', 'Euro', 'fiat', 2);
      INSERT INTO markets VALUES (1, 'BTC', 'EUR', 1, 8, 1, 160000, 260000);`);
    const insert = v4.prepare(
      `INSERT INTO orders (id, user_id, market_id, side, type, price, volume, executed, status, reason,
         open_time, close_time, cost, fee, reserved)
       VALUES (?, 1, 1, ?, 'limit', 300000, 10000, 0, ?, NULL, 1, NULL, 0, 0, 300)`,
    );
    // [id, side, status]
    for (const [id, side, status] of [
      [1, 'buy', 'open'],
      [2, 'sell', 'open'],
      [3, 'buy', 'closed'],
    ] as const)
      insert.run(id, side, status);
    v4.close();

    const store = SqliteStore.open({ path });
    t.after(() => store.close());
    assert.deepEqual(
      store.loadSnapshot().openOrders.map((o) => [o.id, o.feeExcess]),
      [
        [1, 99_999_999],
        [2, 0],
      ],
    );
    assert.equal(store.getOrder(3 as OrderId)?.feeExcess, 0);
    const db = new Database(path);
    t.after(() => db.close());
    assert.throws(() => db.prepare('UPDATE orders SET fee_excess = 100000000 WHERE id = 1').run(), /CHECK/);
    assert.throws(() => db.prepare('UPDATE orders SET fee_excess = -1 WHERE id = 1').run(), /CHECK/);
  });

  test('v6 upgrades a v5 database: references are found whatever their asset; idempotency keys start empty', (t) => {
    const path = tempPath(t);
    const v5 = new Database(path);
    migrate(v5, MIGRATIONS.slice(0, 5));
    v5.exec(`INSERT INTO assets VALUES ('BTC', 'Bitcoin', 'crypto', 8), ('EUR', 'Euro', 'fiat', 2);
      INSERT INTO ledger_entries (user_id, asset, kind, amount, reference, time) VALUES
        (1, 'EUR', 'deposit', 500, 'wire-1', 10), (1, 'BTC', 'deposit', 7, 'wire-1', 20);`);
    v5.close();

    const store = SqliteStore.open({ path });
    t.after(() => store.close());
    const found = store.findLedgerEntry(ALICE, 'deposit', 'wire-1');
    assert.deepEqual([found?.asset, found?.amount, found?.time], ['EUR', 500, 10]);
    assert.equal(store.findIdempotencyRecord(ALICE, 'k'), undefined);
    const db = new Database(path);
    t.after(() => db.close());
    assert.throws(
      () => db.prepare("INSERT INTO idempotency_keys VALUES (1, '', 'x', 1, 1)").run(),
      /CHECK/,
      'an empty key or a fingerprint that is not a SHA-256 is refused',
    );
  });

  test('v7 upgrades a v6 database: every market starts at book sequence 0 (none stored), and commits store them', (t) => {
    const path = tempPath(t);
    // A v6 database holding a venue: written by this release, then taken back to v6 (the
    // migration only adds the table, so dropping it is exactly the v6 schema).
    const old = SqliteStore.open({ path });
    old.commit(batch({ ...CATALOGUE, orders: [order(1)] }));
    old.close();
    const migrated = new Database(path);
    undoV8(migrated);
    migrated.pragma('user_version = 6');
    migrated.exec('DROP TABLE book_sequences');
    migrated.close();

    const store = SqliteStore.open({ path });
    t.after(() => store.close());
    assert.deepEqual(store.loadBookSequences(), [], 'unknown: 0 for every market');
    assert.equal(store.loadSnapshot().openOrders.length, 1, 'the rest is kept');
    store.commit({ ...batch({}), bookSequences: [{ marketId: BTCEUR, sequence: 3 }] });
    assert.deepEqual(store.loadBookSequences(), [{ marketId: BTCEUR, sequence: 3 }]);
    const db = new Database(path);
    t.after(() => db.close());
    assert.throws(
      () => db.prepare('INSERT INTO book_sequences VALUES (9, -1)').run(),
      /CHECK/,
      'a negative sequence is refused',
    );
  });

  test('v10 upgrades a v8 database: no command receipt, and commits store them', (t) => {
    const path = tempPath(t);
    const old = SqliteStore.open({ path });
    old.commit(batch({ ...CATALOGUE, orders: [order(1)] }));
    old.close();
    const migrated = new Database(path);
    migrated.exec('DROP TABLE command_receipts; DROP TABLE journal_state');
    migrated.pragma('user_version = 8');
    migrated.close();

    const store = SqliteStore.open({ path });
    t.after(() => store.close());
    assert.deepEqual(store.loadCommandReceipts(0), []);
    assert.equal(store.loadSnapshot().openOrders.length, 1, 'the rest is kept');
    const receipt = { id: 'a'.repeat(22), expires: 1_000, reply: '{}' };
    store.commit({ ...batch({}), commandReceipts: [receipt] });
    assert.deepEqual(store.loadCommandReceipts(0), [receipt]);
  });

  test('v8 upgrades a v7 database: its orders keep what they were (the defaults), no switch is armed', (t) => {
    const path = tempPath(t);
    const old = SqliteStore.open({ path });
    old.commit(batch({ ...CATALOGUE, orders: [order(1)] }));
    const before = old.loadSnapshot();
    old.close();
    const migrated = new Database(path);
    undoV8(migrated);
    migrated.close();

    const store = SqliteStore.open({ path });
    t.after(() => store.close());
    const after = store.loadSnapshot();
    assert.deepEqual(after, before, 'an order without controls reads back as the very same state');
    assert.equal(after.switches, undefined);
    const controlled = order(2, {
      timeInForce: 'GTD',
      expireTime: 5_000_000 as Micros,
      clientOrderId: 'c-1',
    });
    store.commit({
      ...batch({ orders: [controlled] }),
      changes: {
        ...batch({ orders: [controlled] }).changes,
        switches: [{ userId: ALICE, triggerTime: 9 as Micros }],
      },
    });
    const again = store.loadSnapshot();
    assert.deepEqual(again.openOrders.at(-1), controlled);
    assert.deepEqual(again.switches, [{ userId: ALICE, triggerTime: 9 }]);
    assert.deepEqual(store.findOrderByClientId(ALICE, 'c-1'), controlled);
  });

  test('v9 upgrades a v8 database: its orders stay as they were, indexes and all; conditional orders can be written', (t) => {
    const path = tempPath(t);
    const v8 = new Database(path);
    migrate(v8, MIGRATIONS.slice(0, 8));
    v8.exec(`
      INSERT INTO assets (code, name, type, decimals) VALUES ('BTC', 'Bitcoin', 'crypto', 8), ('EUR', 'Euro', 'fiat', 4);
      INSERT INTO markets (id, base, quote, pair_decimals, lot_decimals, ordermin, maker_fee, taker_fee)
        VALUES (1, 'BTC', 'EUR', 1, 8, 1, 0, 0);
      INSERT INTO orders (id, user_id, market_id, side, type, price, volume, executed, status, reason, open_time,
          close_time, cost, fee, reserved, client_order_id, time_in_force, expire_time)
        VALUES (1, 1, 1, 'buy', 'limit', 5000, 10, 0, 'open', NULL, 7, NULL, 0, 0, 5, 'keep-me', 'GTD', 99),
               (2, 1, 1, 'sell', 'market', 0, 10, 10, 'closed', NULL, 8, 9, 50, 1, 0, NULL, 'GTC', 0);
    `);
    const indexesBefore = v8
      .prepare<[], string>(
        "SELECT name FROM sqlite_schema WHERE type = 'index' AND tbl_name = 'orders' ORDER BY name",
      )
      .pluck()
      .all();
    v8.close();

    const store = SqliteStore.open({ path });
    t.after(() => store.close());
    const [open] = store.loadSnapshot().openOrders;
    assert.deepEqual(open, {
      id: 1,
      userId: 1,
      marketId: 1,
      side: 'buy',
      type: 'limit',
      price: 5000,
      volume: 10,
      executed: 0,
      status: 'open',
      reason: null,
      openTime: 7,
      closeTime: null,
      cost: 0,
      fee: 0,
      feeExcess: 0,
      reserved: 5,
      timeInForce: 'GTD',
      clientOrderId: 'keep-me',
      expireTime: 99,
    });
    assert.equal(store.getOrder(2 as OrderId)?.type, 'market');
    const db = new Database(path, { readonly: true });
    t.after(() => db.close());
    const indexesAfter = db
      .prepare<[], string>(
        "SELECT name FROM sqlite_schema WHERE type = 'index' AND tbl_name = 'orders' ORDER BY name",
      )
      .pluck()
      .all();
    assert.deepEqual(indexesAfter, indexesBefore);
    const stop = order(3, { type: 'stop-loss', price: 0 as never, triggerPrice: 4_000 as never });
    store.commit(batch({ orders: [stop] }));
    assert.deepEqual(store.getOrder(3 as OrderId), stop);
    assert.ok(
      indexesAfter.includes('orders_open_by_user') && indexesAfter.includes('orders_by_user_client_id'),
    );
  });

  test('v12 upgrades a v11 database: orders and trades, indexes and all, as they were; its checks refuse what they refused', (t) => {
    const path = tempPath(t);
    const v11 = new Database(path);
    migrate(v11, MIGRATIONS.slice(0, 11));
    v11.exec(`
      INSERT INTO assets (code, name, type, decimals) VALUES ('BTC', 'Bitcoin', 'crypto', 8), ('EUR', 'Euro', 'fiat', 4);
      INSERT INTO markets (id, base, quote, pair_decimals, lot_decimals, ordermin, maker_fee, taker_fee)
        VALUES (1, 'BTC', 'EUR', 1, 8, 1, 0, 0);
      INSERT INTO orders (id, user_id, market_id, side, type, price, volume, executed, status, reason, open_time,
          close_time, cost, fee, reserved, client_order_id, time_in_force, expire_time, stp, trailing_unit,
          trailing_amount, trailing_best)
        VALUES (1, 1, 1, 'buy', 'limit', 5000, 10, 0, 'open', NULL, 7, NULL, 0, 0, 5, 'keep-me', 'GTD', 99,
                'decrement', NULL, NULL, NULL),
               (2, 2, 1, 'sell', 'trailing-stop', 0, 10, 0, 'open', NULL, 8, NULL, 0, 0, 10, NULL, 'GTC', 0,
                'cancel-oldest', 'bps', 50, 5100);
      INSERT INTO trades (id, market_id, price, volume, cost, taker_order_id, maker_order_id, taker_user_id,
          maker_user_id, taker_side, taker_type, taker_fee, maker_fee, time)
        VALUES (1, 1, 5000, 3, 15, 2, 1, 2, 1, 'sell', 'market', 1, 0, 9);
    `);
    const dump = (db: Database.Database) => ({
      orders: db.prepare('SELECT * FROM orders ORDER BY id').all(),
      trades: db.prepare('SELECT * FROM trades ORDER BY id').all(),
      indexes: db
        .prepare<[], string>(
          "SELECT name || ' ' || sql FROM sqlite_schema WHERE type = 'index' AND tbl_name IN ('orders', 'trades') ORDER BY name",
        )
        .pluck()
        .all(),
    });
    const before = dump(v11);
    v11.close();

    SqliteStore.open({ path }).close();
    const db = new Database(path);
    t.after(() => db.close());
    assert.equal(schemaVersion(db), 12);
    assert.deepEqual(dump(db), before);
    const tableSql = db
      .prepare<[], string>("SELECT sql FROM sqlite_schema WHERE name IN ('orders', 'trades')")
      .pluck()
      .all()
      .join('\n');
    assert.ok(!/ IN \(/.test(tableSql), 'no IN list is left in their checks');
    const insertOrder = (values: string) =>
      db.exec(`INSERT INTO orders (id, user_id, market_id, side, type, price, volume, executed, status, open_time,
        cost, fee, reserved, time_in_force, post_only, stp, triggered) VALUES (${values})`);
    insertOrder(
      "3, 1, 1, 'sell', 'stop-loss-limit', 1, 1, 0, 'canceled', 1, 0, 0, 0, 'FOK', 1, 'cancel-both', 1",
    );
    for (const bad of [
      "4, 1, 1, 'hold', 'limit', 1, 1, 0, 'open', 1, 0, 0, 0, 'GTC', 0, 'decrement', 0",
      "4, 1, 1, 'buy', 'iceberg', 1, 1, 0, 'open', 1, 0, 0, 0, 'GTC', 0, 'decrement', 0",
      "4, 1, 1, 'buy', 'limit', 1, 1, 0, 'pending', 1, 0, 0, 0, 'GTC', 0, 'decrement', 0",
      "4, 1, 1, 'buy', 'limit', 1, 1, 0, 'open', 1, 0, 0, 0, 'DAY', 0, 'decrement', 0",
      "4, 1, 1, 'buy', 'limit', 1, 1, 0, 'open', 1, 0, 0, 0, 'GTC', 2, 'decrement', 0",
      "4, 1, 1, 'buy', 'limit', 1, 1, 0, 'open', 1, 0, 0, 0, 'GTC', 0, 'cancel-all', 0",
      "4, 1, 1, 'buy', 'limit', 1, 1, 0, 'open', 1, 0, 0, 0, 'GTC', 0, 'decrement', 2",
    ])
      assert.throws(() => insertOrder(bad), /CHECK constraint failed/, bad);
    assert.throws(
      () =>
        db.exec(`INSERT INTO trades (id, market_id, price, volume, cost, taker_order_id, maker_order_id,
          taker_user_id, maker_user_id, taker_side, taker_type, taker_fee, maker_fee, time)
          VALUES (2, 1, 5000, 3, 15, 2, 1, 2, 1, 'sell', 'stop-loss', 1, 0, 9)`),
      /CHECK constraint failed/,
    );
  });

  test('refuse a database from a newer release and misnumbered migrations', (t) => {
    const path = tempPath(t);
    const db = new Database(path);
    db.pragma(`user_version = ${SCHEMA_VERSION + 1}`);
    db.close();
    assert.throws(() => SqliteStore.open({ path }), /newer than this release/);

    const memory = new Database(':memory:');
    assert.throws(() => migrate(memory, [{ version: 2, description: 'x', sql: '' }]), /versions must be/);
    memory.close();
  });
});

/**
 * Takes a database of this release back to schema v7: what v10 (command_receipts) and v8 added is
 * removed again; v9's columns stay, and its table rebuild drops them when the test migrates again.
 */
function undoV8(db: Database.Database): void {
  db.exec('DROP TABLE command_receipts; DROP TABLE journal_state');
  db.exec('DROP INDEX orders_by_user_client_id; DROP TABLE cancel_all_after;');
  for (const column of ['time_in_force', 'expire_time', 'post_only', 'client_order_id', 'stp', 'priority'])
    db.exec(`ALTER TABLE orders DROP COLUMN ${column}`);
  db.pragma('user_version = 7');
}
