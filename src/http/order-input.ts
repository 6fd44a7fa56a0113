/**
 * POST /orders body validation, with Laravel's rule order and wording so a client written for the
 * original service reads the same 422 bodies (shape D). Every field is checked and every failure
 * reported at once, as Laravel does; each field reports its first failing rule only.
 *
 *   order_direction  required | string | in:buy,sell
 *   order_type       required | string | in:market,limit,stop-loss,take-profit,stop-loss-limit,
 *                    take-profit-limit,trailing-stop
 *   pair             required | string | exists (BTC/EUR or BTCEUR)
 *   volume           required | string | plain decimal > 0 | <= lotDecimals decimals | >= ordermin
 *                    | <= 2^53 - 1 base units | (limit) price × volume + fee <= 2^53 - 1 quote units
 *   price            required for limit and the -limit types, prohibited for stop-loss, take-profit
 *                    and trailing-stop | string | plain decimal > 0 | <= pairDecimals decimals
 *   trigger_price    required for stop-loss, take-profit and their -limit types, prohibited otherwise
 *                    | string | plain decimal > 0 | <= pairDecimals decimals
 *   trailing_offset  required for trailing-stop, prohibited otherwise | string | a price distance
 *                    ("150.5": > 0, <= pairDecimals decimals) or a percentage ("2.5%": 0.01 to 50,
 *                    <= 2 decimals)
 *
 * The price of a market order is ignored, whatever it holds (Kraken does the same). Whether a
 * trigger has been reached already is the engine's check (trigger_would_fire), made on its own
 * last trade price.
 *
 * The two range rules keep every amount of the order exact (docs/money.md, "Limits that follow"):
 * its volume in base units, and for a limit order its cost with the largest fee of the market
 * (what a buy reserves; a sell's proceeds are less). The engine checks the same, as a last guard.
 */

import { formatBigUnits, MAX_UNITS, POW10N } from '../domain/money.js';
import {
  CONDITIONAL_TYPES,
  executionTypeOf,
  FEE_RATE_DECIMALS,
  isConditionalType,
  MAX_TRAILING_BPS,
  type MarketSpec,
  MIN_TRAILING_BPS,
  type OrderType,
  type Price,
  type Side,
  type TrailingOffset,
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
  /** The limit price: 0 for market orders and the conditional types that execute as market orders. */
  readonly price: Price;
  /** stop-loss, take-profit and their -limit types only. */
  readonly triggerPrice?: Price;
  /** trailing-stop only. */
  readonly trailingOffset?: TrailingOffset;
}

export type CreateOrderResult =
  | { readonly ok: true; readonly value: CreateOrderInput }
  | { readonly ok: false; readonly errors: FieldErrors };

const SIDES: readonly string[] = ['buy', 'sell'];
export const ORDER_TYPES: readonly OrderType[] = ['market', 'limit', ...CONDITIONAL_TYPES];
const TYPES: readonly string[] = ORDER_TYPES;

/** The order types that take a trigger price: the stop-loss and take-profit types. */
const takesTriggerPrice = (type: OrderType): boolean => isConditionalType(type) && type !== 'trailing-stop';

/** An order type's name as Laravel's messages write a value: as it is. */
const prohibited = (field: string, type: OrderType): string =>
  `The ${field.replaceAll('_', ' ')} field is prohibited when order type is ${type}.`;
const requiredWhen = (field: string, type: OrderType): string =>
  `The ${field.replaceAll('_', ' ')} field is required when order type is ${type}.`;

/** The message of a trailing offset that is neither a price distance nor a percentage in range. */
export const TRAILING_OFFSET_FORMAT =
  'The trailing offset field must be a price distance such as "150.5" or a percentage from 0.01% to 50% such as "2.5%".';

/**
 * `trailing_offset`: an absolute price distance in the market's ticks ("150.5"), or a percentage
 * with a `%` suffix ("2.5%", 0.01 % to 50 %, at most 2 decimals) as basis points. Exact: parsed
 * from the digits, never through a binary fraction.
 */
