import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import type { Micros } from '../domain/types.js';
import { NO_EXPIRY, unixSeconds, unixSeconds4, utcDateTime } from './time.js';

const m = (n: number) => n as Micros;

test('order times: 4 decimals, truncated', () => {
  assert.equal(unixSeconds4(m(1_700_000_000_123_456)), '1700000000.1234');
  assert.equal(unixSeconds4(m(1_700_000_000_999_999)), '1700000000.9999');
  assert.equal(unixSeconds4(m(1_700_000_001_000_000)), '1700000001.0000');
  assert.equal(unixSeconds4(m(99)), '0.0000');
  assert.equal(unixSeconds4(m(100)), '0.0001');
  assert.equal(unixSeconds4(m(0)), NO_EXPIRY);
  // Near the top of the exact range a float division would print a wrong digit.
  assert.equal(unixSeconds4(m(Number.MAX_SAFE_INTEGER)), '9007199254.7409');
});

test('whole seconds and UTC date-times', () => {
  assert.equal(unixSeconds(m(1_700_000_000_999_999)), 1_700_000_000);
  assert.equal(utcDateTime(m(1_700_000_000_999_999)), '2023-11-14 22:13:20');
  assert.equal(utcDateTime(m(0)), '1970-01-01 00:00:00');
  assert.equal(utcDateTime(m(951_782_400_000_000)), '2000-02-29 00:00:00');
});

test('property: the 4-decimal text is exactly floor(micros / 100) ten-thousandths', () => {
  fc.assert(
    fc.property(fc.bigInt({ min: 0n, max: BigInt(Number.MAX_SAFE_INTEGER) }), (big) => {
      const text = unixSeconds4(m(Number(big)));
      assert.match(text, /^\d+\.\d{4}$/);
      const [whole, fraction] = text.split('.') as [string, string];
      assert.equal(BigInt(whole) * 10_000n + BigInt(fraction), big / 100n);
    }),
  );
});

test('property: the date-time text parses back to the truncated second', () => {
  fc.assert(
    fc.property(fc.integer({ min: 0, max: Number.MAX_SAFE_INTEGER }), (micros) => {
      const text = utcDateTime(m(micros));
      assert.match(text, /^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$/);
      assert.equal(Date.parse(`${text.replace(' ', 'T')}Z`), unixSeconds(m(micros)) * 1000);
      assert.equal(BigInt(unixSeconds(m(micros))), BigInt(micros) / 1_000_000n);
    }),
  );
});
