/**
 * Private-endpoint authentication: X-API-Key names a key, X-API-Sign must be the signature of the
 * request (method + SHA-256 of the raw body bytes) under that key's secret. Every failure (no
 * headers, unknown or revoked key, unreadable secret, wrong signature) answers the same 422
 * `{"error":"Invalid Signature"}`, so a caller cannot tell which one it was.
 */
import type { FastifyRequest } from 'fastify';
import { verifySignature } from '../auth/signature.js';
import type { ApiKeyScope } from '../store/store.js';
import type { V1Deps } from './context.js';
import { ACCESS_DENIED, errorE, INVALID_SIGNATURE } from './errors.js';
import { type Caller, rawBody } from './request-state.js';

/** Generous upper bounds: real keys are 43 characters and signatures 88. */
const MAX_KEY_LENGTH = 256;
const MAX_SIGN_LENGTH = 512;

const invalidSignature = () => errorE(422, INVALID_SIGNATURE);

function header(request: FastifyRequest, name: string): string | undefined {
  const value = request.headers[name];
  // A repeated header is ambiguous: refuse rather than pick one.
  return typeof value === 'string' ? value : undefined;
}

export function authenticate(request: FastifyRequest, deps: Pick<V1Deps, 'exchange' | 'vault'>): Caller {
  const key = header(request, 'x-api-key');
  const sign = header(request, 'x-api-sign');
  if (
    key === undefined ||
    sign === undefined ||
    key === '' ||
    key.length > MAX_KEY_LENGTH ||
    sign.length > MAX_SIGN_LENGTH
  ) {
    throw invalidSignature();
  }
  const record = deps.exchange.store.getApiKey(key);
  if (record === undefined || record.revokedAt !== null) throw invalidSignature();
  let secret: string;
  try {
    secret = deps.vault.open(record.sealedSecret);
  } catch (error) {
    // Operator problem (wrong SECRETS_KEY, damaged row), not the client's: say so in the log,
    // naming the key's owner only, never the sealed or clear secret.
    request.log.error(
      { userId: record.userId, reason: (error as Error).message },
      'an API secret could not be unsealed',
    );
    throw invalidSignature();
  }
  if (!verifySignature(request.method, rawBody(request), secret, sign)) throw invalidSignature();
  return { userId: record.userId, scopes: record.scopes };
}

export function requireScope(who: Caller, scope: ApiKeyScope): void {
  if (!who.scopes.includes(scope)) throw errorE(403, ACCESS_DENIED);
}
