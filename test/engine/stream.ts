/**
 * A seeded random command stream for the engine tests: limit and market orders on both sides with
 * prices clustered near a drifting mid (so crossing is frequent), cancels of open, foreign, closed
 * and unknown ids, deposits, withdrawals and commands that must be refused. It reads the open
 * orders and balances from a ReferenceBook fed with the same commands.
 *
 * With `controls`, the stream also uses every order control (issue 21): time in force, post-only,
 * client order ids, the four self-trade modes, GTD expiries, amends, cancel-all, cancel by
 * client id, the dead man's switch, batches and ticks, valid and invalid. Without it the stream
 * is exactly what it was before they existed (event-stream-pin.test.ts pins it).
 *
 * With `conditional` as well, a fifth of the commands are conditional orders (issue 22): every
 * type, triggers a few ticks from the last trade price on the side where they wait (sometimes
 * reached already), -limit prices around the trigger, trailing offsets in ticks and in basis
 * points, invalid fields now and then, amends of waiting orders' triggers, prices and volumes;
 * batches carry them too. Cancels, cancel-all, switches and GTD expiries reach them as any order.
 */
import type {
  Amount,
  AssetCode,
  MarketId,
  Micros,
  OrderId,
  Price,
  SelfTradeMode,
  Side,
  TimeInForce,
  UserId,
  Volume,
} from '../../src/domain/types.js';
import { CONDITIONAL_TYPES, executionTypeOf, type TrailingOffset } from '../../src/domain/types.js';
import {
  type Command,
  MAX_CANCEL_ALL_AFTER,
  MAX_EXPIRY_AHEAD,
  type PlaceOrder,
} from '../../src/engine/types.js';
import { ASSETS, MARKETS, mulberry32 } from './fixtures.js';
import { isWaiting, type ReferenceBook, type RefMarket } from './reference-book.js';

const MAX = Number.MAX_SAFE_INTEGER;
export const USERS = [1, 2, 3, 4, 5, 6] as const;
/** User 6 is poor: its market buys run out of budget. User 3 crosses itself on purpose. */
const POOR = 6;
const SELF_CROSSER = 3;

interface MarketGen {
  readonly m: RefMarket;
  readonly mid0: number;
  mid: number;
  /** Half-width of the price cloud around the mid, in ticks. */
  readonly spread: number;
  /** Typical volumes, log-uniform between these (lots). */
  readonly vMin: number;
  readonly vMax: number;
  /** Rare large volumes (products above 2^53 for BTC/EUR). */
  readonly vLarge: number;
}

const RICH: Record<string, number> = {
  BTC: 50_000_000_000,
  EUR: 1_000_000_000,
  ETH: 100_000_000_000_000,
  USDT: 1_000_000_000_000,
};
const POOR_FUNDS: Record<string, number> = {
  BTC: 1_000_000,
  EUR: 100_000,
  ETH: 1_000_000_000,
  USDT: 100_000_000,
};

/** Client order ids the controlled stream draws from: few, so duplicates happen; some invalid. */
const CLIENT_IDS = ['a', 'b', 'c', 'd', 'q-1', 'Z_9'];
const BAD_CLIENT_IDS = ['', 'x'.repeat(37), 'bad id', 'é'];

export interface GeneratorOptions {
  /** Also generate the order controls (see the module comment). */
  readonly controls?: boolean;
  /** Also generate conditional orders (with `controls`; see the module comment). */
  readonly conditional?: boolean;
}

type Mutable<T> = { -readonly [K in keyof T]: T[K] };
type AmendOrder = Extract<Command, { kind: 'amendOrder' }>;

export class Generator {
  private readonly rnd: () => number;
  private readonly markets: MarketGen[];
  /** The time the next command will carry: the controlled stream sets expiries and switches from it. */
  now = 0;

