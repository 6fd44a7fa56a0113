/**
 * A deliberately naive reference exchange for differential testing of src/engine.
 *
 * Nothing here is shared with src/engine except the command, event and domain type definitions:
 * orders live in plain arrays, the best maker is found by a linear scan, and every amount of
 * money is a BigInt computed straight from the written rules:
 *
 * - cost of a fill   = floor(price x volume x 10^quoteDecimals / 10^(pairDecimals + lotDecimals))
 * - fees, per order  = after each fill the order has paid ceil(Σ costᵢ x rateᵢ / 10^8) over all its
 *   fills so far (the sum kept exactly in a BigInt); each fill charges that minus what was paid
 * - buy limit hold   = cost(limit price, volume) + ceil(that cost x max(maker, taker) / 10^8)
 * - sell hold        = volume x 10^(baseDecimals - lotDecimals)
 * - market buy hold  = everything the buyer has available; it may spend at most that
 * - fills at the maker's price, price-time priority; the buyer pays cost + its fee out of the
 *   order's hold, the seller receives cost - its fee, both fees go to the exchange
 * - self-trade prevention: a resting order of the taker's own user is canceled, matching goes on
 * - a market buy whose funds would buy less than ordermin (walking the book as below, its own
 *   orders left out) is refused with below_ordermin, changing nothing
 * - when a market buy cannot pay for the whole next fill it takes the largest affordable part
 *   (if any) and stops: its budget is exhausted
 * - a limit order rests with what it still holds; a market order never rests: it is `closed` when
 *   anything executed, otherwise `canceled` ('insufficient funds' when the budget stopped it,
 *   'no liquidity' otherwise); whatever an order still holds when it ends is released
 *
 * The order controls (issue 21), from their written rules:
 * - checks in this order, after today's: time in force (FOK/GTD not for market orders), post-only
 *   (limit, GTC or GTD only), self-trade mode, expire time (GTD: after now, at most a year ahead;
 *   otherwise none), client order id (format, then unique among the user's open orders); then a
 *   limit order worth < 1 quote unit, then (GTC/GTD limit) the per-user open-order limit
 * - post-only that crosses the best opposite price: canceled, nothing traded; FOK: canceled
 *   unless the makers it would meet, in priority order, hold its volume before any of its own
 *   user's orders that its mode would not simply cancel; IOC: the remainder canceled
 * - self-trade modes: cancel-oldest cancels the maker and goes on; cancel-newest stops the taker;
 *   cancel-both cancels both; decrement cancels the smaller (both when equal) and shrinks the
 *   larger's volume by the smaller's remaining, releasing what it then holds beyond
 *   hold(price, remaining) (a sell: its remaining base units; a market buy keeps its budget)
 * - amend: lower volume keeps priority and holds min(held, hold(price, remaining)); a new price
 *   or higher volume takes priority = the next order id and holds hold(new price, remaining),
 *   then matches as a taker if it crosses and rests with what is left
 * - deadlines (GTD expiries, switches) due at a command's time fire first, earliest first,
 *   expiries before switches at the same time, then by id; each ends its orders at its own time
 *
 * Conditional orders (issue 22, decisions E25-E34 and E45-E48), from their written rules:
 * - stop-loss, take-profit and trailing-stop execute as market orders once fired, the -limit types
 *   as limit orders; they are open orders from acceptance (counted by the open-order limit,
 *   canceled, expired and amended as any) but outside the book: they are never makers
 * - checks, after the order controls (which treat them as orders that may rest, so GTD is valid):
 *   IOC, FOK or post-only (invalid_conditional_controls), a limit price on a market-type
 *   (price_not_allowed), a trailing stop's trigger price or missing/out-of-range offset, another
 *   type's offset or missing/non-positive trigger, a trigger the last price reached already
 *   (trigger_would_fire); a trigger price or offset on a limit or market order is refused too
 * - holds from acceptance: a sell its base units, a -limit buy what a limit buy at its limit holds,
 *   a market-type buy everything its owner has available in the quote asset (no ordermin check)
 * - falling triggers (sell stop-loss, buy take-profit, sell trailing stop) are reached by a trade
 *   at or below them, rising ones at or above; a trailing stop's trigger is its best trade price
 *   since placement (from the last price at placement) minus (sell) or plus (buy) its offset, a
 *   percentage ceil(best x bps / 10^4) ticks; every trade first moves the trailing stops, then
 *   takes the orders it reached: the falling ones (highest trigger first), then the rising ones
 *   (lowest first), ties by priority; they fire, in that order, after the order being matched is
 *   done, each reporting orderTriggered and then matching as a market or limit order; their trades
 *   append what they reach to the same queue; a fired -limit order that rests gets priority =
 *   the next order id
 * - an amend of a waiting order may change its trigger (not a trailing stop's), a -limit type's
 *   price, its volume and client id; holds are recomputed as for a new order (a market-type buy
 *   keeps its hold); a new trigger or a higher volume takes priority = the next order id
 */
import {
  AmendReason,
  type Amount,
  type AssetCode,
  CancelReason,
  CONDITIONAL_TYPES,
  type ConditionalType,
  executionTypeOf,
  type MarketId,
  type Micros,
  type OrderId,
  type OrderStatus,
  type OrderType,
  type Price,
  type SelfTradeMode,
  type Side,
  type TimeInForce,
  type TradeId,
  type TrailingOffset,
  type UserId,
  type Volume,
} from '../../src/domain/types.js';
import {
  type Command,
  type EngineEvent,
  MAX_BATCH_ORDERS,
  MAX_CANCEL_ALL_AFTER,
  MAX_EXPIRY_AHEAD,
  type OrderState,
  type PlaceOrder,
  type PlaceResult,
  type RejectCode,
  type Trade,
} from '../../src/engine/types.js';

const MAX = BigInt(Number.MAX_SAFE_INTEGER);
const FEE_SCALE = 100_000_000n;
const ten = (n: number): bigint => 10n ** BigInt(n);

export interface RefAsset {
  readonly code: string;
  readonly decimals: number;
}

export interface RefMarket {
  readonly id: number;
  readonly base: string;
  readonly quote: string;
  readonly pairDecimals: number;
  readonly lotDecimals: number;
  readonly ordermin: number;
  readonly makerFee: number;
  readonly takerFee: number;
}

