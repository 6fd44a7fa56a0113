/**
 * A checkpoint restore as one step of the sequencer: what was queued before it is committed
 * first, and every read model (last price, statistics, current candles, book sequences) comes
 * from the restored state afterwards.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Amount, MarketId, Micros, Price, UserId, Volume } from '../domain/types.js';
import { asyncStore } from '../store/async-store.js';
import { SqliteStore } from '../store/sqlite/sqlite-store.js';
import { CheckpointError } from '../store/store.js';
import { type LocalExchange, openExchange } from './sequencer.js';
import { ALICE, BTC, seedBtcEur } from './test-support.js';

const BOB = 2 as UserId;
const nextTurn = () => new Promise((resolve) => setImmediate(resolve));

let now = 1_700_000_000_000_000;
const clock = () => now as Micros;

async function venue(): Promise<{ exchange: LocalExchange; id: MarketId }> {
  const exchange = await openExchange({ store: asyncStore(SqliteStore.open({ path: ':memory:' })), clock });
  const id = await seedBtcEur(exchange);
  await exchange.submit({ kind: 'deposit', userId: BOB, asset: BTC, amount: 100_000_000 as Amount });
  return { exchange, id };
}

const order = (userId: UserId, marketId: MarketId, side: 'buy' | 'sell', price: number) =>
  ({
    kind: 'placeOrder',
    userId,
    marketId,
    side,
    type: 'limit',
    price: price as Price,
    volume: 100_000 as Volume,
  }) as const;

/** What readers derive from the state: book, balances, last price, statistics, current candle. */
async function view(exchange: LocalExchange, id: MarketId) {
  const { sequence: _sequence, ...book } = exchange.book(id, 0);
  return {
    book,
    balances: [...exchange.balances(ALICE), ...exchange.balances(BOB)],
    last: exchange.view.lastPrice(id),
    stats: exchange.view.stats24h(id, clock()),
    candles: await exchange.store.latestCandles(id),
    audit: exchange.audit(),
  };
}

test('a restore reloads the engine and every read model from the checkpoint', async () => {
  const { exchange, id } = await venue();
  await exchange.submit(order(ALICE, id, 'buy', 500));
  await exchange.submit(order(BOB, id, 'sell', 500)); // a trade at 50.0
  await exchange.submit(order(ALICE, id, 'buy', 400)); // resting
  await nextTurn();
  const saved = await view(exchange, id);
  await exchange.saveCheckpoint('one');

  now += 30 * 60_000_000;
  await exchange.submit(order(ALICE, id, 'buy', 700));
  await exchange.submit(order(BOB, id, 'sell', 600)); // a trade at 70.0, in a later candle
  await exchange.submit(order(BOB, id, 'sell', 900)); // resting
  await nextTurn();
  assert.notDeepEqual(await view(exchange, id), saved);
  const sequence = exchange.book(id, 0).sequence;

  let restoredCalls = 0;
  exchange.onRestored(() => restoredCalls++);
  await exchange.restoreCheckpoint('one');
  assert.deepEqual(await view(exchange, id), saved);
  assert.equal(restoredCalls, 1);
  assert.equal(exchange.book(id, 0).sequence, sequence + 1);

  // The candle aggregator resumes from the restored candles: a trade at the checkpoint's time
  // joins the saved candle, which knows nothing of the rolled-back trade.
  now -= 30 * 60_000_000;
  await exchange.submit(order(BOB, id, 'sell', 400));
  const minute = (await exchange.store.latestCandles(id)).find((c) => c.interval === 1);
  const savedMinute = saved.candles.find((c) => c.interval === 1);
  assert.equal(minute?.start, savedMinute?.start);
  assert.equal(minute?.count, (savedMinute?.count ?? 0) + 1);
  assert.equal(minute?.high, savedMinute?.high);
  await exchange.close();
});

test('commands queued before a restore are committed first, then rolled back with the rest', async () => {
  const { exchange, id } = await venue();
  await exchange.saveCheckpoint('empty-book');
  const queued = exchange.submit(order(ALICE, id, 'buy', 100));
  await exchange.restoreCheckpoint('empty-book');
  const result = await queued;
  assert.equal(result.ok, true, 'the queued command was answered as committed');
  assert.deepEqual(exchange.book(id, 0).bids, []);
  assert.equal(
    exchange.audit().every((a) => a.ok),
    true,
  );
  await exchange.close();
});

test('a restore that cannot be done changes nothing', async () => {
  const { exchange, id } = await venue();
  await exchange.submit(order(ALICE, id, 'buy', 100));
  const before = await view(exchange, id);
  await assert.rejects(exchange.restoreCheckpoint('missing'), CheckpointError);
  assert.deepEqual(await view(exchange, id), before);
  await exchange.close();
});