  constructor(
    seed: number,
    private readonly ref: ReferenceBook,
    private readonly options: GeneratorOptions = {},
  ) {
    this.rnd = mulberry32(seed);
    this.markets = [
      {
        m: MARKETS[0]!,
        mid0: 300_000,
        mid: 300_000,
        spread: 25,
        vMin: 1_000,
        vMax: 100_000_000,
        vLarge: 60_000_000_000,
      },
      { m: MARKETS[1]!, mid0: 5_000, mid: 5_000, spread: 8, vMin: 10, vMax: 50_000, vLarge: 50_000_000 },
      { m: MARKETS[2]!, mid0: 300_000, mid: 300_000, spread: 15, vMin: 1, vMax: 10_000, vLarge: 100_000_000 },
    ];
  }

  private int(lo: number, hi: number): number {
    return lo + Math.floor(this.rnd() * (hi - lo + 1));
  }

  private pick<T>(items: readonly T[]): T {
    return items[Math.floor(this.rnd() * items.length)]!;
  }

  private logUniform(lo: number, hi: number): number {
    return Math.floor(Math.exp(Math.log(lo) + this.rnd() * (Math.log(hi) - Math.log(lo))));
  }

  funding(): Command[] {
    const commands: Command[] = [];
    for (const userId of USERS) {
      for (const a of ASSETS) {
        const amount = (userId === POOR ? POOR_FUNDS : RICH)[a.code]!;
        commands.push({
          kind: 'deposit',
          userId: userId as UserId,
          asset: a.code as AssetCode,
          amount: amount as Amount,
        });
      }
    }
    return commands;
  }

  private volume(g: MarketGen): number {
    const r = this.rnd();
    if (r < 0.9) return this.logUniform(g.vMin, g.vMax);
    if (r < 0.96) return this.int(1, g.m.ordermin * 2);
    if (r < 0.995) return this.logUniform(g.vMax, g.vLarge);
    return this.pick([MAX, MAX - 1, 9_000_000_000_000_000, 2 ** 52 + 7]);
  }

  private drift(): void {
    for (const g of this.markets) {
      if (this.rnd() < 0.05) g.mid = Math.min(Math.max(g.mid + this.int(-3, 3), g.mid0 * 0.9), g.mid0 * 1.1);
    }
  }

  next(): Command {
    this.drift();
    if (this.options.conditional === true) {
      const r = this.rnd();
      if (r < 0.2) return this.withControls(this.conditionalOrder());
      if (r < 0.27) return this.amendConditional();
    }
    if (this.options.controls === true) return this.nextControlled();
    const r = this.rnd();
    if (r < 0.44) return this.limit();
    if (r < 0.56) return this.market();
    if (r < 0.8) return this.cancel();
    if (r < 0.88) return this.deposit();
    if (r < 0.94) return this.withdraw();
    return this.odd();
  }

  private nextControlled(): Command {
    const r = this.rnd();
    if (r < 0.3) return this.withControls(this.limit() as PlaceOrder);
    if (r < 0.36) return this.withControls(this.market() as PlaceOrder);
    if (r < 0.49) return this.cancel();
    if (r < 0.58) return this.amend();
    if (r < 0.6) return this.cancelAll();
    if (r < 0.63) return this.cancelAllAfter();
    if (r < 0.66) return this.batch();
    if (r < 0.68) return this.cancelClientOrder();
    if (r < 0.7) return { kind: 'tick' };
    if (r < 0.78) return this.deposit();
    if (r < 0.84) return this.withdraw();
    if (r < 0.92) return this.odd();
    return this.withControls(this.tiny());
  }

  /** A limit order worth less than one quote unit now and then (refused), or a cheap valid one. */
  private tiny(): PlaceOrder {
    const g = this.pick(this.markets);
    return {
      kind: 'placeOrder',
      userId: this.user(),
      marketId: g.m.id as MarketId,
      side: this.rnd() < 0.5 ? 'buy' : 'sell',
      type: 'limit',
      price: this.int(1, 3) as Price,
      volume: this.int(g.m.ordermin, g.m.ordermin * 3) as Volume,
    };
  }

