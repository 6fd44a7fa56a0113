/**
 * The interface's request signature (spot-trading-interface.md, "Authentication"):
 *   X-API-Sign = base64( HMAC-SHA512( key = base64decode(secret), METHOD + hex(SHA-256(body)) ) )
 * where `body` is the exact byte sequence sent on the wire, or the two characters `{}` when the
 * request has no body. Hashing the received bytes (never a re-serialization) is what makes the
 * rule independent of key order and whitespace choices made by the client.
 */
import { createHash, createHmac, timingSafeEqual } from 'node:crypto';

/** What an empty body is signed as: the compact serialization of the empty object. */
export const EMPTY_BODY = '{}';

/** Lowercase hex SHA-256 of the body bytes, with an empty body standing for `{}`. */
export function bodyDigest(rawBody: string | Uint8Array): string {
  const empty = typeof rawBody === 'string' ? rawBody.length === 0 : rawBody.byteLength === 0;
  return createHash('sha256')
    .update(empty ? EMPTY_BODY : rawBody)
    .digest('hex');
}

/** The X-API-Sign value a client must send for this method and body. */
export function computeSignature(method: string, rawBody: string | Uint8Array, secretBase64: string): string {
  const key = Buffer.from(secretBase64, 'base64');
  return createHmac('sha512', key)
    .update(method.toUpperCase() + bodyDigest(rawBody))
    .digest('base64');
}

/**
 * Checks a received X-API-Sign value in constant time with respect to its content. Only the length
 * of the provided value can influence timing, and the expected length (88 characters of base64 for
 * 64 bytes) is public anyway. The comparison is on the exact text: no alternative base64 spellings.
 */
export function verifySignature(
  method: string,
  rawBody: string | Uint8Array,
  secretBase64: string,
  provided: string,
): boolean {
  const expected = Buffer.from(computeSignature(method, rawBody, secretBase64), 'utf8');
  const given = Buffer.from(provided, 'utf8');
  if (given.length !== expected.length) {
    // Do the same amount of comparing work, then refuse: no early exit that depends on content.
    timingSafeEqual(expected, expected);
    return false;
  }
  return timingSafeEqual(given, expected);
}
