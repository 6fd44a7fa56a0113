// What the order form does with what the user types: the market's precision applied as they
// type, and an exact total (no float rounding in an amount shown next to a price).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  exactProduct,
  group,
  isPositiveDecimal,
  sanitizeDecimal,
  trimZeros,
} from '../../web/shared/decimal.js';

test('typed prices and volumes keep at most the market decimals and only one point', () => {
  assert.equal(sanitizeDecimal('30000.123', 1), '30000.1');
  assert.equal(sanitizeDecimal('1,5', 2), '1.5');
  assert.equal(sanitizeDecimal('1.2.3', 8), '1.23');
  assert.equal(sanitizeDecimal('abc12x', 2), '12');
  assert.equal(sanitizeDecimal('12.', 2), '12.');
  assert.equal(sanitizeDecimal('12.5', 0), '12');
  assert.equal(sanitizeDecimal('007', 2), '7');
  assert.equal(sanitizeDecimal('0.00005', 8), '0.00005');
  assert.equal(sanitizeDecimal('-5', 2), '5');
});

test('only complete positive decimals may be sent', () => {
  for (const ok of ['1', '0.5', '30000.1']) assert.ok(isPositiveDecimal(ok), ok);
  for (const bad of ['', '.', '5.', '0', '0.000']) assert.ok(!isPositiveDecimal(bad), bad);
});

test('the total is exact', () => {
  assert.equal(exactProduct('0.1', '0.2', 4), '0.0200');
  assert.equal(exactProduct('60259.3', '0.00123', 4), '74.1189');
  assert.equal(exactProduct('1.', '2', 2), undefined);
  assert.equal(group('1234567.891'), '1,234,567.891');
  assert.equal(trimZeros('0.00100000'), '0.001');
  assert.equal(trimZeros('5.000'), '5');
  assert.equal(trimZeros('500'), '500');
});
