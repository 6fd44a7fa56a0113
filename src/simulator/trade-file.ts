/**
 * Historical trade files for `openspot replay`: one trade per line, `timestamp,price,volume`, the
 * column order of Kraken's downloadable time-and-sales CSV files (no header there; unix seconds).
 * docs/simulation.md describes the format.
 *
 * Prices and volumes are kept exact: the digits as a BigInt and a count of decimals, never a
 * binary float. They are converted to a market's ticks and lots only once the market is known
 * (toUnits), so one file can feed any market whatever its precision.
 */

import { POW10N } from '../domain/money.js';
import type { Micros } from '../domain/types.js';

/** An exact, non-negative decimal: `units` × 10^-decimals. */
export interface ExactDecimal {
  readonly units: bigint;
  readonly decimals: number;
}

export interface FileTrade {
  /** 1-based line of the file, for messages. */
  readonly line: number;
  readonly time: Micros;
  readonly price: ExactDecimal;
  readonly volume: ExactDecimal;
}

/** A file that cannot be replayed; the message names the file and line. */
export class TradeFileError extends Error {
  override readonly name = 'TradeFileError';
}

const DECIMAL = /^(\d{1,30})(?:\.(\d{1,30}))?$/;
/** Unix seconds: larger than this (the year 2286) is a timestamp in milliseconds or finer. */
const MAX_SECONDS = 9_999_999_999n;
const PLAIN = ' (digits and one optional point, at most 30 digits on each side; no sign, no exponent)';
const HEADER = /^\s*(time|timestamp)\s*,\s*price\s*,\s*(volume|vol|amount)\s*$/i;

/** Parses a plain decimal ("60000", "0.00150000"), or undefined when it is not one. */
export function parseExact(text: string): ExactDecimal | undefined {
  const match = DECIMAL.exec(text);
  if (match === null) return undefined;
  const fraction = match[2] ?? '';
  return { units: BigInt(match[1]! + fraction), decimals: fraction.length };
}

/**
 * The decimal in units of 10^-decimals: rounded to the nearest unit (halves up) or down. Exact
 * integer arithmetic only.
 */
export function toUnits(value: ExactDecimal, decimals: number, rounding: 'nearest' | 'floor'): bigint {
  if (decimals >= value.decimals) return value.units * POW10N[decimals - value.decimals]!;
  const divisor = POW10N[value.decimals - decimals]!;
  const quotient = value.units / divisor;
  const remainder = value.units % divisor;
  return rounding === 'nearest' && remainder * 2n >= divisor ? quotient + 1n : quotient;
}

/** The decimal as text, as it was written but without trailing zeros (for messages). */
export function formatExact(value: ExactDecimal): string {
  const digits = value.units.toString().padStart(value.decimals + 1, '0');
  if (value.decimals === 0) return digits;
  const cut = digits.length - value.decimals;
  return `${digits.slice(0, cut)}.${digits.slice(cut)}`.replace(/\.?0+$/, '');
}

/**
 * Parses a whole file. Blank lines are skipped, `\r\n` is accepted, and a first line naming the
 * columns (`timestamp,price,volume`) is taken for a header. Throws TradeFileError at the first
 * line that is not a trade: wrong column count, a value that is not a plain decimal, a price or
 * volume of zero, a timestamp in milliseconds, or time going backwards.
 */
export function parseTradeFile(text: string, name = 'trade file'): FileTrade[] {
  const trades: FileTrade[] = [];
  const lines = text.split('\n');
  let previous: bigint | undefined;
  for (let index = 0; index < lines.length; index++) {
    const raw = lines[index]!.replace(/\r$/, '');
    const line = index + 1;
    if (raw.trim() === '') continue;
    if (trades.length === 0 && HEADER.test(raw)) continue;
    const fail = (message: string): never => {
      throw new TradeFileError(`${name}:${line}: ${message} (the line reads "${raw.slice(0, 80)}")`);
    };
    const cells = raw.split(',').map((cell) => cell.trim());
    if (cells.length !== 3) fail(`expected 3 columns, timestamp,price,volume, found ${cells.length}`);
    const [timeText, priceText, volumeText] = cells as [string, string, string];
    const seconds = parseExact(timeText);
    if (seconds === undefined) fail(`the timestamp "${timeText}" is not a number of unix seconds`);
    const micros = toUnits(seconds!, 6, 'floor');
    if (micros > MAX_SECONDS * 1_000_000n)
      fail(`the timestamp "${timeText}" is too large for unix seconds (milliseconds? divide by 1000)`);
    if (previous !== undefined && micros < previous)
      fail(`the timestamp ${timeText} is earlier than the line before: trades must be in time order`);
    const price = parseExact(priceText);
    if (price === undefined) fail(`the price "${priceText}" is not a plain decimal number${PLAIN}`);
    if (price!.units === 0n) fail('the price is zero');
    const volume = parseExact(volumeText);
    if (volume === undefined) fail(`the volume "${volumeText}" is not a plain decimal number${PLAIN}`);
    if (volume!.units === 0n) fail('the volume is zero');
    previous = micros;
    trades.push({ line, time: Number(micros) as Micros, price: price!, volume: volume! });
  }
  if (trades.length === 0)
    throw new TradeFileError(`${name}: no trades (expected lines of timestamp,price,volume)`);
  return trades;
}