export function parseTrailingOffset(
  value: unknown,
  pairDecimals: number,
): { ok: true; value: TrailingOffset } | { ok: false; message: string } {
  if (typeof value !== 'string') return { ok: false, message: rule.string('trailing_offset') };
  const text = value.trim();
  if (text.endsWith('%')) {
    const match = /^(\d{1,3})(?:\.(\d{1,2}))?%$/.exec(text);
    if (match === null) return { ok: false, message: TRAILING_OFFSET_FORMAT };
    const bps = Number(match[1]) * 100 + Number((match[2] ?? '').padEnd(2, '0'));
    if (bps < MIN_TRAILING_BPS || bps > MAX_TRAILING_BPS)
      return { ok: false, message: TRAILING_OFFSET_FORMAT };
    return { ok: true, value: { unit: 'bps', amount: bps } };
  }
  const parsed = parsePositiveDecimal(text, 'trailing_offset', pairDecimals);
  // Neither form: say both forms rather than "must be a number".
  if (!parsed.ok && parsed.message === rule.number('trailing_offset'))
    return { ok: false, message: TRAILING_OFFSET_FORMAT };
  if (!parsed.ok) return parsed;
  return { ok: true, value: { unit: 'ticks', amount: parsed.value } };
}

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

  // A limit price: limit and the -limit types (and an unknown type, as before the new types).
  const limitPriced = type === undefined || executionTypeOf(type) === 'limit';
  let price = 0;
  if (type !== undefined && type !== 'market' && !limitPriced) {
    if (!isAbsent(fields.price)) errors.add('price', prohibited('price', type));
  } else if (type !== 'market') {
    if (isAbsent(fields.price))
      errors.add(
        'price',
        type === undefined || type === 'limit'
          ? rule.requiredUnless('price', 'order_type', ['market'])
          : requiredWhen('price', type),
      );
    else price = decimalField(fields.price, 'price', market, errors) ?? 0;
  }

  let triggerPrice: number | undefined;
  if (type !== undefined && takesTriggerPrice(type)) {
    if (isAbsent(fields.trigger_price)) errors.add('trigger_price', requiredWhen('trigger_price', type));
    else triggerPrice = decimalField(fields.trigger_price, 'trigger_price', market, errors);
  } else if (type !== undefined && !isAbsent(fields.trigger_price)) {
    errors.add('trigger_price', prohibited('trigger_price', type));
  }

  let trailingOffset: TrailingOffset | undefined;
  if (type === 'trailing-stop') {
    if (isAbsent(fields.trailing_offset))
      errors.add('trailing_offset', requiredWhen('trailing_offset', type));
    else if (market !== undefined) {
      const parsed = parseTrailingOffset(fields.trailing_offset, market.pairDecimals);
      if (parsed.ok) trailingOffset = parsed.value;
      else errors.add('trailing_offset', parsed.message);
    }
  } else if (type !== undefined && !isAbsent(fields.trailing_offset)) {
    errors.add('trailing_offset', prohibited('trailing_offset', type));
  }

  if (market !== undefined && volume !== undefined && (!limitPriced || price > 0)) {
    const message = rangeError(market, catalogue, volume, limitPriced ? price : 0);
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
  const value: CreateOrderInput = { side, type, market, volume: volume as Volume, price: price as Price };
  if (triggerPrice !== undefined)
    return { ok: true, value: { ...value, triggerPrice: triggerPrice as Price } };
  if (trailingOffset !== undefined) return { ok: true, value: { ...value, trailingOffset } };
  return { ok: true, value };
}

/**
 * A price-like decimal field (`price`, `trigger_price`) at the market's pairDecimals; without a
 * valid pair only its form is checked. Undefined when it fails (the message is added).
 */
function decimalField(
  value: unknown,
  field: string,
  market: MarketSpec | undefined,
  errors: FieldErrors,
): number | undefined {
  if (market === undefined) {
    const message = decimalFormError(value, field);
    if (message !== undefined) errors.add(field, message);
    return undefined;
  }
  const parsed = parsePositiveDecimal(value, field, market.pairDecimals);
  if (parsed.ok) return parsed.value;
  errors.add(field, parsed.message);
  return undefined;
}