export interface RefOrder {
  readonly id: number;
  readonly userId: number;
  readonly marketId: number;
  readonly side: Side;
  readonly type: OrderType;
  price: number;
  volume: number;
  readonly openTime: number;
  /** Time priority: lower first; the id unless an amend moved the order. */
  priority: number;
  readonly timeInForce: TimeInForce;
  readonly postOnly: boolean;
  clientOrderId: string | null;
  readonly stp: SelfTradeMode;
  readonly expireTime: number;
  executed: number;
  status: OrderStatus;
  reason: string | null;
  closeTime: number | null;
  cost: bigint;
  fee: bigint;
  /** Σ costᵢ x rateᵢ over the order's fills: its exact fee times 10^8. */
  exactFee: bigint;
  reserved: bigint;
  /** Conditional orders only, else null. */
  readonly wait: RefWait | null;
}

/** True while a conditional order has not fired: open, but not in the book. */
export const isWaiting = (o: RefOrder): boolean => o.wait !== null && !o.wait.triggered;
const BPS = 10_000n;

/** What a conditional order adds while it exists. */
export interface RefWait {
  /** The last trade price that fires it; null: a trailing stop that has seen no trade yet. */
  trigger: number | null;
  /** True: reached by a trade at or below the trigger; false: at or above. */
  readonly falling: boolean;
  readonly offset: TrailingOffset | null;
  /** A trailing stop's best trade price since placement (0: none yet). */
  best: number;
  /** A trade reached it: it waits in the queue of orders to fire (no longer follows the market). */
  crossed: boolean;
  /** The price of the trade that reached it. */
  crossedAt: number;
  /** It fired: it matches (and may rest) as a market or limit order. */
  triggered: boolean;
}

export interface RefBalance {
  available: bigint;
  reserved: bigint;
}

export type RefResult =
  | { readonly ok: true; readonly events: EngineEvent[]; readonly results?: PlaceResult[] }
  | { readonly ok: false; readonly code: RejectCode; readonly events?: EngineEvent[] };

/** A refusal inside the reference: its code (the field and message are not compared). */
class Refused {
  constructor(readonly code: RejectCode) {}
}

const isPositiveSafeInt = (n: number): boolean => Number.isSafeInteger(n) && n > 0;
const toNumber = (n: bigint): number => {
  if (n > MAX || n < -MAX) throw new Error(`reference: amount out of the safe range: ${n}`);
  return Number(n);
};

export class ReferenceBook {
  private readonly assets = new Map<string, RefAsset>();
  private readonly markets = new Map<number, RefMarket>();
  /** Every order ever accepted, by id (open and finished). */
  private readonly orders = new Map<number, RefOrder>();
  /** Open (resting) orders, in no particular order: matching scans them all. */
  private open: RefOrder[] = [];
  private readonly balances = new Map<string, RefBalance>();
  readonly fees = new Map<string, bigint>();
  readonly netDeposits = new Map<string, bigint>();
  private nextOrderId = 1;
  private nextTradeId = 1;
  private events: EngineEvent[] = [];
  /** Armed dead man's switches: user id -> trigger time. */
  private readonly switches = new Map<number, number>();
  /** Why self-trade prevention stopped the taker being matched, or null. */
  private stopped: string | null = null;
  /** Each market's last trade price (absent: no trade yet). */
  private readonly lastPrices = new Map<number, number>();
  /** The id of the order the last accepted placeOrder created. */
  private placedId = 0;
  /** Conditional orders a trade reached, in the order they fire (see cross). */
  private queue: RefOrder[] = [];

  constructor(
    assets: readonly RefAsset[],
    markets: readonly RefMarket[],
    private readonly maxOpenOrdersPerUser = 1_000,
  ) {
    for (const a of assets) {
      this.assets.set(a.code, a);
      this.fees.set(a.code, 0n);
      this.netDeposits.set(a.code, 0n);
    }
    for (const m of markets) this.markets.set(m.id, m);
  }

  // ---- queries -----------------------------------------------------------------------------

  balance(userId: number, asset: string): RefBalance {
    return this.balances.get(`${userId}/${asset}`) ?? { available: 0n, reserved: 0n };
  }

  private account(userId: number, asset: string): RefBalance {
    const key = `${userId}/${asset}`;
    let b = this.balances.get(key);
    if (b === undefined) {
      b = { available: 0n, reserved: 0n };
      this.balances.set(key, b);
    }
    return b;
  }

  allBalances(): { userId: number; asset: string; balance: RefBalance }[] {
    return [...this.balances.entries()].map(([key, balance]) => {
      const [user, asset] = key.split('/');
      return { userId: Number(user), asset: asset!, balance };
    });
  }

  /** Every open order: those in the book and the conditional orders waiting outside it. */
  openOrders(): readonly RefOrder[] {
    return this.open;
  }

  /** The open orders in the book (every open order but the waiting conditional ones). */
  private book(): RefOrder[] {
    return this.open.filter((o) => !isWaiting(o));
  }

  /** A market's last trade price, or null before its first trade. */
  lastPrice(marketId: number): number | null {
    return this.lastPrices.get(marketId) ?? null;
  }

  order(id: number): RefOrder | undefined {
    return this.orders.get(id);
  }

  get lastOrderId(): number {
    return this.nextOrderId - 1;
  }

  /** Best resting price on one side, by a linear scan (null when that side is empty). */
  bestPrice(marketId: number, side: Side): number | null {
    let best: number | null = null;
    for (const o of this.book()) {
      if (o.marketId !== marketId || o.side !== side) continue;
      if (best === null || (side === 'buy' ? o.price > best : o.price < best)) best = o.price;
    }
    return best;
  }

  /** Aggregated [price, volume] levels, best first. */
  levels(marketId: number, side: Side): [number, number][] {
    const totals = new Map<number, number>();
    for (const o of this.book()) {
      if (o.marketId !== marketId || o.side !== side) continue;
      totals.set(o.price, (totals.get(o.price) ?? 0) + (o.volume - o.executed));
    }
    return [...totals.entries()].sort((a, b) => (side === 'buy' ? b[0] - a[0] : a[0] - b[0]));
  }

  // ---- commands ----------------------------------------------------------------------------

