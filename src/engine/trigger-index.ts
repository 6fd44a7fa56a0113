/**
 * Waiting conditional orders of one market and one direction, in the order their triggers fire:
 * a binary heap, so a trade looks at the top entry only and takes out exactly the triggers its
 * price crossed (O(log n) each), however many orders wait.
 *
 * Two directions per market. `falling` triggers fire when the last trade price falls to them or
 * below (a sell stop-loss, a buy take-profit, a sell trailing stop): the highest trigger is
 * crossed first. Rising triggers fire when the price rises to them or above (a buy stop-loss, a
 * sell take-profit, a buy trailing stop): the lowest first. At one trigger price, time priority
 * (the lower `priority`) first: trigger-price order then time order, as the fairness rule asks.
 */
import type { TrailingOffset } from '../domain/types.js';

/** What a conditional order adds to an order while it exists (the engine's LiveOrder.wait). */
export class WaitState {
  /** Its place in its market's trigger heap while it waits, else -1. */
  slot = -1;
  /** Set once the trigger fired (then it is a market or limit order like any other). */
  triggered = false;
  /** The price of the trade that reached the trigger (set when it did). */
  crossedAt = 0;
  constructor(
    /** The last trade price, in ticks, that fires it (a trailing stop's moves with `best`). */
    public trigger: number,
    /** True: fires at or below `trigger`; false: at or above. */
    readonly falling: boolean,
    /** A trailing stop's offset, else null. */
    readonly offset: TrailingOffset | null,
    /** A trailing stop's best price seen since placement (0: none yet). */
    public best: number,
  ) {}
}

export interface Waiting {
  readonly id: number;
  readonly priority: number;
  readonly wait: WaitState | null;
}

export class TriggerHeap<T extends Waiting> {
  private readonly items: T[] = [];

  constructor(readonly falling: boolean) {}

  get size(): number {
    return this.items.length;
  }

  /** The order whose trigger the price reaches first, or undefined. */
  peek(): T | undefined {
    return this.items[0];
  }

  /** True when a trade at `price` reaches the trigger of `order` (one of this heap's direction). */
  reaches(order: T, price: number): boolean {
    const trigger = order.wait!.trigger;
    return this.falling ? price <= trigger : price >= trigger;
  }

  add(order: T): void {
    const wait = order.wait!;
    wait.slot = this.items.length;
    this.items.push(order);
    this.up(wait.slot);
  }

  /** Removes an order that is in the heap. */
  remove(order: T): void {
    const i = order.wait!.slot;
    const last = this.items.pop()!;
    order.wait!.slot = -1;
    if (last === order) return;
    this.items[i] = last;
    last.wait!.slot = i;
    this.up(i);
    this.down(last.wait!.slot);
  }

  /** Puts an order whose trigger moved back in its place. */
  moved(order: T): void {
    const i = order.wait!.slot;
    this.up(i);
    this.down(order.wait!.slot);
  }

  /** Every order, in no particular order. */
  values(): readonly T[] {
    return this.items;
  }

  /** The first fault in the heap's bookkeeping, or null: slots recorded, parents not after children. */
  checkStructure(): string | null {
    for (let i = 0; i < this.items.length; i++) {
      const item = this.items[i]!;
      if (item.wait === null || item.wait.slot !== i) return `trigger heap: entry ${i} is not recorded there`;
      if (item.wait.falling !== this.falling || item.wait.triggered)
        return `trigger heap: order ${item.id} does not wait in this direction`;
      if (i > 0 && this.before(item, this.items[(i - 1) >> 1]!))
        return `trigger heap: order ${item.id} (trigger ${item.wait.trigger}) comes before its parent`;
    }
    return null;
  }

  private before(a: T, b: T): boolean {
    const ta = a.wait!.trigger;
    const tb = b.wait!.trigger;
    if (ta !== tb) return this.falling ? ta > tb : ta < tb;
    return a.priority !== b.priority ? a.priority < b.priority : a.id < b.id;
  }

  private up(i: number): void {
    const items = this.items;
    const item = items[i]!;
    while (i > 0) {
      const p = (i - 1) >> 1;
      const parent = items[p]!;
      if (!this.before(item, parent)) break;
      items[i] = parent;
      parent.wait!.slot = i;
      i = p;
    }
    items[i] = item;
    item.wait!.slot = i;
  }

  private down(i: number): void {
    const items = this.items;
    const n = items.length;
    const item = items[i]!;
    for (;;) {
      const l = 2 * i + 1;
      if (l >= n) break;
      const r = l + 1;
      const c = r < n && this.before(items[r]!, items[l]!) ? r : l;
      const child = items[c]!;
      if (!this.before(child, item)) break;
      items[i] = child;
      child.wait!.slot = i;
      i = c;
    }
    items[i] = item;
    item.wait!.slot = i;
  }
}