  /** Half the orders unchanged; the others with some controls, valid mostly, invalid sometimes. */
  private withControls(order: PlaceOrder): PlaceOrder {
    if (this.rnd() < 0.5) return order;
    const controlled: { -readonly [K in keyof PlaceOrder]: PlaceOrder[K] } = { ...order };
    const t = this.rnd();
    const tif: TimeInForce | undefined =
      t < 0.2
        ? undefined
        : t < 0.35
          ? 'GTC'
          : t < 0.55
            ? 'IOC'
            : t < 0.7
              ? 'FOK'
              : t < 0.98
                ? 'GTD'
                : ('XYZ' as TimeInForce);
    if (tif !== undefined) controlled.timeInForce = tif;
    if (this.rnd() < 0.25) controlled.postOnly = this.rnd() < 0.97;
    if (this.rnd() < 0.35) controlled.clientOrderId = this.clientOrderId();
    if (this.rnd() < 0.5)
      controlled.stp =
        this.rnd() < 0.98
          ? this.pick(['cancel-oldest', 'cancel-newest', 'cancel-both', 'decrement'] as const)
          : ('sideways' as SelfTradeMode);
    if (tif === 'GTD' || this.rnd() < 0.02) controlled.expireTime = this.expireTime();
    return controlled;
  }

  private clientOrderId(): string | null {
    const r = this.rnd();
    if (r < 0.05) return null;
    if (r < 0.1) return this.pick(BAD_CLIENT_IDS);
    return this.pick(CLIENT_IDS);
  }

  private expireTime(): Micros {
    const r = this.rnd();
    if (r < 0.9) return (this.now + this.int(1, 3000)) as Micros;
    return this.pick([
      this.now,
      this.now - 5,
      this.now + MAX_EXPIRY_AHEAD,
      this.now + MAX_EXPIRY_AHEAD + 1,
      0,
      7.5,
    ]) as Micros;
  }

  private amend(): Command {
    const open = this.ref.openOrders();
    if (open.length === 0 || this.rnd() < 0.05)
      return {
        kind: 'amendOrder',
        userId: this.user(),
        orderId: this.int(0, this.ref.lastOrderId + 1) as OrderId,
        volume: 1 as Volume,
      };
    const o = this.pick(open);
    const g = this.markets.find((x) => x.m.id === o.marketId)!;
    const userId = (this.rnd() < 0.05 ? (o.userId % USERS.length) + 1 : o.userId) as UserId;
    const command: {
      -readonly [K in keyof Extract<Command, { kind: 'amendOrder' }>]: Extract<
        Command,
        { kind: 'amendOrder' }
      >[K];
    } = {
      kind: 'amendOrder',
      userId,
      orderId: o.id as OrderId,
    };
    const r = this.rnd();
    if (r < 0.45) {
      // A new price near the mid: sometimes through the book.
      const offset = this.int(-g.spread, g.spread);
      command.price =
        this.rnd() < 0.03
          ? (this.pick([0, -1, 1.5]) as Price)
          : (Math.max(1, Math.round(g.mid) + offset) as Price);
    }
    if (r > 0.3) {
      const v = this.rnd();
      if (v < 0.45 && o.volume - o.executed > 1)
        command.volume = this.int(o.executed + 1, o.volume - 1) as Volume;
      else if (v < 0.85) command.volume = (o.volume + this.int(1, o.volume)) as Volume;
      else if (v < 0.95) command.volume = o.executed as Volume;
      else command.volume = this.pick([0, -2, 2.5, MAX]) as Volume;
    }
    if (this.rnd() < 0.15) command.clientOrderId = this.clientOrderId();
    return command;
  }

  private cancelAll(): Command {
    const r = this.rnd();
    if (r < 0.5) return { kind: 'cancelAllOrders', userId: this.user() };
    const marketId = r < 0.95 ? this.pick(this.markets).m.id : this.pick([99, 0, 1.5]);
    return { kind: 'cancelAllOrders', userId: this.user(), marketId: marketId as MarketId };
  }

  private cancelAllAfter(): Command {
    const r = this.rnd();
    const timeout =
      r < 0.2
        ? 0
        : r < 0.9
          ? this.int(1, 3000)
          : this.pick([MAX_CANCEL_ALL_AFTER, MAX_CANCEL_ALL_AFTER + 1, -1, 1.5]);
    const userId = (this.rnd() < 0.02 ? 0 : this.user()) as UserId;
    return { kind: 'cancelAllAfter', userId, timeout: timeout as Micros };
  }

