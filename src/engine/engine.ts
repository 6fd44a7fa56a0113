/**
 * The matching engine: pure and synchronous. `apply` takes one command with its time and returns
 * the events it caused, or a rejection that changed nothing (except deadlines that were due at
 * its time: they fire first, whatever the command, and a rejection then carries their events).
 * Same commands and times in, same events and state out: no clock, no randomness, no I/O.
 *
 * Stages per order, as in exchange-core: risk (reserve funds or reject) -> match (price-time,
 * maker's price) -> settle each fill (cost rounded down, each order's fees rounded up over its
 * fills so far, see docs/money.md) -> rest or finish (release what is left). The order controls
 * (time in force, post-only, client ids, self-trade modes, amend, cancel-all, the dead man's
 * switch, batches; docs/interface-decisions.md, Part E 12-24) hook into those stages.
 */
import { formatUnits, MAX_DECIMALS, MAX_UNITS, mulDiv, pow10 } from '../domain/money.js';
import {
  AmendReason,
  type Amount,
  type AssetCode,
  type AssetSpec,
  CancelReason,
  CONDITIONAL_TYPES,
  type ConditionalType,
  executionTypeOf,
  FEE_RATE_DECIMALS,
  fallsToTrigger,
  MAX_TRAILING_BPS,
  type MarketId,
  type MarketSpec,
  MIN_TRAILING_BPS,
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
} from '../domain/types.js';
import { type Account, AccountBook } from './account-book.js';
import { BookSide, type Level, type RestingOrder } from './book-side.js';
import { type Deadline, DeadlineHeap, DeadlineKind } from './deadlines.js';
import {
  type EngineStateView,
  findViolation,
  hasDefaultControls,
  hashState,
  InternalStateError,
} from './engine-state.js';
import { OrderIndex } from './order-index.js';
import { TriggerHeap, WaitState } from './trigger-index.js';
import {
  type BookLevels,
  type ChangeSet,
  type Command,
  type CommandResult,
  DEFAULT_MAX_OPEN_ORDERS_PER_USER,
  type EngineEvent,
  type EngineOptions,
  type EngineSnapshot,
  type LastPrice,
  type LevelKey,
  MAX_BATCH_ORDERS,
  MAX_CANCEL_ALL_AFTER,
  MAX_EXPIRY_AHEAD,
  type OrderState,
  type PlaceOrder,
  type PlaceResult,
  type RejectCode,
  type Rejection,
  type Sequences,
  type SwitchState,
  type Trade,
} from './types.js';

const FEE_SCALE = 10 ** FEE_RATE_DECIMALS;
/** Fee rates above 10% are refused: no real venue charges them and they are almost surely a typo. */
const MAX_FEE_RATE = FEE_SCALE / 10;
const ASSET_CODE = /^[A-Z0-9]{2,12}$/;
/** Drained orders kept for reuse: enough for any batch between two drains, bounded in memory. */
const MAX_SPARE = 65_536;

/*
 * Fees round up, per order and in the venue's favour: after any fill an order has paid
 * ceil(Σ costᵢ × rateᵢ / 10^8) over its fills so far (the rate may differ per fill: an order can
 * take first and rest later), so a fee that is due is never zero and splitting an order never
 * pays. Each fill charges that ceiling minus what was already charged. To know it exactly without
 * keeping Σ costᵢ × rateᵢ (which can pass 2^53), an order keeps its `feeExcess`: what it has been
 * charged beyond the exact fee, in 10^-8 quote units, 0 <= feeExcess < 10^8. With x = cost × rate
 * = q × 10^8 + r (0 <= r < 10^8), a fill owes ceil((x - feeExcess) / 10^8), which is q + 1 and
 * leaves 10^8 - (r - feeExcess) when r > feeExcess, else q and leaves feeExcess - r.
 */

/** What a fill of `cost` at `rate` charges an order whose charges exceed its exact fees by `excess`. */
function feeDue(cost: number, rate: number, excess: number): number {
  if (rate === 0) return 0;
  const q = mulDiv(cost, rate, FEE_SCALE, 'floor');
  // (cost mod 10^8) × rate < 10^15: exact in a double, and congruent to cost × rate mod 10^8.
  const r = ((cost % FEE_SCALE) * rate) % FEE_SCALE;
  return r > excess ? q + 1 : q;
}

/** The excess after that fill: charged minus exact stays in [0, 10^8). */
function excessAfter(cost: number, rate: number, excess: number): number {
  if (rate === 0) return excess;
  const r = ((cost % FEE_SCALE) * rate) % FEE_SCALE;
  return r > excess ? FEE_SCALE - (r - excess) : excess - r;
}

interface Market {
  readonly spec: MarketSpec;
  readonly base: number;
  readonly quote: number;
  readonly baseUnitsPerLot: number;
  /** cost (quote units) = floor(price * volume * costMultiplier / costDivisor) */
  readonly costMultiplier: number;
  readonly costDivisor: number;
  readonly maxFee: number;
  readonly bids: BookSide;
  readonly asks: BookSide;
  /**
   * Levels changed since the last drain, in first-change order, each with its total before that
   * change: the first `dirtyCount` entries of `dirtyKeys` and `dirtyBefore`. Keyed by price for
   * bids and by −price for asks (prices are positive), so one list keeps the order of changes
   * across both sides. Arrays overwritten at each drain rather than a Map cleared: a cleared Map
   * reallocates its table and regrows it, and those tables were a third of what survived the
   * young generation in bench:engine's deep book.
   *
   * A price is listed once per drain, at its first change, through `Level.mark` (see markLevel),
   * with one exception: a level emptied and created again within a drain is listed again, with
   * total 0 before; drainChanges keeps only the first entry of a price.
   */
  readonly dirtyKeys: number[];
  readonly dirtyBefore: number[];
  dirtyCount: number;
  /** The last trade price in ticks (0: no trade yet): what conditional orders trigger on. */
  lastPrice: number;
  /** Waiting conditional orders that fire when the last price falls to their trigger. */
  readonly falling: TriggerHeap<LiveOrder>;
  /** Waiting conditional orders that fire when the last price rises to their trigger. */
  readonly rising: TriggerHeap<LiveOrder>;
  /** The waiting trailing stops (also in a heap): each trade moves their best price. */
  readonly trailing: Set<LiveOrder>;
}

/**
 * An order the engine holds. Its objects are recycled (see Engine.spareOrders): a finished order,
 * once drained, is referenced by nothing, and reusing it keeps the young generation free of the
 * one kind of object that would otherwise survive in bulk (every resting order), which is what
 * made scavenges expensive (bench:engine's deep book: 0.6x the commands per CPU-second without
 * it). Fields are `declare`d and set by the constructor and by `init` in one order, so every
 * LiveOrder has the same shape whether new or reused.
 */
class LiveOrder implements RestingOrder {
  declare prev: RestingOrder | null;
  declare next: RestingOrder | null;
  declare level: RestingOrder['level'];
  declare remaining: number;
  declare userId: number;
  declare id: number;
  declare price: number;
  declare market: Market;
  declare side: Side;
  /** The owner's ledger account, looked up once instead of at every fill and at the end. */
  declare account: Account;
  declare reserved: number;
  /** True while the order is listed in the engine's `dirtyOrders` (changed since the last drain). */
  declare dirty: boolean;
  /**
   * The state last built for an event, while nothing has changed since (else null): the next drain
   * reuses it instead of building the same object again. Dropped at the drain, so a resting order
   * does not keep it alive.
   */
  declare snap: OrderState | null;
  declare status: OrderStatus;
  declare type: OrderType;
  declare volume: number;
  declare openTime: number;
  declare reason: string | null;
  declare closeTime: number | null;
  declare cost: number;
  declare fee: number;
  /** Fees charged beyond the exact fee, in 10^-8 quote units (see feeDue). */
  declare feeExcess: number;
  // The order controls (issue 21), last: matching reads them only on a self-trade.
  /** Time priority within its level: its id, unless an amend sent it to the back (OrderState.priority). */
  declare priority: number;
  /**
   * What the placeOrder asked for beyond today's order: DEFAULT_CONTROLS, shared, for an order
   * that asked for nothing (most orders), so they cost one field rather than five.
   */
  declare controls: OrderControls;
  /** Its place in the engine's deadline heap while it rests with an expiry, else -1. */
  declare heapIndex: number;
  /** A conditional order's trigger and whether it fired; null for limit and market orders. */
  declare wait: WaitState | null;

  // The constructor assigns every field itself rather than calling init: V8 sizes an object's
  // in-object fields from the constructor's own `this.x =` assignments, and fields it did not
  // expect would live in a separate, growing property array. The order is the object's layout:
  // what matching and cancels read and write on orders they reach through links (the queue
  // links, remaining volume, owner, id, price) comes first, in as few cache lines as possible.
  constructor(
    id: number,
    userId: number,
    account: Account,
    market: Market,
    side: Side,
    type: OrderType,
    price: number,
    volume: number,
    openTime: number,
  ) {
    this.prev = null;
    this.next = null;
    this.level = null;
    this.remaining = volume;
    this.userId = userId;
    this.id = id;
    this.price = price;
    this.market = market;
    this.side = side;
    this.account = account;
    this.reserved = 0;
    this.dirty = false;
    this.snap = null;
    this.status = 'open';
    this.type = type;
    this.volume = volume;
    this.openTime = openTime;
    this.reason = null;
    this.closeTime = null;
    this.cost = 0;
    this.fee = 0;
    this.feeExcess = 0;
    this.priority = id;
    this.controls = DEFAULT_CONTROLS;
    this.heapIndex = -1;
    this.wait = null;
  }

  /** Reinitialises every field as the constructor does: a new order, open, nothing executed or reserved. */
  init(
    id: number,
    userId: number,
    account: Account,
    market: Market,
    side: Side,
    type: OrderType,
    price: number,
    volume: number,
    openTime: number,
  ): this {
    this.prev = null;
    this.next = null;
    this.level = null;
    this.remaining = volume;
    this.userId = userId;
    this.id = id;
    this.price = price;
    this.market = market;
    this.side = side;
    this.account = account;
    this.reserved = 0;
    this.dirty = false;
    this.snap = null;
    this.status = 'open';
    this.type = type;
    this.volume = volume;
    this.openTime = openTime;
    this.reason = null;
    this.closeTime = null;
    this.cost = 0;
    this.fee = 0;
    this.feeExcess = 0;
    this.priority = id;
    this.controls = DEFAULT_CONTROLS;
    this.heapIndex = -1;
    this.wait = null;
    return this;
  }

  /** Sets the controls a placeOrder asked for (the defaults are set by the constructor and init). */
  control(controls: OrderControls): this {
    this.controls = controls;
    return this;
  }

  get timeInForce(): TimeInForce {
    return this.controls.timeInForce;
  }
  get postOnly(): boolean {
    return this.controls.postOnly;
  }
  get stp(): SelfTradeMode {
    return this.controls.stp;
  }
  /** GTD: when it expires (Micros); 0 otherwise. */
  get expireTime(): number {
    return this.controls.expireTime;
  }
  get clientOrderId(): string | null {
    return this.controls.clientOrderId;
  }
  /** An amend's new client order id (the controls object may be shared, so it is replaced). */
  set clientOrderId(clientOrderId: string | null) {
    this.controls = { ...this.controls, clientOrderId };
  }

