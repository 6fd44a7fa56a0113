import assert from 'node:assert/strict';
import { test } from 'node:test';
import { DEFAULT_CATALOGUE } from '../config/default-catalogue.js';
import { asyncStore } from '../store/async-store.js';
import { SqliteStore } from '../store/sqlite/sqlite-store.js';
import { seedCatalogue } from './seed.js';
import { openExchange } from './sequencer.js';

test('seeding completes a catalogue that a killed first start left half-made, and then does nothing', async () => {
  const exchange = await openExchange({ store: asyncStore(SqliteStore.open({ path: ':memory:' })) });
  // What a first start killed after its first command leaves behind.
  await exchange.submit({ kind: 'createAsset', code: 'EUR', name: 'Euro', type: 'fiat', decimals: 4 });
  const created = await seedCatalogue(exchange, undefined);
  assert.equal(created, DEFAULT_CATALOGUE.assets.length - 1 + DEFAULT_CATALOGUE.markets.length);
  assert.equal(exchange.catalogue.markets().length, DEFAULT_CATALOGUE.markets.length);
  assert.equal(await seedCatalogue(exchange, undefined), 0);
  await exchange.close();
});