  apply(command: Command, time: number): RefResult {
    this.events = [];
    this.fireDeadlines(time);
    let code: RejectCode | null;
    switch (command.kind) {
      case 'deposit':
        code = this.deposit(command.userId, command.asset, command.amount, time);
        break;
      case 'withdraw':
        code = this.withdraw(command.userId, command.asset, command.amount, time);
        break;
      case 'placeOrder':
        code = this.place(command, time);
        break;
      case 'cancelOrder':
        code = this.cancel(command.userId, command.orderId, time);
        break;
      case 'cancelClientOrder': {
        const order = this.open.find(
          (o) => o.userId === command.userId && o.clientOrderId === command.clientOrderId,
        );
        code = order === undefined ? 'order_not_found' : this.cancel(command.userId, order.id, time);
        break;
      }
      case 'amendOrder':
        code = this.amend(command, time);
        break;
      case 'cancelAllOrders':
        code = this.cancelAll(command.userId, command.marketId, time);
        break;
      case 'cancelAllAfter':
        code = this.cancelAllAfter(command.userId, command.timeout, time);
        break;
      case 'placeOrders':
        return this.placeBatch(command.orders, time);
      case 'tick':
        code = null;
        break;
      default:
        throw new Error(`reference: unsupported command ${(command as Command).kind}`);
    }
    if (code === null) return { ok: true, events: this.events };
    return this.events.length === 0 ? { ok: false, code } : { ok: false, code, events: this.events };
  }

  /** Armed switch of a user: its trigger time, or null. */
  switchOf(userId: number): number | null {
    return this.switches.get(userId) ?? null;
  }

  /** Fires every deadline due at `time`, one at a time, the earliest (then expiries, then lowest id) first. */
  private fireDeadlines(time: number): void {
    for (;;) {
      let next: { due: number; kind: number; key: number } | null = null;
      const consider = (due: number, kind: number, key: number) => {
        if (due > time) return;
        if (
          next === null ||
          due < next.due ||
          (due === next.due && (kind < next.kind || (kind === next.kind && key < next.key)))
        )
          next = { due, kind, key };
      };
      for (const o of this.open) if (o.expireTime > 0) consider(o.expireTime, 0, o.id);
      for (const [userId, due] of this.switches) consider(due, 1, userId);
      if (next === null) return;
      const { due, kind, key } = next;
      if (kind === 0) {
        this.end(this.orders.get(key)!, 'canceled', CancelReason.expired, due);
      } else {
        this.switches.delete(key);
        this.events.push({ type: 'cancelAllAfterFired', userId: key as UserId, triggerTime: due as Micros });
        for (const o of this.userOrders(key, undefined))
          this.end(o, 'canceled', CancelReason.deadMansSwitch, due);
      }
    }
  }

  /** A user's open orders (of one market, or all), in ascending id. */
  private userOrders(userId: number, marketId: number | undefined): RefOrder[] {
    return this.open
      .filter((o) => o.userId === userId && (marketId === undefined || o.marketId === marketId))
      .sort((a, b) => a.id - b.id);
  }

  private cancelAll(userId: number, marketId: number | undefined, time: number): RejectCode | null {
    if (marketId !== undefined && !this.markets.has(marketId)) return 'unknown_market';
    for (const o of this.userOrders(userId, marketId)) this.end(o, 'canceled', CancelReason.cancelAll, time);
    return null;
  }

  private cancelAllAfter(userId: number, timeout: number, time: number): RejectCode | null {
    if (!isPositiveSafeInt(userId)) return 'invalid_amount';
    if (!Number.isSafeInteger(timeout) || timeout < 0 || timeout > MAX_CANCEL_ALL_AFTER)
      return 'invalid_timeout';
    const triggerTime = timeout === 0 ? 0 : time + timeout;
    if (triggerTime === 0) this.switches.delete(userId);
    else this.switches.set(userId, triggerTime);
    this.events.push({
      type: 'cancelAllAfterSet',
      userId: userId as UserId,
      triggerTime: triggerTime as Micros,
      time: time as Micros,
    });
    return null;
  }

  private placeBatch(orders: readonly PlaceOrder[], time: number): RefResult {
    if (orders.length < 1 || orders.length > MAX_BATCH_ORDERS) {
      return this.events.length === 0
        ? { ok: false, code: 'invalid_batch' }
        : { ok: false, code: 'invalid_batch', events: this.events };
    }
    const results: PlaceResult[] = orders.map((c) => {
      const code = this.place(c, time);
      // Only the code is compared; the message is the engine's. The id is the placed order's (its
      // trades may fire a -limit order whose new priority takes the next number of the sequence).
      return code === null
        ? { ok: true, orderId: this.placedId as OrderId }
        : { ok: false, error: { code, message: '' } };
    });
    return { ok: true, events: this.events, results };
  }

  private deposit(userId: number, asset: string, amount: number, time: number): RejectCode | null {
    if (!this.assets.has(asset)) return 'unknown_asset';
    if (!isPositiveSafeInt(amount)) return 'invalid_amount';
    if (!isPositiveSafeInt(userId)) return 'invalid_amount';
    const net = this.netDeposits.get(asset)!;
    if (net + BigInt(amount) > MAX) return 'too_large';
    this.netDeposits.set(asset, net + BigInt(amount));
    this.account(userId, asset).available += BigInt(amount);
    this.events.push({
      type: 'deposited',
      userId: userId as UserId,
      asset: asset as AssetCode,
      amount: amount as Amount,
      time: time as Micros,
    });
    return null;
  }

  private withdraw(userId: number, asset: string, amount: number, time: number): RejectCode | null {
    if (!this.assets.has(asset)) return 'unknown_asset';
    if (!isPositiveSafeInt(amount)) return 'invalid_amount';
    if (this.balance(userId, asset).available < BigInt(amount)) return 'insufficient_funds';
    this.netDeposits.set(asset, this.netDeposits.get(asset)! - BigInt(amount));
    this.account(userId, asset).available -= BigInt(amount);
    this.events.push({
      type: 'withdrawn',
      userId: userId as UserId,
      asset: asset as AssetCode,
      amount: amount as Amount,
      time: time as Micros,
    });
    return null;
  }

  private costOf(m: RefMarket, price: number, volume: number): bigint {
    const quoteDecimals = this.assets.get(m.quote)!.decimals;
    return (BigInt(price) * BigInt(volume) * ten(quoteDecimals)) / ten(m.pairDecimals + m.lotDecimals);
  }

  private baseUnits(m: RefMarket, volume: number): bigint {
    return BigInt(volume) * ten(this.assets.get(m.base)!.decimals - m.lotDecimals);
  }

