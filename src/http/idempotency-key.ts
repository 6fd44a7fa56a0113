/**
 * The Idempotency-Key header of POST /v1/orders (IETF httpapi-idempotency-key-header draft,
 * Stripe's semantics): parsing, and the fingerprint that tells a retry from another request.
 */
import { createHash } from 'node:crypto';
import type { MarketSpec, OrderType, Price, Side, TrailingOffset, Volume } from '../domain/types.js';
import type { IdempotencyRequest } from '../sequencer/ports.js';
import { DEFAULT_CONTROLS, type OrderControls, usesNoControl } from './order-controls.js';

export const IDEMPOTENCY_KEY_FIELD = 'Idempotency-Key';
export const INVALID_KEY = 'The Idempotency-Key header must be 1 to 255 printable ASCII characters.';
export const KEY_REUSED = 'The Idempotency-Key was already used for a different order.';

/** Printable ASCII, space included (a UUID, a ULID, any client's own scheme). */
const KEY = /^[\x20-\x7e]{1,255}$/;
/** The draft's form: a structured-field string, `"…"` with `\"` and `\\` escapes. */
const SF_STRING = /^"((?:[\x20\x21\x23-\x5b\x5d-\x7e]|\\["\\])*)"$/;

/**
 * The key a header value names: the bare form (Stripe's) or the draft's quoted string, both
 * naming the same key. `undefined` when absent; `null` when malformed (repeated, empty, too long,
 * or a character outside printable ASCII).
 */
export function parseIdempotencyKey(value: string | string[] | undefined): string | null | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'string') return null;
  const quoted = SF_STRING.exec(value);
  const key = quoted === null ? value : quoted[1]!.replace(/\\(["\\])/g, '$1');
  return KEY.test(key) ? key : null;
}

export interface CanonicalOrder {
  readonly market: MarketSpec;
  readonly side: Side;
  readonly type: OrderType;
  readonly price: Price;
  readonly volume: Volume;
  /** A stop-loss or take-profit type's trigger price; absent for other types. */
  readonly triggerPrice?: Price;
  /** A trailing stop's offset; absent for other types. */
  readonly trailingOffset?: TrailingOffset;
  /** The order controls (time in force, expiry, post-only, client id, self-trade mode); default when absent. */
  readonly controls?: OrderControls;
}

/**
 * The order as parsed, not the body's bytes: a retry that re-signs its body with a new `nonce`
 * (keys that require one), spells the pair `BTCEUR` or writes `0.010` for `0.01` is the same
 * order. A market order's price is ignored by the engine, so it is left out too.
 */
export function idempotencyRequest(key: string, order: CanonicalOrder): IdempotencyRequest {
  const price = order.type === 'market' ? 0 : order.price;
  const canonical = `${order.market.id}|${order.side}|${order.type}|${price}|${order.volume}${controlsPart(order.controls)}${triggerPart(order)}`;
  return { key, fingerprint: createHash('sha256').update(canonical).digest('hex') };
}

/**
 * A conditional order's trigger: empty for the other types (their fingerprints stay what they
 * were); the trigger price or the offset with its unit otherwise, so a retry with another trigger
 * is another order.
 */
function triggerPart(order: CanonicalOrder): string {
  if (order.triggerPrice !== undefined) return `|trigger:${order.triggerPrice}`;
  if (order.trailingOffset !== undefined)
    return `|trailing:${order.trailingOffset.unit}:${order.trailingOffset.amount}`;
  return '';
}

/**
 * The controls' part of the canonical order: empty for the defaults, so an order without controls
 * keeps the fingerprint it had before they existed (a retry across an upgrade is still the same
 * order); otherwise every control, each in a fixed place, so two orders that differ in any one of
 * them never share a fingerprint.
 */
function controlsPart(controls: OrderControls | undefined): string {
  const c = controls ?? DEFAULT_CONTROLS;
  if (usesNoControl(c)) return '';
  return `|${c.timeInForce}|${c.expireTime}|${c.postOnly ? 1 : 0}|${c.clientOrderId ?? ''}|${c.stp}`;
}