  // A GTD order is its own entry in the deadline heap (Deadline).
  get due(): number {
    return this.expireTime;
  }
  get deadlineKind(): DeadlineKind {
    return DeadlineKind.expiry;
  }
  get deadlineKey(): number {
    return this.id;
  }

  state(): OrderState {
    const state: OrderState = {
      id: this.id as OrderId,
      userId: this.userId as UserId,
      marketId: this.market.spec.id,
      side: this.side,
      type: this.type,
      price: this.price as Price,
      volume: this.volume as Volume,
      executed: (this.volume - this.remaining) as Volume,
      status: this.status,
      reason: this.reason,
      openTime: this.openTime as Micros,
      closeTime: this.closeTime as Micros | null,
      cost: this.cost as Amount,
      fee: this.fee as Amount,
      feeExcess: this.feeExcess,
      reserved: this.reserved as Amount,
    };
    // The shared defaults, no amend and no trigger: the common case, told apart without reading each control.
    if (this.wait === null && this.controls === DEFAULT_CONTROLS && this.priority === this.id) return state;
    const controlled = hasDefaultControls(this) ? state : this.withControls(state);
    return this.wait === null ? controlled : this.withWait(controlled, this.wait);
  }

  /** The state with a conditional order's trigger fields. */
  private withWait(state: OrderState, wait: WaitState): OrderState {
    const full: { -readonly [K in keyof OrderState]: OrderState[K] } = { ...state };
    // A trailing stop without a best price yet has no trigger yet.
    if (wait.offset === null || wait.best > 0) full.triggerPrice = wait.trigger as Price;
    if (wait.offset !== null) full.trailingOffset = wait.offset;
    if (wait.offset !== null && wait.best > 0) full.trailingBest = wait.best as Price;
    if (wait.triggered) full.triggered = true;
    return full;
  }

  /** True when the order matches as a limit order: `limit`, and a triggered `-limit` type. */
  get asLimit(): boolean {
    return this.type === 'limit' || executionTypeOf(this.type) === 'limit';
  }

  /** The state with the controls that differ from their defaults (an order without any has none). */
  private withControls(state: OrderState): OrderState {
    const full: { -readonly [K in keyof OrderState]: OrderState[K] } = { ...state };
    if (this.timeInForce !== 'GTC') full.timeInForce = this.timeInForce;
    if (this.postOnly) full.postOnly = true;
    if (this.clientOrderId !== null) full.clientOrderId = this.clientOrderId;
    if (this.stp !== 'cancel-oldest') full.stp = this.stp;
    if (this.expireTime !== 0) full.expireTime = this.expireTime as Micros;
    if (this.priority !== this.id) full.priority = this.priority;
    return full;
  }
}

/** What a placeOrder asked for beyond today's order (engine/types.ts, PlaceOrder). */
interface OrderControls {
  readonly timeInForce: TimeInForce;
  readonly postOnly: boolean;
  readonly clientOrderId: string | null;
  readonly stp: SelfTradeMode;
  readonly expireTime: number;
}

const DEFAULT_CONTROLS: OrderControls = {
  timeInForce: 'GTC',
  postOnly: false,
  clientOrderId: null,
  stp: 'cancel-oldest',
  expireTime: 0,
};
const TIMES_IN_FORCE: readonly string[] = ['GTC', 'IOC', 'FOK', 'GTD'] satisfies TimeInForce[];
const SELF_TRADE_MODES: readonly string[] = [
  'cancel-oldest',
  'cancel-newest',
  'cancel-both',
  'decrement',
] satisfies SelfTradeMode[];
const CLIENT_ORDER_ID = /^[A-Za-z0-9_-]{1,36}$/;

/** A trailing offset as the engine keeps it (its own copy), or null when it is not a valid one. */
function readTrailingOffset(offset: TrailingOffset | undefined): TrailingOffset | null {
  if (typeof offset !== 'object' || offset === null) return null;
  const { unit, amount } = offset;
  if (unit === 'ticks' && isPositiveInt(amount) && amount <= MAX_UNITS) return { unit, amount };
  if (unit === 'bps' && Number.isInteger(amount) && amount >= MIN_TRAILING_BPS && amount <= MAX_TRAILING_BPS)
    return { unit, amount };
  return null;
}

/**
 * Moves a trailing stop's best price to `price` when it is better (higher for a sell, lower for a
 * buy, or the first), and its trigger with it: the offset below (a sell) or above (a buy), a
 * percentage rounded to a whole tick away from the best price. True when it moved.
 */
function follow(wait: WaitState, price: number): boolean {
  if (wait.best !== 0 && (wait.falling ? price <= wait.best : price >= wait.best)) return false;
  const offset = wait.offset!;
  const distance = offset.unit === 'ticks' ? offset.amount : mulDiv(price, offset.amount, BPS, 'ceil');
  wait.best = price;
  wait.trigger = wait.falling ? price - distance : price + distance;
  return true;
}

/** Basis points in a whole. */
const BPS = 10_000;

/** A user's armed dead man's switch: its own entry in the deadline heap. */
class UserSwitch implements Deadline {
  heapIndex = -1;
  readonly deadlineKind = DeadlineKind.deadMansSwitch;
  constructor(
    readonly userId: number,
    public due: number,
  ) {}
  get deadlineKey(): number {
    return this.userId;
  }
}

const reject = (code: RejectCode, message: string, field?: string): CommandResult => ({
  ok: false,
  error: field === undefined ? { code, message } : ({ code, message, field } satisfies Rejection),
});

const isPositiveInt = (n: number): boolean => Number.isSafeInteger(n) && n > 0;

export class Engine {
  private readonly assets: AssetSpec[] = [];
  private readonly assetIndex = new Map<string, number>();
  private readonly markets = new Map<number, Market>();
  /** The same markets by id (ids are small and dense): every order finds its market here. */
  private readonly marketsById: (Market | undefined)[] = [];
  private readonly marketByPair = new Map<string, Market>();
  private readonly accountBook = new AccountBook((i) => this.assets[i]!.code);
  private readonly openOrders = new OrderIndex<LiveOrder>();
  /** Counts drains; a Level marked with the current value is already in its market's dirtyLevels. */
  private drainEpoch = 1;
  /**
   * Orders changed since the last drain, in first-change order, each once (`LiveOrder.dirty`). An
   * array plus a flag instead of a Map: a Map cleared at every drain regrows and rehashes each time.
   */
  private readonly dirtyOrders: LiveOrder[] = [];
  /**
   * How many entries of `dirtyOrders` are current. The array is overwritten rather than emptied,
   * so it does not regrow (and reallocate) after every drain; entries past the count are stale.
   */
  private dirtyCount = 0;
  /** Finished orders already drained, for reuse by new orders (see LiveOrder); at most MAX_SPARE. */
  private readonly spareOrders: LiveOrder[] = [];
  private nextOrderId = 1;
  private nextTradeId = 1;
  private nextMarketId = 1;
  /**
   * Events of the command being applied: the first `eventCount` entries, copied into an array of
   * their exact size when the command is done. Pushing to a fresh array instead grew it from 1 to
   * 17 slots at the second event (a command with trades has several), and that array is returned.
   * Entries are cleared after the copy, so no event outlives its command here.
   */
  private readonly eventScratch: (EngineEvent | null)[] = [];
  private eventCount = 0;
  /** GTD expiries of resting orders and armed dead man's switches, earliest first. */
  private readonly deadlines = new DeadlineHeap<LiveOrder | UserSwitch>();
  /** Armed dead man's switches by user id. */
  private readonly switches = new Map<number, UserSwitch>();
  /** Users whose switch changed since the last drain, with its trigger time now (0: none armed). */
  private readonly dirtySwitches = new Map<number, number>();
  /** Per user id, its resting orders that have a client order id, by that id. */
  private readonly clientIds = new Map<number, Map<string, LiveOrder>>();
  /**
   * Set by `match` when self-trade prevention ends the taker (modes other than cancel-oldest): the
   * reason it ends with. The caller finishes the taker and clears it.
   */
  private takerStopped: string | null = null;
  /** Conditional orders whose trigger a trade reached, in the order to fire them (see cross). */
  private readonly crossed: LiveOrder[] = [];

  /** See EngineOptions: every replica and replay of one journal must use the same. */
  private readonly maxOpenOrdersPerUser: number;

  constructor(options: EngineOptions = {}) {
    this.maxOpenOrdersPerUser = options.maxOpenOrdersPerUser ?? DEFAULT_MAX_OPEN_ORDERS_PER_USER;
  }

  static restore(snapshot: EngineSnapshot, options: EngineOptions = {}): Engine {
    const engine = new Engine(options);
    for (const asset of snapshot.assets) engine.addAsset(asset);
    for (const market of snapshot.markets) engine.addMarket(market);
    for (const t of snapshot.totals) {
      const i = engine.assetIndex.get(t.asset);
      if (i !== undefined) engine.accountBook.restoreTotals(i, t.netDeposits, t.fees);
    }
    for (const b of snapshot.balances) {
      const i = engine.assetIndex.get(b.asset);
      if (i === undefined) throw new Error(`balance in unknown asset ${b.asset}`);
      engine.accountBook.restoreBalance(b.userId, i, b.available, b.reserved);
    }
    // Each level queues its orders in time priority; an amended order's is not its id.
    const priority = (o: OrderState): number => o.priority ?? o.id;
    const queued = snapshot.openOrders.some((o) => o.priority !== undefined)
      ? [...snapshot.openOrders].sort((a, b) => priority(a) - priority(b))
      : snapshot.openOrders;
    for (const o of queued) {
      const market = engine.markets.get(o.marketId);
      if (market === undefined) throw new Error(`open order ${o.id} in unknown market ${o.marketId}`);
      const account = engine.accountBook.account(o.userId);
      const order = new LiveOrder(
        o.id,
        o.userId,
        account,
        market,
        o.side,
        o.type,
        o.price,
        o.volume,
        o.openTime,
      );
      order.remaining = o.volume - o.executed;
      order.cost = o.cost;
      order.fee = o.fee;
      order.feeExcess = o.feeExcess;
      order.reserved = o.reserved;
      order.priority = o.priority ?? o.id;
      order.control({
        timeInForce: o.timeInForce ?? 'GTC',
        postOnly: o.postOnly === true,
        clientOrderId: o.clientOrderId ?? null,
        stp: o.stp ?? 'cancel-oldest',
        expireTime: o.expireTime ?? 0,
      });
      if (o.triggerPrice !== undefined || o.trailingOffset !== undefined) {
        const falling = fallsToTrigger(o.type as ConditionalType, o.side);
        const trigger = o.triggerPrice ?? (falling ? 0 : Number.MAX_SAFE_INTEGER);
        order.wait = new WaitState(trigger, falling, o.trailingOffset ?? null, o.trailingBest ?? 0);
        order.wait.triggered = o.triggered === true;
        if (!order.wait.triggered) {
          engine.await(order);
          continue;
        }
      }
      engine.rest(order, (o.side === 'buy' ? market.bids : market.asks).level(o.price));
    }
    for (const last of snapshot.lastPrices ?? []) {
      const market = engine.markets.get(last.marketId);
      if (market !== undefined) market.lastPrice = last.price;
    }
    for (const sw of snapshot.switches ?? []) {
      if (sw.triggerTime > 0) engine.arm(sw.userId, sw.triggerTime);
    }
    engine.dirtySwitches.clear();
    engine.nextOrderId = snapshot.sequences.nextOrderId;
    engine.nextTradeId = snapshot.sequences.nextTradeId;
    engine.nextMarketId = snapshot.sequences.nextMarketId;
    return engine;
  }

