/**
 * Parsing of the operator's inputs (admin API, catalogue file) into engine commands. Decimal
 * inputs are plain decimal strings converted exactly; the error says which field is wrong.
 */

import { formatBigUnits, MAX_UNITS, parseDecimal } from '../domain/money.js';
import {
  type AssetCode,
  type AssetSpec,
  FEE_RATE_DECIMALS,
  type FeeRate,
  type Volume,
} from '../domain/types.js';
import type { Command } from '../engine/types.js';
import type { Catalogue } from '../sequencer/ports.js';

/**
 * The least an asset must be able to hold, in whole units. Every amount is at most 2^53 - 1 of the
 * asset's smallest unit (docs/money.md): at 10 decimals that is 900,719.9 units, at 12 only 9,007,
 * at 18 less than 0.01: net deposits, a balance, one order could never pass it.
 */
export const MIN_ASSET_CAP_UNITS = 100_000;
/** The most decimals an asset may have: the largest d with (2^53 - 1) / 10^d >= MIN_ASSET_CAP_UNITS. */
export const MAX_ASSET_DECIMALS = 10;

/** (2^53 - 1) / 10^decimals as an exact decimal: the most of an asset any amount can be. */
const assetCap = (decimals: number): string => formatBigUnits(BigInt(MAX_UNITS), decimals);
const hasUsableRange = (decimals: number): boolean => decimals <= MAX_ASSET_DECIMALS;

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

/**
 * C0 controls and DEL: invisible in every listing, and NUL cannot be stored in PostgreSQL text at
 * all (it would fail the whole group commit it travels in), so operator text never holds them.
 */
export function hasControlCharacter(text: string): boolean {
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code < 0x20 || code === 0x7f) return true;
  }
  return false;
}

/**
 * Free text an operator names something with (an asset's name, a deposit's reference): 1 to
 * `maxLength` characters, none of them a control character.
 */
export function textField(
  body: Json,
  field: string,
  maxLength: number,
  optional = false,
): string | undefined {
  const value = stringField(body, field, optional);
  if (value === undefined) return undefined;
  if (value.length === 0 || value.length > maxLength)
    throw new InputError(field, `The ${field} must be 1 to ${maxLength} characters.`);
  if (hasControlCharacter(value))
    throw new InputError(field, `The ${field} must not contain control characters.`);
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
  const name = textField(body, 'name', 64)!;
  const type = stringField(body, 'type')!;
  if (type !== 'crypto' && type !== 'fiat') throw new InputError('type', 'The type must be crypto or fiat.');
  // Any count is read, so that a token's real precision (18) gets the message with its cap.
  const decimals = integerField(body, 'decimals', 0, 40);
  if (!hasUsableRange(decimals))
    throw new InputError(
      'decimals',
      `At ${decimals} decimals an amount is capped at ${assetCap(decimals)} units (2^53 - 1 of the smallest unit); ` +
        `an asset must be able to hold at least ${MIN_ASSET_CAP_UNITS} units, so it may have at most ${MAX_ASSET_DECIMALS} decimals.`,
    );
  return { kind: 'createAsset', code, name, type, decimals };
}

const marketCapMessage = (asset: AssetSpec): string =>
  `${asset.code} has ${asset.decimals} decimals: an order in this market could move at most ` +
  `${assetCap(asset.decimals)} ${asset.code} (2^53 - 1 of its smallest unit); ` +
  `a market needs assets that can hold at least ${MIN_ASSET_CAP_UNITS} units.`;

export function marketCommand(
  input: unknown,
  catalogue: Catalogue,
): Extract<Command, { kind: 'createMarket' }> {
  const body = asObject(input);
  const base = stringField(body, 'base')!;
  const quote = stringField(body, 'quote')!;
  const baseAsset = catalogue.asset(base);
  if (baseAsset === undefined) throw new InputError('base', `Unknown asset ${base}.`);
  const quoteAsset = catalogue.asset(quote);
  if (quoteAsset === undefined) throw new InputError('quote', `Unknown asset ${quote}.`);
  // An order's volume (base) and cost (quote) are capped like any amount of their asset. Assets
  // created before the precision rule may have too small a range: no market is opened on them.
  for (const [field, asset] of [
    ['base', baseAsset],
    ['quote', quoteAsset],
  ] as const)
    if (!hasUsableRange(asset.decimals)) throw new InputError(field, marketCapMessage(asset));
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