  private batch(): Command {
    const r = this.rnd();
    const n = r < 0.03 ? 0 : r < 0.06 ? 21 : this.int(1, 5);
    const orders: PlaceOrder[] = [];
    for (let i = 0; i < n; i++) {
      if (this.options.conditional === true && this.rnd() < 0.25)
        orders.push(this.withControls(this.conditionalOrder()));
      else orders.push(this.withControls((this.rnd() < 0.85 ? this.limit() : this.market()) as PlaceOrder));
    }
    return { kind: 'placeOrders', orders };
  }

  /** Where a market's triggers are placed from: its last trade price, or the mid before any trade. */
  private lastOr(g: MarketGen): number {
    return this.ref.lastPrice(g.m.id) ?? Math.round(g.mid);
  }

  /**
   * A conditional order: a trigger 1 to `spread` ticks from the last price on the side where it
   * waits (a few already reached: refused), a -limit price a few ticks around it, a trailing
   * offset in ticks or in basis points worth a few ticks; invalid fields now and then.
   */
  private conditionalOrder(): PlaceOrder {
    const g = this.pick(this.markets);
    const side: Side = this.rnd() < 0.5 ? 'buy' : 'sell';
    const userId = (side === 'buy' && this.rnd() < 0.15 ? POOR : this.user()) as UserId;
    const type = this.pick(CONDITIONAL_TYPES);
    const stopLoss = type === 'stop-loss' || type === 'stop-loss-limit' || type === 'trailing-stop';
    const falling = stopLoss === (side === 'sell');
    const last = this.lastOr(g);
    const away = this.rnd() < 0.9 ? this.int(1, g.spread) : this.int(-3, 0);
    const trigger = Math.max(1, falling ? last - away : last + away);
    const order: Mutable<PlaceOrder> = {
      kind: 'placeOrder',
      userId,
      marketId: g.m.id as MarketId,
      side,
      type,
      price: 0 as Price,
      volume: this.volume(g) as Volume,
    };
    if (executionTypeOf(type) === 'limit') order.price = Math.max(1, trigger + this.int(-4, 4)) as Price;
    else if (this.rnd() < 0.03) order.price = trigger as Price;
    if (type === 'trailing-stop') {
      // A basis point is 30 ticks at BTC/EUR's and ETH/USDT's mids, half a tick at ETH/BTC's.
      const bpsMax = Math.max(1, Math.floor((g.spread * 10_000) / g.mid0));
      order.trailingOffset =
        this.rnd() < 0.5
          ? { unit: 'ticks', amount: this.int(1, g.spread) }
          : { unit: 'bps', amount: this.int(1, bpsMax) };
    } else order.triggerPrice = trigger as Price;
    if (this.rnd() < 0.06) this.spoil(order);
    return order;
  }

  /** Makes a conditional order invalid in one of the ways the engine must refuse. */
  private spoil(order: Mutable<PlaceOrder>): void {
    const badOffsets = [
      { unit: 'bps', amount: 0 },
      { unit: 'bps', amount: 5_001 },
      { unit: 'bps', amount: 2.5 },
      { unit: 'ticks', amount: 0 },
      { unit: 'ticks', amount: -3 },
      { unit: 'percent', amount: 1 },
    ] as unknown as TrailingOffset[];
    switch (this.int(0, 6)) {
      case 0:
        delete order.triggerPrice;
        delete order.trailingOffset;
        break;
      case 1:
        order.triggerPrice = this.pick([0, -5, 1.5]) as Price;
        break;
      case 2:
        if (order.type === 'trailing-stop') order.triggerPrice = 300_000 as Price;
        else order.trailingOffset = { unit: 'ticks', amount: 5 };
        break;
      case 3:
        order.type = 'trailing-stop';
        order.price = 0 as Price;
        delete order.triggerPrice;
        order.trailingOffset = this.pick(badOffsets);
        break;
      case 4:
        order.type = this.pick(['limit', 'market'] as const);
        order.price = 300_000 as Price;
        break;
      case 5:
        order.type = this.pick(['limit', 'market'] as const);
        order.price = 300_000 as Price;
        delete order.triggerPrice;
        order.trailingOffset = { unit: 'bps', amount: 10 };
        break;
      default:
        if (executionTypeOf(order.type) === 'limit') order.price = this.pick([0, -1, 2.5]) as Price;
        else order.price = 5 as Price;
    }
  }

