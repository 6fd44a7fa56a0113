/**
 * The sequencer over an asynchronous commit log (a database across the network): a batch is not
 * acknowledged, nor seen by any reader, before its commit settles; nothing else is applied
 * meanwhile, and what arrives meanwhile forms the next group commit.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { MarketId, Price, Volume } from '../domain/types.js';
import { asyncStore } from '../store/async-store.js';
import type { AsyncStore } from '../store/ports.js';
import { SqliteStore } from '../store/sqlite/sqlite-store.js';
import { type CommitBatch, StoreUnavailableError } from '../store/store.js';
import { type LocalExchange, openExchange, UncommittedReadError } from './sequencer.js';
import { ALICE, seedBtcEur } from './test-support.js';

const nextTurn = () => new Promise((resolve) => setImmediate(resolve));

/** A commit log whose commits wait, once `hold` is set, until the test lets each one through. */
class GatedLog {
  hold = false;
  /** `release(fail, true)`: the commit reaches the store and still fails (a connection lost after COMMIT). */
  readonly held: Array<{ batch: CommitBatch; release: (fail?: Error, landed?: boolean) => void }> = [];
  readonly committed: CommitBatch[] = [];
  readonly sqlite = SqliteStore.open({ path: ':memory:' });
  readonly ports: AsyncStore;

  constructor() {
    const inner = asyncStore(this.sqlite);
    this.ports = {
      ...inner,
      commit: (batch) => {
        if (!this.hold) {
          this.committed.push(batch);
          return inner.commit(batch);
        }
        return new Promise<void>((resolve, reject) => {
          this.held.push({
            batch,
            release: (fail, landed = false) => {
              if (fail !== undefined && landed) {
                this.committed.push(batch);
                return inner.commit(batch).then(() => reject(fail), reject);
              }
              if (fail !== undefined) return reject(fail);
              this.committed.push(batch);
              inner.commit(batch).then(resolve, reject);
            },
          });
        });
      },
    };
  }
}

async function venue(): Promise<{ exchange: LocalExchange; log: GatedLog; id: MarketId }> {
  const log = new GatedLog();
  const exchange = await openExchange({ store: log.ports, probeIntervalMs: 60_000 });
  return { exchange, log, id: await seedBtcEur(exchange) };
}

const bid = (marketId: MarketId, price: number) =>
  ({
    kind: 'placeOrder',
    userId: ALICE,
    marketId,
    side: 'buy',
    type: 'limit',
    price: price as Price,
    volume: 100_000 as Volume,
  }) as const;

async function turns(n: number): Promise<void> {
  for (let i = 0; i < n; i++) await nextTurn();
}

test('commands arriving while a commit is in flight wait for it, then share the next commit', async () => {
  const { exchange, log, id } = await venue();
  log.hold = true;
  let firstAnswered = false;
  const first = exchange.submit(bid(id, 100)).then((r) => {
    firstAnswered = true;
    return r;
  });
  await turns(6);
  assert.equal(log.held.length, 1, 'the first batch was not sent to the log');
  const later = [exchange.submit(bid(id, 101)), exchange.submit(bid(id, 102)), exchange.submit(bid(id, 103))];
  await turns(6);
  assert.equal(log.held.length, 1, 'a batch was applied while a commit was in flight');
  assert.equal(firstAnswered, false, 'acknowledged before its commit settled');

  log.held[0]!.release();
  assert.equal((await first).ok, true);
  await turns(2);
  assert.equal(log.held.length, 2, 'what queued meanwhile was not committed next');
  const accepted = log.held[1]!.batch.events.filter((e) => e.type === 'orderAccepted');
  assert.equal(accepted.length, 3, 'the queued commands did not share one group commit');
  log.held[1]!.release();
  for (const answer of await Promise.all(later)) assert.equal(answer.ok, true);
  await exchange.close();
});

