/**
 * API key records kept in memory by a store, so a signed request usually authenticates without a
 * read (CredentialStore.cachedApiKey). Shared by the SQLite store, the PostgreSQL store and the
 * gateways' reader; each decides how long a record is trusted:
 *
 * - `Infinity`: until a write through the same store drops it (one process makes every
 *   revocation: the engine's store);
 * - `n` milliseconds: a key revoked through another process stops working here within n ms;
 * - `0`: nothing is kept.
 *
 * Bounded: beyond `max` records the oldest is dropped (read again when used). Records are frozen,
 * since one object is handed to every request. Unknown keys are never remembered: a caller trying
 * keys cannot fill memory.
 */
import type { ApiKeyRecord } from './store.js';

export const MAX_CACHED_API_KEYS = 10_000;

export class ApiKeyCache {
  readonly #entries = new Map<string, { readonly record: ApiKeyRecord; readonly until: number }>();

  constructor(
    private readonly lifetimeMs: number,
    private readonly now: () => number = () => performance.now(),
    private readonly max = MAX_CACHED_API_KEYS,
  ) {}

  /** The record while it is trusted; undefined otherwise. */
  get(key: string): ApiKeyRecord | undefined {
    const cached = this.#entries.get(key);
    if (cached === undefined) return undefined;
    // No clock read for a record kept until written (every signed request asks).
    return cached.until === Number.POSITIVE_INFINITY || this.now() < cached.until ? cached.record : undefined;
  }

  /** Freezes the record just read from the store, keeps it (unless the lifetime is 0), returns it. */
  remember(record: ApiKeyRecord): ApiKeyRecord {
    Object.freeze(record.scopes);
    if (record.ipAllowlist !== null) Object.freeze(record.ipAllowlist);
    Object.freeze(record);
    if (!(this.lifetimeMs > 0)) return record;
    // Re-inserted, so the Map's insertion order stays the age order the eviction relies on.
    this.#entries.delete(record.key);
    if (this.#entries.size >= this.max) {
      const oldest = this.#entries.keys().next();
      if (oldest.done !== true) this.#entries.delete(oldest.value);
    }
    this.#entries.set(record.key, { record, until: this.now() + this.lifetimeMs });
    return record;
  }

  /** Drops a record the store is about to change (created again, revoked). */
  forget(key: string): void {
    this.#entries.delete(key);
  }
}
