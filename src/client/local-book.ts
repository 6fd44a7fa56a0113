/**
 * A local copy of one market's order book, kept from the `order-book.{pair}` channel: a
 * `snapshot` message (every level) then one `update` message per changed level (the side whose
 * field is an object, with the level's new total; a zero quantity removes the level). Each message
 * carries the book's `sequence`; an update whose sequence is past the previous one plus one means
 * messages were lost, and the only repair is a fresh snapshot, which the server sends on every
 * (re)subscription. An update at or below the copy's sequence is one already applied (a duplicate,
 * or a late one that the last snapshot already contains): it is ignored. The top-10 checksum of every message is verified too, which catches a book
 * that drifted for any other reason.
 */
import type { BookData, BookLevelText, BookMessage, BookUpdateData } from './channels.js';
import { bookChecksum } from './checksum.js';
import { compareDecimal, isZeroDecimal } from './decimal.js';

export type BookApplyResult =
  | { readonly status: 'ok' }
  /** Messages were lost: resubscribe to get a snapshot. */
  | { readonly status: 'gap'; readonly expected: number; readonly received: number }
  /** The book after the message does not match the server's checksum: resubscribe. */
  | { readonly status: 'checksum'; readonly expected: number; readonly computed: number }
  /** An update arrived while no valid snapshot is held; ignored until the next snapshot. */
  | { readonly status: 'awaiting-snapshot' }
  /** An update the copy already contains (a duplicate or a late one): ignored, still in sync. */
  | { readonly status: 'stale'; readonly sequence: number; readonly received: number };

export interface LocalBookOptions {
  /** Verify the checksum of every message. Default true. */
  readonly verifyChecksum?: boolean;
}

class BookSide {
  readonly #levels = new Map<string, string>();
  #sorted: BookLevelText[] | undefined;

  constructor(private readonly descending: boolean) {}

  clear(): void {
    this.#levels.clear();
    this.#sorted = undefined;
  }

  set(level: BookLevelText): void {
    if (isZeroDecimal(level.qty)) this.#levels.delete(level.price);
    else this.#levels.set(level.price, level.qty);
    this.#sorted = undefined;
  }

  /** Best first. Sorted lazily: a burst of updates costs one sort at the next read. */
  levels(): readonly BookLevelText[] {
    if (this.#sorted === undefined) {
      const sign = this.descending ? -1 : 1;
      this.#sorted = [...this.#levels]
        .map(([price, qty]) => ({ price, qty }))
        .sort((a, b) => sign * compareDecimal(a.price, b.price));
    }
    return this.#sorted;
  }
}

export class LocalBook {
  readonly #bids = new BookSide(true);
  readonly #asks = new BookSide(false);
  readonly #verify: boolean;
  #sequence: number | undefined;
  #symbol: string | undefined;

  constructor(options: LocalBookOptions = {}) {
    this.#verify = options.verifyChecksum ?? true;
  }

  /** The sequence of the last applied message; undefined until a snapshot is held. */
  get sequence(): number | undefined {
    return this.#sequence;
  }

  /** True while the book is a faithful copy (a snapshot and every update since). */
  get synced(): boolean {
    return this.#sequence !== undefined;
  }

  get symbol(): string | undefined {
    return this.#symbol;
  }

  /** Bids from the highest price down; at most `depth` when given. */
  bids(depth?: number): readonly BookLevelText[] {
    return this.#bids.levels().slice(0, depth);
  }

  /** Asks from the lowest price up; at most `depth` when given. */
  asks(depth?: number): readonly BookLevelText[] {
    return this.#asks.levels().slice(0, depth);
  }

  /** Forgets everything until the next snapshot (e.g. after a disconnect). */
  reset(): void {
    this.#bids.clear();
    this.#asks.clear();
    this.#sequence = undefined;
  }

  /** Applies a channel message of either type. */
  apply(message: BookMessage): BookApplyResult {
    return message.type === 'snapshot' ? this.applySnapshot(message.data) : this.applyUpdate(message.data);
  }

  applySnapshot(data: BookData): BookApplyResult {
    this.reset();
    this.#symbol = data.symbol;
    for (const level of data.bids) this.#bids.set(level);
    for (const level of data.asks) this.#asks.set(level);
    this.#sequence = data.sequence;
    return this.#check(data);
  }

  applyUpdate(data: BookUpdateData): BookApplyResult {
    if (this.#sequence === undefined) return { status: 'awaiting-snapshot' };
    const expected = this.#sequence + 1;
    // Sequences count every message of the book: one at or below ours is already in the copy.
    if (data.sequence < expected)
      return { status: 'stale', sequence: this.#sequence, received: data.sequence };
    if (data.sequence !== expected) {
      // Applying past a hole would show levels that may no longer exist: drop the copy.
      this.reset();
      return { status: 'gap', expected, received: data.sequence };
    }
    for (const level of levelsOf(data.bids)) this.#bids.set(level);
    for (const level of levelsOf(data.asks)) this.#asks.set(level);
    this.#sequence = data.sequence;
    return this.#check(data);
  }

  #check(data: BookData | BookUpdateData): BookApplyResult {
    if (!this.#verify || typeof data.checksum !== 'number') return { status: 'ok' };
    const computed = bookChecksum(this.asks(), this.bids());
    if (computed === data.checksum) return { status: 'ok' };
    this.reset();
    return { status: 'checksum', expected: data.checksum, computed };
  }
}

/** An update's side: `[]` (unchanged) or one level; a list is taken as it is (older servers sent one). */
const levelsOf = (side: BookLevelText | readonly BookLevelText[]): readonly BookLevelText[] =>
  Array.isArray(side) ? side : [side as BookLevelText];
