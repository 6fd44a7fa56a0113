/**
 * The interface's request signature ("Authentication") computed in the browser with WebCrypto,
 * the same rule as src/client/sign.ts (Node's crypto) and test/web/sign.test.ts proves they agree:
 *
 *   X-API-Sign = base64( HMAC-SHA512( key = base64decode(secret), METHOD + hex(SHA-256(body)) ) )
 *
 * `body` is the exact string sent on the wire; an empty body is signed as the two characters `{}`.
 * The secret never leaves the page: only the signature is sent. WebCrypto exists only in a secure
 * context (https, or http on localhost/127.0.0.1): `signingAvailable()` says whether it is here.
 */

/** What an empty body is signed as: the compact serialization of the empty object. */
export const EMPTY_BODY = '{}';

const encoder = new TextEncoder();

export const signingAvailable = (): boolean => globalThis.crypto?.subtle !== undefined;

export function base64ToBytes(text: string): Uint8Array<ArrayBuffer> {
  const binary = atob(text.trim());
  const bytes = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i += 1) bytes[i] = binary.charCodeAt(i);
  return bytes;
}

export function bytesToBase64(bytes: Uint8Array): string {
  let binary = '';
  for (const byte of bytes) binary += String.fromCharCode(byte);
  return btoa(binary);
}

const hex = (bytes: Uint8Array): string => {
  let text = '';
  for (const byte of bytes) text += byte.toString(16).padStart(2, '0');
  return text;
};

/** Lowercase hex SHA-256 of the body, with the empty body standing for `{}`. */
export async function bodyDigest(body: string): Promise<string> {
  const digest = await crypto.subtle.digest('SHA-256', encoder.encode(body === '' ? EMPTY_BODY : body));
  return hex(new Uint8Array(digest));
}

/**
 * A signer for one secret: the HMAC key is imported once (non-extractable) and reused, so the
 * base64 secret need not be decoded again per request.
 */
export async function createSigner(
  apiSecretBase64: string,
): Promise<(method: string, body: string) => Promise<string>> {
  const key = await crypto.subtle.importKey(
    'raw',
    base64ToBytes(apiSecretBase64),
    { name: 'HMAC', hash: 'SHA-512' },
    false,
    ['sign'],
  );
  return async (method, body) => {
    const text = method.toUpperCase() + (await bodyDigest(body));
    const signature = await crypto.subtle.sign('HMAC', key, encoder.encode(text));
    return bytesToBase64(new Uint8Array(signature));
  };
}

/** The X-API-Sign value for one request (see createSigner to sign many with one secret). */
export async function signRequest(method: string, body: string, apiSecretBase64: string): Promise<string> {
  return (await createSigner(apiSecretBase64))(method, body);
}
