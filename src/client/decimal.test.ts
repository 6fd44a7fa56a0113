/** Exact decimal helpers of the client. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { compareDecimal, formatUnits, isZeroDecimal, parseUnits, subtractDecimal } from './decimal.js';

test('parseUnits / formatUnits round-trip exactly', () => {
  assert.equal(parseUnits('1.25', 2), 125n);
  assert.equal(parseUnits('1.2', 4), 12000n);
  assert.equal(parseUnits('1.2500', 2), 125n, 'trailing zeros beyond the scale are fine');
  assert.equal(parseUnits('123456789012345678.123456789', 9), 123456789012345678123456789n);
  assert.throws(() => parseUnits('1.255', 2), RangeError);
  assert.throws(() => parseUnits('1e3', 2), RangeError);
  assert.throws(() => parseUnits('-1', 2), RangeError);
  assert.equal(formatUnits(125n, 2), '1.25');
  assert.equal(formatUnits(5n, 8), '0.00000005');
  assert.equal(formatUnits(7n, 0), '7');
  assert.equal(formatUnits(-5n, 2), '-0.05');
});

test('compareDecimal compares values, not strings', () => {
  assert.equal(compareDecimal('9.5', '10'), -1);
  assert.equal(compareDecimal('10.00', '10'), 0);
  assert.equal(compareDecimal('0.0000001', '0.000001'), -1);
  assert.equal(compareDecimal('100000.1', '99999.99'), 1);
});

test('isZeroDecimal', () => {
  for (const zero of ['0', '0.0', '0.00000000', '.0', '000']) assert.equal(isZeroDecimal(zero), true, zero);
  for (const other of ['', '.', '0.01', '10', 'x']) assert.equal(isZeroDecimal(other), false, other);
});

test('subtractDecimal is exact at the finer scale', () => {
  assert.equal(subtractDecimal('10.0000000001', '0.3'), '9.7000000001');
  assert.equal(subtractDecimal('5', '5.00'), '0.00');
  assert.equal(subtractDecimal('1', '1.5'), '-0.5');
});
