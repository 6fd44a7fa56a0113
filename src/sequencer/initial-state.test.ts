import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Amount, AssetCode, FeeRate, Price, UserId, Volume } from '../domain/types.js';
import { asyncStore } from '../store/async-store.js';
import { SqliteStore } from '../store/sqlite/sqlite-store.js';
import { INITIAL_CHECKPOINT, keepInitialState } from './initial-state.js';
import { openExchange } from './sequencer.js';

async function seeded() {
  const exchange = await openExchange({ store: asyncStore(SqliteStore.open({ path: ':memory:' })) });
  await exchange.submit({
    kind: 'createAsset',
    code: 'BTC' as AssetCode,
    name: 'B',
    type: 'crypto',
    decimals: 8,
  });
  await exchange.submit({
    kind: 'createAsset',
    code: 'EUR' as AssetCode,
    name: 'E',
    type: 'fiat',
    decimals: 2,
  });
  await exchange.submit({
    kind: 'createMarket',
    base: 'BTC' as AssetCode,
    quote: 'EUR' as AssetCode,
    pairDecimals: 1,
    lotDecimals: 8,
    ordermin: 1 as Volume,
    makerFee: 0 as FeeRate,
    takerFee: 0 as FeeRate,
  });
  await exchange.submit({
    kind: 'deposit',
    userId: 1 as UserId,
    asset: 'EUR' as AssetCode,
    amount: 10_000 as Amount,
  });
  return exchange;
}

const names = async (exchange: Awaited<ReturnType<typeof seeded>>) =>
  (await exchange.store.listCheckpoints()).map((c) => c.name);

test('the freshly seeded state is kept once, before any order, and never replaced by a later start', async () => {
  const exchange = await seeded();
  assert.equal(await keepInitialState(exchange), true);
  assert.deepEqual(await names(exchange), [INITIAL_CHECKPOINT]);
  const first = (await exchange.store.listCheckpoints())[0]!.bytes;
  await exchange.submit({
    kind: 'placeOrder',
    userId: 1 as UserId,
    marketId: exchange.catalogue.marketByName('BTC/EUR')!.id,
    side: 'buy',
    type: 'limit',
    // 0.001 BTC at 30,000 EUR: 30 EUR of the 100 deposited.
    price: 300_000 as Price,
    volume: 100_000 as Volume,
  });
  assert.equal(await keepInitialState(exchange), false, 'already kept');
  await exchange.store.deleteCheckpoint(INITIAL_CHECKPOINT);
  assert.equal(await keepInitialState(exchange), false, 'an order was placed: the state is no longer fresh');
  assert.deepEqual(await names(exchange), []);
  assert.equal(await keepInitialState(exchange, { replace: true }), true);
  assert.ok((await exchange.store.listCheckpoints())[0]!.bytes >= first);
  await exchange.close();
});

test('a store that keeps no checkpoints (PostgreSQL) is not asked to save one', async () => {
  const exchange = await seeded();
  let saves = 0;
  const withoutCheckpoints = {
    ...exchange,
    commitLog: exchange.commitLog,
    store: { ...exchange.store, capabilities: { checkpoints: false, why: 'not here' } as const },
    saveCheckpoint: async (name: string) => {
      saves++;
      return exchange.saveCheckpoint(name);
    },
    listCheckpoints: () => exchange.listCheckpoints(),
  };
  assert.equal(await keepInitialState(withoutCheckpoints), false);
  assert.equal(await keepInitialState(withoutCheckpoints, { replace: true }), false);
  assert.equal(saves, 0);
  assert.deepEqual(await names(exchange), []);
  await exchange.close();
});