  apply(command: Command, time: Micros): CommandResult {
    this.eventCount = 0;
    // Deadlines that are due fire first, whatever the command: the outcome does not depend on
    // whether a timer's tick or some other command came first.
    if (this.deadlines.size !== 0 && this.deadlines.peek()!.due <= time) this.fireDeadlines(time);
    let result: CommandResult | undefined;
    switch (command.kind) {
      case 'placeOrder':
        result = this.placeOrder(command, time);
        break;
      case 'cancelOrder':
        result = this.cancelOrder(command.userId, command.orderId, time);
        break;
      case 'deposit':
        result = this.deposit(command.userId, command.asset, command.amount, time);
        break;
      case 'withdraw':
        result = this.withdraw(command.userId, command.asset, command.amount, time);
        break;
      case 'createAsset':
        result = this.createAsset(command);
        break;
      case 'createMarket':
        result = this.createMarket(command);
        break;
      case 'cancelClientOrder':
        result = this.cancelClientOrder(command.userId, command.clientOrderId, time);
        break;
      case 'amendOrder':
        result = this.amendOrder(command, time);
        break;
      case 'cancelAllOrders':
        result = this.cancelAllOrders(command.userId, command.marketId, time);
        break;
      case 'cancelAllAfter':
        result = this.cancelAllAfter(command.userId, command.timeout, time);
        break;
      case 'placeOrders':
        return this.placeOrders(command.orders, time);
      case 'tick':
        break;
    }
    if (result === undefined) return { ok: true, events: this.takeEvents() };
    // Refused, but deadlines fired before it: those happened (CommandResult).
    return this.eventCount === 0 ? result : { ...result, events: this.takeEvents() };
  }

  // ---- catalogue ---------------------------------------------------------------------------

  private createAsset(c: Extract<Command, { kind: 'createAsset' }>): CommandResult | undefined {
    if (!ASSET_CODE.test(c.code))
      return reject('invalid_amount', 'The code must be 2 to 12 upper-case letters or digits.', 'code');
    if (this.assetIndex.has(c.code)) return reject('asset_exists', `Asset ${c.code} already exists.`, 'code');
    if (!Number.isInteger(c.decimals) || c.decimals < 0 || c.decimals > MAX_DECIMALS) {
      return reject(
        'invalid_decimals',
        `The decimals must be an integer from 0 to ${MAX_DECIMALS}.`,
        'decimals',
      );
    }
    const asset: AssetSpec = { code: c.code as AssetCode, name: c.name, type: c.type, decimals: c.decimals };
    this.addAsset(asset);
    this.emit({ type: 'assetCreated', asset });
    return undefined;
  }

  private addAsset(asset: AssetSpec): void {
    const index = this.assets.length;
    this.assets.push(asset);
    this.assetIndex.set(asset.code, index);
    this.accountBook.addAsset(index);
  }

  private createMarket(c: Extract<Command, { kind: 'createMarket' }>): CommandResult | undefined {
    const base = this.assetIndex.get(c.base);
    const quote = this.assetIndex.get(c.quote);
    if (base === undefined) return reject('unknown_asset', `Unknown asset ${c.base}.`, 'base');
    if (quote === undefined) return reject('unknown_asset', `Unknown asset ${c.quote}.`, 'quote');
    if (base === quote) return reject('unknown_asset', 'The base and quote must differ.', 'quote');
    if (this.marketByPair.has(`${c.base}${c.quote}`))
      return reject('market_exists', `Market ${c.base}/${c.quote} already exists.`);
    const baseDecimals = this.assets[base]!.decimals;
    const quoteDecimals = this.assets[quote]!.decimals;
    if (!Number.isInteger(c.lotDecimals) || c.lotDecimals < 0 || c.lotDecimals > baseDecimals) {
      return reject(
        'invalid_decimals',
        `The lot decimals must be an integer from 0 to ${baseDecimals} (the base asset's).`,
        'lot_decimals',
      );
    }
    if (!Number.isInteger(c.pairDecimals) || c.pairDecimals < 0 || c.pairDecimals > MAX_DECIMALS) {
      return reject(
        'invalid_decimals',
        `The pair decimals must be an integer from 0 to ${MAX_DECIMALS}.`,
        'pair_decimals',
      );
    }
    const shift = c.pairDecimals + c.lotDecimals - quoteDecimals;
    if (shift > 15)
      return reject(
        'invalid_decimals',
        'Price and lot precision together exceed the quote precision by more than 15 digits.',
        'pair_decimals',
      );
    if (!isPositiveInt(c.ordermin))
      return reject('invalid_volume', 'The ordermin must be at least one lot.', 'ordermin');
    for (const [field, rate] of [
      ['maker_fee', c.makerFee],
      ['taker_fee', c.takerFee],
    ] as const) {
      if (!Number.isSafeInteger(rate) || rate < 0 || rate > MAX_FEE_RATE) {
        return reject('invalid_amount', 'A fee rate must be between 0 and 0.1.', field);
      }
    }
    const spec: MarketSpec = {
      id: this.nextMarketId++ as MarketId,
      base: c.base,
      quote: c.quote,
      pairDecimals: c.pairDecimals,
      lotDecimals: c.lotDecimals,
      ordermin: c.ordermin,
      makerFee: c.makerFee,
      takerFee: c.takerFee,
    };
    this.addMarket(spec);
    this.emit({ type: 'marketCreated', market: spec });
    return undefined;
  }

  private addMarket(spec: MarketSpec): void {
    const base = this.assetIndex.get(spec.base)!;
    const quote = this.assetIndex.get(spec.quote)!;
    const shift = spec.pairDecimals + spec.lotDecimals - this.assets[quote]!.decimals;
    const market: Market = {
      spec,
      base,
      quote,
      baseUnitsPerLot: pow10(this.assets[base]!.decimals - spec.lotDecimals),
      costMultiplier: shift < 0 ? pow10(-shift) : 1,
      costDivisor: shift > 0 ? pow10(shift) : 1,
      maxFee: Math.max(spec.makerFee, spec.takerFee),
      bids: new BookSide(true),
      asks: new BookSide(false),
      dirtyKeys: [],
      dirtyBefore: [],
      dirtyCount: 0,
      lastPrice: 0,
      falling: new TriggerHeap<LiveOrder>(true),
      rising: new TriggerHeap<LiveOrder>(false),
      trailing: new Set(),
    };
    this.markets.set(spec.id, market);
    if (spec.id >>> 0 === spec.id && spec.id < 1 << 16) {
      while (this.marketsById.length <= spec.id) this.marketsById.push(undefined);
      this.marketsById[spec.id] = market;
    }
    this.marketByPair.set(`${spec.base}${spec.quote}`, market);
  }

  // ---- funds -------------------------------------------------------------------------------

  private deposit(userId: UserId, code: AssetCode, amount: Amount, time: Micros): CommandResult | undefined {
    const asset = this.assetIndex.get(code);
    if (asset === undefined) return reject('unknown_asset', `Unknown asset ${code}.`, 'asset');
    if (!isPositiveInt(amount))
      return reject('invalid_amount', 'The amount must be greater than zero.', 'amount');
    if (!isPositiveInt(userId)) return reject('invalid_amount', 'Unknown user.', 'user');
    if ((this.accountBook.netDeposits[asset] ?? 0) + amount > MAX_UNITS) {
      return reject(
        'too_large',
        'The deposit would exceed the largest amount this asset can hold.',
        'amount',
      );
    }
    this.accountBook.credit(this.accountBook.account(userId), asset, amount);
    this.accountBook.changeNetDeposits(asset, amount);
    this.emit({ type: 'deposited', userId, asset: code, amount, time });
    return undefined;
  }

  private withdraw(userId: UserId, code: AssetCode, amount: Amount, time: Micros): CommandResult | undefined {
    const asset = this.assetIndex.get(code);
    if (asset === undefined) return reject('unknown_asset', `Unknown asset ${code}.`, 'asset');
    if (!isPositiveInt(amount))
      return reject('invalid_amount', 'The amount must be greater than zero.', 'amount');
    const account = this.accountBook.peek(userId);
    if (account === undefined || this.accountBook.available(account, asset) < amount) {
      return reject('insufficient_funds', 'The amount exceeds the available balance.', 'amount');
    }
    this.accountBook.debit(account, asset, amount);
    this.accountBook.changeNetDeposits(asset, -amount);
    this.emit({ type: 'withdrawn', userId, asset: code, amount, time });
    return undefined;
  }

  // ---- orders ------------------------------------------------------------------------------

