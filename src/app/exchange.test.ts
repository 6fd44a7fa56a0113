/**
 * When the sequencer tells whom: a request's reply before the fan-out of its batch, cheap
 * bookkeeping (`immediate` listeners) before the reply, and every listener seeing a batch exactly
 * as it left the engine, before the next batch is applied.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Amount, AssetCode, FeeRate, MarketId, Price, UserId, Volume } from '../domain/types.js';
import { SqliteStore } from '../store/sqlite/sqlite-store.js';
import { type OpenExchange, openExchange } from './exchange.js';
import type { CommittedBatch } from './ports.js';

const BTC = 'BTC' as AssetCode;
const EUR = 'EUR' as AssetCode;
const ALICE = 1 as UserId;
const nextTurn = () => new Promise((resolve) => setImmediate(resolve));

async function market(): Promise<{ exchange: OpenExchange; id: MarketId }> {
  const exchange = openExchange({ store: SqliteStore.open({ path: ':memory:' }) });
  await exchange.submit({ kind: 'createAsset', code: BTC, name: 'Bitcoin', type: 'crypto', decimals: 8 });
  await exchange.submit({ kind: 'createAsset', code: EUR, name: 'Euro', type: 'fiat', decimals: 2 });
  await exchange.submit({
    kind: 'createMarket',
    base: BTC,
    quote: EUR,
    pairDecimals: 1,
    lotDecimals: 8,
    ordermin: 1 as Volume,
    makerFee: 0 as FeeRate,
    takerFee: 0 as FeeRate,
  });
  await exchange.submit({ kind: 'deposit', userId: ALICE, asset: EUR, amount: 100_000_000 as Amount });
  const id = exchange.catalogue.marketByName('BTC/EUR')!.id;
  await nextTurn();
  return { exchange, id };
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

test('a request is answered before its batch is passed to the (fan-out) listeners', async () => {
  const { exchange, id } = await market();
  const seen: CommittedBatch[] = [];
  exchange.onCommitted((batch) => seen.push(batch));
  const result = await exchange.submit(bid(id, 200));
  assert.equal(result.ok, true);
  assert.equal(seen.length, 0, 'the listener ran before the reply could be written');
  await nextTurn();
  assert.equal(seen.length, 1);
  assert.deepEqual(seen[0]!.books.get(id)?.changes, [
    { side: 'buy', price: 200, before: 0, volume: 100_000, sequence: 1 },
  ]);
  await exchange.close();
});

test('an immediate listener runs at the commit, before the request is answered', async () => {
  const { exchange, id } = await market();
  const order: string[] = [];
  exchange.onCommitted(() => order.push('immediate'), { immediate: true });
  exchange.onCommitted(() => order.push('after replies'));
  await exchange.submit(bid(id, 200)).then(() => order.push('reply'));
  await nextTurn();
  assert.deepEqual(order, ['immediate', 'reply', 'after replies']);
  await exchange.close();
});

test('the sequence number is the committed one at once; listeners see each batch before the next is applied', async () => {
  const { exchange, id } = await market();
  const sequenceBefore = exchange.book(id, 0).sequence;
  const seen: Array<{ sequence: number; bids: number }> = [];
  exchange.onCommitted((batch) =>
    seen.push({ sequence: batch.books.get(id)!.sequence, bids: exchange.book(id, 0).bids.length }),
  );
  await exchange.submit(bid(id, 200));
  // A reader right after the reply (a REST snapshot) gets the sequence of what it sees.
  assert.deepEqual(exchange.book(id, 0), {
    sequence: sequenceBefore + 1,
    bids: [[200, 100_000]],
    asks: [],
  });
  // The next batch is queued before the first one's listeners ran: they still see one level.
  await exchange.submit(bid(id, 190));
  await nextTurn();
  assert.deepEqual(seen, [
    { sequence: sequenceBefore + 1, bids: 1 },
    { sequence: sequenceBefore + 2, bids: 2 },
  ]);
  await exchange.close();
});

test('each changed level of a batch takes the next sequence number, in the order of the changes', async () => {
  const { exchange, id } = await market();
  const before = exchange.book(id, 0).sequence;
  const seen: CommittedBatch[] = [];
  exchange.onCommitted((batch) => seen.push(batch));
  // One batch: 20.0 then 19.0 then 20.0 again (one change: its total after the batch, at its first place).
  await Promise.all([
    exchange.submit(bid(id, 200)),
    exchange.submit(bid(id, 190)),
    exchange.submit(bid(id, 200)),
  ]);
  assert.equal(exchange.book(id, 0).sequence, before + 2);
  await nextTurn();
  assert.equal(seen.length, 1);
  assert.deepEqual(seen[0]!.books.get(id), {
    sequence: before + 2,
    changes: [
      { side: 'buy', price: 200, before: 0, volume: 200_000, sequence: before + 1 },
      { side: 'buy', price: 190, before: 0, volume: 100_000, sequence: before + 2 },
    ],
  });
  await exchange.close();
});

test('publishCommitted delivers what is due at once, and only once', async () => {
  const { exchange, id } = await market();
  let calls = 0;
  exchange.onCommitted(() => {
    calls += 1;
  });
  await exchange.submit(bid(id, 200));
  exchange.publishCommitted();
  assert.equal(calls, 1);
  await nextTurn();
  assert.equal(calls, 1);
  await exchange.close();
});
