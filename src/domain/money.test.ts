/** Unit and property tests of the exact-money module. */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import {
  bigSum,
  formatBigUnits,
  formatUnits,
  MAX_DECIMALS,
  MAX_UNITS,
  mulDiv,
  type ParseResult,
  parseDecimal,
  pow10,
  scaleUp,
} from './money.js';

const MAX = BigInt(MAX_UNITS);
const ok = (units: number): ParseResult => ({ ok: true, units });
const fail = (reason: 'format' | 'precision' | 'range'): ParseResult => ({ ok: false, reason });
const decimalsArb = fc.integer({ min: 0, max: MAX_DECIMALS });

/** Reference: floor/ceil of a*b/d in BigInt, NaN when outside the safe range. */
function bigMulDiv(a: number, b: number, d: number, rounding: 'floor' | 'ceil'): number {
  const p = BigInt(a) * BigInt(b);
  let q = p / BigInt(d);
  if (rounding === 'ceil' && q * BigInt(d) !== p) q += 1n;
  return q <= MAX ? Number(q) : Number.NaN;
}

describe('formatUnits', () => {
  test('places the point and pads', () => {
    assert.equal(formatUnits(0, 2), '0.00');
    assert.equal(formatUnits(1, 2), '0.01');
    assert.equal(formatUnits(12_345, 2), '123.45');
    assert.equal(formatUnits(100, 2), '1.00');
    assert.equal(formatUnits(5, 0), '5');
    assert.equal(formatUnits(-5, 2), '-0.05');
    assert.equal(formatUnits(-5, 0), '-5');
    assert.equal(formatUnits(1, 12), '0.000000000001');
    assert.equal(formatUnits(MAX_UNITS, 0), '9007199254740991');
    assert.equal(formatUnits(MAX_UNITS, 8), '90071992.54740991');
    assert.equal(formatUnits(MAX_UNITS, 12), '9007.199254740991');
    assert.equal(formatUnits(-MAX_UNITS, 12), '-9007.199254740991');
  });

  test('refuses what is not an exact amount', () => {
    for (const bad of [0.5, Number.NaN, Number.POSITIVE_INFINITY, MAX_UNITS + 1, -(MAX_UNITS + 1), 2 ** 60]) {
      assert.throws(() => formatUnits(bad, 2), RangeError, String(bad));
    }
  });

  test('formatBigUnits agrees with formatUnits in the safe range and goes beyond it', () => {
    fc.assert(
      fc.property(fc.integer({ min: -MAX_UNITS, max: MAX_UNITS }), decimalsArb, (n, d) => {
        assert.equal(formatBigUnits(BigInt(n), d), formatUnits(n, d));
      }),
    );
    assert.equal(formatBigUnits(10n ** 30n + 1n, 2), '10000000000000000000000000000.01');
    assert.equal(formatBigUnits(-(10n ** 20n), 0), '-100000000000000000000');
  });
});