  private placeOrder(c: PlaceOrder, time: Micros): CommandResult | undefined {
    const marketId = c.marketId;
    // Not a whole number (a string, a fraction): not a market id, whatever it reads like.
    const market =
      marketId >>> 0 === marketId ? (this.marketsById[marketId] ?? this.markets.get(marketId)) : undefined;
    if (market === undefined) return reject('unknown_market', 'The selected pair is invalid.', 'pair');
    if (!isPositiveInt(c.volume))
      return reject('invalid_volume', 'The volume must be greater than zero.', 'volume');
    if (c.volume < market.spec.ordermin)
      return reject(
        'below_ordermin',
        'The volume is below the minimum order volume of this market.',
        'volume',
      );
    const conditional =
      c.type !== 'limit' && c.type !== 'market' && CONDITIONAL_TYPES.includes(c.type as ConditionalType);
    const isLimit = c.type === 'limit' || (conditional && executionTypeOf(c.type) === 'limit');
    if (isLimit && !isPositiveInt(c.price))
      return reject('invalid_price', 'The price must be greater than zero.', 'price');
    if (!isPositiveInt(c.userId)) return reject('invalid_amount', 'Unknown user.', 'user');
    // The controls are read only when the command carries any: today's orders pay nothing for them.
    let controls = DEFAULT_CONTROLS;
    if (
      c.timeInForce !== undefined ||
      c.postOnly !== undefined ||
      (c.clientOrderId !== undefined && c.clientOrderId !== null) ||
      c.stp !== undefined ||
      c.expireTime !== undefined
    ) {
      // A conditional order rests while it waits, whatever it becomes when it fires: GTD is
      // its to take (decision E30); IOC, FOK and post-only are refused by readTrigger.
      const read = this.readControls(c, isLimit || conditional, time);
      if ('ok' in read) return read;
      controls = read;
    }
    // A conditional order's trigger, read only when the command has one (or should have).
    let wait: WaitState | null = null;
    if (conditional || c.triggerPrice !== undefined || c.trailingOffset !== undefined) {
      const read = this.readTrigger(c, market, conditional, controls);
      if (!(read instanceof WaitState)) return read;
      wait = read;
    }
    const tif = controls.timeInForce;
    // Worth less than one quote unit: floor(price × volume × multiplier / divisor) < 1. Compared
    // without the division: below 2^53 the product is exact, above it is far above any divisor.
    if (isLimit && c.price * c.volume * market.costMultiplier < market.costDivisor)
      return this.valueTooSmall(market);
    const account = this.accountBook.account(c.userId);
    if (
      (wait !== null || (isLimit && (tif === 'GTC' || tif === 'GTD'))) &&
      account.openOrders >= this.maxOpenOrdersPerUser
    )
      return this.tooManyOpenOrders();
    // Risk stage: hold everything the order could spend, or refuse it before it touches the book.
    let hold: number;
    let asset: number;
    if (c.side === 'sell') {
      asset = market.base;
      hold = c.volume * market.baseUnitsPerLot;
      if (hold > MAX_UNITS) return reject('too_large', 'The volume is too large.', 'volume');
    } else if (isLimit) {
      asset = market.quote;
      const cost = this.costOf(market, c.price, c.volume);
      if (Number.isNaN(cost)) return reject('too_large', 'The order value is too large.', 'volume');
      // Covers every way the order can execute: Σ costᵢ <= cost (each cost is floored, at prices
      // no worse than the limit), and the fees charged, ceil(Σ costᵢ × rateᵢ / 10^8), are at most
      // ceil(Σ costᵢ × maxRate / 10^8) <= ceil(cost × maxRate / 10^8), the fee held here.
      hold = cost + feeDue(cost, market.maxFee, 0);
      if (hold > MAX_UNITS) return reject('too_large', 'The order value is too large.', 'volume');
    } else {
      // A market buy may spend at most what the buyer has available; a conditional one holds it
      // all while it waits, for it cannot know the prices it will meet (docs/money.md).
      asset = market.quote;
      hold = this.accountBook.available(account, asset);
      if (hold <= 0) return reject('insufficient_funds', 'Insufficient funds.', 'volume');
      // Decided before anything changes: funds that buy less than ordermin make an order that
      // would have been refused had it asked for that volume (its fills could even cost nothing).
      const buys = wait === null ? this.fundsBuy(market, c.userId, c.volume, hold) : c.volume;
      if (buys < market.spec.ordermin) {
        const lots = (v: number) => `${formatUnits(v, market.spec.lotDecimals)} ${market.spec.base}`;
        return reject(
          'below_ordermin',
          `Your available funds buy only ${lots(buys)} at the current prices, below the minimum order volume (ordermin) of ${lots(market.spec.ordermin)}.`,
          'volume',
        );
      }
    }
    if (this.accountBook.available(account, asset) < hold)
      return reject('insufficient_funds', 'Insufficient funds.', 'volume');
    // Every amount stays exact (docs/money.md): a limit order's volume in base units and the total
    // of the price level it may rest at (resting buys are bounded by no balance in base units). A
    // market buy's volume is only a ceiling: what it receives is bounded by the makers' volumes.
    // The level the order would rest at: matching only changes the other side, so it stays valid.
    let restLevel: Level | undefined;
    if (isLimit) {
      if (c.volume * market.baseUnitsPerLot > MAX_UNITS)
        return reject('too_large', 'The volume is too large.', 'volume');
      restLevel = wait === null ? (c.side === 'buy' ? market.bids : market.asks).level(c.price) : undefined;
      if ((restLevel?.total ?? 0) + c.volume > MAX_UNITS)
        return reject('too_large', 'The volume at this price is too large.', 'volume');
    }

    const id = this.nextOrderId++;
    const price = isLimit ? c.price : 0;
    const spare = this.spareOrders.pop();
    const order =
      spare === undefined
        ? new LiveOrder(id, c.userId, account, market, c.side, c.type, price, c.volume, time)
        : spare.init(id, c.userId, account, market, c.side, c.type, price, c.volume, time);
    if (controls !== DEFAULT_CONTROLS) order.control(controls);
    order.wait = wait;
    this.accountBook.reserve(account, asset, hold);
    order.reserved = hold;
    this.markDirty(order);
    const accepted = order.state();
    order.snap = accepted;
    this.emit({ type: 'orderAccepted', order: accepted });
    if (wait !== null) {
      this.await(order);
      return undefined;
    }

    // Post-only and FOK orders that cannot do what they ask end here, having changed nothing.
    if (controls.postOnly && this.crosses(order)) {
      this.finish(order, 'canceled', CancelReason.postOnly, time);
      return undefined;
    }
    if (tif === 'FOK' && !this.fillableAtOnce(order)) {
      this.finish(order, 'canceled', CancelReason.fillOrKill, time);
      return undefined;
    }

    const budgetExhausted = this.match(order, account, time);

    if (this.takerStopped !== null) {
      const reason = this.takerStopped;
      this.takerStopped = null;
      this.finish(order, 'canceled', reason, time);
    } else if (order.remaining === 0) {
      this.finish(order, 'closed', null, time);
    } else if (!isLimit) {
      const nothing = order.remaining === order.volume;
      const reason = budgetExhausted ? CancelReason.insufficientFunds : CancelReason.noLiquidity;
      this.finish(order, nothing ? 'canceled' : 'closed', nothing ? reason : null, time);
    } else if (tif === 'IOC' || tif === 'FOK') {
      // FOK: only if the fillable check and matching disagree, which they must not.
      const reason = tif === 'IOC' ? CancelReason.immediateOrCancel : CancelReason.fillOrKill;
      this.finish(order, 'canceled', reason, time);
    } else {
      this.markLevel(market, order.side === 'buy' ? order.price : -order.price, restLevel);
      this.rest(order, restLevel);
      // A level the order created is listed already (as 0 before): marked, it is not listed again.
      order.level!.mark = this.drainEpoch;
    }
    if (this.crossed.length !== 0) this.fireCrossed(time);
    return undefined;
  }

  /**
   * A conditional order's trigger (or a trailing stop's offset), checked; or its refusal. Also
   * refuses a trigger price or an offset on an order type that takes none.
   */
  private readTrigger(
    c: PlaceOrder,
    market: Market,
    conditional: boolean,
    controls: OrderControls,
  ): WaitState | CommandResult {
    if (!conditional) {
      if (c.triggerPrice !== undefined)
        return reject(
          'invalid_trigger_price',
          'Only stop-loss and take-profit orders take a trigger price.',
          'trigger_price',
        );
      return reject(
        'invalid_trailing_offset',
        'Only trailing stops take a trailing offset.',
        'trailing_offset',
      );
    }
    const type = c.type as ConditionalType;
    if (controls.postOnly || controls.timeInForce === 'IOC' || controls.timeInForce === 'FOK')
      return reject(
        'invalid_conditional_controls',
        'A conditional order waits for its trigger: it takes time in force GTC or GTD, and no post-only.',
        controls.postOnly ? 'post_only' : 'time_in_force',
      );
    if (executionTypeOf(type) === 'market' && c.price !== 0)
      return reject(
        'price_not_allowed',
        `A ${type} order executes as a market order: it takes no limit price.`,
        'price',
      );
    const falling = fallsToTrigger(type, c.side);
    if (type === 'trailing-stop') {
      if (c.triggerPrice !== undefined)
        return reject(
          'invalid_trigger_price',
          'A trailing stop takes a trailing offset, not a trigger price.',
          'trigger_price',
        );
      const offset = readTrailingOffset(c.trailingOffset);
      if (offset === null)
        return reject(
          'invalid_trailing_offset',
          `A trailing stop needs an offset: a whole number of ticks from 1, or ${MIN_TRAILING_BPS} to ${MAX_TRAILING_BPS} basis points (0.01 % to 50 %).`,
          'trailing_offset',
        );
      // No trade yet: no trigger until the first one (a price no trade reaches).
      const wait = new WaitState(falling ? 0 : Number.MAX_SAFE_INTEGER, falling, offset, 0);
      if (market.lastPrice > 0) follow(wait, market.lastPrice);
      return wait;
    }
    if (c.trailingOffset !== undefined)
      return reject(
        'invalid_trailing_offset',
        'Only trailing stops take a trailing offset.',
        'trailing_offset',
      );
    const trigger = c.triggerPrice;
    if (trigger === undefined || !isPositiveInt(trigger))
      return reject(
        'invalid_trigger_price',
        `A ${type} order needs a trigger price greater than zero.`,
        'trigger_price',
      );
    const refused = this.firesAtOnce(market, falling, trigger);
    if (refused !== undefined) return refused;
    return new WaitState(trigger, falling, null, 0);
  }

  /** Refuses a trigger the last trade price has reached already (it would fire on arrival, decision E27). */
  private firesAtOnce(market: Market, falling: boolean, trigger: number): CommandResult | undefined {
    const last = market.lastPrice;
    if (last === 0 || (falling ? last > trigger : last < trigger)) return undefined;
    return reject(
      'trigger_would_fire',
      `The last trade price, ${formatUnits(last, market.spec.pairDecimals)}, has reached this trigger already: the order would fire at once.`,
      'trigger_price',
    );
  }

  /** Puts a new conditional order in every index of open orders and in its trigger heap, outside the book. */
  private await(order: LiveOrder): void {
    this.openOrders.set(order);
    order.account.openOrders++;
    if (order.clientOrderId !== null) this.indexClientId(order);
    if (order.expireTime !== 0) this.deadlines.add(order);
    this.enqueueTrigger(order);
  }

  private enqueueTrigger(order: LiveOrder): void {
    const wait = order.wait!;
    const market = order.market;
    (wait.falling ? market.falling : market.rising).add(order);
    if (wait.offset !== null) market.trailing.add(order);
  }

  private dequeueTrigger(order: LiveOrder): void {
    const wait = order.wait!;
    const market = order.market;
    if (wait.slot >= 0) (wait.falling ? market.falling : market.rising).remove(order);
    if (wait.offset !== null) market.trailing.delete(order);
  }

  /**
   * A trade at `price` in `market`: trailing stops follow it, and every waiting order whose trigger
   * it reached leaves its heap for the queue of crossed orders (`crossed`), in trigger-price order
   * then time order. They fire after the order that is matching now is done (fireCrossed).
   */
  private cross(market: Market, price: number): void {
    if (market.trailing.size !== 0) this.followAll(market, price);
    this.takeReached(market, market.falling, price);
    this.takeReached(market, market.rising, price);
  }

  /** Moves every waiting trailing stop of the market to a trade at `price` (see follow). */
  private followAll(market: Market, price: number): void {
    for (const order of market.trailing) {
      if (follow(order.wait!, price)) {
        (order.wait!.falling ? market.falling : market.rising).moved(order);
        order.snap = null;
        this.markDirty(order);
      }
    }
  }

