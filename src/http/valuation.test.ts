import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Amount, MarketId, Price } from '../domain/types.js';
import { BTC, BTCEUR, ETH, ETHBTC, EUR, EURUSDT, fixedCatalogue, USDT } from './testing/catalogue.js';
import { createValuation } from './valuation.js';

const prices = new Map<MarketId, Price>([
  [BTCEUR.id, 300_005 as Price], // 30000.5 EUR per BTC
  [EURUSDT.id, 10_850 as Price], // 1.0850 USDT per EUR
]);
const source = { catalogue: fixedCatalogue(), lastPrice: (id: MarketId) => prices.get(id) ?? null };

test('direct, inverse, identity and unpriced valuations, rounded down', () => {
  const v = createValuation(source, 'EUR');
  assert.equal(v.currency, 'EUR');
  assert.equal(v.decimals, 2);
  assert.equal(v.value(EUR, 12_345 as Amount), 12_345n);
  // 0.5 BTC × 30000.5 = 15000.25 EUR
  assert.equal(v.value(BTC, 50_000_000 as Amount), 1_500_025n);
  // 1 satoshi × 30000.5 = 0.000300005 EUR -> 0.00
  assert.equal(v.value(BTC, 1 as Amount), 0n);
  // 100 USDT / 1.0850 = 92.1658... EUR -> 92.16
  assert.equal(v.value(USDT, 100_000_000 as Amount), 9_216n);
  // ETH trades only against BTC, which has not traded here: no path, valued at 0.
  assert.equal(v.value(ETH, 1_000_000_000_000 as Amount), 0n);
  assert.equal(v.value(BTC, 0 as Amount), 0n);
});

test('through one intermediate market when there is no direct one', () => {
  const withEth = new Map(prices).set(ETHBTC.id, 5_000 as Price); // 0.05000 BTC per ETH
  const v = createValuation({ ...source, lastPrice: (id: MarketId) => withEth.get(id) ?? null }, 'EUR');
  // 1 ETH × 0.05 BTC/ETH × 30000.5 EUR/BTC = 1500.025 EUR -> 1500.02
  assert.equal(v.value(ETH, 1_000_000_000_000 as Amount), 150_002n);
  // USDT -> EUR is direct (inverse of EUR/USDT) and keeps priority over any two-step path.
  assert.equal(v.value(USDT, 100_000_000 as Amount), 9_216n);
});

test('a valuation currency outside the catalogue values everything else at 0', () => {
  const v = createValuation(source, 'USD');
  assert.equal(v.decimals, 2);
  assert.equal(v.value(BTC, 100_000_000 as Amount), 0n);
});

test('a market without trades gives 0', () => {
  const v = createValuation({ ...source, lastPrice: () => null }, 'EUR');
  assert.equal(v.value(BTC, 100_000_000 as Amount), 0n);
});
