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

test('an order whose amounts would leave the exact range (2^53 - 1 units) is refused, stating the limit', () => {
  const limit = { order_direction: 'buy', order_type: 'limit' };
  // ETH has 12 decimals and ETH/BTC volumes 4: one lot is 10^8 units, so at most 90071992 lots.
  assert.deepEqual(errorsOf({ ...limit, pair: 'ETH/BTC', volume: '9007.1993', price: '0.00001' }), {
    volume: ['The volume field must not be greater than 9007.1992.'],
  });
  assert.deepEqual(errorsOf({ ...limit, order_type: 'market', pair: 'ETHBTC', volume: '10000' }), {
    volume: ['The volume field must not be greater than 9007.1992.'],
  });
  assert.equal(
    validateCreateOrder({ ...limit, pair: 'ETH/BTC', volume: '9007.1992', price: '0.00001' }, catalogue).ok,
    true,
  );
  // 90,000,000 BTC at 3,000,000.0 EUR costs 2.7·10^14 EUR: more than 2^53 - 1 cents.
  const tooLarge = [
    'The order value (price × volume, fees included) must not be greater than 90071992547409.91 EUR.',
  ];
  assert.deepEqual(errorsOf({ ...limit, pair: 'BTC/EUR', volume: '90000000', price: '3000000.0' }), {
    volume: tooLarge,
  });
  assert.deepEqual(
    errorsOf({ ...limit, order_direction: 'sell', pair: 'BTC/EUR', volume: '90000000', price: '3000000.0' }),
    { volume: tooLarge },
  );
  // Cost within the range, but not once the fee (up to 0.16%) is added to what a buy reserves.
  // 1 BTC at 90071992547399.9 EUR costs 9007199254739990 cents: within the range, the fee is not.
  assert.deepEqual(errorsOf({ ...limit, pair: 'BTC/EUR', volume: '1', price: '90071992547399.9' }), {
    volume: tooLarge,
  });
  assert.equal(
    validateCreateOrder({ ...limit, pair: 'BTC/EUR', volume: '1', price: '89000000000000.0' }, catalogue).ok,
    true,
  );
});

// Conditional orders (issue 22): trigger_price, trailing_offset and which types take a price.
const conditional = (over: Record<string, unknown>) =>
  validateCreateOrder({ order_direction: 'sell', pair: 'BTC/EUR', volume: '0.01', ...over }, catalogue);

test('conditional types: their trigger, their limit price, their offset', () => {
  assert.deepEqual(conditional({ order_type: 'stop-loss', trigger_price: '58000.0' }), {
    ok: true,
    value: {
      side: 'sell',
      type: 'stop-loss',
      market: BTCEUR,
      volume: 1_000_000,
      price: 0,
      triggerPrice: 580_000,
    },
  });
  const limit = conditional({ order_type: 'stop-loss-limit', trigger_price: '58000', price: '57900.5' });
  assert.ok(limit.ok);
  assert.equal(limit.value.price, 579_005);
  assert.equal(limit.value.triggerPrice, 580_000);
  const pct = conditional({ order_type: 'trailing-stop', trailing_offset: '2.5%' });
  assert.ok(pct.ok);
  assert.deepEqual(pct.value.trailingOffset, { unit: 'bps', amount: 250 });
  assert.equal(pct.value.triggerPrice, undefined);
  const ticks = conditional({ order_type: 'trailing-stop', trailing_offset: '150.5' });
  assert.ok(ticks.ok);
  assert.deepEqual(ticks.value.trailingOffset, { unit: 'ticks', amount: 1_505 });
  for (const [text, bps] of [
    ['0.01%', 1],
    ['50%', 5_000],
    ['12.34%', 1_234],
  ] as const) {
    const r = conditional({ order_type: 'trailing-stop', trailing_offset: text });
    assert.ok(r.ok, text);
    assert.deepEqual(r.value.trailingOffset, { unit: 'bps', amount: bps });
  }
});

test('conditional types: required and prohibited fields, each on its own field', () => {
  const errors = (over: Record<string, unknown>) => {
    const r = conditional(over);
    assert.equal(r.ok, false, JSON.stringify(over));
    return r.ok ? {} : r.errors.toRecord();
  };
  assert.deepEqual(errors({ order_type: 'take-profit' }), {
    trigger_price: ['The trigger price field is required when order type is take-profit.'],
  });
  assert.deepEqual(errors({ order_type: 'stop-loss-limit', trigger_price: '58000' }), {
    price: ['The price field is required when order type is stop-loss-limit.'],
  });
  assert.deepEqual(errors({ order_type: 'stop-loss', trigger_price: '58000', price: '57000' }), {
    price: ['The price field is prohibited when order type is stop-loss.'],
  });
  assert.deepEqual(errors({ order_type: 'limit', price: '57000', trigger_price: '58000' }), {
    trigger_price: ['The trigger price field is prohibited when order type is limit.'],
  });
  assert.deepEqual(errors({ order_type: 'market', trigger_price: '58000' }), {
    trigger_price: ['The trigger price field is prohibited when order type is market.'],
  });
  assert.deepEqual(errors({ order_type: 'trailing-stop', trigger_price: '58000', trailing_offset: '1%' }), {
    trigger_price: ['The trigger price field is prohibited when order type is trailing-stop.'],
  });
  assert.deepEqual(errors({ order_type: 'trailing-stop' }), {
    trailing_offset: ['The trailing offset field is required when order type is trailing-stop.'],
  });
  assert.deepEqual(errors({ order_type: 'stop-loss', trigger_price: '58000', trailing_offset: '1%' }), {
    trailing_offset: ['The trailing offset field is prohibited when order type is stop-loss.'],
  });
  assert.deepEqual(errors({ order_type: 'stop-loss', trigger_price: '58000.05' }), {
    trigger_price: ['The trigger price field must have 0-1 decimal places.'],
  });
  assert.deepEqual(errors({ order_type: 'stop-loss', trigger_price: '0' }), {
    trigger_price: ['The trigger price field must be greater than 0.'],
  });
  for (const bad of ['0%', '50.01%', '2.555%', '-1%', '%', 'abc', '1e2%', '100%']) {
    assert.deepEqual(
      errors({ order_type: 'trailing-stop', trailing_offset: bad }),
      {
        trailing_offset: [
          'The trailing offset field must be a price distance such as "150.5" or a percentage from 0.01% to 50% such as "2.5%".',
        ],
      },
      bad,
    );
  }
  assert.deepEqual(errors({ order_type: 'trailing-stop', trailing_offset: '0.05' }), {
    trailing_offset: ['The trailing offset field must have 0-1 decimal places.'],
  });
  assert.deepEqual(errors({ order_type: 'trailing-stop', trailing_offset: 2 }), {
    trailing_offset: ['The trailing offset field must be a string.'],
  });
});

test('a limit order keeps its old message when the price is missing; market still ignores a price', () => {
  assert.deepEqual(errorsOf({ order_direction: 'buy', order_type: 'limit', pair: 'BTC/EUR', volume: '1' }), {
    price: ['The price field is required unless order type is in market.'],
  });
  const r = conditional({ order_type: 'market', price: 'anything' });
  assert.ok(r.ok);
  assert.equal(r.value.price, 0);
});
