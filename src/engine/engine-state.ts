/**
 * The engine's whole state, seen from outside its hot paths: one hash of it (`hashState`) and a
 * check of its invariants (`findViolation`), as exchange-core's IOrderBook has
 * `stateHash()` and `validateInternalState()`. Both are O(orders + balances) and allocate freely:
 * they serve tests, restarts, crash checks and replicas, never a command.
 *
 * The state is what a restore from a snapshot must reproduce: the catalogue, the id counters, the
 * per-asset totals (net deposits, fees), every non-zero balance (available and reserved), and each
 * book with every resting order in time priority and all its fields. What only the drains need
 * (which orders, balances and levels changed since the last one) and the pool of recycled order
 * objects are not state: a live engine and one restored from its snapshot hash alike.
 *
 * Pure: node:crypto's SHA-256 is a computation, not I/O; no clock, no randomness.
 */
import { createHash } from 'node:crypto';
import {
  type AssetSpec,
  executionTypeOf,
  type MarketSpec,
  type OrderStatus,
  type OrderType,
  type SelfTradeMode,
  type Side,
  type TimeInForce,
} from '../domain/types.js';
import type { Account, AccountBook } from './account-book.js';
import type { BookSide, Level, RestingOrder } from './book-side.js';
import type { Deadline, DeadlineHeap } from './deadlines.js';
import type { TriggerHeap, WaitState } from './trigger-index.js';
import type { Sequences, SwitchState } from './types.js';

/** Bumped whenever the canonical form below changes, so hashes of different forms never match. */
const FORM = 'openspot-engine-state/1';
/** Fees carry 8 decimals (FEE_RATE_DECIMALS): an order's fee excess stays below 10^8. */
const FEE_SCALE = 100_000_000;

export interface StateMarket {
  readonly spec: MarketSpec;
  readonly base: number;
  readonly quote: number;
  readonly baseUnitsPerLot: number;
  readonly bids: BookSide;
  readonly asks: BookSide;
  /** The last trade price (0: none). */
  readonly lastPrice: number;
  readonly falling: TriggerHeap<StateOrder>;
  readonly rising: TriggerHeap<StateOrder>;
  readonly trailing: ReadonlySet<StateOrder>;
}

/** A resting order as the engine keeps it (the engine's LiveOrder). */
export interface StateOrder extends RestingOrder {
  readonly account: Account;
  readonly market: StateMarket;
  readonly side: Side;
  readonly type: OrderType;
  readonly volume: number;
  readonly openTime: number;
  readonly status: OrderStatus;
  readonly reason: string | null;
  readonly closeTime: number | null;
  readonly cost: number;
  readonly fee: number;
  readonly feeExcess: number;
  readonly reserved: number;
  readonly timeInForce: TimeInForce;
  readonly postOnly: boolean;
  readonly clientOrderId: string | null;
  readonly stp: SelfTradeMode;
  readonly expireTime: number;
  readonly heapIndex: number;
  readonly wait: WaitState | null;
}

/** True while a conditional order waits for its trigger, outside the book. */
export const isWaiting = (o: Pick<StateOrder, 'wait'>): boolean => o.wait !== null && !o.wait.triggered;

/** The state of the order controls (issue 21) beside the books. */
export interface StateControls {
  readonly maxOpenOrdersPerUser: number;
  readonly deadlines: Pick<DeadlineHeap<Deadline>, 'size' | 'checkStructure'> & {
    values(): readonly unknown[];
  };
  /** Armed dead man's switches, in ascending user id. */
  readonly switches: readonly SwitchState[];
  /** Per user, its resting orders with a client order id, by that id. */
  readonly clientIds: ReadonlyMap<number, ReadonlyMap<string, StateOrder>>;
}

export interface EngineStateView {
  /** In index order (the ledger's asset indexes). */
  readonly assets: readonly AssetSpec[];
  /** In id order. */
  readonly markets: readonly StateMarket[];
  readonly accounts: AccountBook;
  readonly openOrders: {
    readonly size: number;
    get(id: number): StateOrder | undefined;
    values(): Iterable<StateOrder>;
    checkStructure(): string | null;
  };
  readonly sequences: Sequences;
  readonly controls: StateControls;
  /** The engine's cost rule: quote units for `volume` lots at `price`, rounded down. */
  costOf(market: StateMarket, price: number, volume: number): number;
}