  private static ceilDiv(a: bigint, b: bigint): bigint {
    return a <= 0n ? 0n : (a + b - 1n) / b;
  }

  /** What a fill of `cost` at `rate` charges an order that has paid `fee` for `exactFee` so far. */
  private static feeDue(o: Pick<RefOrder, 'fee' | 'exactFee'>, cost: bigint, rate: number): bigint {
    return ReferenceBook.ceilDiv(o.exactFee + cost * BigInt(rate), FEE_SCALE) - o.fee;
  }

  /**
   * The largest volume v <= wanted whose cost plus taker fee fits in `budget`, by closed form.
   * The order has paid F for the exact fee N/S; a fill of cost c costs c + ceil((N + c*r)/S) - F,
   * and for an integer k, ceil(y) <= k <=> y <= k, so it fits in B
   * <=> N + c*r <= S*(B + F - c)  <=>  c <= floor((S*(B + F) - N)/(S + r));
   * floor(p*v*Q/D) <= c  <=>  v <= floor(((c+1)*D - 1)/(p*Q)). Both results are then verified
   * directly, so a mistake in the algebra fails loudly instead of agreeing with a wrong engine.
   */
  private affordable(
    m: RefMarket,
    price: number,
    wanted: number,
    budget: bigint,
    taker: Pick<RefOrder, 'fee' | 'exactFee'>,
  ): number {
    const spend = (v: number): bigint => {
      const cost = this.costOf(m, price, v);
      return cost + ReferenceBook.feeDue(taker, cost, m.takerFee);
    };
    if (budget < 0n) return 0;
    const r = BigInt(m.takerFee);
    const top = FEE_SCALE * (budget + taker.fee) - taker.exactFee;
    if (top < 0n) return 0;
    const maxCost = top / (FEE_SCALE + r);
    const q = ten(this.assets.get(m.quote)!.decimals);
    const d = ten(m.pairDecimals + m.lotDecimals);
    const maxVolume = ((maxCost + 1n) * d - 1n) / (BigInt(price) * q);
    const v = maxVolume < BigInt(wanted) ? Number(maxVolume) : wanted;
    if (spend(v) > budget || (v < wanted && spend(v + 1) <= budget)) {
      throw new Error(`reference: affordable(${price}, ${wanted}, ${budget}) = ${v} is wrong`);
    }
    return v;
  }

  private place(c: PlaceOrder, time: number): RejectCode | null {
    try {
      return this.placeChecked(c, time);
    } catch (error) {
      if (error instanceof Refused) return error.code;
      throw error;
    }
  }

  /** The order-control fields of `c`, checked in the documented order (throws Refused). */
  private controls(c: PlaceOrder, isLimit: boolean, time: number) {
    const timeInForce = c.timeInForce ?? 'GTC';
    if (!['GTC', 'IOC', 'FOK', 'GTD'].includes(timeInForce)) throw new Refused('invalid_time_in_force');
    if (!isLimit && (timeInForce === 'FOK' || timeInForce === 'GTD'))
      throw new Refused('invalid_time_in_force');
    const postOnly = c.postOnly ?? false;
    if (typeof postOnly !== 'boolean') throw new Refused('invalid_post_only');
    if (postOnly && !(isLimit && (timeInForce === 'GTC' || timeInForce === 'GTD')))
      throw new Refused('invalid_post_only');
    const stp = c.stp ?? 'cancel-oldest';
    if (!['cancel-oldest', 'cancel-newest', 'cancel-both', 'decrement'].includes(stp))
      throw new Refused('invalid_stp');
    const expireTime = c.expireTime ?? 0;
    if (timeInForce === 'GTD') {
      if (!Number.isSafeInteger(expireTime) || expireTime <= time || expireTime - time > MAX_EXPIRY_AHEAD)
        throw new Refused('invalid_expire_time');
    } else if (expireTime !== 0) throw new Refused('invalid_expire_time');
    const clientOrderId = c.clientOrderId ?? null;
    if (clientOrderId !== null) this.checkClientOrderId(c.userId, clientOrderId, null);
    return { timeInForce, postOnly, stp, expireTime, clientOrderId };
  }

  private checkClientOrderId(userId: number, id: string, self: RefOrder | null): void {
    if (typeof id !== 'string' || !/^[A-Za-z0-9_-]{1,36}$/.test(id))
      throw new Refused('invalid_client_order_id');
    if (this.open.some((o) => o !== self && o.userId === userId && o.clientOrderId === id))
      throw new Refused('duplicate_client_order_id');
  }

  /** What a limit buy of `volume` at `price` holds: cost plus the fee at the larger rate, rounded up. */
  private holdFor(m: RefMarket, price: number, volume: number): bigint {
    const cost = this.costOf(m, price, volume);
    return cost + ReferenceBook.ceilDiv(cost * BigInt(Math.max(m.makerFee, m.takerFee)), FEE_SCALE);
  }

  /** Total resting volume at one price of one side, `except` left out. */
  private levelTotal(m: RefMarket, side: Side, price: number, except: RefOrder | null): bigint {
    let total = 0n;
    for (const o of this.book())
      if (o !== except && o.marketId === m.id && o.side === side && o.price === price)
        total += BigInt(o.volume - o.executed);
    return total;
  }

  /** True when a limit order of `side` at `price` meets a resting order of the other side. */
  private crosses(m: RefMarket, side: Side, price: number): boolean {
    const best = this.bestPrice(m.id, side === 'buy' ? 'sell' : 'buy');
    return best !== null && (side === 'buy' ? best <= price : best >= price);
  }

  /** The resting orders a taker of `side` at limit `price` (null: market) would meet, in priority order. */
  private makersFor(m: RefMarket, side: Side, price: number | null): RefOrder[] {
    const opposite: Side = side === 'buy' ? 'sell' : 'buy';
    return this.book()
      .filter(
        (o) =>
          o.marketId === m.id &&
          o.side === opposite &&
          (price === null || (side === 'buy' ? o.price <= price : o.price >= price)),
      )
      .sort(
        (a, b) => (opposite === 'sell' ? a.price - b.price : b.price - a.price) || a.priority - b.priority,
      );
  }

