/**
 * The optional order controls of POST /orders (and of each order of POST /orders/batch):
 * `time_in_force`, `expire_time`, `post_only`, `client_order_id`, `stp`. Checked after the five
 * original fields, in this order, with Laravel's wording, every failure at once like the rest of
 * the body (interface decisions 160-163). A body without any of them gets today's defaults: a
 * good-till-canceled order, not post-only, no client id, self-trade prevention `cancel-oldest`.
 *
 * Only the form is checked here. What depends on the engine's clock or state (an expiry in the
 * past or more than a year ahead, a client id already used by an open order) is the engine's
 * check, made with the command's time, so a replay decides it the same way.
 */
import { isConditionalType, type Micros, type OrderType, type UserId } from '../domain/types.js';
import type { PlaceOrder } from '../sequencer/ports.js';
import { FieldErrors, rule } from './errors.js';
import { type CreateOrderInput, type CreateOrderResult, ORDER_TYPES } from './order-input.js';
import { isAbsent, parseUnixTime } from './parse.js';

export const TIMES_IN_FORCE = ['GTC', 'IOC', 'FOK', 'GTD'] as const;
export type TimeInForceName = (typeof TIMES_IN_FORCE)[number];
export const STP_MODES = ['cancel-oldest', 'cancel-newest', 'cancel-both', 'decrement'] as const;
export type StpModeName = (typeof STP_MODES)[number];

/** A client's own order id: 1 to 36 of `[A-Za-z0-9_-]` (a UUID fits). */
export const CLIENT_ORDER_ID = /^[A-Za-z0-9_-]{1,36}$/;
export const CLIENT_ORDER_ID_MAX = 36;

export interface OrderControls {
  readonly timeInForce: TimeInForceName;
  /** The GTD expiry in microseconds; 0 for any other time in force. */
  readonly expireTime: Micros;
  readonly postOnly: boolean;
  readonly clientOrderId: string | null;
  readonly stp: StpModeName;
}

/** What a body without any control asks for: today's behaviour. */
export const DEFAULT_CONTROLS: OrderControls = {
  timeInForce: 'GTC',
  expireTime: 0 as Micros,
  postOnly: false,
  clientOrderId: null,
  stp: 'cancel-oldest',
};

/** True when the body names none of the controls (it is then answered exactly as before them). */
export const usesNoControl = (c: OrderControls): boolean =>
  c.timeInForce === DEFAULT_CONTROLS.timeInForce &&
  c.expireTime === DEFAULT_CONTROLS.expireTime &&
  c.postOnly === DEFAULT_CONTROLS.postOnly &&
  c.clientOrderId === DEFAULT_CONTROLS.clientOrderId &&
  c.stp === DEFAULT_CONTROLS.stp;

function choiceOf<T extends string>(
  value: unknown,
  field: string,
  allowed: readonly T[],
  errors: FieldErrors,
): T | undefined {
  if (typeof value !== 'string') {
    errors.add(field, rule.string(field));
    return undefined;
  }
  const text = value.trim();
  if ((allowed as readonly string[]).includes(text)) return text as T;
  errors.add(field, rule.invalid(field));
  return undefined;
}

/**
 * A client order id as the body or a path gives it: the id, or the message that refuses it.
 * Not trimmed: an id is compared byte for byte, and a space is not one of its characters.
 */
export function clientOrderIdError(value: unknown, field = 'client_order_id'): string | undefined {
  if (typeof value !== 'string') return rule.string(field);
  if (value.length > CLIENT_ORDER_ID_MAX) return rule.maxLength(field, CLIENT_ORDER_ID_MAX);
  if (!CLIENT_ORDER_ID.test(value)) return rule.format(field);
  return undefined;
}

/**
 * `expire_time`: Unix seconds as a decimal string ("1767225600", "1767225600.5") or a JSON
 * integer. Microseconds beyond the sixth decimal are truncated, as everywhere else.
 */
function expireTimeOf(value: unknown, errors: FieldErrors): Micros | undefined {
  const text = typeof value === 'number' && Number.isSafeInteger(value) ? String(value) : value;
  if (typeof text !== 'string') {
    errors.add('expire_time', rule.string('expire_time'));
    return undefined;
  }
  const parsed = parseUnixTime(text.trim());
  if (parsed === undefined || parsed.micros === 0) {
    errors.add('expire_time', rule.format('expire_time'));
    return undefined;
  }
  return parsed.micros;
}