/** Thrown by Engine.validateInternalState: the engine's state breaks an invariant. */
export class InternalStateError extends Error {
  override readonly name = 'InternalStateError';
}

/** JSON with keys sorted, so a spec hashes by its values whatever order its fields were written in. */
function canonicalJson(value: object): string {
  const entries = Object.entries(value)
    .filter(([, v]) => v !== undefined)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${JSON.stringify(v)}`).join(',')}}`;
}

/** Each side's levels best first, and each level's queue in time priority. */
function* queue(side: BookSide): Generator<[Level, StateOrder]> {
  for (const level of side.iterate()) {
    for (let o = level.head; o !== null; o = o.next) yield [level, o as StateOrder];
  }
}

/** SHA-256 (hex) of the canonical form of the state (see the module comment). */
export function hashState(view: EngineStateView): string {
  const hash = createHash('sha256');
  let lines: string[] = [];
  const line = (text: string): void => {
    lines.push(text);
    // Fed in chunks: one string of 170,000 orders would be tens of megabytes.
    if (lines.length === 4096) {
      hash.update(`${lines.join('\n')}\n`);
      lines = [];
    }
  };
  line(FORM);
  view.assets.forEach((asset, i) => {
    line(`asset ${i} ${canonicalJson(asset)}`);
  });
  for (const m of view.markets) line(`market ${canonicalJson(m.spec)}`);
  const s = view.sequences;
  line(`sequences ${s.nextOrderId} ${s.nextTradeId} ${s.nextMarketId}`);
  const { accounts: ledger } = view;
  view.assets.forEach((asset, i) => {
    line(`totals ${asset.code} ${ledger.netDeposits[i] ?? 0} ${ledger.fees[i] ?? 0}`);
  });
  for (const account of ledger.accountsByUser()) {
    view.assets.forEach((asset, i) => {
      const available = ledger.available(account, i);
      const reserved = ledger.reservedOf(account, i);
      // An account opened by a refused order, or emptied since, holds nothing: not state.
      if (available !== 0 || reserved !== 0)
        line(`balance ${account.userId} ${asset.code} ${available} ${reserved}`);
    });
  }
  for (const m of view.markets) {
    for (const [name, side] of [
      ['bids', m.bids],
      ['asks', m.asks],
    ] as const) {
      line(`book ${m.spec.id} ${name}`);
      for (const level of side.iterate()) {
        line(`level ${level.price} ${level.total} ${level.count}`);
        for (let r = level.head; r !== null; r = r.next) {
          const o = r as StateOrder;
          line(
            `order ${o.id} ${o.userId} ${o.side} ${o.type} ${o.price} ${o.volume} ${o.remaining} ` +
              `${o.openTime} ${o.cost} ${o.fee} ${o.feeExcess} ${o.reserved}${controlsText(o)}`,
          );
        }
      }
    }
  }
  // Only when some switch is armed, so a state without one hashes as it did before they existed.
  for (const sw of view.controls.switches) line(`switch ${sw.userId} ${sw.triggerTime}`);
  // Likewise the conditional orders, and the last prices that decide them only when one exists
  // (the stores do not keep last prices yet: a state without conditional orders hashes as before).
  const conditional = [...view.openOrders.values()]
    .filter((o) => o.wait !== null)
    .sort((a, b) => a.id - b.id);
  for (const o of conditional) line(`conditional ${o.id} ${waitText(o.wait!)}`);
  const waiting = conditional.filter(isWaiting);
  for (const o of waiting) {
    line(
      `waiting ${o.id} ${o.userId} ${o.market.spec.id} ${o.side} ${o.type} ${o.price} ${o.volume} ` +
        `${o.openTime} ${o.reserved}${controlsText(o)}`,
    );
  }
  if (conditional.length > 0) for (const m of view.markets) line(`last ${m.spec.id} ${m.lastPrice}`);
  hash.update(lines.join('\n'));
  return hash.digest('hex');
}

/**
 * True when an order uses none of the order controls (and no amend moved it): its state and its
 * hash line are then exactly what they were before the controls existed.
 */
export function hasDefaultControls(
  o: Pick<StateOrder, 'id' | 'priority' | 'timeInForce' | 'postOnly' | 'clientOrderId' | 'stp'>,
): boolean {
  return (
    o.timeInForce === 'GTC' &&
    !o.postOnly &&
    o.clientOrderId === null &&
    o.stp === 'cancel-oldest' &&
    o.priority === o.id
  );
}