  /** Moves the orders of `heap` whose trigger `price` reached to the crossed queue, in heap order. */
  private takeReached(market: Market, heap: TriggerHeap<LiveOrder>, price: number): void {
    for (let top = heap.peek(); top !== undefined && heap.reaches(top, price); top = heap.peek()) {
      heap.remove(top);
      if (top.wait!.offset !== null) market.trailing.delete(top);
      top.wait!.crossedAt = price;
      this.crossed.push(top);
    }
  }

  /**
   * Fires the crossed orders in the order they were crossed: each becomes a market or limit order
   * and matches now (orderTriggered, then its trades); the trades of one can cross more, which
   * join the end of the queue. Ends: an order fires at most once.
   */
  private fireCrossed(time: Micros): void {
    const queue = this.crossed;
    for (let i = 0; i < queue.length; i++) this.fire(queue[i]!, time);
    queue.length = 0;
  }

  private fire(order: LiveOrder, time: Micros): void {
    const wait = order.wait!;
    wait.triggered = true;
    this.markDirty(order);
    const triggered = order.state();
    order.snap = triggered;
    this.emit({ type: 'orderTriggered', order: triggered, lastPrice: wait.crossedAt as Price, time });
    const budgetExhausted = this.match(order, order.account, time);
    if (this.takerStopped === null && order.remaining > 0 && order.asLimit) {
      // A triggered -limit order that rests is queued by when it fired, behind the orders resting
      // at its price: a number from the id sequence.
      order.priority = this.nextOrderId++;
      order.snap = null;
    }
    this.settleIndexed(order, budgetExhausted, time);
  }

  /**
   * After an order indexed as open (amended, or fired) took liquidity: ends it when self-trade
   * prevention stopped it, when it filled, or (a market order) when it could take no more; else it
   * rests at the back of its price level.
   */
  private settleIndexed(order: LiveOrder, budgetExhausted: boolean, time: Micros): void {
    if (this.takerStopped !== null) {
      const reason = this.takerStopped;
      this.takerStopped = null;
      this.leaveOpen(order);
      this.finish(order, 'canceled', reason, time);
    } else if (order.remaining === 0) {
      this.leaveOpen(order);
      this.finish(order, 'closed', null, time);
    } else if (!order.asLimit) {
      const nothing = order.remaining === order.volume;
      const reason = budgetExhausted ? CancelReason.insufficientFunds : CancelReason.noLiquidity;
      this.leaveOpen(order);
      this.finish(order, nothing ? 'canceled' : 'closed', nothing ? reason : null, time);
    } else {
      // Looked up now: the order's old level is gone if it was its last.
      const market = order.market;
      const isBuy = order.side === 'buy';
      const book = isBuy ? market.bids : market.asks;
      const level = book.level(order.price);
      this.markLevel(market, isBuy ? order.price : -order.price, level);
      book.append(order, level);
      order.level!.mark = this.drainEpoch;
    }
  }

  /** The controls of a placeOrder that carries any, checked; or its refusal. */
  private readControls(c: PlaceOrder, isLimit: boolean, time: Micros): OrderControls | CommandResult {
    const timeInForce = c.timeInForce ?? 'GTC';
    if (!TIMES_IN_FORCE.includes(timeInForce))
      return reject(
        'invalid_time_in_force',
        'The time in force must be GTC, IOC, FOK or GTD.',
        'time_in_force',
      );
    if (!isLimit && (timeInForce === 'FOK' || timeInForce === 'GTD'))
      return reject(
        'invalid_time_in_force',
        'A market order takes time in force GTC or IOC only (it never rests).',
        'time_in_force',
      );
    const postOnly = c.postOnly ?? false;
    if (typeof postOnly !== 'boolean')
      return reject('invalid_post_only', 'The post-only flag must be true or false.', 'post_only');
    if (postOnly && (!isLimit || timeInForce === 'IOC' || timeInForce === 'FOK'))
      return reject(
        'invalid_post_only',
        'Post-only is valid only with limit orders that are GTC or GTD.',
        'post_only',
      );
    const stp = c.stp ?? 'cancel-oldest';
    if (!SELF_TRADE_MODES.includes(stp))
      return reject(
        'invalid_stp',
        'The self-trade prevention mode must be cancel-oldest, cancel-newest, cancel-both or decrement.',
        'stp',
      );
    const expireTime = c.expireTime ?? 0;
    if (timeInForce === 'GTD') {
      if (!Number.isSafeInteger(expireTime) || expireTime <= time)
        return reject(
          'invalid_expire_time',
          'A GTD order needs an expire time in the future.',
          'expire_time',
        );
      if (expireTime - time > MAX_EXPIRY_AHEAD)
        return reject('invalid_expire_time', 'The expire time may be at most one year ahead.', 'expire_time');
    } else if (expireTime !== 0) {
      return reject('invalid_expire_time', 'An expire time needs time in force GTD.', 'expire_time');
    }
    const clientOrderId = c.clientOrderId ?? null;
    if (clientOrderId !== null) {
      const refused = this.checkClientOrderId(c.userId, clientOrderId, null);
      if (refused !== undefined) return refused;
    }
    return { timeInForce, postOnly, clientOrderId, stp, expireTime };
  }

  /** Refuses a client order id that is malformed or held by another open order of the user. */
  private checkClientOrderId(
    userId: number,
    clientOrderId: string,
    self: LiveOrder | null,
  ): CommandResult | undefined {
    if (typeof clientOrderId !== 'string' || !CLIENT_ORDER_ID.test(clientOrderId))
      return reject(
        'invalid_client_order_id',
        'The client order id must be 1 to 36 characters, each a letter, a digit, _ or -.',
        'client_order_id',
      );
    const holder = this.clientIds.get(userId)?.get(clientOrderId);
    if (holder !== undefined && holder !== self)
      return reject(
        'duplicate_client_order_id',
        'You have an open order with this client order id already.',
        'client_order_id',
      );
    return undefined;
  }

  private valueTooSmall(market: Market): CommandResult {
    const quote = this.assets[market.quote]!;
    return reject(
      'order_value_too_small',
      `The order value is below ${formatUnits(1, quote.decimals)} ${quote.code}, the smallest amount of ${quote.code}.`,
      'volume',
    );
  }

  private tooManyOpenOrders(): CommandResult {
    return reject(
      'too_many_open_orders',
      `You have ${this.maxOpenOrdersPerUser} open orders, the most one user may have (MAX_OPEN_ORDERS_PER_USER).`,
    );
  }

  /** True when a limit order would take liquidity on arrival: the best opposite price meets it. */
  private crosses(order: LiveOrder): boolean {
    return this.crossesAt(order.market, order.side, order.price);
  }

  /** True when a limit order of `side` at `price` would meet the best opposite price. */
  private crossesAt(market: Market, side: Side, price: number): boolean {
    if (side === 'buy') return market.asks.best !== null && market.asks.best.price <= price;
    return market.bids.best !== null && market.bids.best.price >= price;
  }

  /**
   * True when a limit order can trade its whole volume at once: walks the book as `match` will,
   * without changing it. A resting order of its own user is passed over when its self-trade mode
   * is cancel-oldest (matching cancels it and goes on); any other mode would end or shrink the
   * order there, so it cannot fill. Funds need no check: a limit order holds for all its volume.
   */
  private fillableAtOnce(order: LiveOrder): boolean {
    const book = order.side === 'buy' ? order.market.asks : order.market.bids;
    let fillable = 0;
    for (let level = book.best; level !== null; level = book.after(level)) {
      if (order.side === 'buy' ? level.price > order.price : level.price < order.price) return false;
      for (let maker = level.head; maker !== null; maker = maker.next) {
        if (maker.userId === order.userId) {
          if (order.stp === 'cancel-oldest') continue;
          return false;
        }
        fillable += maker.remaining;
        if (fillable >= order.volume) return true;
      }
    }
    return false;
  }

  /** Puts an order at the back of its level (`level`: the one at its price, if any) and in every index of open orders. */
  private rest(order: LiveOrder, level: Level | undefined): void {
    this.openOrders.set(order);
    order.account.openOrders++;
    if (order.clientOrderId !== null) this.indexClientId(order);
    if (order.expireTime !== 0) this.deadlines.add(order);
    (order.side === 'buy' ? order.market.bids : order.market.asks).append(order, level);
  }

  /** Takes a resting order out of its book and out of every index of open orders. */
  private takeOff(order: LiveOrder): void {
    if (order.wait !== null && !order.wait.triggered) {
      this.dequeueTrigger(order);
      this.leaveOpen(order);
      return;
    }
    const market = order.market;
    this.markLevel(market, order.side === 'buy' ? order.price : -order.price, order.level as Level);
    (order.side === 'buy' ? market.bids : market.asks).unlink(order);
    this.leaveOpen(order);
  }

  /** Drops an order that no longer rests (unlinked already) from every index of open orders. */
  private leaveOpen(order: LiveOrder): void {
    this.openOrders.delete(order);
    order.account.openOrders--;
    if (order.clientOrderId !== null) this.clientIds.get(order.userId)?.delete(order.clientOrderId);
    if (order.heapIndex >= 0) this.deadlines.remove(order);
  }

  private indexClientId(order: LiveOrder): void {
    let ids = this.clientIds.get(order.userId);
    if (ids === undefined) {
      ids = new Map();
      this.clientIds.set(order.userId, ids);
    }
    ids.set(order.clientOrderId!, order);
  }

  /** Takes liquidity for `taker`. Returns true when a market buy stopped because its budget ran out. */
  private match(taker: LiveOrder, takerAccount: Account, time: Micros): boolean {
    const market = taker.market;
    const book = taker.side === 'buy' ? market.asks : market.bids;
    // Level keys: a bid's price, or minus an ask's (see Market.dirtyLevels).
    const keySign = taker.side === 'buy' ? -1 : 1;
    const isLimit = taker.asLimit;
    const budgeted = !isLimit && taker.side === 'buy';
    for (let level = book.best; level !== null && taker.remaining > 0; level = book.best) {
      if (isLimit && (taker.side === 'buy' ? level.price > taker.price : level.price < taker.price)) break;
      this.markLevel(market, keySign * level.price, level);
      let maker = level.head as LiveOrder | null;
      while (maker !== null && taker.remaining > 0) {
        const next = maker.next as LiveOrder | null;
        if (maker.userId === taker.userId) {
          if (taker.stp === 'cancel-oldest') {
            // Self-trade prevention: the resting order is canceled, the taker goes on (docs/money.md).
            book.unlink(maker);
            this.leaveOpen(maker);
            this.finish(maker, 'canceled', CancelReason.selfTrade, time);
          } else if (this.preventSelfTrade(taker, maker, book, time)) return false;
        } else {
          const wanted = Math.min(taker.remaining, maker.remaining);
          const volume = budgeted
            ? this.affordable(market, level.price, wanted, taker.reserved, taker.feeExcess)
            : wanted;
          if (volume > 0) this.fill(taker, takerAccount, maker, book, volume, time);
          // The budget ran out. Stop here: further fills would be so small that their cost rounds
          // to nothing, which would let a market buy take volume for free.
          if (volume < wanted) return true;
        }
        maker = next;
      }
      // Every pass empties its level or fills the taker. A level still best here (a maker that can
      // take nothing) would be matched again forever: the command fails instead of the process hanging.
      if (book.best === level && taker.remaining > 0)
        throw new InternalStateError(
          `matching made no progress at price ${level.price} of market ${market.spec.id}`,
        );
    }
    return false;
  }

