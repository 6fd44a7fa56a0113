// The order form's percentage buttons: a share of the AVAILABLE balance, exact and rounded down.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { availableOf, volumeForPercent } from '../../web/terminal/order-size.js';

const wallet = (total: string, pending: string) => ({
  balance: { balance_total: total },
  pending: { balance_pending: pending },
});

test('available is total less what open orders hold', () => {
  assert.equal(availableOf(wallet('10.0000000000', '0.2500000000')), '9.7500000000');
  assert.equal(availableOf(wallet('100.0000', '100.0000')), '0.0000');
});

test('a sell offers a share of the available base, rounded down to the lot', () => {
  const sell = (percent: number, available: string) =>
    volumeForPercent({ side: 'sell', percent, available, price: undefined, lotDecimals: 8 });
  assert.equal(sell(100, '9.7500000000'), '9.75000000');
  assert.equal(sell(25, '9.7500000000'), '2.43750000');
  assert.equal(sell(75, '0.0000000003'), '0.00000000', 'below one lot: nothing');
  assert.equal(sell(50, '0.0000000099'), '0.00000000');
  assert.equal(sell(50, '1.0000000099'), '0.50000000', 'rounded down, never up');
});

test('a buy spends a share of the available quote at the price, leaving room for the fee', () => {
  const buy = (percent: number, available: string, price: string | undefined) =>
    volumeForPercent({ side: 'buy', percent, available, price, lotDecimals: 8 });
  // 10,050 EUR at 100 EUR: 100 % is 10,050 / 100 / 1.005 = exactly 100 BTC.
  assert.equal(buy(100, '10050.0000', '100.0'), '100.00000000');
  assert.equal(buy(50, '10050.0000', '100.0'), '50.00000000');
  // 1,000 EUR at 30,000.5: 1000 / 30000.5 / 1.005 = 0.0331669430…, rounded down.
  assert.equal(buy(100, '1000.0000', '30000.5'), '0.03316694');
  assert.equal(buy(100, '1000', ''), undefined, 'no price yet');
  assert.equal(buy(100, '1000', '0.0'), undefined, 'a zero price buys nothing');
  assert.equal(buy(25, '0', '5'), '0.00000000');
});
