import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import {
  isAbsent,
  MAX_UNIX_SECONDS,
  parseId,
  parseIntInRange,
  parsePositiveDecimal,
  parseUnixTime,
  queryArray,
  resolvePair,
  single,
} from './parse.js';
import { BTCEUR, fixedCatalogue } from './testing/catalogue.js';

test('decimal strings in plain notation', () => {
  assert.deepEqual(parsePositiveDecimal('1.25', 'volume', 8), { ok: true, value: 125_000_000 });
  assert.deepEqual(parsePositiveDecimal(' 30000.0 ', 'price', 1), { ok: true, value: 300_000 });
  assert.deepEqual(parsePositiveDecimal('30000.10', 'price', 1), { ok: true, value: 300_001 });
  const refused: [unknown, string][] = [
    [1.25, 'The volume field must be a string.'],
    [['1'], 'The volume field must be a string.'],
    ['1e3', 'The volume field must be a number.'],
    ['abc', 'The volume field must be a number.'],
    ['.5', 'The volume field must be a number.'],
    ['+1', 'The volume field must be a number.'],
    ['-1', 'The volume field must be greater than 0.'],
    ['0', 'The volume field must be greater than 0.'],
    ['0.00000000', 'The volume field must be greater than 0.'],
    ['0.000000001', 'The volume field must have 0-8 decimal places.'],
    ['99999999999', 'The volume field must not be greater than 90071992.54740991.'],
  ];
  for (const [input, message] of refused) {
    assert.deepEqual(parsePositiveDecimal(input, 'volume', 8), { ok: false, message }, String(input));
  }
});

test('property: any formatted positive amount parses back', () => {
  fc.assert(
    fc.property(
      fc.integer({ min: 1, max: Number.MAX_SAFE_INTEGER }),
      fc.integer({ min: 0, max: 12 }),
      (units, d) => {
        const text =
          d === 0
            ? String(units)
            : `${String(units)
                .padStart(d + 1, '0')
                .slice(0, -d)}.${String(units)
                .padStart(d + 1, '0')
                .slice(-d)}`;
        assert.deepEqual(parsePositiveDecimal(text, 'x', d), { ok: true, value: units });
      },
    ),
  );
});

test('pairs by slash or joined name', () => {
  const catalogue = fixedCatalogue();
  assert.equal(resolvePair(catalogue, 'BTC/EUR'), BTCEUR);
  assert.equal(resolvePair(catalogue, 'BTCEUR'), BTCEUR);
  assert.equal(resolvePair(catalogue, ' BTC/EUR '), BTCEUR);
  for (const bad of ['btc/eur', 'BTC-EUR', '', 7, null, 'X'.repeat(100)])
    assert.equal(resolvePair(catalogue, bad), undefined);
});

test('ids and bounded integers', () => {
  assert.equal(parseId('42'), 42);
  assert.equal(parseId('9007199254740991'), Number.MAX_SAFE_INTEGER);
  for (const bad of ['0', '-1', '1.0', '1e3', ' 1', '9007199254740992', '99999999999999999', '', 'abc', 42]) {
    assert.equal(parseId(bad), undefined, String(bad));
  }
  assert.equal(parseIntInRange('007', 1, 100), 7);
  assert.equal(parseIntInRange('0', 0, 100), 0);
  assert.equal(parseIntInRange('101', 0, 100), undefined);
  assert.equal(parseIntInRange('1.5', 0, 100), undefined);
  assert.equal(parseIntInRange('99999999999999999999', 0, 100), undefined);
});

test('unix times', () => {
  assert.deepEqual(parseUnixTime('1700000000'), { seconds: 1_700_000_000, micros: 1_700_000_000_000_000 });
  assert.deepEqual(parseUnixTime('1700000000.5'), { seconds: 1_700_000_000, micros: 1_700_000_000_500_000 });
  assert.deepEqual(parseUnixTime('1.1234567'), { seconds: 1, micros: 1_123_456 });
  assert.equal(parseUnixTime(String(MAX_UNIX_SECONDS))?.seconds, MAX_UNIX_SECONDS);
  for (const bad of ['-1', '1e9', 'now', '', String(MAX_UNIX_SECONDS + 1), '1.', undefined]) {
    assert.equal(parseUnixTime(bad), undefined, String(bad));
  }
});

test('query helpers', () => {
  assert.equal(isAbsent('  '), true);
  assert.equal(isAbsent(null), true);
  assert.equal(isAbsent('0'), false);
  assert.equal(single(undefined), undefined);
  assert.equal(single('a'), 'a');
  assert.equal(single(['a', 'b']), null);
  assert.deepEqual(queryArray({ 'pairs[]': ['BTC/EUR', 'ETH/BTC'] }, 'pairs'), ['BTC/EUR', 'ETH/BTC']);
  assert.deepEqual(queryArray({ 'pairs[]': 'BTC/EUR' }, 'pairs'), ['BTC/EUR']);
  assert.deepEqual(queryArray({ 'pairs[1]': 'B', 'pairs[0]': 'A', other: 'x' }, 'pairs'), ['B', 'A']);
  assert.deepEqual(queryArray({ pairs: 'A' }, 'pairs'), ['A']);
  assert.equal(queryArray({ other: 'x' }, 'pairs'), undefined);
  assert.equal(queryArray({ 'pairsx[]': 'x' }, 'pairs'), undefined);
});
