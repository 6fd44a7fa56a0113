import assert from 'node:assert/strict';
import { copyFileSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import Database from 'better-sqlite3';
import type { Amount, AssetCode, MarketId, OrderId, Price, UserId, Volume } from '../../domain/types.js';
import type { EngineSnapshot } from '../../engine/types.js';
import type { Candle } from '../../market-data/candle.js';
import { openExchange } from '../../sequencer/sequencer.js';
import { seedBtcEur } from '../../sequencer/test-support.js';
import { asyncStore } from '../async-store.js';
import type { AsyncStore } from '../ports.js';
import type { CommitBatch, Store } from '../store.js';
import { CommitJournal, journalPathsOf, readJournal, readRecords } from './commit-journal.js';
import { JournaledSqliteStore, type JournaledStoreOptions } from './journaled-store.js';
import { mergeBatches } from './merge-batches.js';
import { overlayLatestCandles, overlaySnapshot } from './snapshot-overlay.js';
import { SqliteStore } from './sqlite-store.js';

function tempDir(t: { after(fn: () => void): void }): string {
  const dir = mkdtempSync(join(tmpdir(), 'openspot-journal-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** Every table the commits write, as rows, without the journal's own bookkeeping. */
function dump(path: string): Record<string, unknown[]> {
  const db = new Database(path, { readonly: true });
  try {
    const tables = ['assets', 'markets', 'balances', 'asset_totals', 'orders', 'trades', 'candles'];
    const more = ['ledger_entries', 'idempotency_keys', 'meta', 'book_sequences', 'cancel_all_after'];
    return Object.fromEntries(
      [...tables, ...more].map((name) => [name, db.prepare(`SELECT * FROM ${name} ORDER BY 1, 2`).all()]),
    );
  } finally {
    db.close();
  }
}

/** A store that commits every batch to `plain` and to `journaled`, and reads from `plain`. */
function tee(plain: SqliteStore, journaled: JournaledSqliteStore): Store {
  return new Proxy(plain, {
    get(target, name, receiver) {
      if (name === 'commit')
        return (batch: CommitBatch) => {
          target.commit(batch);
          journaled.commit(batch);
        };
      const value: unknown = Reflect.get(target, name, receiver);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}

/** Like tee, through the journaled store's asynchronous port (the server's): commits wait for the sync. */
function asyncTee(plain: SqliteStore, journaled: JournaledSqliteStore): AsyncStore {
  return {
    ...asyncStore(plain),
    commit: async (batch) => {
      plain.commit(batch);
      await journaled.commitAsync(batch);
    },
  };
}

/** Crossing, resting, canceled and amended orders, deposits and withdrawals: the order path's writes. */
async function trade(store: AsyncStore, rounds: number, atRound?: (round: number) => void): Promise<void> {
  const exchange = await openExchange({ store });
  try {
    const marketId = await seedBtcEur(exchange);
    const users = [1, 2, 3, 4] as UserId[];
    for (const userId of users) {
      await exchange.submit({ kind: 'deposit', userId, asset: 'EUR' as AssetCode, amount: 1e12 as Amount });
      await exchange.submit({ kind: 'deposit', userId, asset: 'BTC' as AssetCode, amount: 1e10 as Amount });
    }
    const placed: OrderId[] = [];
    for (let round = 0; round < rounds; round++) {
      const sent: Promise<unknown>[] = [];
      for (let i = 0; i < 12; i++) {
        const n = round * 12 + i;
        const userId = users[n % 4]!;
        sent.push(
          exchange
            .submit({
              kind: 'placeOrder',
              userId,
              marketId,
              side: n % 2 === 0 ? 'buy' : 'sell',
              type: n % 9 === 0 ? 'market' : 'limit',
              price: (n % 9 === 0 ? 0 : 300_000 + ((n * 7) % 11) - 5) as Price,
              volume: (1_000_000 + (n % 5) * 100_000) as Volume,
            })
            .then((result) => {
              const id = (result as { orderId?: OrderId }).orderId;
              if (id !== undefined) placed.push(id);
            }),
        );
      }
      const victim = placed[(round * 5) % Math.max(placed.length, 1)];
      if (victim !== undefined)
        sent.push(exchange.submit({ kind: 'cancelOrder', userId: users[0]!, orderId: victim }));
      if (round % 4 === 0)
        sent.push(
          exchange.submit({
            kind: 'withdraw',
            userId: users[1]!,
            asset: 'EUR' as AssetCode,
            amount: 5 as Amount,
          }),
        );
      await Promise.all(sent);
      atRound?.(round);
    }
  } finally {
    await exchange.close();
  }
}

/** The market seedBtcEur creates in a new exchange. */
const BTC_EUR = 1 as MarketId;

const json = (value: unknown): string =>
  JSON.stringify(value, (_key, v: unknown) => (typeof v === 'bigint' ? `${v}n` : v));

test('written a few commits at a time, the tables end exactly as when every commit is written on its own', async (t) => {
  const dir = tempDir(t);
  const plain = SqliteStore.open({ path: join(dir, 'plain.db') });
  const journaledPath = join(dir, 'journaled.db');
  const journaled = JournaledSqliteStore.open(SqliteStore.open({ path: journaledPath }), journaledPath, {
    projectEvery: 5,
  });
  await trade(asyncStore(tee(plain, journaled)), 40);
  plain.close();
  journaled.close();
  assert.deepEqual(dump(journaledPath), dump(join(dir, 'plain.db')));
});

test('a crash leaves acknowledged commits in the journal only: the next open writes them to the tables', async (t) => {
  const dir = tempDir(t);
  const plain = SqliteStore.open({ path: join(dir, 'plain.db') });
  const live = join(dir, 'live.db');
  // Nothing is written to the tables but what reads ask for (the exchange reads at start).
  const journaled = JournaledSqliteStore.open(SqliteStore.open({ path: live }), live, {
    projectEvery: 1_000_000,
    projectWhenIdleMs: 60_000,
  });
  const image = join(dir, 'image.db');
  let expected: EngineSnapshot | undefined;
  let expectedCandles: Candle[] = [];
  await trade(asyncStore(tee(plain, journaled)), 30, (round) => {
    if (round !== 20) return;
    // The files as a SIGKILL would leave them now, and the state they must come back as.
    for (const suffix of ['', '-wal', '.commits', '.commits2'])
      if (existsSync(live + suffix)) copyFileSync(live + suffix, image + suffix);
    expected = plain.loadSnapshot();
    expectedCandles = plain.latestCandles(BTC_EUR);
  });
  plain.close();
  journaled.close();
  assert.ok(expected !== undefined);

  const { journal, records } = CommitJournal.open(image);
  journal.close();
  const tables = SqliteStore.open({ path: image });
  const applied = tables.journalApplied();
  const waiting = records.filter((r) => r.seq > applied);
  assert.ok(waiting.length > 0, 'the image has commits only in the journal');
  // While the tables cannot take them: the snapshot read with them on top is the committed one.
  const merged = mergeBatches(waiting.map((r) => r.batch));
  assert.equal(json(overlaySnapshot(tables.loadSnapshot(), merged)), json(expected));
  // And the candles the aggregator resumes from: the tables' alone miss the waiting trades.
  assert.notEqual(json(tables.latestCandles(BTC_EUR)), json(expectedCandles));
  assert.equal(
    json(overlayLatestCandles(tables.latestCandles(BTC_EUR), merged, BTC_EUR)),
    json(expectedCandles),
  );

  const recovered = JournaledSqliteStore.open(tables, image);
  assert.equal(json(recovered.loadSnapshot()), json(expected));
  recovered.close();
  const again = SqliteStore.open({ path: image });
  assert.equal(
    again.journalApplied(),
    waiting[waiting.length - 1]!.seq,
    'the tables say which commit they hold last',
  );
  assert.equal(json(again.loadSnapshot()), json(expected));
  again.close();
});

/**
 * Trades through `port` (journaled commits written by rounds a few statements a turn) beside a
 * plain store: the journal uses both of its files, and the tables end as the plain store's.
 */
async function roundsEndAsPlain(
  t: { after(fn: () => void): void },
  port: 'synchronous' | 'asynchronous',
  options: JournaledStoreOptions,
): Promise<void> {
  const dir = tempDir(t);
  const plain = SqliteStore.open({ path: join(dir, 'plain.db') });
  const journaledPath = join(dir, 'journaled.db');
  const journaled = JournaledSqliteStore.open(
    SqliteStore.open({ path: journaledPath }),
    journaledPath,
    options,
  );
  const second = journalPathsOf(journaledPath)[1];
  let bothFilesUsed = false;
  const store = port === 'synchronous' ? asyncStore(tee(plain, journaled)) : asyncTee(plain, journaled);
  await trade(store, 40, () => {
    bothFilesUsed ||= readRecords(readFileSync(second)).records.length > 0;
  });
  plain.close();
  journaled.close();
  assert.ok(bothFilesUsed, 'commits went to the second file while those of the first were written');
  assert.deepEqual(dump(journaledPath), dump(join(dir, 'plain.db')));
}

test('written a few statements per turn while commits go on, the tables end as when every commit is written on its own', (t) =>
  roundsEndAsPlain(t, 'synchronous', { projectEvery: 3, statementsPerTurn: 2 }));

test('written while commits are synced, the tables end as when every commit is written on its own', (t) =>
  roundsEndAsPlain(t, 'asynchronous', { projectEvery: 2, statementsPerTurn: 3, projectWhenIdleMs: 60_000 }));

test('a round is written without a sync: its commits stay in the journal until the log is synced', async (t) => {
  const dir = tempDir(t);
  const plain = SqliteStore.open({ path: join(dir, 'plain.db') });
  const path = join(dir, 'unsynced.db');
  const tables = SqliteStore.open({ path });
  // The log's sync never completes: no commit a round wrote may leave the journal. (Writes the
  // store makes at once, for reads, are synced as they commit: `synced` is their last.)
  let synced = 0;
  const neverSynced = new Proxy(tables, {
    get(target, name, receiver) {
      if (name === 'syncJournaledWrites') return () => new Promise<void>(() => {});
      if (name === 'commitJournaled')
        return (batch: CommitBatch, seq: number) => {
          target.commitJournaled(batch, seq);
          synced = seq;
        };
      const value: unknown = Reflect.get(target, name, receiver);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
  const journaled = JournaledSqliteStore.open(neverSynced, path, {
    projectEvery: 2,
    statementsPerTurn: 3,
    projectWhenIdleMs: 60_000,
  });
  let commits = 0;
  const counted = asyncTee(plain, journaled);
  await trade(
    {
      ...counted,
      commit: (batch) => {
        commits += 1;
        return counted.commit(batch);
      },
    },
    20,
  );
  const applied = new Database(path, { readonly: true });
  const written = (applied.prepare('SELECT applied FROM journal_state').get() as { applied: number }).applied;
  applied.close();
  assert.ok(written > synced + 4, 'rounds were written to the tables after the last synced write');
  assert.deepEqual(
    readJournal(path)
      .map((r) => r.seq)
      .filter((seq) => seq > synced),
    Array.from({ length: commits - synced }, (_, i) => synced + i + 1),
    'every commit since the last synced write is still in the journal',
  );
  plain.close();
  journaled.close();
});

test('a crash in the middle of a round loses nothing: the next open writes every journaled commit', async (t) => {
  const dir = tempDir(t);
  const plain = SqliteStore.open({ path: join(dir, 'plain.db') });
  const live = join(dir, 'live.db');
  const journaled = JournaledSqliteStore.open(SqliteStore.open({ path: live }), live, {
    projectEvery: 3,
    statementsPerTurn: 2,
    projectWhenIdleMs: 60_000,
  });
  const images: Array<{ path: string; expected: string }> = [];
  await trade(asyncTee(plain, journaled), 24, (round) => {
    if (round < 8 || round % 4 !== 0) return;
    // The files as a SIGKILL would leave them now (a round's transaction open, uncommitted), and
    // the state they must come back as.
    const image = join(dir, `image-${round}.db`);
    for (const suffix of ['', '-wal', '.commits', '.commits2'])
      if (existsSync(live + suffix)) copyFileSync(live + suffix, image + suffix);
    images.push({ path: image, expected: json(plain.loadSnapshot()) });
  });
  plain.close();
  journaled.close();
  assert.equal(images.length, 4);
  for (const { path, expected } of images) {
    const recovered = JournaledSqliteStore.open(SqliteStore.open({ path }), path);
    assert.equal(json(recovered.loadSnapshot()), expected, path);
    recovered.close();
  }
});

/** A commit that changes nothing but the next order id: `n`. */
const batchOf = (n: number): CommitBatch => ({
  changes: {
    orders: [],
    balances: [],
    totals: [],
    levels: [],
    sequences: { nextOrderId: n, nextTradeId: 1, nextMarketId: 1 },
  },
  events: [],
  ledger: [],
  candles: [],
});

test('reading the journal stops at a torn record, and at the remains of an earlier round', (t) => {
  const dir = tempDir(t);
  const db = join(dir, 'j.db');
  const [path] = journalPathsOf(db);
  const first = CommitJournal.open(db);
  for (let seq = 1; seq <= 5; seq++) first.journal.append(seq, batchOf(seq));
  first.journal.close();
  assert.deepEqual(
    CommitJournal.open(db).records.map((r) => [r.seq, r.batch.changes.sequences.nextOrderId]),
    [
      [1, 1],
      [2, 2],
      [3, 3],
      [4, 4],
      [5, 5],
    ],
  );

  // A crash in the middle of writing record 5: one byte of it never reached the disk.
  const bytes = readFileSync(path);
  const damaged = Buffer.from(bytes);
  const { validBytes } = readRecords(bytes);
  damaged[validBytes - 3] = (damaged[validBytes - 3]! + 1) % 256;
  writeFileSync(path, damaged);
  assert.deepEqual(
    CommitJournal.open(db).records.map((r) => r.seq),
    [1, 2, 3, 4],
  );

  // A new round (after the tables took 1-4) writes over the old one from the first byte.
  const second = CommitJournal.open(db);
  second.journal.clear();
  second.journal.append(6, batchOf(6));
  second.journal.close();
  assert.deepEqual(
    CommitJournal.open(db).records.map((r) => r.seq),
    [6],
  );
});

test('the journal turns to its other file only when every record there is in the tables', (t) => {
  const dir = tempDir(t);
  const db = join(dir, 't.db');
  const seqs = () => CommitJournal.open(db).records.map((r) => r.seq);
  const { journal } = CommitJournal.open(db);
  for (let seq = 1; seq <= 3; seq++) journal.append(seq, batchOf(seq));
  journal.turn(0); // 1-3 on their way to the tables: 4 goes to the other file
  journal.append(4, batchOf(4));
  journal.turn(2); // 3 is not in the tables yet: its file is not free, 5 stays with 4
  journal.append(5, batchOf(5));
  assert.deepEqual(seqs(), [1, 2, 3, 4, 5]);
  journal.turn(3); // 1-3 are: 6 goes to their file, from its first byte
  journal.append(6, batchOf(6));
  journal.close();
  assert.deepEqual(seqs(), [4, 5, 6]);
  const [first, second] = journalPathsOf(db);
  assert.deepEqual(
    readRecords(readFileSync(first)).records.map((r) => r.seq),
    [6],
  );
  assert.deepEqual(
    readRecords(readFileSync(second)).records.map((r) => r.seq),
    [4, 5],
  );
});

test('an Idempotency-Key lookup sees the waiting commits without writing them to the tables', (t) => {
  const dir = tempDir(t);
  const path = join(dir, 'k.db');
  const store = JournaledSqliteStore.open(SqliteStore.open({ path }), path, {
    projectEvery: 1_000_000,
    projectWhenIdleMs: 60_000,
  });
  t.after(() => store.close());
  const record = {
    userId: 7 as UserId,
    key: 'k-1',
    fingerprint: 'f'.repeat(64),
    orderId: 3 as OrderId,
    time: 5 as never,
  };
  store.commit({
    changes: {
      orders: [],
      balances: [],
      totals: [],
      levels: [],
      sequences: { nextOrderId: 4, nextTradeId: 1, nextMarketId: 1 },
    },
    events: [],
    ledger: [],
    candles: [],
    idempotencyKeys: [record],
  });
  assert.deepEqual(store.findIdempotencyRecord(7 as UserId, 'k-1'), record);
  const tables = new Database(path, { readonly: true });
  t.after(() => tables.close());
  const applied = () => tables.prepare('SELECT applied FROM journal_state').get();
  assert.deepEqual(applied(), { applied: 0 });
  // Any read of what commits write writes them first.
  assert.equal(store.getOrder(3 as OrderId), undefined);
  assert.deepEqual(applied(), { applied: 1 });
  assert.deepEqual(tables.prepare('SELECT user_id, key FROM idempotency_keys').all(), [
    { user_id: 7, key: 'k-1' },
  ]);
});
