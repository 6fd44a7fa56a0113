/**
 * Input parsing at the edge: decimal strings, pair names, integers in paths and queries. Pure;
 * failures come back as data (a message or undefined) so each route can answer in its own shape.
 */

import { formatUnits, MAX_UNITS, parseDecimal } from '../domain/money.js';
import type { MarketSpec, Micros } from '../domain/types.js';
import type { Catalogue } from '../sequencer/ports.js';
import { rule } from './errors.js';

export type Parsed<T> =
  | { readonly ok: true; readonly value: T }
  | { readonly ok: false; readonly message: string };

const ok = <T>(value: T): Parsed<T> => ({ ok: true, value });
const fail = (message: string): Parsed<never> => ({ ok: false, message });

/** Laravel's TrimStrings + ConvertEmptyStringsToNull: a blank string counts as absent. */
export const isAbsent = (value: unknown): boolean =>
  value === undefined || value === null || (typeof value === 'string' && value.trim() === '');

/**
 * A positive decimal quantity given as a JSON string in plain notation ("1.25", "30000"), as
 * integer units of 10^-decimals. Refused with a Laravel-worded message naming the field: a JSON
 * number (it may already have lost digits in a client's float), exponents, signs, zero, more
 * decimals than the market allows, and values beyond the exact range.
 */
export function parsePositiveDecimal(value: unknown, field: string, decimals: number): Parsed<number> {
  if (typeof value !== 'string') return fail(rule.string(field));
  const text = value.trim();
  const result = parseDecimal(text, decimals);
  if (!result.ok) {
    switch (result.reason) {
      case 'precision':
        return fail(rule.decimals(field, decimals));
      case 'range':
        return fail(rule.max(field, formatUnits(MAX_UNITS, decimals)));
      case 'format':
        return fail(/^-\d+(\.\d+)?$/.test(text) ? rule.gt(field, '0') : rule.number(field));
    }
  }
  if (result.units === 0) return fail(rule.gt(field, '0'));
  return ok(result.units);
}

/**
 * The form checks of parsePositiveDecimal alone, for when the precision is unknown (the order's
 * pair is invalid): a string, plain notation, greater than zero. Undefined when it passes.
 */
export function decimalFormError(value: unknown, field: string): string | undefined {
  if (typeof value !== 'string') return rule.string(field);
  const text = value.trim();
  if (/^-\d+(\.\d+)?$/.test(text)) return rule.gt(field, '0');
  if (!/^\d+(\.\d+)?$/.test(text) || text.length > 64) return rule.number(field);
  if (/^[0.]+$/.test(text)) return rule.gt(field, '0');
  return undefined;
}

/**
 * A market by name: the slash form the interface documents (`BTC/EUR`) or the joined form used
 * in `pair` fields and channel names (`BTCEUR`). Codes are case-sensitive, as in the catalogue.
 */
export function resolvePair(
  catalogue: Pick<Catalogue, 'marketByName'>,
  name: unknown,
): MarketSpec | undefined {
  if (typeof name !== 'string') return undefined;
  const trimmed = name.trim();
  if (trimmed === '' || trimmed.length > 64) return undefined;
  return catalogue.marketByName(trimmed);
}

/**
 * An optional `?pair=` query: its market, undefined when the query has none, null when it is
 * repeated or names no market (the list and cancel-all routes answer that 400 shape E).
 */
export function optionalPairQuery(
  catalogue: Pick<Catalogue, 'marketByName'>,
  value: unknown,
): MarketSpec | undefined | null {
  const text = single(value);
  if (text === undefined) return undefined;
  if (text === null) return null;
  return resolvePair(catalogue, text) ?? null;
}

const DIGITS = /^[0-9]{1,16}$/;

/** A record id from a path: a positive safe integer in plain digits, else undefined (no such record can exist). */
export function parseId(text: unknown): number | undefined {
  if (typeof text !== 'string' || !DIGITS.test(text)) return undefined;
  const n = Number(text);
  return Number.isSafeInteger(n) && n >= 1 ? n : undefined;
}

/** A whole number from a query string within [min, max], else undefined. Leading zeros are fine ("007"). */
export function parseIntInRange(text: unknown, min: number, max: number): number | undefined {
  if (typeof text !== 'string' || !/^[0-9]{1,20}$/.test(text)) return undefined;
  const n = Number(text.replace(/^0+(?=\d)/, ''));
  return Number.isSafeInteger(n) && n >= min && n <= max ? n : undefined;
}

/** The latest Unix second accepted in queries (year 2255): its microsecond count is still a safe integer. */
export const MAX_UNIX_SECONDS = Math.floor(Number.MAX_SAFE_INTEGER / 1_000_000);

/**
 * A Unix timestamp in seconds, whole or with a fraction ("1700000000", "1700000000.5"). Returns
 * whole seconds (truncated) and microseconds (fraction beyond 6 digits truncated).
 */
export function parseUnixTime(text: unknown): { seconds: number; micros: Micros } | undefined {
  if (typeof text !== 'string') return undefined;
  const match = /^([0-9]{1,12})(?:\.([0-9]{1,9}))?$/.exec(text);
  if (match === null) return undefined;
  const seconds = Number(match[1]);
  if (seconds > MAX_UNIX_SECONDS) return undefined;
  const fraction = Number((match[2] ?? '').padEnd(6, '0').slice(0, 6));
  return { seconds, micros: (seconds * 1_000_000 + fraction) as Micros };
}

/** Query values may repeat (`a=1&a=2`); a scalar parameter given twice is a client error. */
export function single(value: unknown): string | undefined | null {
  if (value === undefined) return undefined;
  return typeof value === 'string' ? value : null;
}

/**
 * `pairs[]` of GET /trades, as PHP/Laravel clients send it: `pairs[]=A&pairs[]=B`, `pairs[0]=A`,
 * or plain `pairs=A`. Returns the names in order, or undefined when the parameter is absent.
 */
export function queryArray(
  query: Readonly<Record<string, unknown>>,
  name: string,
): string[] | undefined | null {
  const values: string[] = [];
  let present = false;
  for (const [key, value] of Object.entries(query)) {
    if (key !== name && key !== `${name}[]` && !new RegExp(`^${name}\\[\\d+\\]$`).test(key)) continue;
    present = true;
    for (const item of Array.isArray(value) ? value : [value]) {
      if (typeof item !== 'string') return null;
      values.push(item);
    }
  }
  return present ? values : undefined;
}