  private placeChecked(c: PlaceOrder, time: number): RejectCode | null {
    const m = this.markets.get(c.marketId);
    if (m === undefined) return 'unknown_market';
    if (!isPositiveSafeInt(c.volume)) return 'invalid_volume';
    if (c.volume < m.ordermin) return 'below_ordermin';
    const conditional = CONDITIONAL_TYPES.includes(c.type as ConditionalType);
    // How it matches: a limit order and the -limit types at a limit price, the others at any.
    const isLimit = c.type === 'limit' || (conditional && executionTypeOf(c.type) === 'limit');
    if (isLimit && !isPositiveSafeInt(c.price)) return 'invalid_price';
    if (!isPositiveSafeInt(c.userId)) return 'invalid_amount';
    // A conditional order waits, so its controls are checked as a resting order's (E30: GTD too).
    const controls = this.controls(c, isLimit || conditional, time);
    const tif = controls.timeInForce;
    const wait = this.readWait(c, m, conditional, controls);
    if (isLimit && this.costOf(m, c.price, c.volume) < 1n) return 'order_value_too_small';
    if (
      (conditional || (isLimit && (tif === 'GTC' || tif === 'GTD'))) &&
      this.open.filter((o) => o.userId === c.userId).length >= this.maxOpenOrdersPerUser
    )
      return 'too_many_open_orders';

    const holdAsset = c.side === 'buy' ? m.quote : m.base;
    const available = this.balance(c.userId, holdAsset).available;
    let hold: bigint;
    if (c.side === 'sell') {
      hold = this.baseUnits(m, c.volume);
      if (hold > MAX) return 'too_large';
    } else if (isLimit) {
      if (this.costOf(m, c.price, c.volume) > MAX) return 'too_large';
      hold = this.holdFor(m, c.price, c.volume);
      if (hold > MAX) return 'too_large';
    } else {
      hold = available;
      if (hold <= 0n) return 'insufficient_funds';
      // A waiting market-type buy cannot know the book it will meet: no ordermin check (E29).
      if (wait === null && this.fundsBuy(m, c.userId, c.volume, hold) < m.ordermin) return 'below_ordermin';
    }
    if (available < hold) return 'insufficient_funds';
    if (isLimit) {
      // Every amount exact: the volume in base units, and the total of the level it may rest at.
      if (this.baseUnits(m, c.volume) > MAX) return 'too_large';
      if (wait === null && this.levelTotal(m, c.side, c.price, null) + BigInt(c.volume) > MAX)
        return 'too_large';
    }

    const id = this.nextOrderId++;
    this.placedId = id;
    const taker: RefOrder = {
      id,
      userId: c.userId,
      marketId: m.id,
      side: c.side,
      type: c.type,
      price: isLimit ? c.price : 0,
      volume: c.volume,
      openTime: time,
      priority: id,
      ...controls,
      executed: 0,
      status: 'open',
      reason: null,
      closeTime: null,
      cost: 0n,
      fee: 0n,
      exactFee: 0n,
      reserved: hold,
      wait,
    };
    this.orders.set(taker.id, taker);
    const account = this.account(c.userId, holdAsset);
    account.available -= hold;
    account.reserved += hold;
    this.events.push({ type: 'orderAccepted', order: this.state(taker) });
    if (wait !== null) {
      // It waits outside the book: open, holding, never a maker.
      this.open.push(taker);
      return null;
    }

    if (controls.postOnly && this.crosses(m, c.side, c.price)) {
      this.end(taker, 'canceled', CancelReason.postOnly, time);
      return null;
    }
    if (tif === 'FOK' && !this.fillable(m, taker)) {
      this.end(taker, 'canceled', CancelReason.fillOrKill, time);
      return null;
    }
    const budgetExhausted = this.match(m, taker, time);
    const stopped = this.stopped;
    this.stopped = null;
    if (stopped !== null) this.end(taker, 'canceled', stopped, time);
    else if (taker.executed === taker.volume) this.end(taker, 'closed', null, time);
    else if (!isLimit) {
      if (taker.executed > 0) this.end(taker, 'closed', null, time);
      else
        this.end(
          taker,
          'canceled',
          budgetExhausted ? CancelReason.insufficientFunds : CancelReason.noLiquidity,
          time,
        );
    } else if (tif === 'IOC') this.end(taker, 'canceled', CancelReason.immediateOrCancel, time);
    else if (tif === 'FOK')
      throw new Error(`reference: FOK order ${taker.id} passed the check but did not fill`);
    else this.open.push(taker);
    this.fireQueue(time);
    return null;
  }

  /**
   * A conditional order's trigger (throws Refused), null for a limit or market order (refused when
   * it carries a trigger price or an offset).
   */
  private readWait(
    c: PlaceOrder,
    m: RefMarket,
    conditional: boolean,
    controls: { timeInForce: TimeInForce; postOnly: boolean },
  ): RefWait | null {
    if (!conditional) {
      if (c.triggerPrice !== undefined) throw new Refused('invalid_trigger_price');
      if (c.trailingOffset !== undefined) throw new Refused('invalid_trailing_offset');
      return null;
    }
    if (controls.postOnly || controls.timeInForce === 'IOC' || controls.timeInForce === 'FOK')
      throw new Refused('invalid_conditional_controls');
    if (executionTypeOf(c.type) === 'market' && c.price !== 0) throw new Refused('price_not_allowed');
    // Sell stop-losses (and sell trailing stops) and buy take-profits wait for the price to fall.
    const stopLoss = c.type === 'stop-loss' || c.type === 'stop-loss-limit' || c.type === 'trailing-stop';
    const falling = stopLoss === (c.side === 'sell');
    const last = this.lastPrice(m.id);
    if (c.type === 'trailing-stop') {
      if (c.triggerPrice !== undefined) throw new Refused('invalid_trigger_price');
      const offset = c.trailingOffset;
      const valid =
        typeof offset === 'object' &&
        offset !== null &&
        ((offset.unit === 'ticks' && isPositiveSafeInt(offset.amount)) ||
          (offset.unit === 'bps' &&
            Number.isInteger(offset.amount) &&
            offset.amount >= 1 &&
            offset.amount <= 5_000));
      if (!valid) throw new Refused('invalid_trailing_offset');
      const wait: RefWait = {
        trigger: null,
        falling,
        offset: { unit: offset.unit, amount: offset.amount },
        best: 0,
        crossed: false,
        crossedAt: 0,
        triggered: false,
      };
      if (last !== null) ReferenceBook.follow(wait, last);
      return wait;
    }
    if (c.trailingOffset !== undefined) throw new Refused('invalid_trailing_offset');
    const trigger = c.triggerPrice;
    if (trigger === undefined || !isPositiveSafeInt(trigger)) throw new Refused('invalid_trigger_price');
    if (last !== null && ReferenceBook.reaches(falling, trigger, last))
      throw new Refused('trigger_would_fire');
    return { trigger, falling, offset: null, best: 0, crossed: false, crossedAt: 0, triggered: false };
  }

