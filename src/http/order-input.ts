/**
 * POST /orders body validation, with Laravel's rule order and wording so a client written for the
 * original service reads the same 422 bodies (shape D). Every field is checked and every failure
 * reported at once, as Laravel does; each field reports its first failing rule only.
 *
 *   order_direction  required | string | in:buy,sell
 *   order_type       required | string | in:market,limit
 *   pair             required | string | exists (BTC/EUR or BTCEUR)
 *   volume           required | string | plain decimal > 0 | <= lotDecimals decimals | >= ordermin
 *                    | <= 2^53 - 1 base units | (limit) price × volume + fee <= 2^53 - 1 quote units
 *   price            required_unless:order_type,market | string | plain decimal > 0 | <= pairDecimals decimals
 *
 * The price of a market order is ignored, whatever it holds (Kraken does the same).
 *
 * The two range rules keep every amount of the order exact (docs/money.md, "Limits that follow"):
 * its volume in base units, and for a limit order its cost with the largest fee of the market
 * (what a buy reserves; a sell's proceeds are less). The engine checks the same, as a last guard.
 */

import { formatBigUnits, MAX_UNITS, POW10N } from '../domain/money.js';
import {
  FEE_RATE_DECIMALS,
  type MarketSpec,
  type OrderType,
  type Price,
  type Side,
  type Volume,
} from '../domain/types.js';
import type { Catalogue } from '../sequencer/ports.js';
import { formatVolume } from '../wire/serializers.js';
import { FieldErrors, rule } from './errors.js';
import { decimalFormError, isAbsent, parsePositiveDecimal, resolvePair } from './parse.js';

export interface CreateOrderInput {
  readonly side: Side;
  readonly type: OrderType;
  readonly market: MarketSpec;
  readonly volume: Volume;
  /** 0 for market orders. */
  readonly price: Price;
}

export type CreateOrderResult =
  | { readonly ok: true; readonly value: CreateOrderInput }
  | { readonly ok: false; readonly errors: FieldErrors };

const SIDES: readonly string[] = ['buy', 'sell'];
const TYPES: readonly string[] = ['market', 'limit'];

function choice(
  body: Readonly<Record<string, unknown>>,
  field: string,
  allowed: readonly string[],
  errors: FieldErrors,
): string | undefined {
  const value = body[field];
  if (isAbsent(value)) errors.add(field, rule.required(field));
  else if (typeof value !== 'string') errors.add(field, rule.string(field));
  else if (!allowed.includes(value.trim())) errors.add(field, rule.invalid(field));
  else return value.trim();
  return undefined;
}

const MAX = BigInt(MAX_UNITS);
const FEE_SCALE = POW10N[FEE_RATE_DECIMALS]!;

/**
 * The message of the first range rule `volume` (lots) breaks at `price` (ticks, 0 for a market
 * order), or undefined. Exact in BigInt: the products may pass 2^53.
 */
function rangeError(
  market: MarketSpec,
  catalogue: Pick<Catalogue, 'asset'>,
  volume: number,
  price: number,
): string | undefined {
  const base = catalogue.asset(market.base);
  const quote = catalogue.asset(market.quote);
  if (base === undefined || quote === undefined) return undefined; // a market always has both
  const unitsPerLot = POW10N[base.decimals - market.lotDecimals]!;
  if (BigInt(volume) * unitsPerLot > MAX) {
    const maxLots = MAX / unitsPerLot;
    return rule.max('volume', formatBigUnits(maxLots, market.lotDecimals));
  }
  if (price === 0) return undefined;
  // cost = floor(price × volume × 10^qd / 10^(pd + ld)); the fee rounded up, to bound any rounding.
  const cost =
    (BigInt(price) * BigInt(volume) * POW10N[quote.decimals]!) /
    POW10N[market.pairDecimals + market.lotDecimals]!;
  const maxFee = BigInt(Math.max(market.makerFee, market.takerFee));
  const fee = (cost * maxFee + FEE_SCALE - 1n) / FEE_SCALE;
  if (cost + fee <= MAX) return undefined;
  return `The order value (price × volume, fees included) must not be greater than ${formatBigUnits(MAX, quote.decimals)} ${quote.code}.`;
}

export function validateCreateOrder(
  body: unknown,
  catalogue: Pick<Catalogue, 'marketByName' | 'asset'>,
): CreateOrderResult {
  // A body that is not a JSON object carries no fields: every required field is missing.
  const fields: Readonly<Record<string, unknown>> =
    typeof body === 'object' && body !== null && !Array.isArray(body)
      ? (body as Record<string, unknown>)
      : {};
  const errors = new FieldErrors();

  const side = choice(fields, 'order_direction', SIDES, errors) as Side | undefined;
  const type = choice(fields, 'order_type', TYPES, errors) as OrderType | undefined;

  let market: MarketSpec | undefined;
  if (isAbsent(fields.pair)) errors.add('pair', rule.required('pair'));
  else if (typeof fields.pair !== 'string') errors.add('pair', rule.string('pair'));
  else {
    market = resolvePair(catalogue, fields.pair);
    if (market === undefined) errors.add('pair', rule.invalid('pair'));
  }

  let volume: number | undefined;
  if (isAbsent(fields.volume)) errors.add('volume', rule.required('volume'));
  else if (market === undefined) {
    // Without a valid pair precision and minimum are unknown: check the form only.
    const message = decimalFormError(fields.volume, 'volume');
    if (message !== undefined) errors.add('volume', message);
  } else {
    const parsed = parsePositiveDecimal(fields.volume, 'volume', market.lotDecimals);
    if (!parsed.ok) errors.add('volume', parsed.message);
    else if (parsed.value < market.ordermin) {
      errors.add('volume', rule.min('volume', formatVolume(market, market.ordermin)));
    } else volume = parsed.value;
  }

  let price = 0;
  if (type !== 'market') {
    if (isAbsent(fields.price)) errors.add('price', rule.requiredUnless('price', 'order_type', ['market']));
    else if (market === undefined) {
      const message = decimalFormError(fields.price, 'price');
      if (message !== undefined) errors.add('price', message);
    } else {
      const parsed = parsePositiveDecimal(fields.price, 'price', market.pairDecimals);
      if (!parsed.ok) errors.add('price', parsed.message);
      else price = parsed.value;
    }
  }

  if (market !== undefined && volume !== undefined && (type === 'market' || price > 0)) {
    const message = rangeError(market, catalogue, volume, type === 'market' ? 0 : price);
    if (message !== undefined) errors.add('volume', message);
  }

  if (
    errors.size > 0 ||
    side === undefined ||
    type === undefined ||
    market === undefined ||
    volume === undefined
  ) {
    return { ok: false, errors };
  }
  return { ok: true, value: { side, type, market, volume: volume as Volume, price: price as Price } };
}
