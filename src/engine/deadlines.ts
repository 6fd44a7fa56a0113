/**
 * The engine's deadlines (GTD expiries and dead man's switches) in one binary min-heap, so the
 * next one is known in O(1) and a command checks it with one comparison. Each entry keeps its
 * position in the heap, so an order that ends before its expiry leaves in O(log n) and no stale
 * entry is ever left behind.
 *
 * Order: earliest first; at the same time, expiries before switches (an order that expires at
 * the moment its owner's switch fires ends as expired), then by order or user id. Any total order
 * would do; this one is fixed so that every replica fires them alike.
 */

export const DeadlineKind = { expiry: 0, deadMansSwitch: 1 } as const;
export type DeadlineKind = (typeof DeadlineKind)[keyof typeof DeadlineKind];

export interface Deadline {
  /** When it fires (Micros). */
  readonly due: number;
  readonly deadlineKind: DeadlineKind;
  /** The order id of an expiry, the user id of a switch. */
  readonly deadlineKey: number;
  /** Its index in the heap, or -1 when it is not in one. */
  heapIndex: number;
}

const before = (a: Deadline, b: Deadline): boolean =>
  a.due !== b.due
    ? a.due < b.due
    : a.deadlineKind !== b.deadlineKind
      ? a.deadlineKind < b.deadlineKind
      : a.deadlineKey < b.deadlineKey;

export class DeadlineHeap<T extends Deadline> {
  private readonly items: T[] = [];

  get size(): number {
    return this.items.length;
  }

  /** The earliest deadline, or undefined when there is none. */
  peek(): T | undefined {
    return this.items[0];
  }

  add(item: T): void {
    item.heapIndex = this.items.length;
    this.items.push(item);
    this.up(item.heapIndex);
  }

  /** Removes an item that is in the heap. */
  remove(item: T): void {
    const i = item.heapIndex;
    const last = this.items.pop()!;
    item.heapIndex = -1;
    if (last === item) return;
    this.items[i] = last;
    last.heapIndex = i;
    this.up(i);
    this.down(last.heapIndex);
  }

  /** Every item, in no particular order. */
  values(): readonly T[] {
    return this.items;
  }

  /** The first fault in the heap's bookkeeping, or null: positions recorded, parents not after children. */
  checkStructure(): string | null {
    for (let i = 0; i < this.items.length; i++) {
      const item = this.items[i]!;
      if (item.heapIndex !== i) return `deadline heap: entry ${i} records index ${item.heapIndex}`;
      const parent = (i - 1) >> 1;
      if (i > 0 && before(item, this.items[parent]!))
        return `deadline heap: entry ${i} (due ${item.due}) comes before its parent`;
    }
    return null;
  }

  private up(i: number): void {
    const items = this.items;
    const item = items[i]!;
    while (i > 0) {
      const p = (i - 1) >> 1;
      const parent = items[p]!;
      if (!before(item, parent)) break;
      items[i] = parent;
      parent.heapIndex = i;
      i = p;
    }
    items[i] = item;
    item.heapIndex = i;
  }

  private down(i: number): void {
    const items = this.items;
    const n = items.length;
    const item = items[i]!;
    for (;;) {
      const l = 2 * i + 1;
      if (l >= n) break;
      const r = l + 1;
      const c = r < n && before(items[r]!, items[l]!) ? r : l;
      const child = items[c]!;
      if (!before(child, item)) break;
      items[i] = child;
      child.heapIndex = i;
      i = c;
    }
    items[i] = item;
    item.heapIndex = i;
  }
}