  private static reaches(falling: boolean, trigger: number | null, price: number): boolean {
    if (trigger === null) return false;
    return falling ? price <= trigger : price >= trigger;
  }

  /** A trailing stop's best price moves to `price` when that is better (or the first); its trigger follows. */
  private static follow(wait: RefWait, price: number): void {
    if (wait.best !== 0 && (wait.falling ? price <= wait.best : price >= wait.best)) return;
    const offset = wait.offset!;
    const distance =
      offset.unit === 'ticks'
        ? BigInt(offset.amount)
        : (BigInt(price) * BigInt(offset.amount) + BPS - 1n) / BPS;
    wait.best = price;
    wait.trigger = Number(wait.falling ? BigInt(price) - distance : BigInt(price) + distance);
  }

  /**
   * A trade at `price` in market `m`: every waiting trailing stop of the market follows it, then
   * the waiting orders whose trigger it reached join the queue: falling triggers first, the
   * highest first, then rising ones, the lowest first; equal triggers by time priority.
   */
  private cross(m: RefMarket, price: number): void {
    this.lastPrices.set(m.id, price);
    const waiting = this.open.filter((o) => o.marketId === m.id && isWaiting(o) && !o.wait!.crossed);
    for (const o of waiting) if (o.wait!.offset !== null) ReferenceBook.follow(o.wait!, price);
    const reached = waiting.filter((o) => ReferenceBook.reaches(o.wait!.falling, o.wait!.trigger, price));
    const rank = (o: RefOrder) => (o.wait!.falling ? -o.wait!.trigger! : o.wait!.trigger!);
    reached.sort(
      (a, b) =>
        Number(b.wait!.falling) - Number(a.wait!.falling) ||
        rank(a) - rank(b) ||
        a.priority - b.priority ||
        a.id - b.id,
    );
    for (const o of reached) {
      o.wait!.crossed = true;
      o.wait!.crossedAt = price;
      this.queue.push(o);
    }
  }

  /** Fires the queued orders in order; what their trades reach joins the end of the queue. */
  private fireQueue(time: number): void {
    for (let i = 0; i < this.queue.length; i++) this.fire(this.queue[i]!, time);
    this.queue = [];
  }

  private fire(order: RefOrder, time: number): void {
    const m = this.markets.get(order.marketId)!;
    const wait = order.wait!;
    wait.triggered = true;
    this.events.push({
      type: 'orderTriggered',
      order: this.state(order),
      lastPrice: wait.crossedAt as Price,
      time: time as Micros,
    });
    const isLimit = executionTypeOf(order.type) === 'limit';
    const budgetExhausted = this.match(m, order, time);
    const stopped = this.stopped;
    this.stopped = null;
    if (stopped !== null) this.end(order, 'canceled', stopped, time);
    else if (order.executed === order.volume) this.end(order, 'closed', null, time);
    else if (!isLimit) {
      if (order.executed > 0) this.end(order, 'closed', null, time);
      else
        this.end(
          order,
          'canceled',
          budgetExhausted ? CancelReason.insufficientFunds : CancelReason.noLiquidity,
          time,
        );
    } else {
      // It rests (it is in `open` already), queued by when it fired: behind its level (E30).
      order.priority = this.nextOrderId++;
    }
  }

  /** FOK: the makers met in priority order hold its volume before an own order its mode would not just cancel. */
  private fillable(m: RefMarket, taker: RefOrder): boolean {
    let volume = 0;
    for (const maker of this.makersFor(m, taker.side, taker.price)) {
      if (maker.userId === taker.userId) {
        if (taker.stp === 'cancel-oldest') continue;
        return false;
      }
      volume += maker.volume - maker.executed;
      if (volume >= taker.volume) return true;
    }
    return false;
  }

  /**
   * Matches `taker` against the book (it is not in `open` as a resting order of its own side's
   * opposite, so it never meets itself). Returns true when a market buy's budget ran out; sets
   * `stopped` when self-trade prevention ended the taker.
   */
  private match(m: RefMarket, taker: RefOrder, time: number): boolean {
    const isLimit = executionTypeOf(taker.type) === 'limit';
    while (taker.executed < taker.volume) {
      const maker = this.makersFor(m, taker.side, isLimit ? taker.price : null)[0];
      if (maker === undefined) break;
      if (maker.userId === taker.userId) {
        if (taker.stp === 'cancel-oldest') {
          this.end(maker, 'canceled', CancelReason.selfTrade, time);
          continue;
        }
        if (taker.stp === 'cancel-newest') {
          this.stopped = CancelReason.selfTradeNewest;
          break;
        }
        if (taker.stp === 'cancel-both') {
          this.end(maker, 'canceled', CancelReason.selfTradeBoth, time);
          this.stopped = CancelReason.selfTradeBoth;
          break;
        }
        const makerLeft = maker.volume - maker.executed;
        const takerLeft = taker.volume - taker.executed;
        if (makerLeft <= takerLeft) {
          this.end(maker, 'canceled', CancelReason.selfTradeDecrement, time);
          if (makerLeft === takerLeft) {
            this.stopped = CancelReason.selfTradeDecrement;
            break;
          }
          this.shrink(m, taker, makerLeft);
          continue;
        }
        this.shrink(m, maker, takerLeft);
        this.stopped = CancelReason.selfTradeDecrement;
        break;
      }
      let volume = Math.min(taker.volume - taker.executed, maker.volume - maker.executed);
      if (!isLimit && taker.side === 'buy') {
        const afford = this.affordable(m, maker.price, volume, taker.reserved, taker);
        if (afford < volume) {
          if (afford > 0) this.fill(m, taker, maker, afford, time);
          return true;
        }
        volume = afford;
      }
      this.fill(m, taker, maker, volume, time);
    }
    return false;
  }

