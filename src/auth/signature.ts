/**
 * The interface's request signature (spot-trading-interface.md, "Authentication"):
 *   X-API-Sign = base64( HMAC-SHA512( key = base64decode(secret), METHOD + hex(SHA-256(body)) ) )
 * where `body` is the exact byte sequence sent on the wire, or the two characters `{}` when the
 * request has no body. Hashing the received bytes (never a re-serialization) is what makes the
 * rule independent of key order and whitespace choices made by the client.
 */
import * as crypto from 'node:crypto';
import { createHash, createHmac, createSecretKey, type KeyObject, timingSafeEqual } from 'node:crypto';
import { inspect } from 'node:util';

/** What an empty body is signed as: the compact serialization of the empty object. */
export const EMPTY_BODY = '{}';

type Data = string | Uint8Array;

/**
 * One-shot hashing (`crypto.hash`, Node 20.12+) creates no hash object, which is most of the cost
 * of hashing a few hundred bytes; older runtimes take the object route, with the same result.
 */
const oneShot = (crypto as { hash?: typeof crypto.hash }).hash;
function digestHex(algorithm: string, data: Data): string {
  return oneShot === undefined
    ? createHash(algorithm).update(data).digest('hex')
    : oneShot(algorithm, data, 'hex');
}

/** Every body-less request (GET, DELETE) signs the same digest: computed once. */
const EMPTY_BODY_DIGEST = digestHex('sha256', EMPTY_BODY);

/** Lowercase hex SHA-256 of the body bytes, with an empty body standing for `{}`. */
export function bodyDigest(rawBody: string | Uint8Array): string {
  const empty = typeof rawBody === 'string' ? rawBody.length === 0 : rawBody.byteLength === 0;
  return empty ? EMPTY_BODY_DIGEST : digestHex('sha256', rawBody);
}

/** The text the HMAC is computed over. */
const signedText = (method: string, rawBody: string | Uint8Array): string =>
  method.toUpperCase() + bodyDigest(rawBody);

/** The X-API-Sign value a client must send for this method and body. */
export function computeSignature(method: string, rawBody: string | Uint8Array, secretBase64: string): string {
  return createHmac('sha512', Buffer.from(secretBase64, 'base64'))
    .update(signedText(method, rawBody))
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
  return sameText(computeSignature(method, rawBody, secretBase64), provided);
}

function sameText(expectedText: string, providedText: string): boolean {
  const expected = Buffer.from(expectedText, 'utf8');
  const given = Buffer.from(providedText, 'utf8');
  if (given.length !== expected.length) {
    // Do the same amount of comparing work, then refuse: no early exit that depends on content.
    timingSafeEqual(expected, expected);
    return false;
  }
  return timingSafeEqual(given, expected);
}

/**
 * A secret prepared for checking many signatures (the server keeps one per API key in use): the
 * key lives in a KeyObject, decoded once. createHmac with a KeyObject is the quickest HMAC Node
 * offers (faster than two one-shot SHA-512 hashes over precomputed pads, measured), and the key
 * material stays in native memory, never shown when printed or serialized.
 */
export class SignatureKey {
  readonly #key: KeyObject;

  constructor(secretBase64: string) {
    const key = Buffer.from(secretBase64, 'base64');
    this.#key = createSecretKey(key);
    key.fill(0);
  }

  /** What computeSignature gives for this key. */
  sign(method: string, rawBody: string | Uint8Array): string {
    return createHmac('sha512', this.#key).update(signedText(method, rawBody)).digest('base64');
  }

  /** verifySignature with this key. */
  verify(method: string, rawBody: string | Uint8Array, provided: string): boolean {
    return sameText(this.sign(method, rawBody), provided);
  }

  toJSON(): string {
    return '[SignatureKey]';
  }
  [inspect.custom](): string {
    return '[SignatureKey]';
  }
}
