import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { UserId } from '../domain/types.js';
import { idempotencyRequest } from './idempotency-key.js';
import { DEFAULT_CONTROLS, placeOrderCommand, validateOrderControls } from './order-controls.js';
import { validateCreateOrder } from './order-input.js';
import { BTCEUR, fixedCatalogue } from './testing/catalogue.js';

const catalogue = fixedCatalogue();
const body = (over: Record<string, unknown> = {}) => ({
  order_direction: 'buy',
  order_type: 'limit',
  pair: 'BTC/EUR',
  volume: '1.25',
  price: '30000.0',
  ...over,
});
const controlsOf = (b: Record<string, unknown>) =>
  validateOrderControls(b, validateCreateOrder(b, catalogue));
const errorsOf = (b: Record<string, unknown>) => {
  const result = controlsOf(b);
  assert.equal(result.ok, false);
  return result.ok ? {} : result.errors;
};

test('a body without controls asks for the defaults, and its command is the one it always was', () => {
  const b = body();
  const input = validateCreateOrder(b, catalogue);
  const controls = controlsOf(b);
  assert.deepEqual(controls, { ok: true, value: DEFAULT_CONTROLS });
  assert.ok(input.ok && controls.ok);
  assert.deepEqual(placeOrderCommand(7 as UserId, input.value, controls.value), {
    kind: 'placeOrder',
    userId: 7,
    marketId: BTCEUR.id,
    side: 'buy',
    type: 'limit',
    price: 300_000,
    volume: 125_000_000,
  });
  // null and blank strings count as absent, as for the original fields.
  assert.deepEqual(controlsOf(body({ time_in_force: null, client_order_id: ' ', stp: '' })), {
    ok: true,
    value: DEFAULT_CONTROLS,
  });
});

test('every control is read, and only those that differ from the default reach the command', () => {
  const b = body({
    time_in_force: 'GTD',
    expire_time: '1767225600.5',
    post_only: 'true',
    client_order_id: 'a-Z_09',
    stp: 'decrement',
  });
  const input = validateCreateOrder(b, catalogue);
  const controls = controlsOf(b);
  assert.deepEqual(controls, {
    ok: true,
    value: {
      timeInForce: 'GTD',
      expireTime: 1_767_225_600_500_000,
      postOnly: true,
      clientOrderId: 'a-Z_09',
      stp: 'decrement',
    },
  });
  assert.ok(input.ok && controls.ok);
  const command = placeOrderCommand(7 as UserId, input.value, controls.value);
  assert.equal(command.timeInForce, 'GTD');
  assert.equal(command.expireTime, 1_767_225_600_500_000);
  assert.equal(command.postOnly, true);
  const ioc = body({ time_in_force: 'IOC' });
  const iocInput = validateCreateOrder(ioc, catalogue);
  const iocControls = controlsOf(ioc);
  assert.ok(iocInput.ok && iocControls.ok);
  assert.deepEqual(Object.keys(placeOrderCommand(7 as UserId, iocInput.value, iocControls.value)).slice(-1), [
    'timeInForce',
  ]);
  // A JSON integer expiry is whole seconds.
  assert.deepEqual(controlsOf(body({ time_in_force: 'GTD', expire_time: 1_767_225_600 })), {
    ok: true,
    value: { ...DEFAULT_CONTROLS, timeInForce: 'GTD', expireTime: 1_767_225_600_000_000 },
  });
});

test('refusals, with Laravel-worded texts', () => {
  assert.deepEqual(errorsOf(body({ time_in_force: 'gtc', stp: 5 })), {
    time_in_force: ['The selected time in force is invalid.'],
    stp: ['The stp field must be a string.'],
  });
  assert.deepEqual(errorsOf(body({ time_in_force: 'GTD', expire_time: '1e9' })), {
    expire_time: ['The expire time field format is invalid.'],
  });
  assert.deepEqual(errorsOf(body({ expire_time: '1767225600' })), {
    expire_time: ['The expire time field is prohibited unless time in force is GTD.'],
  });
  assert.deepEqual(errorsOf(body({ post_only: 'yes' })), {
    post_only: ['The post only field must be true or false.'],
  });
  assert.deepEqual(errorsOf(body({ post_only: true, time_in_force: 'FOK' })), {
    post_only: ['The post only field is prohibited when time in force is FOK.'],
  });
  // The order type is known from a valid order_type even when the rest of the body fails.
  assert.deepEqual(errorsOf({ order_type: 'market', post_only: true }), {
    post_only: ['The post only field is prohibited when order type is market.'],
  });
  assert.deepEqual(errorsOf(body({ client_order_id: 'x'.repeat(37) })), {
    client_order_id: ['The client order id field must not be greater than 36 characters.'],
  });
  for (const id of ['a b', 'é', 'a/b', 7])
    assert.equal(Object.keys(errorsOf(body({ client_order_id: id }))).join(), 'client_order_id', String(id));
});

