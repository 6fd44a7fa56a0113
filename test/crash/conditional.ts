/**
 * Conditional orders (issue 22) in the crash test: what the clients send, and what the committed
 * state must show of them after every kill.
 *
 * Placed: stop-loss, take-profit and trailing stops as sells (a market-type buy holds everything
 * its owner has, decision E29, which would make the replay's early cancels change other orders'
 * budgets), stop-loss-limit and take-profit-limit on either side; triggers around the mid, so
 * some are refused on arrival (422 trigger_would_fire), some wait, and the load's trades fire
 * others, also in cascades.
 *
 * Checked (checkConditional), besides what every order gets (crash-run.ts, committed-state.ts):
 * - each stored conditional order carries the trigger or the trailing offset it was sent with;
 * - a waiting one (not triggered) has no trade; one with trades is triggered;
 * - fired at most once: all the trades it took as the taker share one time, the command that
 *   fired it (a second firing, e.g. after a restart that lost `triggered`, would take again later);
 * - an open triggered order is a -limit type resting in the book; a market type never stays open
 *   once fired.
 */
import type { TrailingOffset } from '../../src/domain/types.js';
import type { Committed, OrderRow } from './committed-state.js';
import type { MarketInfo, Trader } from './http-client.js';

export const CONDITIONAL_TYPES = [
  'stop-loss',
  'take-profit',
  'stop-loss-limit',
  'take-profit-limit',
  'trailing-stop',
] as const;
export type ConditionalTypeName = (typeof CONDITIONAL_TYPES)[number];
export type OrderTypeName = 'limit' | 'market' | ConditionalTypeName;

export const isConditional = (type: string): type is ConditionalTypeName =>
  (CONDITIONAL_TYPES as readonly string[]).includes(type);
/** The form an order matches in once it may: limit for limit and the -limit types. */
export const matchesAsLimit = (type: string): boolean => type === 'limit' || type.endsWith('-limit');
/** 0/1 in SQLite, a boolean from PostgreSQL. */
export const isTriggered = (o: Pick<OrderRow, 'triggered'>): boolean =>
  o.triggered === 1 || o.triggered === true;
/** In the book: a limit order, or a fired -limit order resting as one; a waiting order is not. */
export const inBook = (o: Pick<OrderRow, 'type' | 'triggered'>): boolean =>
  o.type === 'limit' || (isConditional(o.type) && matchesAsLimit(o.type) && isTriggered(o));

/** What a conditional placement sends beyond the common fields, and what the store must keep. */
export interface ConditionalSpec {
  readonly type: ConditionalTypeName;
  readonly side: 'buy' | 'sell';
  /** ticks: the limit price of a -limit type, else 0 (as stored) */
  readonly price: number;
  /** ticks, for every type but trailing-stop */
  readonly triggerPrice?: number;
  readonly trailingOffset?: TrailingOffset;
}

/** A random conditional order around `mid` (ticks), on the crash test's grid of 100 ticks. */
export function conditionalSpec(random: () => number, mid: number): ConditionalSpec {
  const type = CONDITIONAL_TYPES[Math.floor(random() * CONDITIONAL_TYPES.length)]!;
  const asLimit = matchesAsLimit(type);
  const side = asLimit && random() < 0.5 ? 'buy' : 'sell';
  if (type === 'trailing-stop') {
    const trailingOffset: TrailingOffset =
      random() < 0.5
        ? { unit: 'bps', amount: 10 + Math.floor(random() * 60) }
        : { unit: 'ticks', amount: (1 + Math.floor(random() * 15)) * 100 };
    return { type, side, price: 0, trailingOffset };
  }
  // Within ±0.6% of the mid, where the load trades: some fire, some wait, some are refused.
  const triggerPrice = Math.round((mid * (1 + (random() - 0.5) * 0.012)) / 10) * 10;
  const price = asLimit ? Math.round((triggerPrice * (1 + (random() - 0.5) * 0.006)) / 100) * 100 : 0;
  return { type, side, price, triggerPrice };
}

