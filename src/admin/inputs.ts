/**
 * Parsing of the operator's inputs (admin API, catalogue file) into engine commands. Decimal
 * inputs are plain decimal strings converted exactly; the error says which field is wrong.
 */
import type { Catalogue } from '../app/ports.js';
import { parseDecimal } from '../domain/money.js';
import { type AssetCode, FEE_RATE_DECIMALS, type FeeRate, type Volume } from '../domain/types.js';
import type { Command } from '../engine/types.js';

export const DEFAULT_MAKER_FEE = '0.0016';
export const DEFAULT_TAKER_FEE = '0.0026';

export class InputError extends Error {
  override readonly name = 'InputError';
  constructor(
    readonly field: string,
    message: string,
  ) {
    super(message);
  }
}

type Json = Record<string, unknown>;

export function asObject(body: unknown): Json {
  if (body === null || typeof body !== 'object' || Array.isArray(body))
    throw new InputError('body', 'The body must be a JSON object.');
  return body as Json;
}

export function stringField(body: Json, field: string, optional = false): string | undefined {
  const value = body[field];
  if (value === undefined || value === null) {
    if (optional) return undefined;
    throw new InputError(field, `The ${field} field is required.`);
  }
  if (typeof value !== 'string') throw new InputError(field, `The ${field} field must be a string.`);
  return value;
}

export function integerField(body: Json, field: string, min: number, max: number): number {
  const value = body[field];
  if (value === undefined || value === null) throw new InputError(field, `The ${field} field is required.`);
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
    throw new InputError(field, `The ${field} field must be an integer from ${min} to ${max}.`);
  }
  return value;
}

/** A positive decimal string at a given precision, as integer units. */
export function decimalField(
  body: Json,
  field: string,
  decimals: number,
  allowZero = false,
  fallback?: string,
): number {
  const text = body[field] === undefined && fallback !== undefined ? fallback : stringField(body, field)!;
  const parsed = parseDecimal(text, decimals);
  if (!parsed.ok) {
    const why =
      parsed.reason === 'precision'
        ? `at most ${decimals} decimal places`
        : parsed.reason === 'range'
          ? 'a smaller value'
          : 'a plain decimal string such as "1.5"';
    throw new InputError(field, `The ${field} field must be ${why}.`);
  }
  if (!allowZero && parsed.units === 0)
    throw new InputError(field, `The ${field} field must be greater than zero.`);
  return parsed.units;
}

export function assetCommand(input: unknown): Extract<Command, { kind: 'createAsset' }> {
  const body = asObject(input);
  const code = stringField(body, 'code')!;
  if (!/^[A-Z0-9]{2,12}$/.test(code))
    throw new InputError('code', 'The code must be 2 to 12 upper-case letters or digits.');
  const name = stringField(body, 'name')!;
  if (name.length === 0 || name.length > 64)
    throw new InputError('name', 'The name must be 1 to 64 characters.');
  const type = stringField(body, 'type')!;
  if (type !== 'crypto' && type !== 'fiat') throw new InputError('type', 'The type must be crypto or fiat.');
  const decimals = integerField(body, 'decimals', 0, 12);
  return { kind: 'createAsset', code, name, type, decimals };
}

export function marketCommand(
  input: unknown,
  catalogue: Catalogue,
): Extract<Command, { kind: 'createMarket' }> {
  const body = asObject(input);
  const base = stringField(body, 'base')!;
  const quote = stringField(body, 'quote')!;
  const baseAsset = catalogue.asset(base);
  if (baseAsset === undefined) throw new InputError('base', `Unknown asset ${base}.`);
  if (catalogue.asset(quote) === undefined) throw new InputError('quote', `Unknown asset ${quote}.`);
  const pairDecimals = integerField(body, 'pair_decimals', 0, 12);
  const lotDecimals = integerField(body, 'lot_decimals', 0, baseAsset.decimals);
  const ordermin = decimalField(body, 'ordermin', lotDecimals);
  const fee = (field: string, fallback: string): FeeRate =>
    decimalField(body, field, FEE_RATE_DECIMALS, true, fallback) as FeeRate;
  return {
    kind: 'createMarket',
    base: base as AssetCode,
    quote: quote as AssetCode,
    pairDecimals,
    lotDecimals,
    ordermin: ordermin as Volume,
    makerFee: fee('maker_fee', DEFAULT_MAKER_FEE),
    takerFee: fee('taker_fee', DEFAULT_TAKER_FEE),
  };
}