function waitText(w: WaitState): string {
  return `${w.trigger} ${w.falling} ${w.offset?.unit ?? '-'} ${w.offset?.amount ?? 0} ${w.best} ${w.triggered}`;
}

/** An order's controls for the hash, empty when all are defaults (its line is then as before they existed). */
function controlsText(o: StateOrder): string {
  if (hasDefaultControls(o)) return '';
  return ` ${o.timeInForce} ${o.postOnly} ${JSON.stringify(o.clientOrderId)} ${o.stp} ${o.expireTime} ${o.priority}`;
}

/**
 * The first fault in a resting order's controls, or null: it is GTC or GTD, a GTD order (and only
 * one) has an expiry and its deadline entry, a client order id is indexed under it, and its
 * priority lies between its id and the next id.
 */
function controlFault(o: StateOrder, at: string, view: EngineStateView): string | null {
  const { controls, sequences } = view;
  if (o.timeInForce !== 'GTC' && o.timeInForce !== 'GTD')
    return `${at} rests with time in force ${o.timeInForce}`;
  if ((o.timeInForce === 'GTD') !== o.expireTime > 0)
    return `${at} is ${o.timeInForce} with expire time ${o.expireTime}`;
  if (
    o.expireTime > 0 !== o.heapIndex >= 0 ||
    (o.heapIndex >= 0 && controls.deadlines.values()[o.heapIndex] !== o)
  )
    return `${at}'s expiry is not in the deadline heap where it says (${o.heapIndex})`;
  if (o.clientOrderId !== null && controls.clientIds.get(o.userId)?.get(o.clientOrderId) !== o)
    return `${at}'s client order id ${o.clientOrderId} is not indexed`;
  if (!Number.isSafeInteger(o.priority) || o.priority < o.id || !(o.priority < sequences.nextOrderId))
    return `${at} has priority ${o.priority}`;
  return null;
}

/**
 * The first fault in the controls beside the books, or null: the client id index holds exactly
 * the resting orders that have one, the deadline heap exactly their expiries and the armed
 * switches, and each account counts exactly its resting orders. `resting`: per user id, its
 * resting orders; `withClientId` and `withExpiry`: how many rest with one.
 */
function controlsFault(
  view: EngineStateView,
  resting: ReadonlyMap<number, number>,
  withClientId: number,
  withExpiry: number,
): string | null {
  const { controls } = view;
  let indexed = 0;
  for (const ids of controls.clientIds.values()) indexed += ids.size;
  if (indexed !== withClientId)
    return `the client order id index holds ${indexed} orders, the books ${withClientId} with an id`;
  const heapFault = controls.deadlines.checkStructure();
  if (heapFault !== null) return heapFault;
  for (const sw of controls.switches) {
    if (!(sw.triggerTime > 0)) return `user ${sw.userId}'s switch is armed at ${sw.triggerTime}`;
  }
  if (controls.deadlines.size !== withExpiry + controls.switches.length)
    return `the deadline heap holds ${controls.deadlines.size} entries, for ${withExpiry} expiries and ${controls.switches.length} switches`;
  for (const account of view.accounts.accountsByUser()) {
    const expected = resting.get(account.userId) ?? 0;
    if (account.openOrders !== expected)
      return `user ${account.userId} counts ${account.openOrders} open orders and has ${expected} resting`;
  }
  return null;
}

/**
 * The first fault of a waiting conditional order, or null: open, outside the book, nothing
 * executed, GTC or GTD without post-only, in its market's heap of its direction (and a trailing
 * stop in the trailing set), its direction the one its type and side wait for, a limit price
 * exactly when its type has one, its hold exactly what a new order of its kind holds (a sell its
 * base units, a -limit buy its cost plus the fee at the larger rate, a market-type buy something),
 * its trigger not reached by the market's last price (a trade that reached it fired it), and a
 * trailing stop's trigger its offset from its best price (none before the market's first trade).
 */