  /** Settles one execution at the maker's price. */
  private fill(
    taker: LiveOrder,
    takerAccount: Account,
    maker: LiveOrder,
    book: BookSide,
    volume: number,
    time: Micros,
  ): void {
    const market = taker.market;
    const price = maker.price;
    const cost = this.costOf(market, price, volume);
    const { takerFee: takerRate, makerFee: makerRate } = market.spec;
    const takerFee = feeDue(cost, takerRate, taker.feeExcess);
    const makerFee = feeDue(cost, makerRate, maker.feeExcess);
    taker.feeExcess = excessAfter(cost, takerRate, taker.feeExcess);
    maker.feeExcess = excessAfter(cost, makerRate, maker.feeExcess);
    const baseUnits = volume * market.baseUnitsPerLot;
    const makerAccount = maker.account;
    // Plain branches rather than destructuring a temporary array: this runs once per fill.
    const takerBuys = taker.side === 'buy';
    const buyer = takerBuys ? taker : maker;
    const seller = takerBuys ? maker : taker;
    const buyerAccount = takerBuys ? takerAccount : makerAccount;
    const sellerAccount = takerBuys ? makerAccount : takerAccount;
    const buyerFee = takerBuys ? takerFee : makerFee;
    const sellerFee = takerBuys ? makerFee : takerFee;

    this.accountBook.spendReserved(buyerAccount, market.quote, cost + buyerFee);
    buyer.reserved -= cost + buyerFee;
    this.accountBook.credit(buyerAccount, market.base, baseUnits);
    this.accountBook.spendReserved(sellerAccount, market.base, baseUnits);
    seller.reserved -= baseUnits;
    this.accountBook.credit(sellerAccount, market.quote, cost - sellerFee);
    this.accountBook.collectFee(market.quote, takerFee + makerFee);

    taker.remaining -= volume;
    taker.cost += cost;
    taker.fee += takerFee;
    taker.snap = null;
    book.reduce(maker, volume);
    maker.cost += cost;
    maker.fee += makerFee;
    maker.snap = null;
    this.markDirty(maker);

    const trade: Trade = {
      id: this.nextTradeId++ as TradeId,
      marketId: market.spec.id,
      price: price as Price,
      volume: volume as Volume,
      cost: cost as Amount,
      takerOrderId: taker.id as OrderId,
      makerOrderId: maker.id as OrderId,
      takerUserId: taker.userId as UserId,
      makerUserId: maker.userId as UserId,
      takerSide: taker.side,
      takerType: executionTypeOf(taker.type),
      takerFee: takerFee as Amount,
      makerFee: makerFee as Amount,
      time,
    };
    this.emit({ type: 'trade', trade });
    market.lastPrice = price;
    if (market.falling.size !== 0 || market.rising.size !== 0) this.cross(market, price);

    if (maker.remaining === 0) {
      book.unlink(maker);
      this.leaveOpen(maker);
      this.finish(maker, 'closed', null, time);
    }
  }

  /**
   * The largest volume (<= wanted) whose cost plus taker fee fits in `budget`, the fee charged as
   * `fill` will charge it (rounded up, given the order's fee excess), so a market buy never spends
   * more than it reserved. Spending grows with the volume, so a binary search finds it.
   */
  private affordable(market: Market, price: number, wanted: number, budget: number, excess: number): number {
    if (this.spend(market, price, wanted, excess) <= budget) return wanted;
    let lo = 0;
    let hi = wanted;
    while (lo < hi) {
      const mid = lo + Math.ceil((hi - lo) / 2);
      if (this.spend(market, price, mid, excess) <= budget) lo = mid;
      else hi = mid - 1;
    }
    return lo;
  }

  /** What a taker buy of `volume` at `price` costs, fee included (a method, not a per-call closure). */
  private spend(market: Market, price: number, volume: number, excess: number): number {
    const cost = this.costOf(market, price, volume);
    return cost + feeDue(cost, market.spec.takerFee, excess);
  }

  /**
   * The volume a market buy of `wanted` lots with `budget` would execute when its budget runs out
   * first, or `wanted` when it does not (the book running dry is not the funds' fault). Walks the
   * book exactly as `match` will, without changing it: the user's own resting orders are skipped
   * (self-trade prevention cancels them) and each fill is priced as `fill` prices it. Stops as
   * soon as ordermin is reached: the caller needs no more.
   */
  private fundsBuy(market: Market, userId: number, wanted: number, budget: number): number {
    const rate = market.spec.takerFee;
    let bought = 0;
    let excess = 0;
    // Level by level without a generator: most market buys stop within the first level.
    for (let level = market.asks.best; level !== null; level = market.asks.after(level)) {
      for (let maker = level.head; maker !== null; maker = maker.next) {
        if (maker.userId === userId) continue;
        const want = Math.min(wanted - bought, maker.remaining);
        const volume = this.affordable(market, level.price, want, budget, excess);
        bought += volume;
        if (volume < want) return bought;
        if (bought >= market.spec.ordermin || bought === wanted) return wanted;
        const cost = this.costOf(market, level.price, volume);
        budget -= cost + feeDue(cost, rate, excess);
        excess = excessAfter(cost, rate, excess);
      }
    }
    return wanted;
  }

  private cancelOrder(userId: UserId, orderId: OrderId, time: Micros): CommandResult | undefined {
    const order = this.openOrders.get(orderId);
    // Another user's order is reported exactly like a missing one, so ids reveal nothing.
    if (order === undefined || order.userId !== userId) return reject('order_not_found', 'Order not found.');
    this.takeOff(order);
    this.finish(order, 'canceled', CancelReason.user, time);
    return undefined;
  }

  private cancelClientOrder(userId: UserId, clientOrderId: string, time: Micros): CommandResult | undefined {
    const order = this.clientIds.get(userId)?.get(clientOrderId);
    if (order === undefined) return reject('order_not_found', 'Order not found.');
    this.takeOff(order);
    this.finish(order, 'canceled', CancelReason.user, time);
    return undefined;
  }

  // ---- order controls ----------------------------------------------------------------------

  /**
   * Self-trade prevention when the taker's mode is not cancel-oldest (see SelfTradeMode); the
   * taker met `maker`, a resting order of its own user, in `book`. Returns true when the taker
   * stops here (`takerStopped` says why); false when it goes on to the next resting order.
   */
  private preventSelfTrade(taker: LiveOrder, maker: LiveOrder, book: BookSide, time: Micros): boolean {
    if (taker.stp === 'cancel-newest') {
      this.takerStopped = CancelReason.selfTradeNewest;
      return true;
    }
    if (taker.stp === 'cancel-both') {
      book.unlink(maker);
      this.leaveOpen(maker);
      this.finish(maker, 'canceled', CancelReason.selfTradeBoth, time);
      this.takerStopped = CancelReason.selfTradeBoth;
      return true;
    }
    // Decrement: no trade; the larger is reduced by the smaller's remaining volume, the smaller
    // canceled (both when equal).
    const makerLeft = maker.remaining;
    const takerLeft = taker.remaining;
    if (makerLeft <= takerLeft) {
      book.unlink(maker);
      this.leaveOpen(maker);
      this.finish(maker, 'canceled', CancelReason.selfTradeDecrement, time);
      if (makerLeft === takerLeft) {
        this.takerStopped = CancelReason.selfTradeDecrement;
        return true;
      }
      this.shrink(taker, makerLeft, null);
      return false;
    }
    this.shrink(maker, takerLeft, book);
    this.takerStopped = CancelReason.selfTradeDecrement;
    return true;
  }

  /**
   * Reduces an order's volume (and remaining volume) by `lots` for self-trade prevention, giving
   * back what it no longer needs to hold; `book` is its book when it rests (null: the taker).
   */
  private shrink(order: LiveOrder, lots: number, book: BookSide | null): void {
    if (book !== null) book.reduce(order, lots);
    else order.remaining -= lots;
    order.volume -= lots;
    this.releaseExcess(order);
    this.markDirty(order);
    const state = order.state();
    order.snap = state;
    this.emit({ type: 'orderAmended', order: state, reason: AmendReason.selfTradeDecrement });
  }

  /**
   * Gives back what an order holds beyond what its remaining volume can still cost: a sell holds
   * exactly its remaining base units; a limit buy at most holdFor(price, remaining), which covers
   * every later fill and its fee (docs/money.md); a market buy keeps its whole budget.
   */
  private releaseExcess(order: LiveOrder): void {
    const market = order.market;
    let keep: number;
    if (order.side === 'sell') keep = order.remaining * market.baseUnitsPerLot;
    else if (order.asLimit) keep = this.holdFor(market, order.price, order.remaining);
    else return;
    if (keep >= order.reserved) return;
    this.accountBook.release(
      order.account,
      order.side === 'buy' ? market.quote : market.base,
      order.reserved - keep,
    );
    order.reserved = keep;
  }

  /** What a limit buy of `volume` at `price` holds: its cost plus the fee at the larger rate, rounded up. */
  private holdFor(market: Market, price: number, volume: number): number {
    const cost = this.costOf(market, price, volume);
    return cost + feeDue(cost, market.maxFee, 0);
  }