test('the Idempotency-Key fingerprint: unchanged without controls, different with any', () => {
  const input = validateCreateOrder(body(), catalogue);
  assert.ok(input.ok);
  const plain = idempotencyRequest('k', input.value).fingerprint;
  assert.equal(idempotencyRequest('k', { ...input.value, controls: DEFAULT_CONTROLS }).fingerprint, plain);
  const variants = [
    { timeInForce: 'IOC' as const },
    { timeInForce: 'GTD' as const, expireTime: 1_767_225_600_000_000 },
    { postOnly: true },
    { clientOrderId: 'a' },
    { stp: 'cancel-both' as const },
  ].map(
    (change) =>
      idempotencyRequest('k', {
        ...input.value,
        controls: { ...DEFAULT_CONTROLS, ...change } as typeof DEFAULT_CONTROLS,
      }).fingerprint,
  );
  assert.equal(new Set([plain, ...variants]).size, variants.length + 1);
});

test('conditional orders wait: IOC, FOK and post-only are refused on their fields', () => {
  const stopBody = {
    order_direction: 'sell',
    order_type: 'stop-loss',
    pair: 'BTC/EUR',
    volume: '0.01',
    trigger_price: '58000',
  };
  const check = (over: Record<string, unknown>) => {
    const input = validateCreateOrder({ ...stopBody, ...over }, catalogue);
    return validateOrderControls({ ...stopBody, ...over }, input);
  };
  assert.deepEqual(check({ time_in_force: 'IOC' }), {
    ok: false,
    errors: { time_in_force: ['The time in force field must be GTC or GTD when order type is stop-loss.'] },
  });
  assert.deepEqual(check({ time_in_force: 'FOK', order_type: 'take-profit' }), {
    ok: false,
    errors: { time_in_force: ['The time in force field must be GTC or GTD when order type is take-profit.'] },
  });
  assert.deepEqual(check({ post_only: true }), {
    ok: false,
    errors: { post_only: ['The post only field is prohibited when order type is stop-loss.'] },
  });
  const gtd = check({
    time_in_force: 'GTD',
    expire_time: '1900000000',
    client_order_id: 'sl-1',
    stp: 'decrement',
  });
  assert.equal(gtd.ok, true);
  const input = validateCreateOrder(stopBody, catalogue);
  assert.ok(input.ok);
  const command = placeOrderCommand(3 as UserId, input.value, DEFAULT_CONTROLS);
  assert.equal(command.triggerPrice, 580_000);
  assert.equal(command.price, 0);
});

test('the Idempotency-Key fingerprint covers the trigger price and the trailing offset', () => {
  const fingerprint = (over: Record<string, unknown>) => {
    const input = validateCreateOrder(
      body({ order_direction: 'sell', price: undefined, ...over }),
      catalogue,
    );
    assert.ok(input.ok, JSON.stringify(over));
    return idempotencyRequest('k', { ...input.value, controls: DEFAULT_CONTROLS }).fingerprint;
  };
  const prints = [
    fingerprint({ order_type: 'stop-loss', trigger_price: '58000' }),
    fingerprint({ order_type: 'stop-loss', trigger_price: '58000.1' }),
    fingerprint({ order_type: 'take-profit', trigger_price: '58000' }),
    fingerprint({ order_type: 'trailing-stop', trailing_offset: '2%' }),
    fingerprint({ order_type: 'trailing-stop', trailing_offset: '2' }),
    fingerprint({ order_type: 'trailing-stop', trailing_offset: '2.5%' }),
  ];
  assert.equal(new Set(prints).size, prints.length);
  // The same order written another way is the same order.
  assert.equal(fingerprint({ order_type: 'stop-loss', trigger_price: '58000.0' }), prints[0]);
  assert.equal(fingerprint({ order_type: 'trailing-stop', trailing_offset: '2.00%' }), prints[3]);
});
