/**
 * The cluster key (`CLUSTER_KEY`): a secret shared by the engine and every gateway, under which
 * every command and every committed batch carries a MAC (HMAC-SHA256, header `OpenSpot-Mac`). A
 * process that reaches NATS without the key — a stolen gateway credential, a script on the
 * broker's network — can neither forge a command the engine applies nor a batch a gateway shows.
 *
 * Conventions as `SECRETS_KEY`'s (src/auth/vault.ts): the base64 of 32 random bytes, given in the
 * environment or kept in `DATA_DIR/cluster.key` (0600, generated at the first start). Required
 * in the environment when NODE_ENV=production: processes on different machines each generating
 * their own key would refuse each other's messages.
 *
 * A MAC is computed over a purpose (`command`, `batch`), the fields the message's meaning depends
 * on beside its body (subject, id, deadline, sequence), each length-prefixed so no two field
 * lists give the same input, and the body's bytes.
 */
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { inspect } from 'node:util';
import { keyFromEnvOrFile, VaultError } from '../auth/vault.js';
import { ConfigError } from '../config/config.js';

export const MAC_HEADER = 'OpenSpot-Mac';
export const CLUSTER_KEY_FILE = 'cluster.key';

/** What a MAC vouches for: a MAC made for one purpose never verifies for another. */
export type MacPurpose = 'command' | 'batch' | 'heartbeat';

const MAC_VERSION = 'v1';
const MAC_TEXT = /^v1\.[A-Za-z0-9_-]{43}$/;

export class ClusterKey {
  readonly #key: Buffer;

  constructor(key: Uint8Array) {
    if (key.length !== 32) throw new RangeError('the cluster key must be 32 bytes');
    this.#key = Buffer.from(key);
  }

  /** A fresh random key (tests, and a process that talks only to itself). */
  static random(): ClusterKey {
    return new ClusterKey(randomBytes(32));
  }

  /**
   * `CLUSTER_KEY` when set, else `<dataDir>/cluster.key` (created on first use) — except in
   * production, where it must be set. ConfigError when missing there or not a 32-byte key.
   */
  static fromEnvOrFile(
    dataDir: string,
    env: Readonly<Record<string, string | undefined>>,
    production: boolean,
  ): ClusterKey {
    const fromEnv = env.CLUSTER_KEY;
    if (production && (fromEnv === undefined || fromEnv.trim() === ''))
      throw new ConfigError(
        'CLUSTER_KEY is required when NODE_ENV=production: the same base64 of 32 random bytes on the engine and every gateway (e.g. `openssl rand -base64 32`).',
      );
    try {
      return new ClusterKey(keyFromEnvOrFile(dataDir, 'CLUSTER_KEY', fromEnv, CLUSTER_KEY_FILE));
    } catch (error) {
      if (error instanceof VaultError) throw new ConfigError(error.message);
      throw error;
    }
  }

  /** The MAC of a message, as the header carries it: `v1.<base64url of 32 bytes>`. */
  mac(purpose: MacPurpose, fields: readonly string[], body: Uint8Array): string {
    return `${MAC_VERSION}.${this.digest(purpose, fields, body).toString('base64url')}`;
  }

  /** Whether `mac` (a header's text, maybe absent) is this key's MAC of the message. Constant time. */
  verify(purpose: MacPurpose, fields: readonly string[], body: Uint8Array, mac: string | undefined): boolean {
    if (mac === undefined || !MAC_TEXT.test(mac)) return false;
    const given = Buffer.from(mac.slice(MAC_VERSION.length + 1), 'base64url');
    return given.length === 32 && timingSafeEqual(given, this.digest(purpose, fields, body));
  }

  private digest(purpose: MacPurpose, fields: readonly string[], body: Uint8Array): Buffer {
    const hmac = createHmac('sha256', this.#key);
    hmac.update(`openspot-cluster ${purpose}\n`);
    for (const field of fields) {
      const bytes = Buffer.from(field, 'utf8');
      hmac.update(`${bytes.length}:`);
      hmac.update(bytes);
    }
    hmac.update('\n');
    hmac.update(body);
    return hmac.digest();
  }

  // A key that ends up in a log line or a JSON dump shows nothing of itself.
  toJSON(): string {
    return '[ClusterKey]';
  }
  [inspect.custom](): string {
    return '[ClusterKey]';
  }
}
