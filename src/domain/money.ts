/**
 * Exact money. Every quantity is an integer count of a smallest unit (a tick, a lot, a ledger unit);
 * no fraction is ever held in a binary floating-point value.
 *
 * The integers live in JavaScript numbers restricted to the safe range (|x| <= 2^53 - 1), where
 * IEEE-754 addition, subtraction and multiplication of integers are exact. Every operation that
 * could leave that range is checked: products go through BigInt when they might not be exact, and
 * anything that cannot be represented is refused, never rounded silently. Text is converted by
 * string manipulation only (no parseFloat, no toFixed). The rules are written in docs/money.md.
 */

export const MAX_UNITS = Number.MAX_SAFE_INTEGER;
/** The largest number of decimals any asset or market may use; keeps 10^decimals exact and useful ranges safe. */
export const MAX_DECIMALS = 12;

const POW10: readonly number[] = Array.from({ length: 16 }, (_, i) => 10 ** i);
const POW10N: readonly bigint[] = Array.from({ length: 40 }, (_, i) => 10n ** BigInt(i));

export function pow10(n: number): number {
  const p = POW10[n];
  if (p === undefined) throw new RangeError(`10^${n} is outside the exact range`);
  return p;
}

export type ParseFailure = 'format' | 'precision' | 'range';
export type ParseResult =
  | { readonly ok: true; readonly units: number }
  | { readonly ok: false; readonly reason: ParseFailure };

const PLAIN_DECIMAL = /^(\d+)(?:\.(\d+))?$/;

/**
 * Parses a plain, unsigned decimal ("12", "0.5", "1.2500") into integer units of 10^-decimals.
 * Refused: signs, exponents, spaces, a leading or trailing dot, more significant decimals than
 * allowed (trailing zeros beyond the precision are fine: they change nothing), and values above 2^53 - 1 units.
 */
export function parseDecimal(text: string, decimals: number): ParseResult {
  if (text.length === 0 || text.length > 64)
    return { ok: false, reason: text.length === 0 ? 'format' : 'range' };
  const match = PLAIN_DECIMAL.exec(text);
  if (match === null) return { ok: false, reason: 'format' };
  const whole = match[1]!.replace(/^0+(?=\d)/, '');
  const fraction = match[2] ?? '';
  const significant = fraction.replace(/0+$/, '');
  if (significant.length > decimals) return { ok: false, reason: 'precision' };
  const digits = (whole + significant.padEnd(decimals, '0')).replace(/^0+(?=\d)/, '');
  if (digits.length > 16) return { ok: false, reason: 'range' };
  const units = Number(digits);
  if (!Number.isSafeInteger(units)) return { ok: false, reason: 'range' };
  return { ok: true, units };
}

/** Formats integer units of 10^-decimals as a plain decimal string with exactly `decimals` fraction digits. */
export function formatUnits(units: number, decimals: number): string {
  if (!Number.isSafeInteger(units)) throw new RangeError(`not an exact amount: ${units}`);
  const negative = units < 0;
  const digits = String(negative ? -units : units);
  if (decimals === 0) return negative ? `-${digits}` : digits;
  const padded = digits.padStart(decimals + 1, '0');
  const cut = padded.length - decimals;
  return `${negative ? '-' : ''}${padded.slice(0, cut)}.${padded.slice(cut)}`;
}

/** Like formatUnits, for a BigInt total (sums across all accounts can exceed the per-amount range). */
export function formatBigUnits(units: bigint, decimals: number): string {
  const negative = units < 0n;
  const digits = (negative ? -units : units).toString();
  if (decimals === 0) return negative ? `-${digits}` : digits;
  const padded = digits.padStart(decimals + 1, '0');
  const cut = padded.length - decimals;
  return `${negative ? '-' : ''}${padded.slice(0, cut)}.${padded.slice(cut)}`;
}

export type Rounding = 'floor' | 'ceil';

/**
 * floor or ceil of (a * b) / d for non-negative safe integers a, b and a positive safe integer d.
 * Exact: uses number arithmetic only while the product is provably exact, BigInt otherwise.
 * Returns NaN when the result does not fit the safe range; callers treat that as "too large".
 */
export function mulDiv(a: number, b: number, d: number, rounding: Rounding): number {
  const product = a * b;
  // Below 2^53 the double product is the exact product; quotient and remainder are then exact too.
  if (product <= MAX_UNITS) {
    const remainder = product % d;
    const quotient = (product - remainder) / d;
    return rounding === 'ceil' && remainder !== 0 ? quotient + 1 : quotient;
  }
  const bigProduct = BigInt(a) * BigInt(b);
  const bigD = BigInt(d);
  let quotient = bigProduct / bigD;
  if (rounding === 'ceil' && quotient * bigD !== bigProduct) quotient += 1n;
  return quotient <= BigInt(MAX_UNITS) ? Number(quotient) : Number.NaN;
}

/** a * 10^shift exactly (shift >= 0), or NaN when out of range. */
export function scaleUp(a: number, shift: number): number {
  const r = a * pow10(shift);
  return r <= MAX_UNITS && r >= -MAX_UNITS ? r : Number.NaN;
}

/** Sum of many safe integers as a BigInt: ledger-wide totals may exceed one amount's range. */
export function bigSum(values: Iterable<number>): bigint {
  let total = 0n;
  for (const v of values) total += BigInt(v);
  return total;
}

export { POW10N };
