/**
 * The steps of the private executions channel for one committed batch: for each order of a
 * watched user, `accepted`, `triggered` when a conditional order's trigger fires (before the
 * trades it then makes), one `trade` per execution, then `closed` or `canceled`, each with the
 * order as it stood right after that step.
 *
 * A `trade` step carries only its own execution, and the final step all of them: an order filled
 * N times then costs N small messages and one list of N, instead of N lists that grow to N (a
 * resting order filled piecemeal for days would otherwise send, and read from the store, its whole
 * history again on every fill).
 *
 * A batch is committed as a whole, so the store only knows the order after the batch. The state
 * after each single execution is rebuilt from it, exactly, with the engine's definitions: executed
 * = sum of trade volumes, cost = sum of trade costs, fee = sum of the order's fees (engine/types.ts).
 */
import type { OrderId, UserId } from '../domain/types.js';
import type { EngineEvent, OrderState, Trade } from '../engine/types.js';
import type { UserTrade } from '../store/store.js';
import type { ExecutionEvent } from './payloads.js';

export interface ExecutionStep {
  readonly userId: UserId;
  readonly event: ExecutionEvent;
  readonly order: OrderState;
  /**
   * The executions this step reports: none for `accepted`, the one execution of a `trade` step,
   * every execution of the order (oldest first) for `closed` and `canceled`.
   */
  readonly orderTrades: readonly Trade[];
  /** The execution a `trade` step is about, from this user's side. */
  readonly execution?: UserTrade;
  /** An `amended` step: why the order changed (the engine's AmendReason). */
  readonly reason?: string;
}

export interface OrderHistory {
  /** The committed state of an order (after the batch). */
  order(id: OrderId): OrderState | undefined;
  /** Committed executions of each order, oldest first (including the batch's); read for ended orders only. */
  tradesOfOrders(ids: readonly OrderId[]): Map<OrderId, Trade[]>;
}

interface Party {
  readonly userId: UserId;
  readonly orderId: OrderId;
  readonly taker: boolean;
}

const partiesOf = (t: Trade): readonly [Party, Party] => [
  { userId: t.takerUserId, orderId: t.takerOrderId, taker: true },
  { userId: t.makerUserId, orderId: t.makerOrderId, taker: false },
];

const feeOf = (t: Trade, p: Party): number => (p.taker ? t.takerFee : t.makerFee);

const userTradeOf = (t: Trade, p: Party): UserTrade => ({
  trade: t,
  orderId: p.orderId,
  side: p.taker ? t.takerSide : t.takerSide === 'buy' ? 'sell' : 'buy',
  fee: feeOf(t, p) as UserTrade['fee'],
  taker: p.taker,
});

/** Running totals of one order through the batch, starting from its state before the batch. */
interface Running {
  readonly final: OrderState;
  executed: number;
  cost: number;
  fee: number;
  /** False when the totals do not add up (then every step shows the final state). */
  readonly consistent: boolean;
}

function startRunning(final: OrderState, batchTrades: readonly { t: Trade; p: Party }[]): Running {
  let executed = final.executed as number;
  let cost = final.cost as number;
  let fee = final.fee as number;
  for (const { t, p } of batchTrades) {
    executed -= t.volume;
    cost -= t.cost;
    fee -= feeOf(t, p);
  }
  return { final, executed, cost, fee, consistent: executed >= 0 && cost >= 0 && fee >= 0 };
}

/** The order right after one more execution: open until its last, closed on it if it ended so. */
function advance(running: Running, t: Trade, p: Party): OrderState {
  running.executed += t.volume;
  running.cost += t.cost;
  running.fee += feeOf(t, p);
  const { final } = running;
  if (!running.consistent) return final;
  const last = running.executed === final.executed;
  // A fill that completes the order closes it in the same step; a cancel comes later, as its own step.
  if (last && final.status === 'closed') return final;
  return {
    ...final,
    executed: running.executed as OrderState['executed'],
    cost: running.cost as OrderState['cost'],
    fee: running.fee as OrderState['fee'],
    status: 'open',
    closeTime: null,
    reason: null,
  };
}

export function executionSteps(
  events: readonly EngineEvent[],
  watched: (userId: UserId) => boolean,
  history: OrderHistory,
): ExecutionStep[] {
  // Pass 1: the watched orders this batch traded or ended, and their trades in engine order.
  const batchTrades = new Map<OrderId, { t: Trade; p: Party }[]>();
  const done = new Map<OrderId, OrderState>();
  for (const event of events) {
    if (event.type === 'trade') {
      for (const p of partiesOf(event.trade)) {
        if (!watched(p.userId)) continue;
        const list = batchTrades.get(p.orderId) ?? [];
        list.push({ t: event.trade, p });
        batchTrades.set(p.orderId, list);
      }
    } else if (event.type === 'orderDone' && watched(event.order.userId)) {
      done.set(event.order.id, event.order);
    }
  }
  const ended = [...done.keys()];
  const trades = ended.length > 0 ? history.tradesOfOrders(ended) : new Map<OrderId, Trade[]>();

  const running = new Map<OrderId, Running>();
  for (const [id, list] of batchTrades) {
    const final = done.get(id) ?? history.order(id);
    if (final !== undefined) running.set(id, startRunning(final, list));
  }

  // Pass 2: one step per event, in engine order.
  const steps: ExecutionStep[] = [];
  for (const event of events) {
    if (event.type === 'orderAccepted') {
      if (watched(event.order.userId))
        steps.push({ userId: event.order.userId, event: 'accepted', order: event.order, orderTrades: [] });
    } else if (event.type === 'orderAmended') {
      if (watched(event.order.userId))
        steps.push({
          userId: event.order.userId,
          event: 'amended',
          order: event.order,
          orderTrades: [],
          reason: event.reason,
        });
    } else if (event.type === 'orderTriggered') {
      // The engine reports the firing before the order's own trades: so does the channel.
      if (watched(event.order.userId))
        steps.push({ userId: event.order.userId, event: 'triggered', order: event.order, orderTrades: [] });
    } else if (event.type === 'trade') {
      for (const p of partiesOf(event.trade)) {
        const state = running.get(p.orderId);
        if (state === undefined) continue;
        steps.push({
          userId: p.userId,
          event: 'trade',
          order: advance(state, event.trade, p),
          orderTrades: [event.trade],
          execution: userTradeOf(event.trade, p),
        });
      }
    } else if (event.type === 'orderDone' && watched(event.order.userId)) {
      steps.push({
        userId: event.order.userId,
        event: event.order.status === 'closed' ? 'closed' : 'canceled',
        order: event.order,
        orderTrades: trades.get(event.order.id) ?? [],
      });
    }
  }
  return steps;
}
