/**
 * Exact decimal strings as integers of a fixed scale: `parseUnits("1.25", 2) === 125n`. Prices and
 * volumes travel as strings precisely so that no float touches them; these helpers keep it so on
 * the client side (sorting book levels, building order prices in whole ticks).
 */

const DECIMAL = /^(\d+)(?:\.(\d+))?$/;

/** A plain non-negative decimal as units of 10^-decimals; throws when it has more decimals. */
export function parseUnits(text: string, decimals: number): bigint {
  const match = DECIMAL.exec(text.trim());
  if (match === null) throw new RangeError(`not a plain decimal: "${text}"`);
  const fraction = match[2] ?? '';
  if (fraction.replace(/0+$/, '').length > decimals)
    throw new RangeError(`"${text}" has more than ${decimals} decimals`);
  return BigInt(match[1]! + fraction.padEnd(decimals, '0').slice(0, decimals));
}

/** Units of 10^-decimals as a plain decimal with exactly `decimals` decimals. */
export function formatUnits(units: bigint, decimals: number): string {
  const negative = units < 0n;
  const digits = (negative ? -units : units).toString().padStart(decimals + 1, '0');
  const text =
    decimals === 0 ? digits : `${digits.slice(0, digits.length - decimals)}.${digits.slice(-decimals)}`;
  return negative ? `-${text}` : text;
}

/** Decimals of a decimal string ("1.250" → 3). */
export const decimalsOf = (text: string): number => text.split('.')[1]?.length ?? 0;

/** Compares two plain non-negative decimals exactly: negative, zero or positive. */
export function compareDecimal(a: string, b: string): number {
  const scale = Math.max(decimalsOf(a), decimalsOf(b));
  const x = parseUnits(a, scale);
  const y = parseUnits(b, scale);
  return x < y ? -1 : x > y ? 1 : 0;
}

/** True for "0", "0.000" and the like. */
export const isZeroDecimal = (text: string): boolean => /^(0+(\.0*)?|\.0+)$/.test(text.trim());

/** a − b, exactly, at the finer of their two scales ("10.5" − "0.25" → "10.25"; may be negative). */
export function subtractDecimal(a: string, b: string): string {
  const scale = Math.max(decimalsOf(a), decimalsOf(b));
  return formatUnits(parseUnits(a, scale) - parseUnits(b, scale), scale);
}
