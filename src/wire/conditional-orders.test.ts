import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Amount, Micros, OrderId, Price, UserId, Volume } from '../domain/types.js';
import type { OrderState } from '../engine/types.js';
import { BTCEUR, fixedCatalogue } from '../http/testing/catalogue.js';
import { formatBps } from './conditional-orders.js';
import { serializeOrder } from './serializers.js';

const catalogue = fixedCatalogue();

/** A waiting sell stop-loss-limit of 0.01 BTC: trigger 58000.0, limit 57900.0. */
const stop = (over: Partial<OrderState> = {}): OrderState => ({
  id: 5 as OrderId,
  userId: 7 as UserId,
  marketId: BTCEUR.id,
  side: 'sell',
  type: 'stop-loss-limit',
  price: 579_000 as Price,
  volume: 1_000_000 as Volume,
  executed: 0 as Volume,
  status: 'open',
  reason: null,
  openTime: 1_700_000_000_000_000 as Micros,
  closeTime: null,
  cost: 0 as Amount,
  fee: 0 as Amount,
  feeExcess: 0,
  reserved: 1_000_000 as Amount,
  triggerPrice: 580_000 as Price,
  ...over,
});

const view = (o: OrderState) => serializeOrder(o, BTCEUR, catalogue, []);

test('a waiting stop-loss-limit: price is the trigger, the limit price is secondary and limit price', () => {
  const r = view(stop());
  assert.equal(r.order_type, 'stop-loss-limit');
  assert.equal(r.description.orderType, 'stop-loss-limit');
  assert.deepEqual(r.price, { amount: '58000.0', currency: 'EUR' });
  assert.equal(r.description.price, '58000.0');
  assert.deepEqual(r.secondary_price, { amount: '57900.0', currency: 'EUR' });
  assert.deepEqual(r.limit_price, { amount: '57900.0', currency: 'EUR' });
  assert.equal(r.description.secondaryPrice, '57900.0');
  assert.equal(r.description.order, 'sell 0.01000000 BTCEUR @ stop loss 58000.0 -> limit 57900.0');
  assert.equal(r.trigger_conditions, 'last price <= 58000.0');
});

test('stop-loss and take-profit name their direction; no secondary price; fired ones say triggered', () => {
  const sellStop = view(stop({ type: 'stop-loss', price: 0 as Price }));
  assert.equal(sellStop.secondary_price, null);
  assert.equal(sellStop.limit_price, null);
  assert.equal(sellStop.description.secondaryPrice, null);
  assert.equal(sellStop.description.order, 'sell 0.01000000 BTCEUR @ stop loss 58000.0');
  const buyStop = view(stop({ type: 'stop-loss', side: 'buy', price: 0 as Price }));
  assert.equal(buyStop.trigger_conditions, 'last price >= 58000.0');
  const takeProfit = view(stop({ type: 'take-profit', price: 0 as Price, triggerPrice: 610_000 as Price }));
  assert.equal(takeProfit.trigger_conditions, 'last price >= 61000.0');
  assert.equal(takeProfit.description.order, 'sell 0.01000000 BTCEUR @ take profit 61000.0');
  const buyTakeProfit = view(
    stop({ type: 'take-profit-limit', side: 'buy', triggerPrice: 560_000 as Price }),
  );
  assert.equal(buyTakeProfit.trigger_conditions, 'last price <= 56000.0');
  const fired = view(stop({ type: 'stop-loss', price: 0 as Price, triggered: true }));
  assert.equal(fired.order_type, 'stop-loss');
  assert.equal(fired.trigger_conditions, 'triggered: last price <= 58000.0');
  assert.deepEqual(fired.price, { amount: '58000.0', currency: 'EUR' });
});

test('a trailing stop: its current trigger, the offset and best price in words, or waiting for a first trade', () => {
  const trailing = (over: Partial<OrderState>) =>
    view(stop({ type: 'trailing-stop', price: 0 as Price, triggerPrice: undefined, ...over }));
  const pct = trailing({
    triggerPrice: 580_000 as Price,
    trailingOffset: { unit: 'bps', amount: 250 },
    trailingBest: 594_872 as Price,
  });
  assert.equal(pct.trigger_conditions, 'last price <= 58000.0 (trailing 2.5% below the best price 59487.2)');
  assert.equal(pct.description.order, 'sell 0.01000000 BTCEUR @ trailing stop -2.5%');
  assert.deepEqual(pct.price, { amount: '58000.0', currency: 'EUR' });
  assert.equal(pct.secondary_price, null);
  const ticks = trailing({
    side: 'buy',
    triggerPrice: 596_377 as Price,
    trailingOffset: { unit: 'ticks', amount: 1_505 },
    trailingBest: 594_872 as Price,
  });
  assert.equal(
    ticks.trigger_conditions,
    'last price >= 59637.7 (trailing 150.5 above the best price 59487.2)',
  );
  assert.equal(ticks.description.order, 'buy 0.01000000 BTCEUR @ trailing stop +150.5');
  const none = trailing({ trailingOffset: { unit: 'bps', amount: 250 } });
  assert.equal(none.trigger_conditions, 'waiting for the first trade (trailing 2.5% below the best price)');
  assert.deepEqual(none.price, { amount: '0.0', currency: 'EUR' });
});

test('limit and market orders keep "none" and their own prices', () => {
  const limit = view(stop({ type: 'limit', triggerPrice: undefined }));
  assert.equal(limit.trigger_conditions, 'none');
  assert.deepEqual(limit.price, { amount: '57900.0', currency: 'EUR' });
  assert.equal(limit.secondary_price, null);
});

test('basis points as percentages', () => {
  assert.deepEqual([1, 10, 105, 250, 1_000, 5_000].map(formatBps), [
    '0.01%',
    '0.1%',
    '1.05%',
    '2.5%',
    '10%',
    '50%',
  ]);
});