  /** An amend of a waiting conditional order (its trigger, limit price, volume, client id), or a trigger amend that must be refused. */
  private amendConditional(): Command {
    const open = this.ref.openOrders();
    const waiting = open.filter(isWaiting);
    if (waiting.length === 0 || this.rnd() < 0.08) {
      const others = open.filter((o) => !isWaiting(o));
      const o = others.length === 0 ? undefined : this.pick(others);
      return {
        kind: 'amendOrder',
        userId: (o?.userId ?? this.user()) as UserId,
        orderId: (o?.id ?? this.ref.lastOrderId + 1) as OrderId,
        triggerPrice: (o?.price ?? 1) as Price,
      };
    }
    const o = this.pick(waiting);
    const g = this.markets.find((x) => x.m.id === o.marketId)!;
    const userId = (this.rnd() < 0.04 ? (o.userId % USERS.length) + 1 : o.userId) as UserId;
    const command: Mutable<AmendOrder> = { kind: 'amendOrder', userId, orderId: o.id as OrderId };
    if (this.rnd() < 0.02) return command;
    const r = this.rnd();
    if (r < 0.5) {
      const last = this.lastOr(g);
      const away = this.int(-2, g.spread);
      command.triggerPrice =
        this.rnd() < 0.03
          ? (this.pick([0, -1, 2.5]) as Price)
          : (Math.max(1, o.wait!.falling ? last - away : last + away) as Price);
    }
    if (r > 0.35 && r < 0.7) {
      const base = o.price > 0 ? o.price : this.lastOr(g);
      command.price = (this.rnd() < 0.03 ? this.pick([0, -4]) : Math.max(1, base + this.int(-4, 4))) as Price;
    }
    if (r > 0.55) {
      const v = this.rnd();
      if (v < 0.45 && o.volume > g.m.ordermin)
        command.volume = this.int(g.m.ordermin, o.volume - 1) as Volume;
      else if (v < 0.9) command.volume = (o.volume + this.int(1, o.volume)) as Volume;
      else command.volume = this.pick([0, -2, 2.5, g.m.ordermin - 1, MAX]) as Volume;
    }
    if (this.rnd() < 0.1) command.clientOrderId = this.clientOrderId();
    return command;
  }

  private cancelClientOrder(): Command {
    return { kind: 'cancelClientOrder', userId: this.user(), clientOrderId: this.pick(CLIENT_IDS) };
  }

  private user(): UserId {
    return this.pick(USERS) as UserId;
  }

  private limit(): Command {
    const g = this.pick(this.markets);
    const userId = this.user();
    const side: Side = this.rnd() < 0.5 ? 'buy' : 'sell';
    let offset: number;
    if (userId === SELF_CROSSER) offset = this.int(-2, 2);
    else {
      // Buys mostly below the mid, sells mostly above, with a third of the cloud crossing.
      const o = this.int(-g.spread, Math.ceil(g.spread / 3));
      offset = side === 'buy' ? o : -o;
    }
    return {
      kind: 'placeOrder',
      userId,
      marketId: g.m.id as MarketId,
      side,
      type: 'limit',
      price: Math.max(1, Math.round(g.mid) + offset) as Price,
      volume: this.volume(g) as Volume,
    };
  }

