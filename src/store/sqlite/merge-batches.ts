/**
 * Several group commits as one: what the journaled store (journaled-store.ts) writes to the tables
 * when it projects the commits it has journaled. Every table the store writes is either appended to
 * (trades, ledger entries, command receipts, the catalogue) or keyed (orders by id, balances by user
 * and asset, candles by market, interval and start, ...), where each commit carries the row's new
 * state: so the merge appends the appended ones in commit order and keeps the last state of each
 * key. Writing the merge leaves the tables exactly as writing the commits one after the other would
 * (merge-batches.test.ts), with each changed row written once instead of once per commit.
 */
import type { OrderId } from '../../domain/types.js';
import type { EngineEvent, SwitchState } from '../../engine/types.js';
import type { CommitBatch } from '../store.js';

/** The events a store writes as rows (sqlite-store.ts, writeBatch). */
const ROW_EVENTS: ReadonlySet<EngineEvent['type']> = new Set(['assetCreated', 'marketCreated', 'trade']);

/**
 * `batch` as the commit journal keeps it: only the events the store writes as rows, the orders
 * it places as their ids (their state is in the change set already), no changed book levels.
 */
export function journalForm(batch: CommitBatch): CommitBatch {
  const placed: OrderId[] = [...(batch.placedOrderIds ?? [])];
  const events: EngineEvent[] = [];
  for (const event of batch.events) {
    if (event.type === 'orderAccepted') placed.push(event.order.id);
    else if (ROW_EVENTS.has(event.type)) events.push(event);
  }
  return { ...batch, changes: { ...batch.changes, levels: [] }, events, placedOrderIds: placed };
}

/** The last value of each key, in the order the keys first appeared. */
function lastByKey<T>(
  groups: ReadonlyArray<readonly T[] | undefined>,
  key: (item: T) => string | number,
): T[] {
  const last = new Map<string | number, T>();
  for (const items of groups) for (const item of items ?? []) last.set(key(item), item);
  return [...last.values()];
}

const latest = <T extends number>(values: ReadonlyArray<T | undefined>): T | undefined => {
  let max: T | undefined;
  for (const v of values) if (v !== undefined && (max === undefined || v > max)) max = v;
  return max;
};

/** One batch that writes what `batches` (in commit order, at least one) write one after another. */
export function mergeBatches(batches: readonly CommitBatch[]): CommitBatch {
  const last = batches[batches.length - 1];
  if (last === undefined) throw new RangeError('nothing to merge');
  if (batches.length === 1) return last;
  const changes = batches.map((b) => b.changes);
  const switches = lastByKey<SwitchState>(
    changes.map((c) => c.switches),
    (w) => w.userId,
  );
  const idempotencyExpiredBefore = latest(batches.map((b) => b.idempotencyExpiredBefore));
  const commandReceiptsExpiredBefore = latest(batches.map((b) => b.commandReceiptsExpiredBefore));
  return {
    changes: {
      orders: lastByKey(
        changes.map((c) => c.orders),
        (o) => o.id,
      ),
      ...(switches.length > 0 ? { switches } : {}),
      balances: lastByKey(
        changes.map((c) => c.balances),
        (b) => `${b.userId}:${b.asset}`,
      ),
      totals: lastByKey(
        changes.map((c) => c.totals),
        (t) => t.asset,
      ),
      levels: [],
      sequences: last.changes.sequences,
    },
    events: batches.flatMap((b) => b.events),
    ledger: batches.flatMap((b) => b.ledger),
    candles: lastByKey(
      batches.map((b) => b.candles),
      (c) => `${c.marketId}:${c.interval}:${c.start}`,
    ),
    idempotencyKeys: batches.flatMap((b) => b.idempotencyKeys ?? []),
    ...(idempotencyExpiredBefore === undefined ? {} : { idempotencyExpiredBefore }),
    bookSequences: lastByKey(
      batches.map((b) => b.bookSequences),
      (s) => s.marketId,
    ),
    commandReceipts: batches.flatMap((b) => b.commandReceipts ?? []),
    ...(commandReceiptsExpiredBefore === undefined ? {} : { commandReceiptsExpiredBefore }),
    ...(batches.some((b) => b.writeProbe === true) ? { writeProbe: true as const } : {}),
    placedOrderIds: batches.flatMap((b) => b.placedOrderIds ?? []),
  };
}
