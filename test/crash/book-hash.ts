/**
 * One hash of the order books, whatever they are read from: the store file of a killed server
 * (the committed state at the moment of the kill) or the HTTP API of the restarted one.
 *
 * Canonical form, per market (markets sorted by pair): the aggregated levels of each side, best
 * first, as integer units (ticks, lots), and every resting order in priority order (bids by price
 * descending, asks ascending; within a price by id, which is arrival order) with its owner and its
 * remaining volume. Two books hash alike exactly when their levels and queues are equal. An order
 * an amend moved to the back of its level is queued by its priority, which the served API does not
 * show: the crash tests compare that queue order through the engine's state hash instead.
 */
import { createHash } from 'node:crypto';

export interface QueuedOrder {
  readonly id: number;
  readonly userId: number;
  readonly side: 'buy' | 'sell';
  /** ticks */
  readonly price: bigint;
  /** lots not yet executed */
  readonly remaining: bigint;
}

export interface MarketBook {
  /** `BTC/EUR` */
  readonly pair: string;
  /** [price, volume] in ticks and lots, best first */
  readonly bids: readonly (readonly [bigint, bigint])[];
  readonly asks: readonly (readonly [bigint, bigint])[];
  /** bids then asks, each in priority order */
  readonly orders: readonly QueuedOrder[];
}

const priority = (a: QueuedOrder, b: QueuedOrder): number => {
  if (a.side !== b.side) return a.side === 'buy' ? -1 : 1;
  if (a.price !== b.price) return (a.side === 'buy' ? a.price > b.price : a.price < b.price) ? -1 : 1;
  return a.id - b.id;
};

/** A market's book from its resting orders alone (levels aggregated from the queue). */
export function bookFromOrders(pair: string, orders: readonly QueuedOrder[]): MarketBook {
  const queue = [...orders].sort(priority);
  const levels = (side: 'buy' | 'sell') => {
    const out: [bigint, bigint][] = [];
    for (const o of queue) {
      if (o.side !== side) continue;
      const last = out[out.length - 1];
      if (last !== undefined && last[0] === o.price) last[1] += o.remaining;
      else out.push([o.price, o.remaining]);
    }
    return out;
  };
  return { pair, bids: levels('buy'), asks: levels('sell'), orders: queue };
}

/** A market's book from separately read levels and orders (the orders are put in priority order). */
export function bookFromParts(
  pair: string,
  bids: readonly (readonly [bigint, bigint])[],
  asks: readonly (readonly [bigint, bigint])[],
  orders: readonly QueuedOrder[],
): MarketBook {
  return { pair, bids, asks, orders: [...orders].sort(priority) };
}

export function canonicalBooks(books: readonly MarketBook[]): string {
  const sorted = [...books].sort((a, b) => (a.pair < b.pair ? -1 : a.pair > b.pair ? 1 : 0));
  return JSON.stringify(
    sorted.map((b) => ({
      pair: b.pair,
      bids: b.bids.map(([p, v]) => `${p}:${v}`),
      asks: b.asks.map(([p, v]) => `${p}:${v}`),
      orders: b.orders.map((o) => `${o.id}:${o.userId}:${o.side}:${o.price}:${o.remaining}`),
    })),
  );
}

export function bookHash(books: readonly MarketBook[]): string {
  return createHash('sha256').update(canonicalBooks(books)).digest('hex');
}

/** A readable account of where two sets of books differ (for a failure message). */
export function describeDifference(expected: readonly MarketBook[], actual: readonly MarketBook[]): string {
  const byPair = (books: readonly MarketBook[]) => new Map(books.map((b) => [b.pair, b]));
  const e = byPair(expected);
  const a = byPair(actual);
  const lines: string[] = [];
  for (const pair of new Set([...e.keys(), ...a.keys()])) {
    const x = e.get(pair);
    const y = a.get(pair);
    if (x === undefined || y === undefined) {
      lines.push(`${pair}: only in ${x === undefined ? 'actual' : 'expected'}`);
      continue;
    }
    const one = (b: MarketBook) => canonicalBooks([b]);
    if (one(x) === one(y)) continue;
    const first = (l: readonly (readonly [bigint, bigint])[], m: readonly (readonly [bigint, bigint])[]) => {
      for (let i = 0; i < Math.max(l.length, m.length); i++) {
        const p = l[i];
        const q = m[i];
        if (p?.[0] !== q?.[0] || p?.[1] !== q?.[1])
          return `#${i}: ${p?.join('@') ?? '-'} vs ${q?.join('@') ?? '-'}`;
      }
      return 'equal';
    };
    lines.push(
      `${pair}: bids ${x.bids.length} vs ${y.bids.length} (${first(x.bids, y.bids)}), asks ${x.asks.length} vs ${y.asks.length} (${first(x.asks, y.asks)}), orders ${x.orders.length} vs ${y.orders.length}`,
    );
  }
  return lines.join('\n');
}
