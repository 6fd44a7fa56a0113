/**
 * Decimal strings for the pages: exact parsing and comparison come from the TypeScript client
 * (src/client/decimal.ts, bigint units); this adds what a form and a table need — trimming what
 * the user types to the market's precision, exact products for an order's total, and display.
 * Numbers (floats) are used only to draw (bar widths, charts), never for an amount that is sent.
 */
import {
  compareDecimal,
  decimalsOf,
  formatUnits,
  parseUnits,
  subtractDecimal,
} from '../../src/client/decimal.js';

export { compareDecimal, decimalsOf, formatUnits, parseUnits, subtractDecimal };

/**
 * What the user typed, kept to a plain decimal with at most `decimals` decimals: a comma becomes
 * the point, other characters and a second point are dropped, extra decimals are cut.
 */
export function sanitizeDecimal(text: string, decimals: number): string {
  let kept = text.replace(/,/g, '.').replace(/[^\d.]/g, '');
  const dot = kept.indexOf('.');
  if (dot >= 0) {
    const fraction = kept
      .slice(dot + 1)
      .replace(/\./g, '')
      .slice(0, decimals);
    kept = decimals === 0 ? kept.slice(0, dot) : `${kept.slice(0, dot)}.${fraction}`;
  }
  // "007" → "7", but "0." and "0.5" stay as typed.
  return kept.replace(/^0+(?=\d)/, '');
}

/** A complete, positive decimal (not "", ".", "5." or "0"). */
export const isPositiveDecimal = (text: string): boolean => /^\d+(\.\d+)?$/.test(text) && /[1-9]/.test(text);

/** price × volume, exactly, with `decimals` decimals (rounded down). Undefined when either is incomplete. */
export function exactProduct(price: string, volume: string, decimals: number): string | undefined {
  if (!/^\d+(\.\d+)?$/.test(price) || !/^\d+(\.\d+)?$/.test(volume)) return undefined;
  const pd = decimalsOf(price);
  const vd = decimalsOf(volume);
  const units = parseUnits(price, pd) * parseUnits(volume, vd);
  const scale = pd + vd;
  const shifted =
    scale >= decimals ? units / 10n ** BigInt(scale - decimals) : units * 10n ** BigInt(decimals - scale);
  return formatUnits(shifted, decimals);
}

/** Thousands separators on the integer part; the digits themselves are left exactly as given. */
export function group(text: string): string {
  const negative = text.startsWith('-');
  const body = negative ? text.slice(1) : text;
  const [whole = '', fraction] = body.split('.');
  const grouped = whole.replace(/\B(?=(\d{3})+(?!\d))/g, ',');
  return `${negative ? '-' : ''}${grouped}${fraction === undefined ? '' : `.${fraction}`}`;
}

/** For drawing only (bar widths, chart coordinates). */
export const toNumber = (text: string): number => Number(text);

/** Trailing zeros of the fraction removed ("0.00100000" → "0.001", "5.000" → "5"). */
export const trimZeros = (text: string): string => (text.includes('.') ? text.replace(/\.?0+$/, '') : text);
