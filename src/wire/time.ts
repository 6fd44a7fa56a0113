/**
 * Time texts of the interface, from integer microseconds, with integer arithmetic only (a
 * microsecond count near 2^51 has no exact binary fraction of a second, so dividing as floats
 * could print a wrong last digit).
 */

import { formatUnits } from '../domain/money.js';
import type { Micros } from '../domain/types.js';

/** floor(a / b) for a safe integer a and a positive integer b, exactly. */
const floorDiv = (a: number, b: number): number => (a - (((a % b) + b) % b)) / b;

/** Order times: Unix seconds with exactly 4 decimals, truncated toward the past ("1700000000.1234"). */
export function unixSeconds4(time: Micros): string {
  return formatUnits(floorDiv(time, 100), 4);
}

/** Whole Unix seconds, truncated toward the past. */
export function unixSeconds(time: Micros): number {
  return floorDiv(time, 1_000_000);
}

/** `YYYY-MM-DD HH:MM:SS` in UTC, truncated to the second. */
export function utcDateTime(time: Micros): string {
  // Whole milliseconds are exact in a double, and Date formats them without rounding.
  const iso = new Date(floorDiv(time, 1000)).toISOString();
  return `${iso.slice(0, 10)} ${iso.slice(11, 19)}`;
}

/** The `expire_time` of an order without expiry. */
export const NO_EXPIRY = '0.0000';