test('no reader sees a batch before its commit settles: engine reads wait for it', async () => {
  const { exchange, log, id } = await venue();
  log.hold = true;
  const placed = exchange.submit(bid(id, 100));
  await turns(6);
  assert.equal(log.held.length, 1);
  assert.throws(() => exchange.book(id, 0), UncommittedReadError);
  assert.throws(() => exchange.balances(ALICE), UncommittedReadError);
  let read: readonly unknown[] | undefined;
  const reading = Promise.resolve(exchange.readCommitted(() => exchange.book(id, 0).bids)).then((bids) => {
    read = bids;
  });
  await turns(3);
  assert.equal(read, undefined, 'a read was served while the commit was in flight');
  log.held[0]!.release();
  await placed;
  await reading;
  assert.deepEqual(read, [[100, 100_000]]);
  await exchange.close();
});

test('a commit that fails asynchronously changes nothing and refuses its batch (503)', async () => {
  const { exchange, log, id } = await venue();
  const before = exchange.book(id, 0);
  const balanceBefore = exchange.balances(ALICE);
  log.hold = true;
  const placed = exchange.submit(bid(id, 100));
  const waiting = exchange.readCommitted(() => exchange.book(id, 0));
  await turns(6);
  log.held[0]!.release(new StoreUnavailableError('the database went away'));
  await assert.rejects(placed, StoreUnavailableError);
  assert.deepEqual(await waiting, before, 'a reader saw the batch whose commit failed');
  assert.deepEqual(exchange.book(id, 0), before);
  assert.deepEqual(exchange.balances(ALICE), balanceBefore);
  assert.equal(exchange.isWritable(), false);
  assert.deepEqual(exchange.view.book(id, 0), before, 'the view took the failed batch');
  await exchange.close();
});

test('a failed commit that reached the store after all: the view reloads it, and readers are told', async () => {
  const { exchange, log, id } = await venue();
  let restored = 0;
  exchange.onRestored(() => restored++);
  log.hold = true;
  const placed = exchange.submit(bid(id, 100));
  await turns(6);
  log.held[0]!.release(new StoreUnavailableError('connection lost after COMMIT'), true);
  await assert.rejects(placed, StoreUnavailableError);
  // The engine was reloaded from the store, which holds the bid (decision 36: a 503 is in doubt).
  const engineBook = exchange.book(id, 0);
  assert.deepEqual(engineBook.bids, [[100, 100_000]]);
  assert.deepEqual(exchange.view.book(id, 0), engineBook, 'the view misses a committed batch');
  assert.deepEqual(exchange.view.balances(ALICE), exchange.balances(ALICE));
  assert.equal(restored, 1, 'WebSocket clients and caches were not told to start again');
  await exchange.close();
});

test('a failed commit that did not reach the store tells no reader to start again', async () => {
  const { exchange, log, id } = await venue();
  let restored = 0;
  exchange.onRestored(() => restored++);
  const feedHead = exchange.feed.head();
  log.hold = true;
  const placed = exchange.submit(bid(id, 100));
  await turns(6);
  log.held[0]!.release(new StoreUnavailableError('the database went away'));
  await assert.rejects(placed, StoreUnavailableError);
  assert.equal(restored, 0);
  assert.equal(exchange.feed.head(), feedHead, 'a reset was published for nothing');
  await exchange.close();
});

test('a checkpoint restore waits for the commit in flight, then rolls it back with the rest', async () => {
  const { exchange, log, id } = await venue();
  await exchange.saveCheckpoint('empty');
  log.hold = true;
  const placed = exchange.submit(bid(id, 100));
  await turns(6);
  let restored = false;
  const restoring = exchange.restoreCheckpoint('empty').then(() => {
    restored = true;
  });
  await turns(3);
  assert.equal(restored, false, 'the restore ran while a commit was in flight');
  log.hold = false;
  log.held[0]!.release();
  assert.equal((await placed).ok, true, 'the command in flight was not acknowledged');
  await restoring;
  assert.deepEqual(exchange.book(id, 0).bids, []);
  assert.ok(exchange.audit().every((a) => a.ok));
  await exchange.close();
});