  /**
   * Amends an open order in place (decisions in docs/interface-decisions.md): lowering the volume
   * keeps its queue place; a new price or a higher volume sends it to the back of its (new) level,
   * and a new price that crosses the book trades at once as a new order there would (a post-only
   * order is refused instead). The hold is resized exactly: to holdFor(new price, new remaining)
   * when the order moves, to at most that when it only shrinks (a sell: exactly its remaining
   * base units); more than is available is refused. Checks everything before changing anything.
   */
  private amendOrder(c: Extract<Command, { kind: 'amendOrder' }>, time: Micros): CommandResult | undefined {
    const order = this.openOrders.get(c.orderId);
    if (order === undefined || order.userId !== c.userId)
      return reject('order_not_found', 'Order not found.');
    if (order.wait !== null && !order.wait.triggered) return this.amendWaiting(order, c);
    if (c.triggerPrice !== undefined)
      return reject(
        'invalid_trigger_price',
        'Only a waiting stop-loss or take-profit order has a trigger to move.',
        'trigger_price',
      );
    if (c.price === undefined && c.volume === undefined && c.clientOrderId === undefined)
      return reject('nothing_to_amend', 'Give a new price, volume or client order id.');
    const market = order.market;
    const price = c.price ?? order.price;
    if (!isPositiveInt(price))
      return reject('invalid_price', 'The price must be greater than zero.', 'price');
    const volume = c.volume ?? order.volume;
    if (!isPositiveInt(volume))
      return reject('invalid_volume', 'The volume must be greater than zero.', 'volume');
    const executed = order.volume - order.remaining;
    if (volume <= executed) {
      const lots = `${formatUnits(executed, market.spec.lotDecimals)} ${market.spec.base}`;
      return reject(
        'volume_not_above_executed',
        `The new volume must be above the ${lots} that executed already.`,
        'volume',
      );
    }
    if (volume < market.spec.ordermin)
      return reject(
        'below_ordermin',
        'The volume is below the minimum order volume of this market.',
        'volume',
      );
    if (c.clientOrderId !== undefined && c.clientOrderId !== null) {
      const refused = this.checkClientOrderId(order.userId, c.clientOrderId, order);
      if (refused !== undefined) return refused;
    }
    const remaining = volume - executed;
    const moves = price !== order.price || volume > order.volume;
    const resize = moves || volume !== order.volume;
    const isBuy = order.side === 'buy';
    const asset = isBuy ? market.quote : market.base;
    let keep = order.reserved;
    if (resize) {
      const value = this.costOf(market, price, volume);
      if (value < 1) return this.valueTooSmall(market);
      if (Number.isNaN(value) || volume * market.baseUnitsPerLot > MAX_UNITS)
        return reject('too_large', 'The volume is too large.', 'volume');
      if (isBuy) {
        const hold = this.holdFor(market, price, remaining);
        if (!(hold <= MAX_UNITS)) return reject('too_large', 'The order value is too large.', 'volume');
        keep = moves ? hold : Math.min(order.reserved, hold);
      } else keep = remaining * market.baseUnitsPerLot;
      if (keep > order.reserved && this.accountBook.available(order.account, asset) < keep - order.reserved)
        return reject('insufficient_funds', 'Insufficient funds.', 'volume');
    }
    const book = isBuy ? market.bids : market.asks;
    if (moves) {
      const level = book.level(price);
      const others =
        level === undefined ? 0 : level === order.level ? level.total - order.remaining : level.total;
      if (others + remaining > MAX_UNITS)
        return reject('too_large', 'The volume at this price is too large.', 'volume');
      if (order.postOnly && this.crossesAt(market, order.side, price))
        return reject(
          'post_only_would_take',
          'The new price would take liquidity, and a post-only order only rests.',
          'price',
        );
    }

    const key = isBuy ? order.price : -order.price;
    if (moves) {
      this.markLevel(market, key, order.level as Level);
      book.unlink(order);
      order.price = price;
      order.volume = volume;
      order.remaining = remaining;
      // The back of the queue: a number from the id sequence, after every order placed so far.
      order.priority = this.nextOrderId++;
    } else if (volume < order.volume) {
      this.markLevel(market, key, order.level as Level);
      book.reduce(order, order.volume - volume);
      order.volume = volume;
    }
    if (keep > order.reserved) this.accountBook.reserve(order.account, asset, keep - order.reserved);
    else if (keep < order.reserved) this.accountBook.release(order.account, asset, order.reserved - keep);
    order.reserved = keep;
    if (c.clientOrderId !== undefined) this.renameClientOrderId(order, c.clientOrderId);
    this.markDirty(order);
    const amended = order.state();
    order.snap = amended;
    this.emit({ type: 'orderAmended', order: amended, reason: AmendReason.user });
    if (!moves) return undefined;

    this.match(order, order.account, time);
    this.settleIndexed(order, false, time);
    if (this.crossed.length !== 0) this.fireCrossed(time);
    return undefined;
  }

  private renameClientOrderId(order: LiveOrder, clientOrderId: string | null): void {
    if (clientOrderId === order.clientOrderId) return;
    if (order.clientOrderId !== null) this.clientIds.get(order.userId)?.delete(order.clientOrderId);
    order.clientOrderId = clientOrderId;
    if (clientOrderId !== null) this.indexClientId(order);
  }

  /**
   * Amends a waiting conditional order: its trigger (not a trailing stop's), its limit price (a
   * `-limit` type's), its volume or its client order id. It stays outside the book; the hold is
   * resized as a new order's would be (a market buy keeps what it holds: all it had available).
   * A new trigger or a higher volume moves it behind the orders waiting at the same trigger.
   */
  private amendWaiting(
    order: LiveOrder,
    c: Extract<Command, { kind: 'amendOrder' }>,
  ): CommandResult | undefined {
    const wait = order.wait!;
    const market = order.market;
    if (
      c.price === undefined &&
      c.volume === undefined &&
      c.clientOrderId === undefined &&
      c.triggerPrice === undefined
    )
      return reject('nothing_to_amend', 'Give a new trigger price, price, volume or client order id.');
    if (c.price !== undefined && !order.asLimit)
      return reject('price_not_allowed', `A ${order.type} order takes no limit price.`, 'price');
    const price = c.price ?? order.price;
    if (order.asLimit && !isPositiveInt(price))
      return reject('invalid_price', 'The price must be greater than zero.', 'price');
    const trigger = c.triggerPrice ?? wait.trigger;
    if (c.triggerPrice !== undefined) {
      if (wait.offset !== null)
        return reject(
          'invalid_trigger_price',
          "A trailing stop's trigger follows the market: amend its volume or client order id.",
          'trigger_price',
        );
      if (!isPositiveInt(trigger))
        return reject(
          'invalid_trigger_price',
          'The trigger price must be greater than zero.',
          'trigger_price',
        );
      const refused = this.firesAtOnce(market, wait.falling, trigger);
      if (refused !== undefined) return refused;
    }
    const volume = c.volume ?? order.volume;
    if (!isPositiveInt(volume))
      return reject('invalid_volume', 'The volume must be greater than zero.', 'volume');
    if (volume < market.spec.ordermin)
      return reject(
        'below_ordermin',
        'The volume is below the minimum order volume of this market.',
        'volume',
      );
    if (volume * market.baseUnitsPerLot > MAX_UNITS)
      return reject('too_large', 'The volume is too large.', 'volume');
    if (c.clientOrderId !== undefined && c.clientOrderId !== null) {
      const refused = this.checkClientOrderId(order.userId, c.clientOrderId, order);
      if (refused !== undefined) return refused;
    }
    const isBuy = order.side === 'buy';
    let keep = order.reserved;
    if (!isBuy) keep = volume * market.baseUnitsPerLot;
    else if (order.asLimit) {
      const cost = this.costOf(market, price, volume);
      if (cost < 1) return this.valueTooSmall(market);
      keep = this.holdFor(market, price, volume);
      if (!(keep <= MAX_UNITS)) return reject('too_large', 'The order value is too large.', 'volume');
    }
    const asset = isBuy ? market.quote : market.base;
    if (keep > order.reserved && this.accountBook.available(order.account, asset) < keep - order.reserved)
      return reject('insufficient_funds', 'Insufficient funds.', 'volume');

    const requeue = trigger !== wait.trigger || volume > order.volume;
    this.dequeueTrigger(order);
    wait.trigger = trigger;
    order.price = price;
    order.volume = volume;
    order.remaining = volume;
    if (requeue) order.priority = this.nextOrderId++;
    this.enqueueTrigger(order);
    if (keep > order.reserved) this.accountBook.reserve(order.account, asset, keep - order.reserved);
    else if (keep < order.reserved) this.accountBook.release(order.account, asset, order.reserved - keep);
    order.reserved = keep;
    if (c.clientOrderId !== undefined) this.renameClientOrderId(order, c.clientOrderId);
    this.markDirty(order);
    const amended = order.state();
    order.snap = amended;
    this.emit({ type: 'orderAmended', order: amended, reason: AmendReason.user });
    return undefined;
  }

  /** Fires, in order, every deadline due at `time`: GTD expiries and dead man's switches. */
  private fireDeadlines(time: Micros): void {
    for (
      let next = this.deadlines.peek();
      next !== undefined && next.due <= time;
      next = this.deadlines.peek()
    ) {
      // Each ends at its own deadline, not at the (later) time of the command that found it due.
      const due = next.due as Micros;
      if (next instanceof LiveOrder) {
        this.takeOff(next);
        this.finish(next, 'canceled', CancelReason.expired, due);
      } else {
        this.disarm(next.userId);
        this.emit({ type: 'cancelAllAfterFired', userId: next.userId as UserId, triggerTime: due });
        this.cancelUserOrders(next.userId, undefined, CancelReason.deadMansSwitch, due);
      }
    }
  }

  /** Arms (or moves) a user's dead man's switch to fire at `due`. */
  private arm(userId: number, due: number): void {
    let sw = this.switches.get(userId);
    if (sw === undefined) {
      sw = new UserSwitch(userId, due);
      this.switches.set(userId, sw);
    } else {
      this.deadlines.remove(sw);
      sw.due = due;
    }
    this.deadlines.add(sw);
    this.dirtySwitches.set(userId, due);
  }

  private disarm(userId: number): void {
    const sw = this.switches.get(userId);
    if (sw === undefined) return;
    this.deadlines.remove(sw);
    this.switches.delete(userId);
    this.dirtySwitches.set(userId, 0);
  }

  private cancelAllAfter(userId: UserId, timeout: Micros, time: Micros): CommandResult | undefined {
    if (!isPositiveInt(userId)) return reject('invalid_amount', 'Unknown user.', 'user');
    if (!Number.isSafeInteger(timeout) || timeout < 0 || timeout > MAX_CANCEL_ALL_AFTER)
      return reject('invalid_timeout', 'The timeout must be from 0 to 86400 seconds.', 'timeout');
    const triggerTime = timeout === 0 ? 0 : time + timeout;
    if (triggerTime === 0) this.disarm(userId);
    else this.arm(userId, triggerTime);
    this.emit({ type: 'cancelAllAfterSet', userId, triggerTime: triggerTime as Micros, time });
    return undefined;
  }

  private cancelAllOrders(
    userId: UserId,
    marketId: MarketId | undefined,
    time: Micros,
  ): CommandResult | undefined {
    let market: Market | undefined;
    if (marketId !== undefined) {
      market = marketId >>> 0 === marketId ? this.markets.get(marketId) : undefined;
      if (market === undefined) return reject('unknown_market', 'The selected pair is invalid.', 'pair');
    }
    this.cancelUserOrders(userId, market, CancelReason.cancelAll, time);
    return undefined;
  }

  /**
   * Cancels a user's resting orders (of one market, or all), in ascending id order. Scans the open
   * orders (O(all open orders), for a rare command) rather than keeping a list per user, which
   * every order that rests or ends would pay for.
   */
  private cancelUserOrders(userId: number, market: Market | undefined, reason: string, time: Micros): void {
    const account = this.accountBook.peek(userId);
    if (account === undefined || account.openOrders === 0) return;
    const found: LiveOrder[] = [];
    for (const order of this.openOrders.values()) {
      if (order.userId === userId && (market === undefined || order.market === market)) found.push(order);
    }
    for (const order of found) {
      this.takeOff(order);
      this.finish(order, 'canceled', reason, time);
    }
  }