describe('parseDecimal', () => {
  test('parses plain decimals into units', () => {
    assert.deepEqual(parseDecimal('12', 0), ok(12));
    assert.deepEqual(parseDecimal('12', 3), ok(12_000));
    assert.deepEqual(parseDecimal('0.5', 1), ok(5));
    assert.deepEqual(parseDecimal('0.5', 8), ok(50_000_000));
    assert.deepEqual(parseDecimal('1.2500', 2), ok(125));
    assert.deepEqual(parseDecimal('007.10', 2), ok(710));
    assert.deepEqual(parseDecimal('0', 0), ok(0));
    assert.deepEqual(parseDecimal('0.000', 0), ok(0));
    assert.deepEqual(parseDecimal('000', 5), ok(0));
    assert.deepEqual(parseDecimal('0.000000000001', 12), ok(1));
  });

  test('accepts trailing zeros beyond the precision', () => {
    assert.deepEqual(parseDecimal('1.50000000000000000000', 1), ok(15));
    assert.deepEqual(parseDecimal('3.000', 0), ok(3));
    assert.deepEqual(parseDecimal('9007199254740991.000000', 0), ok(MAX_UNITS));
  });

  test('refuses signs, exponents, spaces, bare points and other syntax', () => {
    const bad = [
      '',
      ' 1',
      '1 ',
      '1 000',
      '+1',
      '-1',
      '-0',
      '1e5',
      '1E5',
      '1e-2',
      '.5',
      '5.',
      '.',
      '1..2',
      '1.2.3',
      '1,5',
      '1_000',
      '0x10',
      '0b1',
      'Infinity',
      'NaN',
      'abc',
      '\u0661', // ARABIC-INDIC DIGIT ONE: not an ASCII digit
      '1\n',
      '\t1',
    ];
    for (const text of bad) assert.deepEqual(parseDecimal(text, 8), fail('format'), JSON.stringify(text));
  });

  test('refuses more significant decimals than allowed', () => {
    assert.deepEqual(parseDecimal('0.123', 2), fail('precision'));
    assert.deepEqual(parseDecimal('1.5', 0), fail('precision'));
    assert.deepEqual(parseDecimal('0.0000000000001', 12), fail('precision'));
    assert.deepEqual(parseDecimal('1.10', 0), fail('precision'));
  });

  test('refuses values above 2^53 - 1 units', () => {
    assert.deepEqual(parseDecimal('9007199254740991', 0), ok(MAX_UNITS));
    assert.deepEqual(parseDecimal('9007199254740992', 0), fail('range'));
    assert.deepEqual(parseDecimal('90071992.54740991', 8), ok(MAX_UNITS));
    assert.deepEqual(parseDecimal('90071992.54740992', 8), fail('range'));
    assert.deepEqual(parseDecimal('90071993', 8), fail('range'));
    assert.deepEqual(parseDecimal('99999999999999999999', 0), fail('range'));
    assert.deepEqual(parseDecimal('1', 16), fail('range'));
    assert.deepEqual(parseDecimal('1'.repeat(65), 0), fail('range'));
  });

  test('round-trips every safe integer at every precision from 0 to 12', () => {
    fc.assert(
      fc.property(fc.maxSafeNat(), decimalsArb, (n, d) => {
        const text = formatUnits(n, d);
        assert.deepEqual(parseDecimal(text, d), ok(n));
        const negative = formatUnits(-n, d);
        if (n !== 0) {
          assert.equal(negative, `-${text}`);
          assert.deepEqual(parseDecimal(negative, d), fail('format'));
        }
      }),
      { numRuns: 2_000 },
    );
  });

  test('trailing zeros after the last significant digit change nothing', () => {
    fc.assert(
      fc.property(fc.maxSafeNat(), decimalsArb, fc.integer({ min: 1, max: 20 }), (n, d, zeros) => {
        const text = formatUnits(n, d) + (d === 0 ? '.' : '') + '0'.repeat(zeros);
        assert.deepEqual(parseDecimal(text, d), ok(n));
      }),
    );
  });

  test('one more significant digit than allowed is refused', () => {
    fc.assert(
      fc.property(
        fc.maxSafeNat(),
        fc.integer({ min: 0, max: MAX_DECIMALS - 1 }),
        fc.integer({ min: 1, max: 9 }),
        (n, d, digit) => {
          const text = formatUnits(n, d) + (d === 0 ? '.' : '') + String(digit);
          assert.deepEqual(parseDecimal(text, d), fail('precision'));
        },
      ),
    );
  });

  test('any value above the safe range is refused', () => {
    fc.assert(
      fc.property(fc.bigInt({ min: MAX + 1n, max: 10n ** 30n }), decimalsArb, (units, d) => {
        assert.deepEqual(parseDecimal(formatBigUnits(units, d), d), fail('range'));
      }),
    );
  });

  test('agrees with a BigInt reading of any plain decimal', () => {
    const digits = (max: number) => fc.string({ unit: fc.constantFrom(...'0123456789'), maxLength: max });
    fc.assert(
      fc.property(
        digits(22).filter((w) => w.length > 0),
        fc.option(digits(16)),
        decimalsArb,
        (whole, fraction, d) => {
          const text = fraction === null || fraction === '' ? whole : `${whole}.${fraction}`;
          const significant = (fraction ?? '').replace(/0+$/, '');
          let expected: ParseResult;
          if (significant.length > d) expected = fail('precision');
          else {
            const units = BigInt(whole + significant.padEnd(d, '0'));
            expected = units <= MAX ? ok(Number(units)) : fail('range');
          }
          assert.deepEqual(parseDecimal(text, d), expected, text);
        },
      ),
      { numRuns: 2_000 },
    );
  });

  test('exponent and signed forms of any number are refused', () => {
    fc.assert(
      fc.property(fc.maxSafeNat(), fc.integer({ min: -20, max: 20 }), decimalsArb, (n, e, d) => {
        assert.equal(parseDecimal(`${n}e${e}`, d).ok, false);
        assert.equal(parseDecimal(`${n}E${e}`, d).ok, false);
        assert.equal(parseDecimal(`+${n}`, d).ok, false);
        assert.equal(parseDecimal(`-${n}`, d).ok, false);
        assert.equal(parseDecimal(` ${n}`, d).ok, false);
        assert.equal(parseDecimal(`${n} `, d).ok, false);
      }),
    );
  });

  test('any string with a character outside digits and one inner point is a format error', () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 30 }), (text) => {
        fc.pre(!/^\d+(\.\d+)?$/.test(text) && text.length <= 64);
        assert.deepEqual(parseDecimal(text, 8), fail('format'));
      }),
      { numRuns: 2_000 },
    );
  });
});