function waitingFault(o: StateOrder, at: string, view: EngineStateView): string | null {
  const m = o.market;
  const wait = o.wait!;
  if (o.status !== 'open' || o.level !== null) return `${at} is ${o.status} or in the book`;
  if (o.remaining !== o.volume || o.cost !== 0 || o.fee !== 0) return `${at} executed before its trigger`;
  if (o.postOnly) return `${at} waits with post-only`;
  if ((wait.falling ? m.falling : m.rising).values()[wait.slot] !== o)
    return `${at} is not in its market's trigger heap where it says (${wait.slot})`;
  if (m.trailing.has(o) !== (wait.offset !== null)) return `${at} is wrongly in or out of the trailing stops`;
  if ((wait.offset !== null) !== (o.type === 'trailing-stop'))
    return `${at} is a ${o.type} with offset ${JSON.stringify(wait.offset)}`;
  const stopLoss = o.type === 'stop-loss' || o.type === 'stop-loss-limit' || o.type === 'trailing-stop';
  if (wait.falling !== (stopLoss === (o.side === 'sell')))
    return `${at} is a ${o.side} ${o.type} waiting for the price to ${wait.falling ? 'fall' : 'rise'}`;
  if (!(o.id < view.sequences.nextOrderId)) return `${at} is not below nextOrderId`;
  const isLimit = executionTypeOf(o.type) === 'limit';
  if (isLimit ? !(Number.isSafeInteger(o.price) && o.price > 0) : o.price !== 0)
    return `${at} is a ${o.type} with limit price ${o.price}`;
  if (o.side === 'sell') {
    if (o.reserved !== o.volume * m.baseUnitsPerLot)
      return `${at} holds ${o.reserved} base units for ${o.volume} lots`;
  } else if (isLimit) {
    const cost = BigInt(view.costOf(m, o.price, o.volume));
    const rate = BigInt(Math.max(m.spec.makerFee, m.spec.takerFee));
    const hold = cost + (cost * rate + BigInt(FEE_SCALE) - 1n) / BigInt(FEE_SCALE);
    if (BigInt(o.reserved) !== hold) return `${at} holds ${o.reserved}, not the ${hold} a limit buy holds`;
  } else if (!(o.reserved > 0)) return `${at} is a market buy holding nothing`;
  if (!isCount(o.reserved)) return `${at} has reserved ${o.reserved}`;
  if (wait.offset !== null) {
    const fault = trailingFault(wait, m.lastPrice);
    if (fault !== null) return `${at} ${fault}`;
  } else if (!(Number.isSafeInteger(wait.trigger) && wait.trigger > 0))
    return `${at} has trigger ${wait.trigger}`;
  const last = m.lastPrice;
  if (last !== 0 && (wait.falling ? last <= wait.trigger : last >= wait.trigger))
    return `${at} still waits at trigger ${wait.trigger}, which the last price ${last} reached`;
  return null;
}

/** A trailing stop's trigger against its best price and offset (see waitingFault), or null. */
function trailingFault(wait: WaitState, lastPrice: number): string | null {
  const offset = wait.offset!;
  if (wait.best === 0) {
    if (lastPrice !== 0) return `has no best price, and the market traded at ${lastPrice}`;
    const none = wait.falling ? 0 : Number.MAX_SAFE_INTEGER;
    return wait.trigger === none ? null : `has trigger ${wait.trigger} before any trade`;
  }
  // A percentage is ceil(best × bps / 10^4) ticks: never nearer than asked (decision E31).
  const distance =
    offset.unit === 'ticks'
      ? offset.amount
      : Number((BigInt(wait.best) * BigInt(offset.amount) + 9_999n) / 10_000n);
  const expected = wait.falling ? wait.best - distance : wait.best + distance;
  return wait.trigger === expected
    ? null
    : `has trigger ${wait.trigger}, not ${expected} (best price ${wait.best}, offset ${offset.amount} ${offset.unit})`;
}

/**
 * The first fault of a conditional order that fired and rests in the book (a -limit type), or
 * null: out of the trigger heaps and the trailing stops.
 */
function firedFault(o: StateOrder, at: string): string | null {
  const wait = o.wait!;
  if (wait.slot !== -1 || o.market.trailing.has(o))
    return `${at} fired and is still among the waiting orders`;
  return null;
}

/**
 * The first fault of a market's waiting orders as its indexes hold them, or null: every entry of
 * its trigger heaps and trailing stops is a waiting order of this market, indexed as open.
 */
function triggerIndexFault(m: StateMarket, view: EngineStateView): string | null {
  for (const heap of [m.falling, m.rising]) {
    for (const o of heap.values()) {
      if (o.market !== m)
        return `order ${o.id} waits in the trigger heap of market ${m.spec.id}, not its own`;
      if (view.openOrders.get(o.id) !== o) return `order ${o.id} waits in a trigger heap but is not open`;
    }
  }
  for (const o of m.trailing) {
    if (o.market !== m || !isWaiting(o) || view.openOrders.get(o.id) !== o)
      return `order ${o.id} is among market ${m.spec.id}'s trailing stops but does not wait there`;
  }
  return null;
}