  private market(): Command {
    const g = this.pick(this.markets);
    const side: Side = this.rnd() < 0.5 ? 'buy' : 'sell';
    const userId = (side === 'buy' && this.rnd() < 0.3 ? POOR : this.user()) as UserId;
    return {
      kind: 'placeOrder',
      userId,
      marketId: g.m.id as MarketId,
      side,
      type: 'market',
      price: this.pick([0, 1, Math.round(g.mid)]) as Price,
      volume: this.volume(g) as Volume,
    };
  }

  private cancel(): Command {
    const open = this.ref.openOrders();
    const r = this.rnd();
    if (r < 0.6 && open.length > 0) {
      const o = this.pick(open);
      return { kind: 'cancelOrder', userId: o.userId as UserId, orderId: o.id as OrderId };
    }
    if (r < 0.75 && open.length > 0) {
      const o = this.pick(open);
      const other = (o.userId % USERS.length) + 1;
      return { kind: 'cancelOrder', userId: other as UserId, orderId: o.id as OrderId };
    }
    if (r < 0.9 && this.ref.lastOrderId > 0) {
      return {
        kind: 'cancelOrder',
        userId: this.user(),
        orderId: this.int(1, this.ref.lastOrderId) as OrderId,
      };
    }
    return {
      kind: 'cancelOrder',
      userId: this.user(),
      orderId: this.pick([0, -1, this.ref.lastOrderId + 1, 2.5]) as OrderId,
    };
  }

  private deposit(): Command {
    const a = this.pick(ASSETS);
    const userId = (this.rnd() < 0.05 ? 7 : this.user()) as UserId;
    const top = (userId === POOR ? POOR_FUNDS : RICH)[a.code]!;
    return {
      kind: 'deposit',
      userId,
      asset: a.code as AssetCode,
      amount: this.logUniform(1, top / 4) as Amount,
    };
  }

  private withdraw(): Command {
    const a = this.pick(ASSETS);
    const userId = this.user();
    const available = Number(this.ref.balance(userId, a.code).available);
    const r = this.rnd();
    let amount: number;
    if (r < 0.1) amount = available;
    else if (r < 0.2) amount = available + this.int(1, 100);
    else amount = Math.max(1, Math.floor(available * this.rnd() * 0.3));
    return { kind: 'withdraw', userId, asset: a.code as AssetCode, amount: amount as Amount };
  }

  /** Commands that must be refused (or are edge cases), identically by both. */
  private odd(): Command {
    const g = this.pick(this.markets);
    const order = {
      kind: 'placeOrder',
      userId: this.user(),
      marketId: g.m.id as MarketId,
      side: this.rnd() < 0.5 ? 'buy' : 'sell',
      type: 'limit',
      price: Math.round(g.mid) as Price,
      volume: g.vMin as Volume,
    } as const;
    switch (this.int(0, 12)) {
      case 0:
        return { ...order, marketId: 99 as MarketId };
      case 1:
        return { ...order, volume: 0 as Volume };
      case 2:
        return { ...order, volume: 2.5 as Volume };
      case 3:
        return { ...order, price: 0 as Price };
      case 4:
        return { ...order, price: -3 as Price };
      case 5:
        return { ...order, price: 1.5 as Price };
      case 6:
        return { ...order, userId: 0 as UserId };
      case 7:
        return { ...order, type: 'market', price: -1 as Price, volume: -4 as Volume };
      case 8:
        return { kind: 'deposit', userId: this.user(), asset: 'DOGE' as AssetCode, amount: 5 as Amount };
      case 9:
        return {
          kind: 'deposit',
          userId: this.user(),
          asset: 'EUR' as AssetCode,
          amount: this.pick([0, -5, 1.5, MAX]) as Amount,
        };
      case 10:
        return {
          kind: 'withdraw',
          userId: this.user(),
          asset: 'BTC' as AssetCode,
          amount: this.pick([0, -1, 0.5]) as Amount,
        };
      case 11:
        return { kind: 'withdraw', userId: 99 as UserId, asset: 'ETH' as AssetCode, amount: 1 as Amount };
      default:
        // A limit far through the book: sweeps many levels.
        return {
          ...order,
          price: (order.side === 'buy' ? g.mid0 * 2 : 1) as Price,
          volume: g.vMax as Volume,
        };
    }
  }
}
