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
 */
import {
  type Amount,
  type AssetCode,
  CancelReason,
  type MarketId,
  type Micros,
  type OrderId,
  type OrderStatus,
  type OrderType,
  type Price,
  type Side,
  type TradeId,
  type UserId,
  type Volume,
} from '../../src/domain/types.js';
import type { Command, EngineEvent, OrderState, RejectCode, Trade } from '../../src/engine/types.js';

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
  readonly price: number;
  readonly volume: number;
  readonly openTime: number;
  executed: number;
  status: OrderStatus;
  reason: string | null;
  closeTime: number | null;
  cost: bigint;
  fee: bigint;
  /** Σ costᵢ x rateᵢ over the order's fills: its exact fee times 10^8. */
  exactFee: bigint;
  reserved: bigint;
}

export interface RefBalance {
  available: bigint;
  reserved: bigint;
}

export type RefResult =
  | { readonly ok: true; readonly events: EngineEvent[] }
  | { readonly ok: false; readonly code: RejectCode };

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

  constructor(assets: readonly RefAsset[], markets: readonly RefMarket[]) {
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

  openOrders(): readonly RefOrder[] {
    return this.open;
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
    for (const o of this.open) {
      if (o.marketId !== marketId || o.side !== side) continue;
      if (best === null || (side === 'buy' ? o.price > best : o.price < best)) best = o.price;
    }
    return best;
  }

  /** Aggregated [price, volume] levels, best first. */
  levels(marketId: number, side: Side): [number, number][] {
    const totals = new Map<number, number>();
    for (const o of this.open) {
      if (o.marketId !== marketId || o.side !== side) continue;
      totals.set(o.price, (totals.get(o.price) ?? 0) + (o.volume - o.executed));
    }
    return [...totals.entries()].sort((a, b) => (side === 'buy' ? b[0] - a[0] : a[0] - b[0]));
  }

  // ---- commands ----------------------------------------------------------------------------

  apply(command: Command, time: number): RefResult {
    this.events = [];
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
      default:
        throw new Error(`reference: unsupported command ${command.kind}`);
    }
    return code === null ? { ok: true, events: this.events } : { ok: false, code };
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

  private place(c: Extract<Command, { kind: 'placeOrder' }>, time: number): RejectCode | null {
    const m = this.markets.get(c.marketId);
    if (m === undefined) return 'unknown_market';
    if (!isPositiveSafeInt(c.volume)) return 'invalid_volume';
    if (c.volume < m.ordermin) return 'below_ordermin';
    const isLimit = c.type === 'limit';
    if (isLimit && !isPositiveSafeInt(c.price)) return 'invalid_price';
    if (!isPositiveSafeInt(c.userId)) return 'invalid_amount';

    const holdAsset = c.side === 'buy' ? m.quote : m.base;
    const available = this.balance(c.userId, holdAsset).available;
    let hold: bigint;
    if (c.side === 'sell') {
      hold = this.baseUnits(m, c.volume);
      if (hold > MAX) return 'too_large';
    } else if (isLimit) {
      const cost = this.costOf(m, c.price, c.volume);
      if (cost > MAX) return 'too_large';
      hold = cost + ReferenceBook.ceilDiv(cost * BigInt(Math.max(m.makerFee, m.takerFee)), FEE_SCALE);
      if (hold > MAX) return 'too_large';
    } else {
      hold = available;
      if (hold <= 0n) return 'insufficient_funds';
      if (this.fundsBuy(m, c.userId, c.volume, hold) < m.ordermin) return 'below_ordermin';
    }
    if (available < hold) return 'insufficient_funds';
    if (isLimit) {
      // Every amount exact: the volume in base units, and the total of the level it may rest at.
      if (this.baseUnits(m, c.volume) > MAX) return 'too_large';
      let level = BigInt(c.volume);
      for (const o of this.open)
        if (o.marketId === m.id && o.side === c.side && o.price === c.price)
          level += BigInt(o.volume - o.executed);
      if (level > MAX) return 'too_large';
    }

    const taker: RefOrder = {
      id: this.nextOrderId++,
      userId: c.userId,
      marketId: m.id,
      side: c.side,
      type: c.type,
      price: isLimit ? c.price : 0,
      volume: c.volume,
      openTime: time,
      executed: 0,
      status: 'open',
      reason: null,
      closeTime: null,
      cost: 0n,
      fee: 0n,
      exactFee: 0n,
      reserved: hold,
    };
    this.orders.set(taker.id, taker);
    const account = this.account(c.userId, holdAsset);
    account.available -= hold;
    account.reserved += hold;
    this.events.push({ type: 'orderAccepted', order: this.state(taker) });

    let budgetExhausted = false;
    const opposite: Side = c.side === 'buy' ? 'sell' : 'buy';
    while (taker.executed < taker.volume) {
      // The best maker: best price for the taker, then lowest id (earliest arrival).
      let maker: RefOrder | null = null;
      for (const o of this.open) {
        if (o.marketId !== m.id || o.side !== opposite) continue;
        if (
          maker === null ||
          (opposite === 'sell' ? o.price < maker.price : o.price > maker.price) ||
          (o.price === maker.price && o.id < maker.id)
        ) {
          maker = o;
        }
      }
      if (maker === null) break;
      if (isLimit && (c.side === 'buy' ? maker.price > c.price : maker.price < c.price)) break;
      if (maker.userId === taker.userId) {
        this.end(maker, 'canceled', CancelReason.selfTrade, time);
        continue;
      }
      let volume = Math.min(taker.volume - taker.executed, maker.volume - maker.executed);
      if (!isLimit && c.side === 'buy') {
        const afford = this.affordable(m, maker.price, volume, taker.reserved, taker);
        if (afford < volume) {
          if (afford > 0) this.fill(m, taker, maker, afford, time);
          budgetExhausted = true;
          break;
        }
        volume = afford;
      }
      this.fill(m, taker, maker, volume, time);
    }

    if (taker.executed === taker.volume) {
      this.end(taker, 'closed', null, time);
    } else if (!isLimit) {
      if (taker.executed > 0) this.end(taker, 'closed', null, time);
      else
        this.end(
          taker,
          'canceled',
          budgetExhausted ? CancelReason.insufficientFunds : CancelReason.noLiquidity,
          time,
        );
    } else {
      this.open.push(taker);
    }
    return null;
  }

  /**
   * What a market buy with `budget` gets before its budget runs out, walking the asks in
   * price-time order without its own orders and without changing anything; `wanted` when the
   * budget does not run out first.
   */
  private fundsBuy(m: RefMarket, userId: number, wanted: number, budget: bigint): number {
    const asks = this.open
      .filter((o) => o.marketId === m.id && o.side === 'sell' && o.userId !== userId)
      .sort((a, b) => a.price - b.price || a.id - b.id);
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
      takerType: taker.type,
      takerFee: toNumber(takerFee) as Amount,
      makerFee: toNumber(makerFee) as Amount,
      time: time as Micros,
    };
    this.events.push({ type: 'trade', trade });
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
    return {
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
  }
}