  private placeOrders(orders: readonly PlaceOrder[], time: Micros): CommandResult {
    if (!Array.isArray(orders) || orders.length < 1 || orders.length > MAX_BATCH_ORDERS) {
      const error = {
        code: 'invalid_batch',
        message: `A batch holds 1 to ${MAX_BATCH_ORDERS} orders.`,
        field: 'orders',
      } as const;
      return this.eventCount === 0 ? { ok: false, error } : { ok: false, error, events: this.takeEvents() };
    }
    const results: PlaceResult[] = [];
    for (const order of orders) {
      const refused = this.placeOrder(order, time);
      results.push(
        refused === undefined || refused.ok
          ? { ok: true, orderId: (this.nextOrderId - 1) as OrderId }
          : { ok: false, error: refused.error },
      );
    }
    return { ok: true, events: this.takeEvents(), results };
  }

  /**
   * Records a level about to change, once per drain: the first change keeps its place and total.
   * `key` is the price for a bid, minus the price for an ask; `level` is the level at that price
   * now, if there is one (none: it is about to be created, from a total of 0). Every level that
   * exists at a listed price is marked with the current drain, so a marked level is listed already.
   */
  private markLevel(market: Market, key: number, level: Level | undefined): void {
    if (level !== undefined) {
      if (level.mark === this.drainEpoch) return;
      level.mark = this.drainEpoch;
    }
    const i = market.dirtyCount++;
    if (i < market.dirtyKeys.length) {
      market.dirtyKeys[i] = key;
      market.dirtyBefore[i] = level === undefined ? 0 : level.total;
    } else {
      market.dirtyKeys.push(key);
      market.dirtyBefore.push(level === undefined ? 0 : level.total);
    }
  }

  private emit(event: EngineEvent): void {
    if (this.eventCount < this.eventScratch.length) this.eventScratch[this.eventCount] = event;
    else this.eventScratch.push(event);
    this.eventCount++;
  }

  /** The command's events, in an array of their size (see eventScratch). */
  private takeEvents(): EngineEvent[] {
    const n = this.eventCount;
    const scratch = this.eventScratch;
    let events: EngineEvent[];
    if (n === 0) return [];
    if (n === 1) events = [scratch[0]!];
    else events = scratch.slice(0, n) as EngineEvent[];
    for (let i = 0; i < n; i++) scratch[i] = null;
    this.eventCount = 0;
    return events;
  }

  private markDirty(order: LiveOrder): void {
    if (!order.dirty) {
      order.dirty = true;
      if (this.dirtyCount < this.dirtyOrders.length) this.dirtyOrders[this.dirtyCount] = order;
      else this.dirtyOrders.push(order);
      this.dirtyCount++;
    }
  }

  /** Moves an order to a final status and gives back whatever it still holds. */
  private finish(order: LiveOrder, status: 'closed' | 'canceled', reason: string | null, time: Micros): void {
    const market = order.market;
    this.accountBook.release(
      order.account,
      order.side === 'buy' ? market.quote : market.base,
      order.reserved,
    );
    order.reserved = 0;
    order.status = status;
    order.reason = reason;
    order.closeTime = time;
    this.markDirty(order);
    const done = order.state();
    order.snap = done;
    this.emit({ type: 'orderDone', order: done });
  }

  private costOf(market: Market, price: number, volume: number): number {
    return market.costMultiplier === 1
      ? mulDiv(price, volume, market.costDivisor, 'floor')
      : mulDiv(price, volume * market.costMultiplier, 1, 'floor');
  }

  // ---- reads -------------------------------------------------------------------------------

  /** Everything changed since the previous drain; the store persists exactly this. */
  drainChanges(): ChangeSet {
    const orders = new Array<OrderState>(this.dirtyCount);
    for (let i = 0; i < this.dirtyCount; i++) {
      const order = this.dirtyOrders[i]!;
      order.dirty = false;
      orders[i] = order.snap ?? order.state();
      order.snap = null;
      // A finished order is referenced by nothing once drained (events carry copies of its state).
      if (order.status !== 'open' && this.spareOrders.length < MAX_SPARE) this.spareOrders.push(order);
    }
    this.dirtyCount = 0;
    const levels: LevelKey[] = [];
    for (const market of this.markets.values()) {
      for (let i = 0; i < market.dirtyCount; i++) {
        const key = market.dirtyKeys[i]!;
        const before = market.dirtyBefore[i]!;
        const side = key > 0 ? 'buy' : 'sell';
        const price = Math.abs(key);
        const level = (side === 'buy' ? market.bids : market.asks).level(price);
        let after = 0;
        if (level !== undefined) {
          // Every level at a listed price carries this drain's mark (see markLevel); unmarking it
          // here drops the later entries of its price, which only a level created again adds.
          if (level.mark !== this.drainEpoch) continue;
          level.mark = 0;
          after = level.total;
        }
        // Without a level now, a later entry of a price says 0 before and 0 after: no change. A
        // level changed and changed back within the batch (placed then canceled) is no change.
        if (after !== before)
          levels.push({ marketId: market.spec.id, side, price: price as Price, before: before as Volume });
      }
      market.dirtyCount = 0;
    }
    this.drainEpoch++;
    const changes: ChangeSet = {
      orders,
      balances: this.accountBook.drainBalances(),
      totals: this.accountBook.drainTotals(),
      levels,
      sequences: this.sequences(),
    };
    if (this.dirtySwitches.size === 0) return changes;
    const switches: SwitchState[] = [];
    for (const [userId, triggerTime] of this.dirtySwitches)
      switches.push({ userId: userId as UserId, triggerTime: triggerTime as Micros });
    this.dirtySwitches.clear();
    return { ...changes, switches };
  }

  /**
   * The earliest GTD expiry or dead man's switch still to fire, or null when there is none: the
   * time at which a `tick` (or any command) will fire something. A sequencer arms one timer for it.
   */
  nextDeadline(): Micros | null {
    return (this.deadlines.peek()?.due ?? null) as Micros | null;
  }

  sequences(): Sequences {
    return { nextOrderId: this.nextOrderId, nextTradeId: this.nextTradeId, nextMarketId: this.nextMarketId };
  }

  snapshot(): EngineSnapshot {
    // The index yields ascending ids, which is time priority unless an amend moved an order.
    const live = [...this.openOrders.values()];
    if (live.some((o) => o.priority !== o.id)) live.sort((a, b) => a.priority - b.priority);
    const snapshot: EngineSnapshot = {
      assets: [...this.assets],
      markets: [...this.markets.values()].map((m) => m.spec),
      balances: [...this.accountBook.allBalances()],
      totals: this.assets.map((_, i) => this.accountBook.totalsRow(i)),
      openOrders: live.map((o) => o.state()),
      sequences: this.sequences(),
    };
    const lastPrices = this.lastPriceList();
    const withPrices = lastPrices.length === 0 ? snapshot : { ...snapshot, lastPrices };
    if (this.switches.size === 0) return withPrices;
    return { ...withPrices, switches: this.switchList() };
  }

  /** The last trade price of each market that traded, in ascending market id. */
  private lastPriceList(): LastPrice[] {
    const list: LastPrice[] = [];
    for (const market of this.markets.values()) {
      if (market.lastPrice !== 0) list.push({ marketId: market.spec.id, price: market.lastPrice as Price });
    }
    return list.sort((a, b) => a.marketId - b.marketId);
  }

  /** The last trade price of a market, or null when it has not traded (or does not exist). */
  lastPrice(marketId: MarketId): Price | null {
    const price = this.markets.get(marketId)?.lastPrice ?? 0;
    return price === 0 ? null : (price as Price);
  }

  /** Armed dead man's switches, in ascending user id. */
  private switchList(): SwitchState[] {
    return [...this.switches.values()]
      .sort((a, b) => a.userId - b.userId)
      .map((sw) => ({ userId: sw.userId as UserId, triggerTime: sw.due as Micros }));
  }

  assetList(): readonly AssetSpec[] {
    return this.assets;
  }

  marketList(): MarketSpec[] {
    return [...this.markets.values()].map((m) => m.spec);
  }

  market(id: MarketId): MarketSpec | undefined {
    return this.markets.get(id)?.spec;
  }

  openOrder(id: OrderId): OrderState | undefined {
    return this.openOrders.get(id)?.state();
  }

  /** The user's open order with this client order id, if any. */
  openOrderByClientId(userId: UserId, clientOrderId: string): OrderState | undefined {
    return this.clientIds.get(userId)?.get(clientOrderId)?.state();
  }

  /** When the user's dead man's switch fires, or null when it is disarmed. */
  cancelAllAfterTime(userId: UserId): Micros | null {
    return (this.switches.get(userId)?.due ?? null) as Micros | null;
  }

  /** Aggregated levels, best first, at most `max` per side (0 = all). */
  levels(marketId: MarketId, side: Side, max = 0): BookLevels {
    const market = this.markets.get(marketId);
    if (market === undefined) return [];
    const out: [Price, Volume][] = [];
    for (const level of (side === 'buy' ? market.bids : market.asks).iterate(max)) {
      out.push([level.price as Price, level.total as Volume]);
    }
    return out;
  }

  /** Total resting volume at one price (0 when no level). */
  levelVolume(marketId: MarketId, side: Side, price: Price): Volume {
    const market = this.markets.get(marketId);
    const level = (side === 'buy' ? market?.bids : market?.asks)?.level(price);
    return (level?.total ?? 0) as Volume;
  }

  bestPrice(marketId: MarketId, side: Side): Price | null {
    const market = this.markets.get(marketId);
    const best = side === 'buy' ? market?.bids.best : market?.asks.best;
    return (best?.price ?? null) as Price | null;
  }

  balance(userId: UserId, code: AssetCode): { available: Amount; reserved: Amount } {
    const asset = this.assetIndex.get(code);
    const account = this.accountBook.peek(userId);
    if (asset === undefined || account === undefined)
      return { available: 0 as Amount, reserved: 0 as Amount };
    return {
      available: this.accountBook.available(account, asset) as Amount,
      reserved: this.accountBook.reservedOf(account, asset) as Amount,
    };
  }

  /**
   * SHA-256 (hex) of the whole state a snapshot carries (catalogue, id counters, totals, non-zero
   * balances, every resting order in time priority with all its fields): equal for two engines in
   * the same state however they got there, e.g. a live engine and one restored from its snapshot;
   * different when any of it differs. Not of what the next drain will report. See engine-state.ts.
   */
  stateHash(): string {
    return hashState(this.stateView());
  }

  /**
   * Checks every invariant of the state (books, id index, reservations, balances, conservation;
   * see findViolation) and throws an InternalStateError describing the first one broken.
   */
  validateInternalState(): void {
    const violation = findViolation(this.stateView());
    if (violation !== null) throw new InternalStateError(violation);
  }

  private stateView(): EngineStateView {
    return {
      assets: this.assets,
      markets: [...this.markets.values()].sort((a, b) => a.spec.id - b.spec.id),
      accounts: this.accountBook,
      openOrders: this.openOrders,
      sequences: this.sequences(),
      controls: {
        maxOpenOrdersPerUser: this.maxOpenOrdersPerUser,
        deadlines: this.deadlines,
        switches: this.switchList(),
        clientIds: this.clientIds,
      },
      costOf: (market, price, volume) => this.costOf(market as Market, price, volume),
    };
  }

  /** The conservation invariant per asset, exact. */
  audit(): ReturnType<AccountBook['audit']> {
    return this.accountBook.audit(this.assets.length);
  }
}
