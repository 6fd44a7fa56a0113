/**
 * API secrets at rest. The signature rule needs the secret itself (HMAC key), so a one-way hash
 * cannot be stored; instead each secret is sealed with AES-256-GCM under a server key that lives
 * outside the database (env `SECRETS_KEY` or a 0600 key file), so a copy of the database alone
 * does not reveal any secret.
 *
 * Sealed form: `v1.<base64url iv>.<base64url tag>.<base64url ciphertext>`, a fresh 96-bit IV per
 * seal. The version prefix leaves room for key rotation without guessing formats.
 */
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { chmodSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { inspect } from 'node:util';

const ALGORITHM = 'aes-256-gcm';
const KEY_BYTES = 32;
const IV_BYTES = 12;
const TAG_BYTES = 16;
const VERSION = 'v1';
const KEY_FILE = 'secrets.key';
const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/;
const BASE64URL = /^[A-Za-z0-9_-]*$/;

export class VaultError extends Error {
  override readonly name = 'VaultError';
}

/** The key a base64 text encodes; throws VaultError, never echoing the text, when it is not exactly 32 bytes. */
export function decodeKey(text: string, origin: string): Buffer {
  const trimmed = text.trim();
  const key = BASE64.test(trimmed) ? Buffer.from(trimmed, 'base64') : Buffer.alloc(0);
  if (key.length !== KEY_BYTES) {
    // Never echo the value: it is (or is close to) the key.
    throw new VaultError(`${origin} must be the base64 encoding of exactly ${KEY_BYTES} bytes`);
  }
  return key;
}

/**
 * A 32-byte server key: `fromEnv` (the base64 of 32 bytes, from the variable `envName`) when set,
 * otherwise `<dataDir>/<fileName>`, created with mode 0600 on first use. An existing key file is
 * never overwritten: losing it would make everything under the key unreadable. VaultError when
 * the value is not such a key (the value is never echoed).
 */
export function keyFromEnvOrFile(
  dataDir: string,
  envName: string,
  fromEnv: string | undefined,
  fileName: string,
): Buffer {
  if (fromEnv !== undefined && fromEnv.trim() !== '') return decodeKey(fromEnv, envName);
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  const path = join(dataDir, fileName);
  try {
    // 'wx' fails if the file exists, so two processes starting together cannot both create one.
    writeFileSync(path, `${randomBytes(KEY_BYTES).toString('base64')}\n`, { mode: 0o600, flag: 'wx' });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
  }
  // A key file put in place by hand may be group- or world-readable: tighten it.
  if ((statSync(path).mode & 0o077) !== 0) chmodSync(path, 0o600);
  return decodeKey(readFileSync(path, 'utf8'), path);
}

export class CredentialVault {
  readonly #key: Buffer;

  constructor(key: Uint8Array) {
    if (key.length !== KEY_BYTES) throw new VaultError(`the vault key must be ${KEY_BYTES} bytes`);
    this.#key = Buffer.from(key);
  }

  /**
   * The key from env `SECRETS_KEY` (base64 of 32 bytes) when set, otherwise from
   * `<dataDir>/secrets.key`, which is created with mode 0600 on first use. An existing key file
   * is never overwritten: losing it would make every stored secret unreadable.
   */
  static fromEnvOrFile(dataDir: string, env: Readonly<Record<string, string | undefined>>): CredentialVault {
    return new CredentialVault(keyFromEnvOrFile(dataDir, 'SECRETS_KEY', env.SECRETS_KEY, KEY_FILE));
  }

  /** Encrypts a secret; every call gives a different text (fresh IV). */
  seal(secret: string): string {
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv(ALGORITHM, this.#key, iv);
    const ciphertext = Buffer.concat([cipher.update(secret, 'utf8'), cipher.final()]);
    const tag = cipher.getAuthTag();
    return [VERSION, iv, tag, ciphertext]
      .map((p) => (typeof p === 'string' ? p : p.toString('base64url')))
      .join('.');
  }

  /** Decrypts a sealed secret; throws VaultError when it is malformed, tampered with or sealed under another key. */
  open(sealed: string): string {
    const parts = sealed.split('.');
    if (parts.length !== 4 || parts[0] !== VERSION || !parts.slice(1).every((p) => BASE64URL.test(p))) {
      throw new VaultError('not a sealed secret');
    }
    const iv = Buffer.from(parts[1]!, 'base64url');
    const tag = Buffer.from(parts[2]!, 'base64url');
    const ciphertext = Buffer.from(parts[3]!, 'base64url');
    if (iv.length !== IV_BYTES || tag.length !== TAG_BYTES) throw new VaultError('not a sealed secret');
    try {
      const decipher = createDecipheriv(ALGORITHM, this.#key, iv, { authTagLength: TAG_BYTES });
      decipher.setAuthTag(tag);
      return Buffer.concat([decipher.update(ciphertext), decipher.final()]).toString('utf8');
    } catch {
      throw new VaultError('sealed secret failed authentication (wrong key or altered data)');
    }
  }

  // A vault that ends up in a log line or a JSON dump shows nothing of its key.
  toJSON(): string {
    return '[CredentialVault]';
  }
  [inspect.custom](): string {
    return '[CredentialVault]';
  }
}

export interface ApiCredentials {
  /** Public identifier sent as X-API-Key: 43 url-safe characters (32 random bytes). */
  readonly apiKey: string;
  /** HMAC key material, base64 of 64 random bytes; shown to the user once, stored only sealed. */
  readonly apiSecret: string;
}

export function generateApiCredentials(): ApiCredentials {
  return {
    apiKey: randomBytes(32).toString('base64url'),
    apiSecret: randomBytes(64).toString('base64'),
  };
}
