/**
 * One side of an order book: price levels in an intrusive AVL tree (insert and delete of a level in
 * O(log levels)), the best level cached (O(1)), and within each level a doubly linked FIFO of
 * resting orders (O(1) append and unlink, so cancel never scans a level).
 */

export interface RestingOrder {
  readonly id: number;
  readonly userId: number;
  readonly price: number;
  /** Time priority within a level: lower first (the id, unless an amend sent it to the back). */
  readonly priority: number;
  /** Unexecuted volume in lots. */
  remaining: number;
  level: Level | null;
  prev: RestingOrder | null;
  next: RestingOrder | null;
}

export class Level {
  total = 0;
  count = 0;
  head: RestingOrder | null = null;
  tail: RestingOrder | null = null;
  left: Level | null = null;
  right: Level | null = null;
  height = 1;
  /** Free for the engine's use: it marks levels it has recorded as changed since its last drain. */
  mark = 0;
  constructor(readonly price: number) {}
}

const height = (n: Level | null): number => (n === null ? 0 : n.height);

function update(n: Level): void {
  const l = height(n.left);
  const r = height(n.right);
  n.height = Math.max(l, r) + 1;
}

function rotateRight(n: Level): Level {
  const l = n.left!;
  n.left = l.right;
  l.right = n;
  update(n);
  update(l);
  return l;
}

function rotateLeft(n: Level): Level {
  const r = n.right!;
  n.right = r.left;
  r.left = n;
  update(n);
  update(r);
  return r;
}

function balance(n: Level): Level {
  update(n);
  const diff = height(n.left) - height(n.right);
  if (diff > 1) {
    if (height(n.left!.left) < height(n.left!.right)) n.left = rotateLeft(n.left!);
    return rotateRight(n);
  }
  if (diff < -1) {
    if (height(n.right!.right) < height(n.right!.left)) n.right = rotateRight(n.right!);
    return rotateLeft(n);
  }
  return n;
}

function insertNode(root: Level | null, level: Level): Level {
  if (root === null) return level;
  if (level.price < root.price) root.left = insertNode(root.left, level);
  else root.right = insertNode(root.right, level);
  return balance(root);
}

function removeMin(n: Level): Level | null {
  if (n.left === null) return n.right;
  n.left = removeMin(n.left);
  return balance(n);
}

function minNode(n: Level): Level {
  let m = n;
  while (m.left !== null) m = m.left;
  return m;
}

function maxNode(n: Level): Level {
  let m = n;
  while (m.right !== null) m = m.right;
  return m;
}

function removeNode(root: Level | null, price: number): Level | null {
  if (root === null) return null;
  if (price < root.price) root.left = removeNode(root.left, price);
  else if (price > root.price) root.right = removeNode(root.right, price);
  else {
    const { left, right } = root;
    root.left = root.right = null;
    root.height = 1;
    if (right === null) return left;
    const successor = minNode(right);
    successor.right = removeMin(right);
    successor.left = left;
    return balance(successor);
  }
  return balance(root);
}

/** The first fault in one level's queue, or null (see BookSide.checkStructure). */
function checkQueue(level: Level): string | null {
  const at = `level ${level.price}`;
  if (level.count <= 0 || level.head === null || level.tail === null)
    return `${at} is empty but still listed`;
  if (level.head.prev !== null) return `${at}: its head has a predecessor`;
  let count = 0;
  let total = 0;
  let prev: RestingOrder | null = null;
  for (let o: RestingOrder | null = level.head; o !== null; o = o.next) {
    if (++count > level.count) return `${at} holds more orders than its count ${level.count}`;
    if (o.prev !== prev) return `${at}: order ${o.id}'s back link does not point at the order before it`;
    if (o.level !== level) return `${at}: order ${o.id} points at another level`;
    if (o.price !== level.price) return `${at}: order ${o.id} is priced ${o.price}`;
    if (!(o.remaining > 0) || !Number.isSafeInteger(o.remaining))
      return `${at}: order ${o.id} rests with remaining volume ${o.remaining}`;
    if (prev !== null && !(o.priority > prev.priority))
      return `${at}: order ${o.id} (priority ${o.priority}) is queued after order ${prev.id} (priority ${prev.priority})`;
    total += o.remaining;
    prev = o;
  }
  if (prev !== level.tail) return `${at}: its tail is not its last order`;
  if (count !== level.count) return `${at} counts ${level.count} orders and holds ${count}`;
  if (total !== level.total) return `${at} totals ${level.total} and its orders ${total}`;
  return null;
}

export class BookSide {
  private root: Level | null = null;
  private readonly levels = new Map<number, Level>();
  /** The best level: highest price for bids, lowest for asks. */
  best: Level | null = null;

  constructor(private readonly descending: boolean) {}

  get levelCount(): number {
    return this.levels.size;
  }