/** `post_only`: a JSON boolean, or Laravel's other boolean spellings (1, 0, "1", "0", "true", "false"). */
function booleanOf(value: unknown, field: string, errors: FieldErrors): boolean | undefined {
  if (value === true || value === 1 || value === '1' || value === 'true') return true;
  if (value === false || value === 0 || value === '0' || value === 'false') return false;
  errors.add(field, `The ${field.replaceAll('_', ' ')} field must be true or false.`);
  return undefined;
}

/** The controls of an order body, or every failure of them (shape D's `errors`, after the original fields'). */
export type OrderControlsResult =
  | { readonly ok: true; readonly value: OrderControls }
  | { readonly ok: false; readonly errors: Record<string, string[]> };

/**
 * The controls of an order body. `input` is the original fields' validation: post-only needs a
 * limit order, known from it (or, when it failed, from a valid `order_type` alone).
 */
export function validateOrderControls(body: unknown, input: CreateOrderResult): OrderControlsResult {
  const fields: Readonly<Record<string, unknown>> =
    typeof body === 'object' && body !== null && !Array.isArray(body)
      ? (body as Record<string, unknown>)
      : {};
  const rawType = typeof fields.order_type === 'string' ? fields.order_type.trim() : undefined;
  const type: OrderType | undefined = input.ok ? input.value.type : ORDER_TYPES.find((t) => t === rawType);
  const errors = new FieldErrors();
  const timeInForce = isAbsent(fields.time_in_force)
    ? 'GTC'
    : choiceOf(fields.time_in_force, 'time_in_force', TIMES_IN_FORCE, errors);

  // A conditional order waits for its trigger: it cannot be immediate-or-cancel (decision E30).
  if (type !== undefined && isConditionalType(type) && (timeInForce === 'IOC' || timeInForce === 'FOK'))
    errors.add('time_in_force', `The time in force field must be GTC or GTD when order type is ${type}.`);

  let expireTime = 0 as Micros;
  if (timeInForce === 'GTD') {
    if (isAbsent(fields.expire_time))
      errors.add('expire_time', 'The expire time field is required when time in force is GTD.');
    else expireTime = expireTimeOf(fields.expire_time, errors) ?? expireTime;
  } else if (!isAbsent(fields.expire_time) && timeInForce !== undefined) {
    errors.add('expire_time', 'The expire time field is prohibited unless time in force is GTD.');
  }

  let postOnly = false;
  if (!isAbsent(fields.post_only)) {
    postOnly = booleanOf(fields.post_only, 'post_only', errors) ?? false;
    if (postOnly && type !== undefined && type !== 'limit')
      errors.add('post_only', `The post only field is prohibited when order type is ${type}.`);
    else if (postOnly && (timeInForce === 'IOC' || timeInForce === 'FOK'))
      errors.add('post_only', `The post only field is prohibited when time in force is ${timeInForce}.`);
  }

  let clientOrderId: string | null = null;
  if (!isAbsent(fields.client_order_id)) {
    const message = clientOrderIdError(fields.client_order_id);
    if (message === undefined) clientOrderId = fields.client_order_id as string;
    else errors.add('client_order_id', message);
  }

  const stp = isAbsent(fields.stp) ? 'cancel-oldest' : choiceOf(fields.stp, 'stp', STP_MODES, errors);

  if (errors.size > 0 || timeInForce === undefined || stp === undefined)
    return { ok: false, errors: errors.toRecord() };
  return { ok: true, value: { timeInForce, expireTime, postOnly, clientOrderId, stp } };
}

/**
 * The engine command of a validated order. Only the controls that differ from the default are
 * set, so an order without any is the very command it was before they existed (on the wire to an
 * engine process too).
 */
export function placeOrderCommand(
  userId: UserId,
  order: CreateOrderInput,
  controls: OrderControls,
): PlaceOrder {
  const { side, type, market, volume, price, triggerPrice, trailingOffset } = order;
  const plain: PlaceOrder = { kind: 'placeOrder', userId, marketId: market.id, side, type, price, volume };
  const command: PlaceOrder =
    triggerPrice !== undefined
      ? { ...plain, triggerPrice }
      : trailingOffset !== undefined
        ? { ...plain, trailingOffset }
        : plain;
  if (usesNoControl(controls)) return command;
  return {
    ...command,
    ...(controls.timeInForce === 'GTC' ? {} : { timeInForce: controls.timeInForce }),
    ...(controls.expireTime === 0 ? {} : { expireTime: controls.expireTime }),
    ...(controls.postOnly ? { postOnly: true } : {}),
    ...(controls.clientOrderId === null ? {} : { clientOrderId: controls.clientOrderId }),
    ...(controls.stp === 'cancel-oldest' ? {} : { stp: controls.stp }),
  };
}
