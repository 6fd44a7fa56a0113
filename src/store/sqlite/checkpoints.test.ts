import assert from 'node:assert/strict';
import { chmodSync, existsSync, mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import Database from 'better-sqlite3';
import type { MarketId, Micros } from '../../domain/types.js';
import { CheckpointError, type Store } from '../store.js';
import { SqliteStore } from './sqlite-store.js';
import {
  ALICE,
  BOB,
  BTC,
  BTCEUR,
  balance,
  batch,
  CATALOGUE,
  candle,
  ETHEUR,
  EUR,
  ledger,
  order,
  ordersOf,
  T0,
  tempStore,
  totals,
  trade,
} from './test-fixtures.js';

const T1 = (T0 + 60_000_000) as Micros;

/** Everything a reader can see of the venue state. */
function stateOf(store: Store) {
  return {
    snapshot: store.loadSnapshot(),
    trades: store.listPublicTrades({ marketId: 1 as never }),
    candles: store.latestCandles(1 as never),
    done: [...store.listOrders({ userId: ALICE, status: 'done' })],
    ledger: store.findLedgerEntry(ALICE, 'deposit', 'first'),
  };
}

/** A first state (catalogue, funds, one trade, a resting order), then more on top of it. */
function fillFirstState(store: Store): void {
  const trades = [trade(1)];
  store.commit(
    batch({
      ...CATALOGUE,
      trades,
      orders: [...ordersOf(trades), order(7)],
      balances: [balance(ALICE, EUR, 1000, 50), balance(BOB, BTC, 5)],
      totals: [totals(EUR, 1050), totals(BTC, 5)],
      ledger: [ledger({ amount: 1050 as never, reference: 'first' })],
      candles: [candle(60)],
      sequences: { nextOrderId: 8, nextTradeId: 2, nextMarketId: 3 },
    }),
  );
}

function changeEverything(store: Store): void {
  const later = [trade(2, { price: 600_000 as never })];
  store.commit(
    batch({
      trades: later,
      orders: [...ordersOf(later), order(7, { status: 'canceled', closeTime: T1, reserved: 0 as never })],
      balances: [balance(ALICE, EUR, 10, 0), balance(BOB, BTC, 1), balance(3 as never, EUR, 1090)],
      totals: [totals(EUR, 1100)],
      ledger: [ledger({ amount: 50 as never, reference: 'second' })],
      candles: [candle(60, { close: 99 as never, count: 3 }), candle(120)],
      sequences: { nextOrderId: 3000, nextTradeId: 3, nextMarketId: 3 },
    }),
  );
}

describe('SqliteStore checkpoints', () => {
  for (const where of ['on disk', 'in memory'] as const) {
    test(`${where}: a restore brings back exactly the saved state, and keeps users and keys`, (t) => {
      const dir = mkdtempSync(join(tmpdir(), 'openspot-cp-'));
      t.after(() => rmSync(dir, { recursive: true, force: true }));
      const store =
        where === 'on disk'
          ? SqliteStore.open({ path: join(dir, 'openspot.db'), checkpointDir: join(dir, 'checkpoints') })
          : SqliteStore.open({ path: ':memory:' });
      t.after(() => store.close());
      fillFirstState(store);
      const saved = stateOf(store);
      const info = store.saveCheckpoint('before', T0);
      assert.equal(info.name, 'before');
      assert.ok(info.bytes > 0);

      changeEverything(store);
      const user = store.createUser('later@example.com', T1);
      store.createApiKey({
        key: 'K-later',
        userId: user.id,
        sealedSecret: 'sealed',
        scopes: ['read'],
        createdAt: T1,
        revokedAt: null,
      });
      assert.notDeepEqual(stateOf(store), saved);

      store.restoreCheckpoint('before');
      assert.deepEqual(stateOf(store), saved);
      assert.equal(store.findLedgerEntry(ALICE, 'deposit', 'second'), undefined);
      // Credentials are not state: what was created after the checkpoint still works.
      assert.equal(store.getUser(user.id)?.email, 'later@example.com');
      assert.equal(store.getApiKey('K-later')?.userId, user.id);
      // The restored state takes commits as before.
      changeEverything(store);
      assert.equal(store.loadSnapshot().sequences.nextOrderId, 3000);

      assert.deepEqual(
        store.listCheckpoints().map((c) => [c.name, c.createdAt]),
        [['before', where === 'in memory' ? T0 : Math.round(T0 / 1000) * 1000]],
      );
      if (where === 'on disk') {
        const file = join(dir, 'checkpoints', 'before.db');
        assert.equal(statSync(file).mode & 0o777, 0o600);
        assert.deepEqual(readdirSync(join(dir, 'checkpoints')), ['before.db']);
      }
      assert.equal(store.deleteCheckpoint('before'), true);
      assert.equal(store.deleteCheckpoint('before'), false);
      assert.deepEqual(store.listCheckpoints(), []);
      assert.throws(
        () => store.restoreCheckpoint('before'),
        (e) => e instanceof CheckpointError && e.problem === 'not_found',
      );
    });
  }

  for (const where of ['on disk', 'in memory'] as const) {
    test(`${where}: a restore keeps the book sequences and adds one to each restored market's, in its transaction`, (t) => {
      const dir = mkdtempSync(join(tmpdir(), 'openspot-cp-'));
      t.after(() => rmSync(dir, { recursive: true, force: true }));
      const path = join(dir, 'openspot.db');
      const checkpointDir = join(dir, 'checkpoints');
      const store = SqliteStore.open(where === 'on disk' ? { path, checkpointDir } : { path: ':memory:' });
      t.after(() => store.close());
      fillFirstState(store);
      store.commit({ ...batch({}), bookSequences: [{ marketId: BTCEUR, sequence: 4 }] });
      store.saveCheckpoint('before', T0);
      changeEverything(store);
      // Market 9 is not in the checkpoint's catalogue: its row stays as it is.
      store.commit({
        ...batch({}),
        bookSequences: [
          { marketId: BTCEUR, sequence: 10 },
          { marketId: 9 as MarketId, sequence: 5 },
        ],
      });
      store.restoreCheckpoint('before');
      const expected = [
        { marketId: BTCEUR, sequence: 11 },
        { marketId: ETHEUR, sequence: 1 },
        { marketId: 9 as MarketId, sequence: 5 },
      ];
      assert.deepEqual(store.loadBookSequences(), expected, "never back to the checkpoint's 4");
      if (where === 'on disk') {
        store.close();
        const reopened = SqliteStore.open({ path, checkpointDir });
        t.after(() => reopened.close());
        assert.deepEqual(reopened.loadBookSequences(), expected, 'durable');
      }
    });
  }

  test('checkpoints found readable by others (initial.db too) and their directory are narrowed at every open', (t) => {
    const dir = mkdtempSync(join(tmpdir(), 'openspot-checkpoint-modes-'));
    t.after(() => rmSync(dir, { recursive: true, force: true }));
    const path = join(dir, 'openspot.db');
    const checkpointDir = join(dir, 'checkpoints');
    const first = SqliteStore.open({ path, checkpointDir });
    first.saveCheckpoint('initial', T0);
    first.saveCheckpoint('before', T0);
    first.close();
    // As an older version, a copy or a restored backup may have left them.
    chmodSync(checkpointDir, 0o755);
    for (const name of ['initial.db', 'before.db']) chmodSync(join(checkpointDir, name), 0o644);

    const reopened = SqliteStore.open({ path, checkpointDir });
    t.after(() => reopened.close());
    assert.equal(statSync(checkpointDir).mode & 0o777, 0o700);
    for (const name of ['initial.db', 'before.db'])
      assert.equal(statSync(join(checkpointDir, name)).mode & 0o777, 0o600, name);
  });

  test('a checkpoint saved by schema version 6 (before book sequences) still restores', (t) => {
    const { dir } = tempStore(t);
    const disk = SqliteStore.open({ path: join(dir, 'v6.db'), checkpointDir: join(dir, 'cp') });
    t.after(() => disk.close());
    fillFirstState(disk);
    const saved = stateOf(disk);
    disk.saveCheckpoint('v6', T0);
    const raw = new Database(join(dir, 'cp', 'v6.db'));
    raw.exec('DROP TABLE book_sequences');
    raw.pragma('user_version = 6');
    raw.close();
    changeEverything(disk);
    disk.restoreCheckpoint('v6');
    assert.deepEqual(stateOf(disk), saved);
    assert.deepEqual(disk.loadBookSequences(), [
      { marketId: BTCEUR, sequence: 1 },
      { marketId: ETHEUR, sequence: 1 },
    ]);
  });

  test('a checkpoint saved by schema version 8 (before conditional orders) still restores', (t) => {
    const { dir } = tempStore(t);
    const disk = SqliteStore.open({ path: join(dir, 'v8.db'), checkpointDir: join(dir, 'cp') });
    t.after(() => disk.close());
    fillFirstState(disk);
    const saved = stateOf(disk);
    disk.saveCheckpoint('v8', T0);
    // The v8 layout of orders: every column but the five conditional ones.
    const raw = new Database(join(dir, 'cp', 'v8.db'));
    const v8 =
      'id, user_id, market_id, side, type, price, volume, executed, status, reason, open_time, close_time, ' +
      'cost, fee, reserved, fee_excess, time_in_force, expire_time, post_only, client_order_id, stp, priority';
    raw.exec(`CREATE TABLE orders_v8 AS SELECT ${v8} FROM orders; DROP TABLE orders;
      ALTER TABLE orders_v8 RENAME TO orders;`);
    raw.pragma('user_version = 8');
    raw.close();
    changeEverything(disk);
    disk.restoreCheckpoint('v8');
    assert.deepEqual(stateOf(disk), saved);
  });

  test('conditional orders and the last prices come back with a checkpoint', (t) => {
    const { dir } = tempStore(t);
    const disk = SqliteStore.open({ path: join(dir, 'cond.db'), checkpointDir: join(dir, 'cp') });
    t.after(() => disk.close());
    fillFirstState(disk);
    const trailing = order(8, {
      side: 'sell',
      type: 'trailing-stop',
      price: 0 as never,
      triggerPrice: 490_000 as never,
      trailingOffset: { unit: 'bps', amount: 200 },
      trailingBest: 500_000 as never,
    });
    const fired = order(9, { type: 'stop-loss-limit', triggerPrice: 499_000 as never, triggered: true });
    disk.commit(batch({ orders: [trailing, fired] }));
    const saved = stateOf(disk);
    assert.deepEqual(saved.snapshot.lastPrices, [{ marketId: BTCEUR, price: 500_000 }]);
    disk.saveCheckpoint('cond', T0);
    changeEverything(disk);
    disk.commit(batch({ orders: [{ ...trailing, status: 'canceled', closeTime: T1 }] }));
    assert.deepEqual(disk.loadSnapshot().lastPrices, [{ marketId: BTCEUR, price: 600_000 }]);
    disk.restoreCheckpoint('cond');
    assert.deepEqual(stateOf(disk), saved);
  });

  test('a name that could leave the directory or hide a file is refused', (t) => {
    const { store, dir } = tempStore(t, { checkpointDir: join(tmpdir(), 'unused') });
    const disk = SqliteStore.open({ path: join(dir, 'd.db'), checkpointDir: join(dir, 'cp') });
    t.after(() => disk.close());
    for (const name of ['../x', 'a/b', '.hidden', '', 'a\\b', 'x'.repeat(65), '..']) {
      assert.throws(
        () => store.saveCheckpoint(name, T0),
        (e) => e instanceof CheckpointError && e.problem === 'invalid_name',
        name,
      );
      assert.throws(() => store.restoreCheckpoint(name), CheckpointError, name);
      assert.throws(() => disk.saveCheckpoint(name, T0), CheckpointError, name);
    }
    assert.equal(existsSync(join(dir, 'cp')), false);
  });

  test('saving under an existing name replaces it', (t) => {
    const { store, dir } = tempStore(t);
    const disk = SqliteStore.open({ path: join(dir, 'b.db'), checkpointDir: join(dir, 'cp') });
    t.after(() => disk.close());
    fillFirstState(disk);
    disk.saveCheckpoint('x', T0);
    changeEverything(disk);
    const later = stateOf(disk);
    disk.saveCheckpoint('x', T1);
    fillFirstState(store); // unrelated store: no effect on `disk`
    disk.restoreCheckpoint('x');
    assert.deepEqual(stateOf(disk), later);
    assert.equal(existsSync(join(dir, 'cp', 'x.db')), true);
  });

  test('a checkpoint of another schema version is refused and nothing changes', (t) => {
    const { dir } = tempStore(t);
    const disk = SqliteStore.open({ path: join(dir, 'c.db'), checkpointDir: join(dir, 'cp') });
    t.after(() => disk.close());
    fillFirstState(disk);
    disk.saveCheckpoint('old', T0);
    const raw = new Database(join(dir, 'cp', 'old.db'));
    raw.pragma('user_version = 1');
    raw.close();
    changeEverything(disk);
    const now = stateOf(disk);
    assert.throws(
      () => disk.restoreCheckpoint('old'),
      (e) => e instanceof CheckpointError && e.problem === 'incompatible',
    );
    assert.deepEqual(stateOf(disk), now);
  });
});
