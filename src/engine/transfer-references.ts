/**
 * The deposit and withdrawal references already used, kept in memory beside the engine state
 * (restored with it from the commit log, changed only by committed batches): a repeated reference
 * is recognised without reading the store in the middle of a batch. A reference names one
 * operator action per user and kind, whatever the asset; the entry kept is the first recorded.
 * Pure: no I/O, no clock.
 */
import { createHash } from 'node:crypto';
import type { Amount, AssetCode, Micros, UserId } from '../domain/types.js';

export interface ReferencedEntry {
  readonly userId: UserId;
  readonly asset: AssetCode;
  readonly kind: 'deposit' | 'withdrawal';
  readonly amount: Amount;
  readonly reference: string | null;
  readonly time: Micros;
}

const keyOf = (userId: UserId, kind: ReferencedEntry['kind'], reference: string): string =>
  `${userId}\u0000${kind}\u0000${reference}`;

export class TransferReferences<Entry extends ReferencedEntry = ReferencedEntry> {
  private readonly entries = new Map<string, Entry>();

  /** From the committed entries that carry a reference, oldest first. */
  static restore<E extends ReferencedEntry>(entries: Iterable<E>): TransferReferences<E> {
    const references = new TransferReferences<E>();
    for (const entry of entries) references.record(entry);
    return references;
  }

  find(userId: UserId, kind: ReferencedEntry['kind'], reference: string): Entry | undefined {
    return this.entries.get(keyOf(userId, kind, reference));
  }

  /** Records a committed entry; one without a reference, or whose reference is known, changes nothing. */
  record(entry: Entry): void {
    if (entry.reference === null) return;
    const key = keyOf(entry.userId, entry.kind, entry.reference);
    if (!this.entries.has(key)) this.entries.set(key, entry);
  }

  get size(): number {
    return this.entries.size;
  }

  /**
   * SHA-256 (hex) of the references known and the entry kept for each, in key order: equal for two
   * sets restored or grown from the same committed entries in any order of arrival of distinct
   * references (see Engine.stateHash, which does not cover these).
   */
  stateHash(): string {
    const hash = createHash('sha256');
    hash.update('openspot-ledger-references/1\n');
    const keys = [...this.entries.keys()].sort();
    for (const key of keys) {
      const e = this.entries.get(key)!;
      hash.update(`${JSON.stringify([e.userId, e.kind, e.reference, e.asset, e.amount, e.time])}\n`);
    }
    return hash.digest('hex');
  }
}
