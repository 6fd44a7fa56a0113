/**
 * The Idempotency-Key header of POST /v1/orders (IETF httpapi-idempotency-key-header draft,
 * Stripe's semantics): parsing, and the fingerprint that tells a retry from another request.
 */
import { createHash } from 'node:crypto';
import type { MarketSpec, OrderType, Price, Side, Volume } from '../domain/types.js';
import type { IdempotencyRequest } from '../sequencer/ports.js';

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
}

/**
 * The order as parsed, not the body's bytes: a retry that re-signs its body with a new `nonce`
 * (keys that require one), spells the pair `BTCEUR` or writes `0.010` for `0.01` is the same
 * order. A market order's price is ignored by the engine, so it is left out too.
 */
export function idempotencyRequest(key: string, order: CanonicalOrder): IdempotencyRequest {
  const price = order.type === 'market' ? 0 : order.price;
  const canonical = `${order.market.id}|${order.side}|${order.type}|${price}|${order.volume}`;
  return { key, fingerprint: createHash('sha256').update(canonical).digest('hex') };
}