/** The request body fields of a conditional placement (decimal strings at the market's decimals). */
export function conditionalBody(
  spec: ConditionalSpec,
  market: MarketInfo,
  fromUnits: (units: number, decimals: number) => string,
): Record<string, string> {
  const price = (ticks: number) => fromUnits(ticks, market.pairDecimals);
  return {
    order_type: spec.type,
    ...(spec.price > 0 ? { price: price(spec.price) } : {}),
    ...(spec.triggerPrice === undefined ? {} : { trigger_price: price(spec.triggerPrice) }),
    ...(spec.trailingOffset === undefined
      ? {}
      : {
          trailing_offset:
            spec.trailingOffset.unit === 'bps'
              ? `${Math.trunc(spec.trailingOffset.amount / 100)}.${String(spec.trailingOffset.amount % 100).padStart(2, '0')}%`
              : price(spec.trailingOffset.amount),
        }),
  };
}

/** The conditional placements the clients sent, by tag (crash-run.ts's PlaceRecord, in part). */
export interface SentConditional {
  readonly tag: number;
  readonly trader: Trader;
  readonly conditional?: ConditionalSpec;
}

/** The problems of the committed conditional orders (see the file comment). */
export function checkConditional(
  c: Committed,
  sentByTag: ReadonlyMap<number, SentConditional>,
  tagSpace: number,
): string[] {
  const problems: string[] = [];
  const fail = (text: string) => {
    if (problems.length < 50) problems.push(text);
  };
  const takerTimes = new Map<number, Set<number>>();
  const traded = new Set<number>();
  for (const t of c.trades) {
    traded.add(t.taker_order_id).add(t.maker_order_id);
    const times = takerTimes.get(t.taker_order_id) ?? new Set<number>();
    times.add(t.time);
    takerTimes.set(t.taker_order_id, times);
  }
  for (const o of c.orders) {
    const sent = sentByTag.get(o.volume % tagSpace)?.conditional;
    if (!isConditional(o.type)) {
      if (o.trigger_price !== null || o.trailing_unit !== null || isTriggered(o))
        fail(`order ${o.id}: a ${o.type} order with trigger fields`);
      continue;
    }
    if (sent === undefined) {
      fail(`order ${o.id}: a ${o.type} order nobody sent`);
      continue;
    }
    if (sent.trailingOffset !== undefined) {
      if (o.trailing_unit !== sent.trailingOffset.unit || o.trailing_amount !== sent.trailingOffset.amount)
        fail(
          `order ${o.id}: trailing ${o.trailing_unit}/${o.trailing_amount}, sent ${JSON.stringify(sent.trailingOffset)}`,
        );
    } else if (o.trigger_price !== sent.triggerPrice) {
      fail(`order ${o.id}: trigger ${o.trigger_price}, sent ${sent.triggerPrice}`);
    }
    const triggered = isTriggered(o);
    if (!triggered && traded.has(o.id)) fail(`order ${o.id}: traded while waiting for its trigger`);
    if (!triggered && o.status === 'closed') fail(`order ${o.id}: closed without its trigger firing`);
    const times = takerTimes.get(o.id);
    if (times !== undefined && times.size > 1)
      fail(`order ${o.id}: took liquidity at ${times.size} different times: it fired more than once`);
    if (triggered && o.status === 'open' && !matchesAsLimit(o.type))
      fail(`order ${o.id}: a fired ${o.type} order is still open`);
  }
  return problems;
}

/**
 * For the replay: the id of the placement whose command made each trade (by trade index). A fired
 * conditional order takes as the taker, but the command that fired it is another, later placement:
 * a cancel replayed after the trade's taker id would come too early. A command's trades have
 * consecutive ids and a fired order's come after the trade that crossed its trigger, so a trade
 * whose taker is a conditional order belongs to the command of the trade before it.
 */
export function commandsOfTrades(c: Committed): number[] {
  const types = new Map(c.orders.map((o) => [o.id, o.type]));
  const out: number[] = [];
  c.trades.forEach((t, i) => {
    const conditional = isConditional(types.get(t.taker_order_id) ?? 'limit');
    out.push(conditional && i > 0 ? out[i - 1]! : t.taker_order_id);
  });
  return out;
}