describe('mulDiv', () => {
  test('examples, boundaries and rounding', () => {
    assert.equal(mulDiv(7, 3, 2, 'floor'), 10);
    assert.equal(mulDiv(7, 3, 2, 'ceil'), 11);
    assert.equal(mulDiv(6, 3, 2, 'ceil'), 9);
    assert.equal(mulDiv(1, 1, 3, 'floor'), 0);
    assert.equal(mulDiv(1, 1, 3, 'ceil'), 1);
    assert.equal(mulDiv(0, MAX_UNITS, 7, 'ceil'), 0);
    assert.equal(mulDiv(MAX_UNITS, 1, 1, 'floor'), MAX_UNITS);
    // Products above 2^53 go through BigInt and stay exact.
    assert.equal(mulDiv(MAX_UNITS, 2, 2, 'floor'), MAX_UNITS);
    assert.equal(mulDiv(MAX_UNITS, MAX_UNITS, MAX_UNITS, 'ceil'), MAX_UNITS);
    assert.equal(mulDiv(2 ** 26, 2 ** 27, 2, 'floor'), 2 ** 52);
    assert.equal(mulDiv(3_000_000_001, 3_000_000_003, 1_000_000_000, 'floor'), 9_000_000_012);
    assert.equal(mulDiv(3_000_000_001, 3_000_000_003, 1_000_000_000, 'ceil'), 9_000_000_013);
    // Results above the safe range are NaN, never rounded.
    assert.ok(Number.isNaN(mulDiv(MAX_UNITS, 3, 2, 'floor')));
    assert.ok(Number.isNaN(mulDiv(MAX_UNITS, 2, 1, 'floor')));
    assert.ok(Number.isNaN(mulDiv(2 ** 30, 2 ** 30, 1, 'ceil')));
  });

  test('floor and ceil equal a BigInt reference for any safe inputs', () => {
    const divisor = fc.oneof(
      fc.integer({ min: 1, max: 1_000 }),
      fc.constantFrom(...Array.from({ length: 16 }, (_, i) => 10 ** i)),
      fc.integer({ min: 1, max: MAX_UNITS }),
    );
    fc.assert(
      fc.property(
        fc.maxSafeNat(),
        fc.maxSafeNat(),
        divisor,
        fc.constantFrom('floor' as const, 'ceil' as const),
        (a, b, d, r) => {
          const got = mulDiv(a, b, d, r);
          const want = bigMulDiv(a, b, d, r);
          if (Number.isNaN(want)) assert.ok(Number.isNaN(got), `${a}*${b}/${d} ${r}: ${got}`);
          else assert.equal(got, want, `${a}*${b}/${d} ${r}`);
        },
      ),
      { numRuns: 5_000 },
    );
  });

  test('products above 2^53 with an in-range result are exact', () => {
    let large = 0;
    fc.assert(
      fc.property(
        fc.integer({ min: 2 ** 20, max: MAX_UNITS }),
        fc.integer({ min: 2 ** 20, max: MAX_UNITS }),
        fc.bigInt({ min: 0n, max: 1n << 30n }),
        fc.constantFrom('floor' as const, 'ceil' as const),
        (a, b, extra, r) => {
          const product = BigInt(a) * BigInt(b);
          // A divisor just large enough for the quotient to fit (capped at the safe maximum).
          let d = product / MAX + 1n + extra;
          if (d > MAX) d = MAX;
          const got = mulDiv(a, b, Number(d), r);
          const want = bigMulDiv(a, b, Number(d), r);
          if (product > MAX && !Number.isNaN(want)) large++;
          if (Number.isNaN(want)) assert.ok(Number.isNaN(got));
          else assert.equal(got, want, `${a}*${b}/${d} ${r}`);
        },
      ),
      { numRuns: 5_000 },
    );
    assert.ok(large > 4_000, `only ${large} cases had a product above 2^53 and an in-range result`);
  });
});

describe('helpers', () => {
  test('pow10 is exact up to 10^15 and refuses beyond', () => {
    for (let i = 0; i <= 15; i++) assert.equal(BigInt(pow10(i)), 10n ** BigInt(i));
    assert.throws(() => pow10(16), RangeError);
    assert.throws(() => pow10(-1), RangeError);
  });

  test('scaleUp multiplies by 10^shift exactly or gives NaN', () => {
    assert.equal(scaleUp(123, 2), 12_300);
    assert.equal(scaleUp(-5, 3), -5_000);
    assert.equal(scaleUp(0, 15), 0);
    assert.ok(Number.isNaN(scaleUp(MAX_UNITS, 1)));
    assert.ok(Number.isNaN(scaleUp(-MAX_UNITS, 1)));
    fc.assert(
      fc.property(
        fc.integer({ min: -MAX_UNITS, max: MAX_UNITS }),
        fc.integer({ min: 0, max: 15 }),
        (a, s) => {
          const want = BigInt(a) * 10n ** BigInt(s);
          const got = scaleUp(a, s);
          if (want > MAX || want < -MAX) assert.ok(Number.isNaN(got));
          else assert.equal(got, Number(want));
        },
      ),
    );
  });

  test('bigSum is exact beyond the safe range', () => {
    assert.equal(bigSum([]), 0n);
    assert.equal(bigSum([MAX_UNITS, MAX_UNITS, 1]), 2n * MAX + 1n);
    assert.equal(bigSum([5, -7]), -2n);
  });
});
