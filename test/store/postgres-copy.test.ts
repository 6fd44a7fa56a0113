/**
 * `openspot db copy --from <sqlite file> --to <postgres url>`: a venue moved from SQLite reads the
 * same on PostgreSQL (engine state, history, credentials, nonces, idempotency keys, book
 * sequences), ids continue where SQLite left them, and a non-empty target is refused. Needs
 * TEST_DATABASE_URL.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { promisify } from 'node:util';
import Database from 'better-sqlite3';
import type { Amount, Micros, OrderId, Price, Volume } from '../../src/domain/types.js';
import { PostgresStore } from '../../src/store/postgres/postgres-store.js';
import {
  ALICE,
  BOB,
  BTC,
  BTCEUR,
  balance,
  batch,
  CATALOGUE,
  candle,
  EUR,
  ledger,
  order,
  ordersOf,
  T0,
  tempStore,
  totals,
  trade,
} from '../../src/store/sqlite/test-fixtures.js';
import { freshDatabase, postgresSuite } from '../support/postgres.js';

const TSX = import.meta.resolve('tsx');
const CLI = join(import.meta.dirname, '../../src/cli/main.ts');
const run = promisify(execFile);
const copy = (from: string, to: string) =>
  run(process.execPath, ['--import', TSX, CLI, 'db', 'copy', '--from', from, '--to', to]);

describe('openspot db copy', postgresSuite(), () => {
  test('moves a venue from SQLite: equal state and history, ids continue, a non-empty target is refused', async (t) => {
    const { store: sqlite, path } = tempStore(t);
    const big = 9_007_199_254_740_991;
    const trades = [trade(1), trade(2, { price: 1_234_567_890_123 as Price, volume: big as Volume })];
    sqlite.commit({
      ...batch({
        ...CATALOGUE,
        trades,
        orders: [...ordersOf(trades), order(5, { feeExcess: 42, reserved: big as Amount })],
        balances: [balance(ALICE, EUR, big, 7), balance(BOB, BTC, 3)],
        totals: [totals(EUR, big), totals(BTC, 3, 1)],
        ledger: [ledger({ reference: 'dep-1' }), ledger({ asset: BTC })],
        candles: [candle(60, { volume: 2n ** 70n, notional: 10n ** 35n })],
        sequences: { nextOrderId: 3000, nextTradeId: 3, nextMarketId: 3 },
      }),
      idempotencyKeys: [
        { userId: ALICE, key: 'idem', fingerprint: 'c'.repeat(64), orderId: 5 as OrderId, time: T0 },
      ],
      bookSequences: [{ marketId: BTCEUR, sequence: 2 ** 33 + 5 }],
    });
    const users = [
      sqlite.createUser('a@example.com', T0),
      sqlite.createUser(null, T0),
      sqlite.createUser(null, T0),
    ];
    const base = { userId: users[0]!.id, sealedSecret: 'sealed', createdAt: T0, revokedAt: null };
    sqlite.createApiKey({
      ...base,
      key: 'k1',
      scopes: ['read', 'trade'],
      nonceRequired: true,
      ipAllowlist: ['10.0.0.0/8'],
    });
    sqlite.createApiKey({ ...base, key: 'k0', scopes: ['read'] });
    assert.equal(sqlite.acceptNonce('k1', '18446744073709551616'), true);
    // A deleted user: its id must not be handed out again on PostgreSQL either.
    const raw = new Database(path);
    raw.prepare('DELETE FROM users WHERE id = ?').run(users[2]!.id);
    raw.close();
    const expected = {
      snapshot: sqlite.loadSnapshot(),
      trades: sqlite.listPublicTrades({ marketId: BTCEUR }),
      candles: sqlite.listCandles(BTCEUR, 1, 0, 10),
      users: sqlite.listUsers(),
      keys: sqlite.listApiKeys(users[0]!.id),
      order5: sqlite.getOrder(5 as OrderId),
      idem: sqlite.findIdempotencyRecord(ALICE, 'idem'),
      dep: sqlite.findLedgerEntry(ALICE, 'deposit', 'dep-1'),
      books: sqlite.loadBookSequences(),
    };
    sqlite.close();

    const url = await freshDatabase(t);
    const { stdout } = await copy(path, url);
    assert.match(stdout, /trades: 2/);
    assert.match(stdout, /verified \(engine state and row counts equal\): yes/);

    const pg = await PostgresStore.open({ url });
    t.after(() => pg.close());
    assert.deepEqual(await pg.loadSnapshot(), expected.snapshot);
    assert.deepEqual(await pg.listPublicTrades({ marketId: BTCEUR }), expected.trades);
    assert.deepEqual(await pg.listCandles(BTCEUR, 1, 0, 10), expected.candles);
    assert.deepEqual(await pg.listUsers(), expected.users);
    assert.deepEqual(await pg.listApiKeys(users[0]!.id), expected.keys);
    assert.deepEqual(await pg.getOrder(5 as OrderId), expected.order5);
    assert.deepEqual(await pg.findIdempotencyRecord(ALICE, 'idem'), expected.idem);
    assert.deepEqual(await pg.findLedgerEntry(ALICE, 'deposit', 'dep-1'), expected.dep);
    assert.deepEqual(await pg.loadBookSequences(), expected.books);
    assert.deepEqual(expected.books, [{ marketId: BTCEUR, sequence: 2 ** 33 + 5 }]);
    assert.equal(await pg.acceptNonce('k1', '18446744073709551616'), false, 'the last nonce came along');
    assert.equal((await pg.createUser(null, (T0 + 1) as Micros)).id, users[2]!.id + 1);
    await pg.commit(
      batch({ ledger: [ledger({ reference: 'dep-2' })], sequences: expected.snapshot.sequences }),
    );
    await pg.close();

    await assert.rejects(copy(path, url), (error: { code: number; stderr: string }) => {
      assert.equal(error.code, 1);
      assert.match(error.stderr, /is not empty \(assets has rows\)/);
      return true;
    });
  });
});