  /** Self-trade decrement: the order's volume shrinks by `lots`; it gives back what it no longer needs. */
  private shrink(m: RefMarket, order: RefOrder, lots: number): void {
    order.volume -= lots;
    const remaining = order.volume - order.executed;
    let keep: bigint | null = null;
    if (order.side === 'sell') keep = this.baseUnits(m, remaining);
    else if (executionTypeOf(order.type) === 'limit') keep = this.holdFor(m, order.price, remaining);
    if (keep !== null && keep < order.reserved) this.release(m, order, order.reserved - keep);
    this.events.push({
      type: 'orderAmended',
      order: this.state(order),
      reason: AmendReason.selfTradeDecrement,
    });
  }

  /** Moves `amount` of what an order holds back to its owner's available balance (negative: holds more). */
  private release(m: RefMarket, order: RefOrder, amount: bigint): void {
    const account = this.account(order.userId, order.side === 'buy' ? m.quote : m.base);
    account.reserved -= amount;
    account.available += amount;
    order.reserved -= amount;
  }

  private amend(c: Extract<Command, { kind: 'amendOrder' }>, time: number): RejectCode | null {
    try {
      return this.amendChecked(c, time);
    } catch (error) {
      if (error instanceof Refused) return error.code;
      throw error;
    }
  }

  private amendChecked(c: Extract<Command, { kind: 'amendOrder' }>, time: number): RejectCode | null {
    const order = this.orders.get(c.orderId);
    if (order === undefined || order.userId !== c.userId || order.status !== 'open') return 'order_not_found';
    if (isWaiting(order)) return this.amendWaiting(order, c);
    if (c.triggerPrice !== undefined) return 'invalid_trigger_price';
    if (c.price === undefined && c.volume === undefined && c.clientOrderId === undefined)
      return 'nothing_to_amend';
    const m = this.markets.get(order.marketId)!;
    const price = c.price ?? order.price;
    if (!isPositiveSafeInt(price)) return 'invalid_price';
    const volume = c.volume ?? order.volume;
    if (!isPositiveSafeInt(volume)) return 'invalid_volume';
    if (volume <= order.executed) return 'volume_not_above_executed';
    if (volume < m.ordermin) return 'below_ordermin';
    if (c.clientOrderId !== undefined && c.clientOrderId !== null)
      this.checkClientOrderId(order.userId, c.clientOrderId, order);
    const remaining = volume - order.executed;
    const moves = price !== order.price || volume > order.volume;
    const resize = moves || volume !== order.volume;
    let keep = order.reserved;
    if (resize) {
      const value = this.costOf(m, price, volume);
      if (value < 1n) return 'order_value_too_small';
      if (value > MAX || this.baseUnits(m, volume) > MAX) return 'too_large';
      if (order.side === 'buy') {
        const hold = this.holdFor(m, price, remaining);
        if (hold > MAX) return 'too_large';
        keep = moves ? hold : hold < order.reserved ? hold : order.reserved;
      } else keep = this.baseUnits(m, remaining);
      const asset = order.side === 'buy' ? m.quote : m.base;
      if (keep > order.reserved && this.balance(order.userId, asset).available < keep - order.reserved)
        return 'insufficient_funds';
    }
    if (moves) {
      if (this.levelTotal(m, order.side, price, order) + BigInt(remaining) > MAX) return 'too_large';
      if (order.postOnly && this.crosses(m, order.side, price)) return 'post_only_would_take';
    }

    if (moves) order.priority = this.nextOrderId++;
    order.price = price;
    order.volume = volume;
    this.release(m, order, order.reserved - keep);
    if (c.clientOrderId !== undefined) order.clientOrderId = c.clientOrderId;
    this.events.push({ type: 'orderAmended', order: this.state(order), reason: AmendReason.user });
    if (!moves) return null;
    // It matches as a taker would, out of the book meanwhile (it meets only the other side anyway).
    const budgetExhausted = this.match(m, order, time);
    if (budgetExhausted) throw new Error('reference: an amended limit order has no budget');
    const stopped = this.stopped;
    this.stopped = null;
    if (stopped !== null) this.end(order, 'canceled', stopped, time);
    else if (order.executed === order.volume) this.end(order, 'closed', null, time);
    this.fireQueue(time);
    return null;
  }

  /**
   * Amends a waiting conditional order (E32): a new trigger (not a trailing stop's), limit price
   * (-limit types), volume or client id; the hold is what a new order of its kind would hold (a
   * market-type buy keeps its own). It stays outside the book, so nothing matches.
   */
  private amendWaiting(order: RefOrder, c: Extract<Command, { kind: 'amendOrder' }>): RejectCode | null {
    const m = this.markets.get(order.marketId)!;
    const wait = order.wait!;
    if (
      c.price === undefined &&
      c.volume === undefined &&
      c.clientOrderId === undefined &&
      c.triggerPrice === undefined
    )
      return 'nothing_to_amend';
    const isLimit = executionTypeOf(order.type) === 'limit';
    if (c.price !== undefined && !isLimit) return 'price_not_allowed';
    const price = c.price ?? order.price;
    if (isLimit && !isPositiveSafeInt(price)) return 'invalid_price';
    const trigger = c.triggerPrice ?? wait.trigger;
    if (c.triggerPrice !== undefined) {
      if (wait.offset !== null) return 'invalid_trigger_price';
      if (!isPositiveSafeInt(c.triggerPrice)) return 'invalid_trigger_price';
      const last = this.lastPrice(m.id);
      if (last !== null && ReferenceBook.reaches(wait.falling, c.triggerPrice, last))
        return 'trigger_would_fire';
    }
    const volume = c.volume ?? order.volume;
    if (!isPositiveSafeInt(volume)) return 'invalid_volume';
    if (volume < m.ordermin) return 'below_ordermin';
    // As at placement (E8): a sell's and a limit price's volume in base units; a market-type buy's
    // volume is only a ceiling (E47).
    if ((order.side === 'sell' || isLimit) && this.baseUnits(m, volume) > MAX) return 'too_large';
    if (c.clientOrderId !== undefined && c.clientOrderId !== null)
      this.checkClientOrderId(order.userId, c.clientOrderId, order);
    // E23 for every order with a limit price, whichever side.
    if (isLimit && this.costOf(m, price, volume) < 1n) return 'order_value_too_small';
    let keep = order.reserved;
    if (order.side === 'sell') keep = this.baseUnits(m, volume);
    else if (isLimit) {
      keep = this.holdFor(m, price, volume);
      if (keep > MAX) return 'too_large';
    }
    const asset = order.side === 'buy' ? m.quote : m.base;
    if (keep > order.reserved && this.balance(order.userId, asset).available < keep - order.reserved)
      return 'insufficient_funds';

    if (trigger !== wait.trigger || volume > order.volume) order.priority = this.nextOrderId++;
    wait.trigger = trigger;
    order.price = price;
    order.volume = volume;
    this.release(m, order, order.reserved - keep);
    if (c.clientOrderId !== undefined) order.clientOrderId = c.clientOrderId;
    this.events.push({ type: 'orderAmended', order: this.state(order), reason: AmendReason.user });
    return null;
  }