  level(price: number): Level | undefined {
    return this.levels.get(price);
  }

  /** True when `price` is better than (or equal to) `other` on this side. */
  isBetterOrEqual(price: number, other: number): boolean {
    return this.descending ? price >= other : price <= other;
  }

  /**
   * Appends at the back of its price level's queue (time priority). `level` is the level at the
   * order's price when the caller has already looked it up (undefined: there is none yet).
   */
  append(order: RestingOrder, level: Level | undefined = this.levels.get(order.price)): void {
    if (level === undefined) {
      level = new Level(order.price);
      this.levels.set(order.price, level);
      this.root = insertNode(this.root, level);
      if (this.best === null || this.isBetterOrEqual(level.price, this.best.price)) this.best = level;
    }
    order.level = level;
    order.prev = level.tail;
    order.next = null;
    if (level.tail === null) level.head = order;
    else level.tail.next = order;
    level.tail = order;
    level.count++;
    level.total += order.remaining;
  }

  /** Unlinks an order in O(1); drops its level when it empties. */
  unlink(order: RestingOrder): void {
    const level = order.level!;
    if (order.prev === null) level.head = order.next;
    else order.prev.next = order.next;
    if (order.next === null) level.tail = order.prev;
    else order.next.prev = order.prev;
    level.count--;
    level.total -= order.remaining;
    order.level = order.prev = order.next = null;
    if (level.count === 0) this.dropLevel(level);
  }

  /** Reduces a resting order's remaining volume in place (a partial fill keeps its priority). */
  reduce(order: RestingOrder, volume: number): void {
    order.remaining -= volume;
    order.level!.total -= volume;
  }

  private dropLevel(level: Level): void {
    this.levels.delete(level.price);
    this.root = removeNode(this.root, level.price);
    if (this.best === level) {
      this.best = this.root === null ? null : this.descending ? maxNode(this.root) : minNode(this.root);
    }
  }

  /** The level after `level` from best to worst (null after the worst); allocates nothing. */
  after(level: Level): Level | null {
    const price = level.price;
    let found: Level | null = null;
    let node = this.root;
    while (node !== null) {
      if (this.descending ? node.price < price : node.price > price) {
        found = node;
        node = this.descending ? node.right : node.left;
      } else node = this.descending ? node.left : node.right;
    }
    return found;
  }

  /**
   * The first structural fault found, or null: the AVL tree (prices strictly ordered, heights
   * right and balanced), the price map (exactly the tree's levels), the cached best level, and each
   * level's queue (links both ways, every order pointing back at its level and priced at it, with
   * remaining volume; count and total equal to its orders'). O(orders): a check, not a hot path.
   */
  checkStructure(): string | null {
    let nodes = 0;
    let fault: string | null = null;
    let previous: number | null = null;
    let first: Level | null = null;
    let last: Level | null = null;
    const visit = (node: Level | null, depth: number): number => {
      if (node === null || fault !== null) return 0;
      if (depth > 128) {
        fault = 'the level tree has a cycle';
        return 0;
      }
      const l = visit(node.left, depth + 1);
      if (fault !== null) return 0;
      nodes++;
      if (previous !== null && !(node.price > previous)) {
        fault = `level ${node.price} is out of price order in the tree (after ${previous})`;
        return 0;
      }
      previous = node.price;
      if (first === null) first = node;
      last = node;
      if (this.levels.get(node.price) !== node) {
        fault = `level ${node.price} is in the tree but not in the price map`;
        return 0;
      }
      fault = checkQueue(node);
      if (fault !== null) return 0;
      const r = visit(node.right, depth + 1);
      if (fault !== null) return 0;
      if (node.height !== Math.max(l, r) + 1) fault = `level ${node.price} has height ${node.height}`;
      else if (Math.abs(l - r) > 1) fault = `level ${node.price} is unbalanced (${l} vs ${r})`;
      return node.height;
    };
    visit(this.root, 0);
    if (fault !== null) return fault;
    if (nodes !== this.levels.size) return `the price map has ${this.levels.size} levels, the tree ${nodes}`;
    const best = this.descending ? last : first;
    if (this.best !== best)
      return `the cached best level is ${this.best?.price ?? 'none'}, the tree's best ${(best as Level | null)?.price ?? 'none'}`;
    return null;
  }

  /** Levels from best to worst, at most `max` of them (0 = all). */
  *iterate(max = 0): Generator<Level> {
    let yielded = 0;
    const stack: Level[] = [];
    let node = this.root;
    while (stack.length > 0 || node !== null) {
      while (node !== null) {
        stack.push(node);
        node = this.descending ? node.right : node.left;
      }
      const current = stack.pop()!;
      yield current;
      if (++yielded === max) return;
      node = this.descending ? current.left : current.right;
    }
  }
}
