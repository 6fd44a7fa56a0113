import assert from 'node:assert/strict';
import { test } from 'node:test';
import { validateCreateOrder } from './order-input.js';
import { BTCEUR, fixedCatalogue } from './testing/catalogue.js';

const catalogue = fixedCatalogue();
const errorsOf = (body: unknown) => {
  const result = validateCreateOrder(body, catalogue);
  assert.equal(result.ok, false);
  return result.ok ? {} : result.errors.toRecord();
};

test('a valid limit order', () => {
  const result = validateCreateOrder(
    { order_direction: 'buy', order_type: 'limit', pair: 'BTC/EUR', volume: '1.25', price: '30000.0' },
    catalogue,
  );
  assert.deepEqual(result, {
    ok: true,
    value: { side: 'buy', type: 'limit', market: BTCEUR, volume: 125_000_000, price: 300_000 },
  });
});

test('a market order needs no price, and its price is ignored', () => {
  for (const price of [undefined, '', 'abc', 5]) {
    const result = validateCreateOrder(
      { order_direction: 'sell', order_type: 'market', pair: 'BTCEUR', volume: '0.0001', price },
      catalogue,
    );
    assert.deepEqual(result, {
      ok: true,
      value: { side: 'sell', type: 'market', market: BTCEUR, volume: 10_000, price: 0 },
    });
  }
});

test('a limit order without price', () => {
  assert.deepEqual(errorsOf({ order_direction: 'buy', order_type: 'limit', pair: 'BTC/EUR', volume: '1' }), {
    price: ['The price field is required unless order type is in market.'],
  });
});

test('every field reported at once, in rule order', () => {
  assert.deepEqual(errorsOf({}), {
    order_direction: ['The order direction field is required.'],
    order_type: ['The order type field is required.'],
    pair: ['The pair field is required.'],
    volume: ['The volume field is required.'],
    price: ['The price field is required unless order type is in market.'],
  });
  for (const body of [undefined, null, [], 'text', 42]) assert.equal(Object.keys(errorsOf(body)).length, 5);
  assert.deepEqual(
    errorsOf({ order_direction: 'up', order_type: 7, pair: 'DOGE/EUR', volume: 1.5, price: '-3' }),
    {
      order_direction: ['The selected order direction is invalid.'],
      order_type: ['The order type field must be a string.'],
      pair: ['The selected pair is invalid.'],
      volume: ['The volume field must be a string.'],
      price: ['The price field must be greater than 0.'],
    },
  );
});

test('market precision and minimum', () => {
  const base = { order_direction: 'buy', order_type: 'limit', pair: 'BTC/EUR' };
  assert.deepEqual(errorsOf({ ...base, volume: '0.00009', price: '30000.05' }), {
    volume: ['The volume field must be at least 0.00010000.'],
    price: ['The price field must have 0-1 decimal places.'],
  });
  assert.deepEqual(errorsOf({ ...base, volume: '1.000000001', price: '1e4' }), {
    volume: ['The volume field must have 0-8 decimal places.'],
    price: ['The price field must be a number.'],
  });
  assert.deepEqual(errorsOf({ ...base, volume: '0', price: '0' }), {
    volume: ['The volume field must be greater than 0.'],
    price: ['The price field must be greater than 0.'],
  });
});

test('with an unknown pair, volume and price get form checks only', () => {
  const base = { order_direction: 'buy', order_type: 'limit', pair: 'DOGE/EUR' };
  assert.deepEqual(errorsOf({ ...base, volume: '123456789.123456789123', price: '20000.123456789' }), {
    pair: ['The selected pair is invalid.'],
  });
  assert.deepEqual(errorsOf({ ...base, volume: '0.000', price: '-5' }), {
    pair: ['The selected pair is invalid.'],
    volume: ['The volume field must be greater than 0.'],
    price: ['The price field must be greater than 0.'],
  });
  assert.deepEqual(errorsOf({ ...base, volume: '1e5', price: 7 }), {
    pair: ['The selected pair is invalid.'],
    volume: ['The volume field must be a number.'],
    price: ['The price field must be a string.'],
  });
});