  /**
   * What a market buy with `budget` gets before its budget runs out, walking the asks in
   * price-time order without its own orders and without changing anything; `wanted` when the
   * budget does not run out first.
   */
  private fundsBuy(m: RefMarket, userId: number, wanted: number, budget: bigint): number {
    const asks = this.book()
      .filter((o) => o.marketId === m.id && o.side === 'sell' && o.userId !== userId)
      .sort((a, b) => a.price - b.price || a.priority - b.priority);
    const paid = { fee: 0n, exactFee: 0n };
    let bought = 0;
    for (const maker of asks) {
      if (bought === wanted) break;
      const want = Math.min(wanted - bought, maker.volume - maker.executed);
      const v = this.affordable(m, maker.price, want, budget, paid);
      bought += v;
      if (v < want) return bought;
      const cost = this.costOf(m, maker.price, v);
      const fee = ReferenceBook.feeDue(paid, cost, m.takerFee);
      budget -= cost + fee;
      paid.fee += fee;
      paid.exactFee += cost * BigInt(m.takerFee);
    }
    return wanted;
  }

  private fill(m: RefMarket, taker: RefOrder, maker: RefOrder, volume: number, time: number): void {
    const cost = this.costOf(m, maker.price, volume);
    const takerFee = ReferenceBook.feeDue(taker, cost, m.takerFee);
    const makerFee = ReferenceBook.feeDue(maker, cost, m.makerFee);
    const base = this.baseUnits(m, volume);
    const buyer = taker.side === 'buy' ? taker : maker;
    const seller = taker.side === 'buy' ? maker : taker;
    const buyerFee = buyer === taker ? takerFee : makerFee;
    const sellerFee = seller === taker ? takerFee : makerFee;

    buyer.reserved -= cost + buyerFee;
    this.account(buyer.userId, m.quote).reserved -= cost + buyerFee;
    this.account(buyer.userId, m.base).available += base;
    seller.reserved -= base;
    this.account(seller.userId, m.base).reserved -= base;
    this.account(seller.userId, m.quote).available += cost - sellerFee;
    this.fees.set(m.quote, this.fees.get(m.quote)! + takerFee + makerFee);

    taker.executed += volume;
    taker.cost += cost;
    taker.fee += takerFee;
    taker.exactFee += cost * BigInt(m.takerFee);
    maker.executed += volume;
    maker.cost += cost;
    maker.fee += makerFee;
    maker.exactFee += cost * BigInt(m.makerFee);

    const trade: Trade = {
      id: this.nextTradeId++ as TradeId,
      marketId: m.id as MarketId,
      price: maker.price as Price,
      volume: volume as Volume,
      cost: toNumber(cost) as Amount,
      takerOrderId: taker.id as OrderId,
      makerOrderId: maker.id as OrderId,
      takerUserId: taker.userId as UserId,
      makerUserId: maker.userId as UserId,
      takerSide: taker.side,
      takerType: executionTypeOf(taker.type),
      takerFee: toNumber(takerFee) as Amount,
      makerFee: toNumber(makerFee) as Amount,
      time: time as Micros,
    };
    this.events.push({ type: 'trade', trade });
    this.cross(m, maker.price);
    if (maker.executed === maker.volume) this.end(maker, 'closed', null, time);
  }

  private cancel(userId: number, orderId: number, time: number): RejectCode | null {
    const order = this.orders.get(orderId);
    if (order === undefined || order.userId !== userId || order.status !== 'open') return 'order_not_found';
    this.end(order, 'canceled', CancelReason.user, time);
    return null;
  }

  /** Final status: leaves the book, gives back what the order still holds. */
  private end(order: RefOrder, status: 'closed' | 'canceled', reason: string | null, time: number): void {
    const m = this.markets.get(order.marketId)!;
    const account = this.account(order.userId, order.side === 'buy' ? m.quote : m.base);
    account.reserved -= order.reserved;
    account.available += order.reserved;
    order.reserved = 0n;
    order.status = status;
    order.reason = reason;
    order.closeTime = time;
    this.open = this.open.filter((o) => o !== order);
    this.events.push({ type: 'orderDone', order: this.state(order) });
  }

  state(o: RefOrder): OrderState {
    const state: { -readonly [K in keyof OrderState]: OrderState[K] } = {
      id: o.id as OrderId,
      userId: o.userId as UserId,
      marketId: o.marketId as MarketId,
      side: o.side,
      type: o.type,
      price: o.price as Price,
      volume: o.volume as Volume,
      executed: o.executed as Volume,
      status: o.status,
      reason: o.reason,
      openTime: o.openTime as Micros,
      closeTime: o.closeTime as Micros | null,
      cost: toNumber(o.cost) as Amount,
      fee: toNumber(o.fee) as Amount,
      feeExcess: toNumber(o.fee * FEE_SCALE - o.exactFee),
      reserved: toNumber(o.reserved) as Amount,
    };
    // The controls appear only when they differ from their defaults.
    if (o.timeInForce !== 'GTC') state.timeInForce = o.timeInForce;
    if (o.postOnly) state.postOnly = true;
    if (o.clientOrderId !== null) state.clientOrderId = o.clientOrderId;
    if (o.stp !== 'cancel-oldest') state.stp = o.stp;
    if (o.expireTime !== 0) state.expireTime = o.expireTime as Micros;
    if (o.priority !== o.id) state.priority = o.priority;
    const wait = o.wait;
    if (wait !== null) {
      if (wait.trigger !== null) state.triggerPrice = wait.trigger as Price;
      if (wait.offset !== null) state.trailingOffset = { ...wait.offset };
      if (wait.offset !== null && wait.best !== 0) state.trailingBest = wait.best as Price;
      if (wait.triggered) state.triggered = true;
    }
    return state;
  }
}
