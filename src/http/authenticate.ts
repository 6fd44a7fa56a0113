/**
 * Private-endpoint authentication: X-API-Key names a key, X-API-Sign must be the signature of the
 * request (method + SHA-256 of the raw body bytes) under that key's secret. Every failure (no
 * headers, unknown or revoked key, unreadable secret, wrong signature) answers the same 422
 * `{"error":"Invalid Signature"}`, so a caller cannot tell which one it was.
 */
import { inspect } from 'node:util';
import type { FastifyRequest } from 'fastify';
import { checkKeyPolicy, type KeyPolicyResult } from '../auth/key-policy.js';
import { SignatureKey } from '../auth/signature.js';
import type { ApiKeyRecord, ApiKeyScope } from '../store/store.js';
import type { SecretOpener, V1Deps } from './context.js';
import { ACCESS_DENIED, errorE, INVALID_SIGNATURE } from './errors.js';
import { enforceKeyRateLimit } from './rate-limit.js';
import { type Caller, rawBody } from './request-state.js';

/** Generous upper bounds: real keys are 43 characters and signatures 88. */
const MAX_KEY_LENGTH = 256;
const MAX_SIGN_LENGTH = 512;

const invalidSignature = () => errorE(422, INVALID_SIGNATURE);

/** Most opened secrets kept per vault; beyond it the oldest is dropped (and reopened when used again). */
export const MAX_OPENED_SECRETS = 10_000;

/**
 * API secrets already unsealed, as prepared HMAC keys, so a signed request does not pay for
 * AES-GCM and the key setup each time. This is only a cache of a pure function of the sealed
 * text: the key's record (revocation included) is still read for every request, and an entry is
 * used only while the record's sealed secret is the one it was opened from. Bounded; the key
 * material is held in SignatureKeys, which never print it, and the cache prints as a placeholder.
 */
export class OpenedSecrets {
  readonly #entries = new Map<string, { readonly sealed: string; readonly key: SignatureKey }>();

  constructor(
    private readonly vault: SecretOpener,
    private readonly max = MAX_OPENED_SECRETS,
  ) {}

  /** The HMAC key of a record's sealed secret; throws what the vault throws when it cannot be opened. */
  key(apiKey: string, sealed: string): SignatureKey {
    const entry = this.#entries.get(apiKey);
    if (entry !== undefined && entry.sealed === sealed) return entry.key;
    const key = new SignatureKey(this.vault.open(sealed));
    this.#entries.delete(apiKey);
    if (this.#entries.size >= this.max) {
      const oldest = this.#entries.keys().next();
      if (oldest.done !== true) this.#entries.delete(oldest.value);
    }
    this.#entries.set(apiKey, { sealed, key });
    return key;
  }

  get size(): number {
    return this.#entries.size;
  }

  toJSON(): string {
    return '[OpenedSecrets]';
  }
  [inspect.custom](): string {
    return '[OpenedSecrets]';
  }
}

/** One cache per vault (the vault is what turns a sealed text into a secret). */
const openedByVault = new WeakMap<SecretOpener, OpenedSecrets>();

function openedSecrets(vault: SecretOpener): OpenedSecrets {
  let opened = openedByVault.get(vault);
  if (opened === undefined) {
    opened = new OpenedSecrets(vault);
    openedByVault.set(vault, opened);
  }
  return opened;
}

function header(request: FastifyRequest, name: string): string | undefined {
  const value = request.headers[name];
  // A repeated header is ambiguous: refuse rather than pick one.
  return typeof value === 'string' ? value : undefined;
}

/**
 * The caller of a signed request: the key's record from the credential store, then everything
 * else synchronously, except a nonce, which is recorded in the store. The record comes without a
 * promise when the store holds it in memory (its API key cache: every key in use), so the common
 * request is authenticated synchronously; otherwise it is read (a promise). Throws (synchronously)
 * or rejects with the request's refusal.
 */
export function authenticate(
  request: FastifyRequest,
  deps: Pick<V1Deps, 'exchange' | 'vault'>,
): Caller | Promise<Caller> {
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
  const { credentials } = deps.exchange;
  const cached = credentials.cachedApiKey?.(key);
  if (cached !== undefined) return verify(request, deps, key, sign, cached);
  return credentials.getApiKey(key).then((record) => verify(request, deps, key, sign, record));
}

function verify(
  request: FastifyRequest,
  deps: Pick<V1Deps, 'exchange' | 'vault'>,
  key: string,
  sign: string,
  record: ApiKeyRecord | undefined,
): Caller | Promise<Caller> {
  if (record === undefined || record.revokedAt !== null) throw invalidSignature();
  let secret: SignatureKey;
  try {
    secret = openedSecrets(deps.vault).key(key, record.sealedSecret);
  } catch (error) {
    // Operator problem (wrong SECRETS_KEY, damaged row), not the client's: say so in the log,
    // naming the key's owner only, never the sealed or clear secret.
    request.log.error(
      { userId: record.userId, reason: (error as Error).message },
      'an API secret could not be unsealed',
    );
    throw invalidSignature();
  }
  const body = rawBody(request);
  if (!secret.verify(request.method, body, sign)) throw invalidSignature();
  // Only now that the caller holds the secret: the key's allow-list, its rate limit, its nonce.
  const policy = checkKeyPolicy({
    record,
    ip: request.ip,
    method: request.method,
    rawBody: body,
    contentType: request.headers['content-type'],
    store: deps.exchange.credentials,
    rateLimit: () => enforceKeyRateLimit(request, key),
  });
  return policy instanceof Promise
    ? policy.then((result) => callerOf(result, record, key))
    : callerOf(policy, record, key);
}

/** The caller a passed key policy admits; the policy's refusal otherwise. */
function callerOf(result: KeyPolicyResult, record: ApiKeyRecord, key: string): Caller {
  if (!result.ok) throw errorE(result.status, result.error);
  return { userId: record.userId, apiKey: key, scopes: record.scopes, nonceRequired: record.nonceRequired };
}

export function requireScope(who: Caller, scope: ApiKeyScope): void {
  if (!who.scopes.includes(scope)) throw errorE(403, ACCESS_DENIED);
}