const isCount = (n: number): boolean => Number.isSafeInteger(n) && n >= 0;

/**
 * The first invariant the state breaks, described, or null when it holds them all:
 * - each book side's structure (BookSide.checkStructure: tree, price map, best level, queues,
 *   level totals and counts equal to their orders');
 * - each resting order: an open limit order of its market and side, indexed under its id, below
 *   the next id, 0 < remaining <= volume, amounts non-negative integers, 0 <= fee excess < 10^8;
 *   a sell holds exactly its remaining volume in base units, a buy at least the cost of its
 *   remaining volume at its limit;
 * - the id index holds exactly the resting orders, each at its id's slot, its counts right;
 * - best bid < best ask in every market;
 * - each waiting conditional order (waitingFault: outside the book, in its trigger heap, its hold
 *   and its trigger as its type's rules make them, none the last price reached), each fired one
 *   that rests out of the heaps, and every heap and trailing-stop entry a waiting order of its
 *   market (triggerIndexFault); the heaps hold exactly the waiting orders;
 * - balances non-negative integers, each account's reserved balance equal to what its open orders
 *   hold in that asset;
 * - per asset, exactly (in BigInt): Σ (available + reserved) + fees = net deposits.
 */
export function findViolation(view: EngineStateView): string | null {
  const { accounts: ledger, openOrders, sequences } = view;
  const assetCount = view.assets.length;
  for (const [name, n] of Object.entries(sequences)) {
    if (!Number.isSafeInteger(n) || n < 1) return `sequence ${name} is ${n}`;
  }
  for (const m of view.markets) {
    if (!(m.spec.id < sequences.nextMarketId))
      return `market ${m.spec.id} is not below nextMarketId ${sequences.nextMarketId}`;
  }
  /** Per user id, per asset index: what its open orders hold. */
  const held = new Map<number, number[]>();
  let resting = 0;
  const restingByUser = new Map<number, number>();
  let withClientId = 0;
  let withExpiry = 0;
  for (const m of view.markets) {
    const pair = `${m.spec.base}/${m.spec.quote}`;
    for (const [sideName, side, isBuy] of [
      ['bids', m.bids, true],
      ['asks', m.asks, false],
    ] as const) {
      const fault = side.checkStructure();
      if (fault !== null) return `${pair} ${sideName}: ${fault}`;
      for (const [, o] of queue(side)) {
        resting++;
        const at = `${pair} ${sideName}: order ${o.id}`;
        if (o.market !== m) return `${at} belongs to market ${o.market.spec.id}`;
        if (o.side !== (isBuy ? 'buy' : 'sell')) return `${at} is a ${o.side} order`;
        if (executionTypeOf(o.type) !== 'limit' || isWaiting(o)) return `${at} is a resting ${o.type} order`;
        if (o.status !== 'open' || o.reason !== null || o.closeTime !== null)
          return `${at} rests with status ${o.status}`;
        if (openOrders.get(o.id) !== o) return `${at} rests but is not indexed under its id`;
        if (!(o.id < sequences.nextOrderId)) return `${at} is not below nextOrderId ${sequences.nextOrderId}`;
        if (!(o.remaining <= o.volume))
          return `${at} has remaining ${o.remaining} above its volume ${o.volume}`;
        for (const [field, value] of [
          ['cost', o.cost],
          ['fee', o.fee],
          ['reserved', o.reserved],
          ['feeExcess', o.feeExcess],
        ] as const) {
          if (!isCount(value)) return `${at} has ${field} ${value}`;
        }
        if (!(o.feeExcess < FEE_SCALE)) return `${at} has fee excess ${o.feeExcess}`;
        const controlled = controlFault(o, at, view);
        if (controlled !== null) return controlled;
        if (o.wait !== null) {
          const fired = firedFault(o, at);
          if (fired !== null) return fired;
        }
        restingByUser.set(o.userId, (restingByUser.get(o.userId) ?? 0) + 1);
        if (o.clientOrderId !== null) withClientId++;
        if (o.expireTime > 0) withExpiry++;
        if (o.account !== ledger.peek(o.userId)) return `${at} is not tied to user ${o.userId}'s account`;
        const asset = isBuy ? m.quote : m.base;
        if (isBuy) {
          const needed = view.costOf(m, o.price, o.remaining);
          if (!(o.reserved >= needed))
            return `${at} holds ${o.reserved} quote units, less than the ${needed} its remaining volume costs`;
        } else if (o.reserved !== o.remaining * m.baseUnitsPerLot) {
          return `${at} holds ${o.reserved} base units for ${o.remaining} lots of ${m.baseUnitsPerLot}`;
        }
        let sums = held.get(o.userId);
        if (sums === undefined) {
          sums = new Array<number>(assetCount).fill(0);
          held.set(o.userId, sums);
        }
        sums[asset]! += o.reserved;
      }
    }
    if (m.bids.best !== null && m.asks.best !== null && !(m.bids.best.price < m.asks.best.price))
      return `${pair}: the best bid ${m.bids.best.price} is not below the best ask ${m.asks.best.price}`;
  }
  const indexFault = openOrders.checkStructure();
  if (indexFault !== null) return indexFault;
  let waiting = 0;
  for (const o of openOrders.values()) {
    if (!isWaiting(o)) continue;
    waiting++;
    const at = `waiting order ${o.id}`;
    const fault = waitingFault(o, at, view);
    if (fault !== null) return fault;
    const controlled = controlFault(o, at, view);
    if (controlled !== null) return controlled;
    restingByUser.set(o.userId, (restingByUser.get(o.userId) ?? 0) + 1);
    if (o.clientOrderId !== null) withClientId++;
    if (o.expireTime > 0) withExpiry++;
    let sums = held.get(o.userId);
    if (sums === undefined) {
      sums = new Array<number>(assetCount).fill(0);
      held.set(o.userId, sums);
    }
    sums[o.side === 'buy' ? o.market.quote : o.market.base]! += o.reserved;
  }
  let inHeaps = 0;
  for (const m of view.markets) {
    const fault = m.falling.checkStructure() ?? m.rising.checkStructure() ?? triggerIndexFault(m, view);
    if (fault !== null) return `${m.spec.base}/${m.spec.quote}: ${fault}`;
    inHeaps += m.falling.size + m.rising.size;
  }
  if (inHeaps !== waiting) return `the trigger heaps hold ${inHeaps} orders, and ${waiting} wait`;
  if (openOrders.size !== resting + waiting) {
    for (const o of openOrders.values()) {
      if (o.level === null && !isWaiting(o)) return `order ${o.id} is indexed as open but rests in no book`;
    }
    return `the id index holds ${openOrders.size} open orders, the books ${resting} and ${waiting} wait`;
  }
  const controlsBroken = controlsFault(view, restingByUser, withClientId, withExpiry);
  if (controlsBroken !== null) return controlsBroken;

  const totals = new Array<bigint>(assetCount).fill(0n);
  const accounts = ledger.accountsByUser();
  for (const account of accounts) {
    const user = account.userId;
    const length = Math.max(account.available.length, account.reserved.length);
    for (let i = 0; i < length; i++) {
      const available = ledger.available(account, i);
      const reserved = ledger.reservedOf(account, i);
      if (i >= assetCount) {
        if (available !== 0 || reserved !== 0) return `user ${user} holds a balance in unknown asset #${i}`;
        continue;
      }
      const code = view.assets[i]!.code;
      if (!isCount(available)) return `user ${user}'s available ${code} is ${available}`;
      if (!isCount(reserved)) return `user ${user}'s reserved ${code} is ${reserved}`;
      const expected = held.get(user)?.[i] ?? 0;
      if (reserved !== expected)
        return `user ${user} has ${reserved} ${code} reserved, and its open orders hold ${expected}`;
      totals[i]! += BigInt(available) + BigInt(reserved);
    }
  }
  for (const user of held.keys()) {
    if (ledger.peek(user) === undefined) return `user ${user} has open orders and no account`;
  }
  for (let i = 0; i < assetCount; i++) {
    const code = view.assets[i]!.code;
    const netDeposits = ledger.netDeposits[i] ?? 0;
    const fees = ledger.fees[i] ?? 0;
    if (!isCount(netDeposits)) return `net deposits of ${code} are ${netDeposits}`;
    if (!isCount(fees)) return `fees collected in ${code} are ${fees}`;
    const inBalances = totals[i]!;
    if (inBalances + BigInt(fees) !== BigInt(netDeposits))
      return `${code} is not conserved: balances ${inBalances} + fees ${fees} != net deposits ${netDeposits}`;
  }
  return null;
}
