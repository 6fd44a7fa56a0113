/**
 * The request signature of the interface ("Authentication"), written out here rather than shared
 * with the server so the client package stands alone:
 *
 *   X-API-Sign = base64( HMAC-SHA512( key = base64decode(secret), METHOD + hex(SHA-256(body)) ) )
 *
 * `body` is the exact string sent on the wire; an empty body is signed as the two characters `{}`.
 */
import { createHash, createHmac } from 'node:crypto';

/** What an empty body is signed as: the compact serialization of the empty object. */
export const EMPTY_BODY = '{}';

/** Lowercase hex SHA-256 of the body, with the empty body standing for `{}`. */
export function bodyDigest(body: string): string {
  return createHash('sha256')
    .update(body === '' ? EMPTY_BODY : body, 'utf8')
    .digest('hex');
}

/**
 * The X-API-Sign value for a request. Pass the very string that will be sent (serialize once,
 * sign it, send it): re-serializing could reorder keys or change spacing and break the signature.
 */
export function signRequest(method: string, body: string, apiSecretBase64: string): string {
  return createHmac('sha512', Buffer.from(apiSecretBase64, 'base64'))
    .update(method.toUpperCase() + bodyDigest(body), 'utf8')
    .digest('base64');
}
