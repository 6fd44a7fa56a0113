/**
 * The committed history in a store file, read and checked independently of the server's own
 * read paths: plain SQL over a copy of the file (so the original is left exactly as the killed
 * process left it, for the restarted server to recover), then
 *
 * - `checkLedger`: balances, reservations, fees and totals recomputed with BigInt arithmetic from
 *   the ledger entries, the trades and the orders alone, and compared with the stored rows;
 *   every order's executed volume, cost and fee against its trades; every trade's cost and fees
 *   against the market's rules; id sequences without gaps other than the numbers amends took for
 *   time priority; books not crossed; candles against trades;
 * - `replayCheck`: the committed commands (deposits, placements in id order, amends at the number
 *   they took, user cancels) replayed through a fresh engine must reproduce every stored order,
 *   trade, balance and total exactly;
 * - `auditSnapshot`: `Engine.restore(store.loadSnapshot()).audit()`, the server's own view.
 */
import { copyFileSync, existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import type {
  Amount,
  AssetCode,
  AssetSpec,
  MarketId,
  MarketSpec,
  Micros,
  OrderId,
  Price,
  UserId,
  Volume,
} from '../../src/domain/types.js';
import { Engine } from '../../src/engine/engine.js';
import type { Command, OrderState, Trade } from '../../src/engine/types.js';
import { journalPathsOf } from '../../src/store/sqlite/commit-journal.js';
import { JournaledSqliteStore } from '../../src/store/sqlite/journaled-store.js';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { bookFromOrders, type MarketBook } from './book-hash.js';
import {
  commandsOfTrades,
  inBook,
  isConditional,
  matchesAsLimit,
  type OrderTypeName,
} from './conditional.js';

export const USER_CANCEL_REASON = 'canceled by user';
export const CANCEL_ALL_REASON = 'canceled by cancel-all';
const FEE_SCALE = 100_000_000n;

/**
 * The price and volume an order was placed with, by order id, for the orders an amend may have
 * changed since: the store keeps only an order's current values (no amend log: decision E50 in
 * docs/interface-decisions.md), so a check of history is told the originals by whoever sent the amends (the crash test).
 * An order not in the map is taken to have been placed as it is stored.
 */
export type PlacedAs = ReadonlyMap<number, { readonly price: number; readonly volume: number }>;
const NONE_AMENDED: PlacedAs = new Map();

/**
 * Where in the command sequence a trade happened: at its taker's placement (the order's id), or
 * at the command that later moved the taker and made it trade (its priority: an amend, or a
 * trigger firing). A command's time is its batch's, and an order is amended only after its
 * placement was acknowledged, so a taker's trades at a later time than its placement's are the move's.
 */
function tradePosition(t: TradeRow, taker: OrderRow): number {
  return taker.priority !== null && t.time !== taker.open_time ? taker.priority : taker.id;
}

/** An order's price at a point of the command sequence: before its move, the price it was placed with. */
function priceAt(o: OrderRow, position: number, placedAs: PlacedAs): number {
  return o.priority !== null && position < o.priority ? (placedAs.get(o.id)?.price ?? o.price) : o.price;
}

/** Whether an order's price or volume are not what it was placed with (known only from `placedAs`). */
function amended(o: OrderRow, placedAs: PlacedAs): boolean {
  const placed = placedAs.get(o.id);
  return placed !== undefined && (placed.price !== o.price || placed.volume !== o.volume);
}

export interface AssetRow {
  code: string;
  name: string;
  type: 'crypto' | 'fiat';
  decimals: number;
}
export interface MarketRow {
  id: number;
  base: string;
  quote: string;
  pair_decimals: number;
  lot_decimals: number;
  ordermin: number;
  maker_fee: number;
  taker_fee: number;
}
export interface OrderRow {
  id: number;
  user_id: number;
  market_id: number;
  side: 'buy' | 'sell';
  type: OrderTypeName;
  price: number;
  volume: number;
  executed: number;
  status: 'open' | 'closed' | 'canceled';
  reason: string | null;
  open_time: number;
  close_time: number | null;
  cost: number;
  fee: number;
  reserved: number;
  fee_excess: number;
  time_in_force: 'GTC' | 'IOC' | 'FOK' | 'GTD';
  expire_time: number;
  /** 0/1 in SQLite, a boolean from PostgreSQL. */
  post_only: number | boolean;
  client_order_id: string | null;
  stp: 'cancel-oldest' | 'cancel-newest' | 'cancel-both' | 'decrement';
  priority: number | null;
  // Conditional orders (schema 9): NULL / 0 for limit and market orders.
  trigger_price: number | null;
  trailing_unit: 'ticks' | 'bps' | null;
  trailing_amount: number | null;
  trailing_best: number | null;
  /** 0/1 in SQLite, a boolean from PostgreSQL. */
  triggered: number | boolean;
}
/** An armed dead man's switch. */
export interface SwitchRow {
  user_id: number;
  trigger_time: number;
}
export interface TradeRow {
  id: number;
  market_id: number;
  price: number;
  volume: number;
  cost: number;
  taker_order_id: number;
  maker_order_id: number;
  taker_user_id: number;
  maker_user_id: number;
  taker_side: 'buy' | 'sell';
  taker_type: 'limit' | 'market';
  taker_fee: number;
  maker_fee: number;
  time: number;
}
export interface LedgerRow {
  id: number;
  user_id: number;
  asset: string;
  kind: 'deposit' | 'withdrawal';
  amount: number;
  reference: string | null;
  time: number;
}
export interface BalanceRow {
  user_id: number;
  asset: string;
  available: number;
  reserved: number;
}
export interface TotalsRow {
  asset: string;
  net_deposits: number;
  fees: number;
}
export interface CandleSums {
  market_id: number;
  interval: number;
  count: number;
  volume: bigint;
  quote_volume: bigint;
}

/** Per market and interval, the candles' sums: exact, in BigInt (the columns are decimal TEXT). */
function candleSums(
  rows: ReadonlyArray<{
    market_id: number;
    interval: number;
    count: number;
    volume: string;
    quote_volume: string;
  }>,
): CandleSums[] {
  const sums = new Map<string, CandleSums>();
  for (const r of rows) {
    const key = `${r.market_id}:${r.interval}`;
    const s = sums.get(key) ?? {
      market_id: r.market_id,
      interval: r.interval,
      count: 0,
      volume: 0n,
      quote_volume: 0n,
    };
    s.count += r.count;
    s.volume += BigInt(r.volume);
    s.quote_volume += BigInt(r.quote_volume);
    sums.set(key, s);
  }
  return [...sums.values()].sort((a, b) => a.market_id - b.market_id || a.interval - b.interval);
}

export interface Committed {
  readonly assets: AssetRow[];
  readonly markets: MarketRow[];
  readonly orders: OrderRow[];
  readonly trades: TradeRow[];
  readonly ledger: LedgerRow[];
  readonly balances: BalanceRow[];
  readonly totals: TotalsRow[];
  readonly meta: Map<string, number>;
  readonly candles: CandleSums[];
  /** The armed dead man's switches, by user. */
  readonly switches: SwitchRow[];
  readonly integrity: string;
  /** `Engine.restore(SqliteStore.loadSnapshot()).audit()` on the same file. */
  readonly audit: ReturnType<Engine['audit']>;
  /**
   * `stateHash()` of that restored engine: what the server's own engine must hash to once it runs
   * on this state (GET /admin/v1/engine/state), or it holds something the store does not.
   */
  readonly stateHash: string;
}

/** The checks taken of an engine restored from the committed state. */
export function restoredChecks(engine: Engine): Pick<Committed, 'audit' | 'stateHash'> {
  return { audit: engine.audit(), stateHash: engine.stateHash() };
}

/**
 * The commits the server acknowledged from its commit journal and had not yet written to the
 * tables, written to the copy's tables the way the server does when it starts (the journaled
 * store's recovery): the committed state is the tables and the journal together.
 */
function applyJournal(dbFile: string, copy: string): void {
  const files = journalPathsOf(dbFile);
  if (!files.some((file) => existsSync(file))) return;
  const copies = journalPathsOf(copy);
  files.forEach((file, i) => {
    if (existsSync(file)) copyFileSync(file, copies[i]!);
  });
  JournaledSqliteStore.open(SqliteStore.open({ path: copy }), copy).close();
}

/**
 * Reads a store file (and its WAL and commit journal) through a private copy, so nothing is
 * written to the original. The process that wrote it must be gone (or the files quiescent).
 */
export function readCommitted(dbFile: string): Committed {
  const dir = mkdtempSync(join(tmpdir(), 'openspot-committed-'));
  try {
    const copy = join(dir, 'copy.db');
    copyFileSync(dbFile, copy);
    if (existsSync(`${dbFile}-wal`)) copyFileSync(`${dbFile}-wal`, `${copy}-wal`);
    applyJournal(dbFile, copy);
    const db = new Database(copy);
    let committed: Omit<Committed, 'audit' | 'stateHash'>;
    try {
      const all = <T>(sql: string) => db.prepare<[], T>(sql).all();
      committed = {
        integrity: (db.pragma('integrity_check', { simple: true }) as string) ?? 'no answer',
        assets: all<AssetRow>('SELECT code, name, type, decimals FROM assets ORDER BY rowid'),
        markets: all<MarketRow>('SELECT * FROM markets ORDER BY id'),
        orders: all<OrderRow>('SELECT * FROM orders ORDER BY id'),
        trades: all<TradeRow>('SELECT * FROM trades ORDER BY id'),
        ledger: all<LedgerRow>('SELECT * FROM ledger_entries ORDER BY id'),
        balances: all<BalanceRow>('SELECT * FROM balances ORDER BY user_id, asset'),
        totals: all<TotalsRow>('SELECT * FROM asset_totals ORDER BY asset'),
        meta: new Map(
          all<{ key: string; value: number }>('SELECT key, value FROM meta').map((r) => [r.key, r.value]),
        ),
        switches: all<SwitchRow>('SELECT user_id, trigger_time FROM cancel_all_after ORDER BY user_id'),
        candles: candleSums(
          all<{ market_id: number; interval: number; count: number; volume: string; quote_volume: string }>(
            'SELECT market_id, interval, count, volume, quote_volume FROM candles',
          ),
        ),
      };
    } finally {
      db.close();
    }
    const store = SqliteStore.open({ path: copy });
    try {
      return { ...committed, ...restoredChecks(Engine.restore(store.loadSnapshot())) };
    } finally {
      store.close();
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

interface MarketMath {
  readonly row: MarketRow;
  readonly baseUnitsPerLot: bigint;
  readonly multiplier: bigint;
  readonly divisor: bigint;
}

function marketMath(c: Committed): Map<number, MarketMath> {
  const decimals = new Map(c.assets.map((a) => [a.code, a.decimals]));
  const out = new Map<number, MarketMath>();
  for (const m of c.markets) {
    const shift = m.pair_decimals + m.lot_decimals - decimals.get(m.quote)!;
    out.set(m.id, {
      row: m,
      baseUnitsPerLot: 10n ** BigInt(decimals.get(m.base)! - m.lot_decimals),
      multiplier: shift < 0 ? 10n ** BigInt(-shift) : 1n,
      divisor: shift > 0 ? 10n ** BigInt(shift) : 1n,
    });
  }
  return out;
}

const costOf = (m: MarketMath, price: number, volume: number): bigint =>
  (BigInt(price) * BigInt(volume) * m.multiplier) / m.divisor;
/** Fees round up per order: after each fill an order has paid ceil(Σ costᵢ × rateᵢ / 10^8). */
const ceilFee = (exact: bigint): bigint => (exact + FEE_SCALE - 1n) / FEE_SCALE;

/** What a limit order held when it was accepted (docs/money.md: cost + fee at the larger rate for a buy). */
export function initialHold(m: MarketMath, o: Pick<OrderRow, 'side' | 'price' | 'volume'>): bigint {
  if (o.side === 'sell') return BigInt(o.volume) * m.baseUnitsPerLot;
  const cost = costOf(m, o.price, o.volume);
  return cost + ceilFee(cost * BigInt(Math.max(m.row.maker_fee, m.row.taker_fee)));
}

/** What a limit buy of `volume` at `price` holds (the engine's holdFor). */
function holdFor(m: MarketMath, price: number, volume: number): bigint {
  const cost = costOf(m, price, volume);
  return cost + ceilFee(cost * BigInt(Math.max(m.row.maker_fee, m.row.taker_fee)));
}

/**
 * Every accounting rule recomputed from the history. Returns the problems found (empty: consistent).
 * `placedAs`: the original price and volume of orders that may have been amended.
 */
export function checkLedger(c: Committed, placedAs: PlacedAs = NONE_AMENDED): string[] {
  const problems: string[] = [];
  const fail = (text: string) => {
    if (problems.length < 50) problems.push(text);
  };
  if (c.integrity !== 'ok') fail(`integrity_check: ${c.integrity}`);
  const math = marketMath(c);
  const key = (user: number, asset: string) => `${user}/${asset}`;
  const total = new Map<string, bigint>();
  const add = (user: number, asset: string, delta: bigint) =>
    total.set(key(user, asset), (total.get(key(user, asset)) ?? 0n) + delta);
  const netDeposits = new Map<string, bigint>();
  const fees = new Map<string, bigint>();

  for (const e of c.ledger) {
    const delta = e.kind === 'deposit' ? BigInt(e.amount) : -BigInt(e.amount);
    add(e.user_id, e.asset, delta);
    netDeposits.set(e.asset, (netDeposits.get(e.asset) ?? 0n) + delta);
  }

  const orders = new Map(c.orders.map((o) => [o.id, o]));
  const executed = new Map<
    number,
    { volume: bigint; cost: bigint; fee: bigint; exact: bigint; spent: bigint }
  >();
  const account = (id: number) => {
    let a = executed.get(id);
    if (a === undefined) {
      a = { volume: 0n, cost: 0n, fee: 0n, exact: 0n, spent: 0n };
      executed.set(id, a);
    }
    return a;
  };
  // Where in the order id sequence the command that made each trade stands (conditional.ts).
  const positions = commandsOfTrades(c, (t) => {
    const taker = orders.get(t.taker_order_id);
    return taker === undefined ? t.taker_order_id : tradePosition(t, taker);
  });
  c.trades.forEach((t, i) => {
    if (t.id !== i + 1) fail(`trade ids have a gap: #${i + 1} is ${t.id}`);
    const m = math.get(t.market_id);
    const taker = orders.get(t.taker_order_id);
    const maker = orders.get(t.maker_order_id);
    if (m === undefined || taker === undefined || maker === undefined) {
      fail(`trade ${t.id} refers to a missing market or order`);
      return;
    }
    const cost = costOf(m, t.price, t.volume);
    if (BigInt(t.cost) !== cost) fail(`trade ${t.id}: cost ${t.cost}, the market's rule gives ${cost}`);
    // Trades are in id order, so each order's earlier fills are already counted.
    for (const [order, rate, fee, role] of [
      [taker, m.row.taker_fee, t.taker_fee, 'taker'],
      [maker, m.row.maker_fee, t.maker_fee, 'maker'],
    ] as const) {
      const a = executed.get(order.id);
      const exact = (a?.exact ?? 0n) + cost * BigInt(rate);
      const due = ceilFee(exact) - (a?.fee ?? 0n);
      if (BigInt(fee) !== due)
        fail(`trade ${t.id}: ${role} fee ${fee}, the order's rounded-up fee gives ${due}`);
    }
    if (taker.market_id !== t.market_id || maker.market_id !== t.market_id)
      fail(`trade ${t.id}: market mismatch`);
    if (taker.user_id !== t.taker_user_id || maker.user_id !== t.maker_user_id)
      fail(`trade ${t.id}: users differ from its orders'`);
    if (taker.user_id === maker.user_id) fail(`trade ${t.id}: a self-trade`);
    // A fired conditional order takes in the form it executes in (limit for the -limit types).
    const takerForm = matchesAsLimit(taker.type) ? 'limit' : 'market';
    if (taker.side !== t.taker_side || maker.side === taker.side || takerForm !== t.taker_type)
      fail(`trade ${t.id}: sides or type differ from its orders'`);
    const position = positions[i]!;
    if (!inBook(maker) || priceAt(maker, position, placedAs) !== t.price)
      fail(`trade ${t.id}: not at the maker's limit price`);
    // A fired conditional order may be older than the order it takes from (it waited).
    if (maker.id >= position && !isConditional(taker.type))
      fail(`trade ${t.id}: the maker (${maker.id}) is not older than the taker (${taker.id} at ${position})`);
    const limit = position === taker.id ? (placedAs.get(taker.id)?.price ?? taker.price) : taker.price;
    if (takerForm === 'limit' && (taker.side === 'buy' ? t.price > limit : t.price < limit))
      fail(`trade ${t.id}: price ${t.price} beyond the taker's limit ${limit}`);
    if (t.time < taker.open_time || t.time < maker.open_time) fail(`trade ${t.id}: earlier than its orders`);
    const baseUnits = BigInt(t.volume) * m.baseUnitsPerLot;
    const buyerIsTaker = t.taker_side === 'buy';
    const buyer = buyerIsTaker ? taker : maker;
    const seller = buyerIsTaker ? maker : taker;
    const buyerFee = BigInt(buyerIsTaker ? t.taker_fee : t.maker_fee);
    const sellerFee = BigInt(buyerIsTaker ? t.maker_fee : t.taker_fee);
    add(buyer.user_id, m.row.base, baseUnits);
    add(buyer.user_id, m.row.quote, -(cost + buyerFee));
    add(seller.user_id, m.row.base, -baseUnits);
    add(seller.user_id, m.row.quote, cost - sellerFee);
    fees.set(m.row.quote, (fees.get(m.row.quote) ?? 0n) + BigInt(t.taker_fee) + BigInt(t.maker_fee));
    for (const [order, fee, rate] of [
      [taker, BigInt(t.taker_fee), m.row.taker_fee],
      [maker, BigInt(t.maker_fee), m.row.maker_fee],
    ] as const) {
      const a = account(order.id);
      a.volume += BigInt(t.volume);
      a.cost += cost;
      a.fee += fee;
      a.exact += cost * BigInt(rate);
      a.spent += order.side === 'buy' ? cost + fee : baseUnits;
    }
  });

  // Order ids: every number the sequence issued is an order's id, or a number an amend (or a
  // trigger firing) took to put an order at the back of a level, never issued as an id. Only the
  // last such number of an order is kept (its priority), so there are at least as many gaps as
  // priorities, and none at all when no order has one; replayCheck accounts for each exactly.
  const ids = new Set(c.orders.map((o) => o.id));
  const priorities = new Set<number>();
  let lastNumber = 0;
  c.orders.forEach((o, i) => {
    if (i > 0 && o.id <= c.orders[i - 1]!.id)
      fail(`order ids out of order: ${o.id} after ${c.orders[i - 1]!.id}`);
    lastNumber = Math.max(lastNumber, o.id, o.priority ?? 0);
    if (o.priority === null) return;
    if (ids.has(o.priority) || priorities.has(o.priority) || o.priority <= o.id)
      fail(
        `order ${o.id}: priority ${o.priority} is an order's id, another order's priority, or not after its own id`,
      );
    priorities.add(o.priority);
  });
  const gaps = lastNumber - c.orders.length;
  if (priorities.size === 0 ? gaps !== 0 : gaps < priorities.size)
    fail(
      `order ids have ${gaps} gaps below ${lastNumber}, and ${priorities.size} orders were moved by an amend`,
    );

  const reserved = new Map<string, bigint>();
  const best = new Map<number, { bid: number; ask: number }>();
  c.orders.forEach((o) => {
    const m = math.get(o.market_id);
    if (m === undefined) {
      fail(`order ${o.id} in unknown market ${o.market_id}`);
      return;
    }
    const a = executed.get(o.id) ?? { volume: 0n, cost: 0n, fee: 0n, exact: 0n, spent: 0n };
    if (BigInt(o.executed) !== a.volume)
      fail(`order ${o.id}: executed ${o.executed}, its trades sum to ${a.volume}`);
    if (BigInt(o.cost) !== a.cost) fail(`order ${o.id}: cost ${o.cost}, its trades sum to ${a.cost}`);
    if (BigInt(o.fee) !== a.fee) fail(`order ${o.id}: fee ${o.fee}, its trades sum to ${a.fee}`);
    if (BigInt(o.fee_excess) !== a.fee * FEE_SCALE - a.exact)
      fail(`order ${o.id}: fee excess ${o.fee_excess}, its trades give ${a.fee * FEE_SCALE - a.exact}`);
    if (o.executed > o.volume) fail(`order ${o.id}: executed more than its volume`);
    if (o.status === 'open') {
      // Open: a limit order, a conditional order waiting, or a fired -limit order resting.
      const openable = o.type === 'limit' || isConditional(o.type);
      if (!openable || o.executed >= o.volume || o.close_time !== null || o.reason !== null)
        fail(`order ${o.id}: open but ${o.type}, executed ${o.executed}/${o.volume}, closed ${o.close_time}`);
      // What it holds now: what it held when placed less what it spent; for a buy whose price or
      // volume an amend changed, what the amend resized the hold to (depending on how many of its
      // fills came before the amend) less what it spent since: replayCheck checks that one.
      const expected =
        amended(o, placedAs) && o.side === 'buy' ? BigInt(o.reserved) : initialHold(m, o) - a.spent;
      if (BigInt(o.reserved) !== expected)
        fail(`order ${o.id}: reserves ${o.reserved}, expected ${expected}`);
      const asset = o.side === 'buy' ? m.row.quote : m.row.base;
      reserved.set(key(o.user_id, asset), (reserved.get(key(o.user_id, asset)) ?? 0n) + BigInt(o.reserved));
      if (!inBook(o)) return;
      const b = best.get(o.market_id) ?? { bid: 0, ask: Number.POSITIVE_INFINITY };
      if (o.side === 'buy') b.bid = Math.max(b.bid, o.price);
      else b.ask = Math.min(b.ask, o.price);
      best.set(o.market_id, b);
    } else {
      if (o.reserved !== 0) fail(`order ${o.id}: ${o.status} but still reserves ${o.reserved}`);
      if (o.close_time === null) fail(`order ${o.id}: ${o.status} without a close time`);
      if (o.status === 'closed' && matchesAsLimit(o.type) && o.executed !== o.volume)
        fail(`order ${o.id}: a limit order closed with ${o.executed}/${o.volume} executed`);
      if (o.status === 'closed' && o.executed === 0) fail(`order ${o.id}: closed with nothing executed`);
      if (o.status === 'canceled' && o.reason === null) fail(`order ${o.id}: canceled without a reason`);
    }
  });
  for (const [marketId, b] of best)
    if (b.bid >= b.ask) fail(`market ${marketId}: the book is crossed (bid ${b.bid} >= ask ${b.ask})`);

  const stored = new Map(c.balances.map((b) => [key(b.user_id, b.asset), b]));
  for (const k of new Set([...total.keys(), ...stored.keys()])) {
    const row = stored.get(k);
    const have = row === undefined ? 0n : BigInt(row.available) + BigInt(row.reserved);
    const want = total.get(k) ?? 0n;
    if (have !== want) fail(`balance ${k}: stored ${have}, history gives ${want}`);
    const held = reserved.get(k) ?? 0n;
    if (BigInt(row?.reserved ?? 0) !== held)
      fail(`balance ${k}: reserved ${row?.reserved ?? 0}, open orders hold ${held}`);
    if (row !== undefined && (row.available < 0 || row.reserved < 0)) fail(`balance ${k}: negative`);
  }
  for (const t of c.totals) {
    if (BigInt(t.net_deposits) !== (netDeposits.get(t.asset) ?? 0n))
      fail(
        `totals ${t.asset}: net deposits ${t.net_deposits}, ledger gives ${netDeposits.get(t.asset) ?? 0n}`,
      );
    if (BigInt(t.fees) !== (fees.get(t.asset) ?? 0n))
      fail(`totals ${t.asset}: fees ${t.fees}, trades give ${fees.get(t.asset) ?? 0n}`);
  }
  for (const asset of new Set([...netDeposits.keys(), ...fees.keys()]))
    if (!c.totals.some((t) => t.asset === asset)) fail(`totals ${asset}: missing row`);

  // The id sequences continue exactly after the last committed ids.
  const next = (k: string) => c.meta.get(k) ?? 1;
  if (
    c.orders.length > 0 &&
    (priorities.size === 0 ? next('nextOrderId') !== lastNumber + 1 : next('nextOrderId') <= lastNumber)
  )
    fail(
      `nextOrderId ${next('nextOrderId')} after ${c.orders.length} orders (the last number issued: ${lastNumber})`,
    );
  if (c.trades.length > 0 && next('nextTradeId') !== c.trades.length + 1)
    fail(`nextTradeId ${next('nextTradeId')} after ${c.trades.length} trades`);

  // Candles are committed with their trades: each interval's candles add up to the market's trades.
  const perMarket = new Map<number, { count: number; volume: bigint; quote: bigint }>();
  for (const t of c.trades) {
    const s = perMarket.get(t.market_id) ?? { count: 0, volume: 0n, quote: 0n };
    s.count += 1;
    s.volume += BigInt(t.volume);
    s.quote += BigInt(t.cost);
    perMarket.set(t.market_id, s);
  }
  for (const candle of c.candles) {
    const s = perMarket.get(candle.market_id) ?? { count: 0, volume: 0n, quote: 0n };
    if (candle.count !== s.count || candle.volume !== s.volume || candle.quote_volume !== s.quote)
      fail(
        `candles of market ${candle.market_id}/${candle.interval}: ${candle.count} trades, history has ${s.count}`,
      );
  }

  for (const row of c.audit)
    if (!row.ok)
      fail(`conservation broken for ${row.asset}: held ${row.held} + fees ${row.fees} != ${row.netDeposits}`);
  return problems;
}

/**
 * Replays the committed commands through a fresh engine and compares everything it produces with
 * what is stored. Deposits come first at equal times; a user cancel is replayed right after the
 * last command that touched its order (its placement, its move, or the last taker that traded
 * with it) — the earliest point consistent with the history, which gives the same result as the
 * real point.
 *
 * Amends (the store keeps no log of them; `placedAs` gives the original price and volume of the
 * orders that may have been amended) — each order's price and volume amended at most once:
 * - one that moved the order to the back of a level took a number from the order id sequence, kept
 *   as the order's priority: it is replayed exactly there, with the order's price and volume now;
 * - one that only lowered the volume took no number: it is replayed right after the placement,
 *   where it changes no fill (every later fill of the order fits in the lower volume). Only a
 *   buy's hold depends on how many of its fills came before it (the hold becomes at most
 *   holdFor(price, remaining) then): the stored hold must be what one of those points gives.
 */
export function replayCheck(c: Committed, placedAs: PlacedAs = NONE_AMENDED): string[] {
  const problems: string[] = [];
  const fail = (text: string) => {
    if (problems.length < 50) problems.push(text);
  };
  const engine = Engine.restore({
    assets: c.assets.map((a) => ({ ...a, code: a.code as AssetCode }) as AssetSpec),
    markets: c.markets.map(
      (m): MarketSpec => ({
        id: m.id as MarketId,
        base: m.base as AssetCode,
        quote: m.quote as AssetCode,
        pairDecimals: m.pair_decimals,
        lotDecimals: m.lot_decimals,
        ordermin: m.ordermin as Volume,
        makerFee: m.maker_fee as MarketSpec['makerFee'],
        takerFee: m.taker_fee as MarketSpec['takerFee'],
      }),
    ),
    balances: [],
    totals: [],
    openOrders: [],
    sequences: {
      nextOrderId: 1,
      nextTradeId: 1,
      nextMarketId: Math.max(0, ...c.markets.map((m) => m.id)) + 1,
    },
  });
  const byId = new Map(c.orders.map((o) => [o.id, o]));
  // The placements and moves by the number of the id sequence each took.
  const steps = new Map<number, { readonly move: boolean; readonly order: OrderRow }>();
  const lowered = new Set<number>();
  // The queue places fired -limit orders took (decision E48): the commands that fired them take
  // them again in the replay; the crash test never amends a conditional order.
  const firedPlaces = new Set<number>();
  for (const o of c.orders) {
    steps.set(o.id, { move: false, order: o });
    const placed = placedAs.get(o.id);
    if (o.priority !== null && isConditional(o.type)) firedPlaces.add(o.priority);
    else if (o.priority !== null) {
      if (placed === undefined || steps.has(o.priority)) {
        fail(`replay: order ${o.id} was moved to priority ${o.priority}, which the replay cannot place`);
        return problems;
      }
      steps.set(o.priority, { move: true, order: o });
    } else if (placed !== undefined && (placed.price !== o.price || placed.volume !== o.volume)) {
      if (placed.price !== o.price || o.volume > placed.volume)
        fail(
          `replay: order ${o.id} placed at ${placed.price} for ${placed.volume}, stored at ${o.price} for ${o.volume}, yet not moved to the back of its level`,
        );
      else lowered.add(o.id);
    }
  }
  // Where each user cancel goes: after the last command that touched the order.
  const cancelAfter = new Map<number, OrderRow[]>();
  const lastTaker = new Map<number, number>();
  // The number of the command that made each trade: the taker's placement (or the amend that moved
  // it), or for a fired conditional taker the command that fired it (conditional.ts). Both orders
  // of a trade are touched by that command.
  commandsOfTrades(c, (t) => {
    const taker = byId.get(t.taker_order_id);
    return taker === undefined ? t.taker_order_id : tradePosition(t, taker);
  }).forEach((command, i) => {
    const t = c.trades[i]!;
    for (const id of [t.maker_order_id, t.taker_order_id])
      lastTaker.set(id, Math.max(lastTaker.get(id) ?? 0, command));
  });
  // A fired -limit order that rested got its queue place (`priority`) from the id sequence in the
  // command that fired it: the step (placement or move) with the highest number below it. It may
  // have made no trade at all, and its cancel must still come after its firing.
  const stepNumbers = [...steps.keys()].sort((a, b) => a - b);
  for (const o of c.orders) {
    if (!isConditional(o.type) || o.priority === null) continue;
    lastTaker.set(o.id, Math.max(lastTaker.get(o.id) ?? 0, stepBefore(stepNumbers, o.priority)));
  }
  for (const o of c.orders) {
    // A cancel-all cancels each order on its own, as a cancel of it would at that time.
    if (o.status !== 'canceled' || (o.reason !== USER_CANCEL_REASON && o.reason !== CANCEL_ALL_REASON))
      continue;
    const after = Math.max(o.id, o.priority ?? 0, lastTaker.get(o.id) ?? 0);
    const list = cancelAfter.get(after) ?? [];
    list.push(o);
    cancelAfter.set(after, list);
  }
  const trades: Trade[] = [];
  const finals = new Map<number, OrderState>();
  const record = (events: readonly { type: string; trade?: Trade; order?: OrderState }[]) => {
    for (const e of events) {
      if (e.type === 'trade' && e.trade !== undefined) trades.push(e.trade);
      if ((e.type === 'orderAccepted' || e.type === 'orderDone') && e.order !== undefined)
        finals.set(e.order.id, e.order);
    }
  };
  let ledgerNext = 0;
  const applyLedgerUpTo = (time: number) => {
    while (ledgerNext < c.ledger.length && c.ledger[ledgerNext]!.time <= time) {
      const e = c.ledger[ledgerNext++]!;
      const result = engine.apply(
        {
          kind: e.kind === 'deposit' ? 'deposit' : 'withdraw',
          userId: e.user_id as UserId,
          asset: e.asset as AssetCode,
          amount: e.amount as Amount,
        },
        e.time as Micros,
      );
      if (!result.ok) fail(`replay: ledger entry ${e.id} refused: ${result.error.message}`);
    }
  };
  /**
   * When an amend that moved `o` happened: the time of its first trade as the taker after its
   * placement. Without one, the only other mark a move leaves at its time is the close time of
   * its user's crossing orders that self-trade prevention canceled: tried on a copy of the
   * engine. Without either the time shows nowhere, and the previous command's is as good.
   */
  const moveTime = (o: OrderRow, amend: Command, previous: number): number => {
    const traded = c.trades.find((t) => t.taker_order_id === o.id && t.time !== o.open_time);
    if (traded !== undefined) return traded.time;
    const tried = Engine.restore(engine.snapshot()).apply(amend, previous as Micros);
    const canceled = tried.ok
      ? tried.events.find((e) => e.type === 'orderDone' && e.order.id !== o.id)
      : undefined;
    return canceled?.type === 'orderDone' ? (byId.get(canceled.order.id)?.close_time ?? previous) : previous;
  };
  // A lowered buy: what it held and had executed just before the amend replayed after its placement.
  const beforeLowering = new Map<number, { reserved: number; executed: number }>();
  const replayCancels = (n: number) => {
    for (const canceled of cancelAfter.get(n) ?? []) {
      const r = engine.apply(
        { kind: 'cancelOrder', userId: canceled.user_id as UserId, orderId: canceled.id as OrderId },
        canceled.close_time as Micros,
      );
      if (!r.ok) fail(`replay: cancel of ${canceled.id} refused: ${r.error.message}`);
      else record(r.events);
    }
  };
  let lastNumber = 0;
  for (const n of [...steps.keys(), ...firedPlaces]) lastNumber = Math.max(lastNumber, n);
  let time = 0;
  for (let n = 1; n <= lastNumber; n++) {
    const step = steps.get(n);
    // A fired -limit order's queue place: the command that fired it, replayed before, took it.
    if (step === undefined && firedPlaces.has(n)) {
      replayCancels(n);
      continue;
    }
    if (step === undefined) {
      fail(
        `replay: number ${n} of the order id sequence is no order's id and no order's priority (an order moved twice?): the replay cannot place what took it`,
      );
      return problems;
    }
    const o = step.order;
    if (step.move) {
      const amend: Command = {
        kind: 'amendOrder',
        userId: o.user_id as UserId,
        orderId: o.id as OrderId,
        price: o.price as Price,
        volume: o.volume as Volume,
      };
      time = moveTime(o, amend, time);
      applyLedgerUpTo(time);
      const r = engine.apply(amend, time as Micros);
      if (!r.ok) fail(`replay: the amend of ${o.id} that moved it to ${n} was refused: ${r.error.message}`);
      else record(r.events);
    } else {
      time = o.open_time;
      applyLedgerUpTo(time);
      const placed = placedAs.get(o.id) ?? o;
      const result = engine.apply(
        {
          kind: 'placeOrder',
          userId: o.user_id as UserId,
          marketId: o.market_id as MarketId,
          side: o.side,
          type: o.type,
          price: placed.price as Price,
          volume: placed.volume as Volume,
          // A conditional order's trigger as placed: the crash test never amends a conditional
          // order, and a trailing stop's moving trigger follows from its offset.
          ...(o.trailing_unit !== null && o.trailing_amount !== null
            ? { trailingOffset: { unit: o.trailing_unit, amount: o.trailing_amount } }
            : o.trigger_price !== null
              ? { triggerPrice: o.trigger_price as Price }
              : {}),
        },
        time as Micros,
      );
      if (!result.ok) {
        fail(`replay: order ${o.id} refused: ${result.error.message}`);
        return problems;
      }
      record(result.events);
      const accepted = result.events.find((e) => e.type === 'orderAccepted');
      if (accepted?.type !== 'orderAccepted' || accepted.order.id !== o.id) {
        fail(`replay: order ${o.id} got id ${accepted?.type === 'orderAccepted' ? accepted.order.id : '?'}`);
        return problems;
      }
      if (lowered.has(o.id)) {
        const open = engine.openOrder(o.id as OrderId);
        if (open !== undefined)
          beforeLowering.set(o.id, { reserved: open.reserved, executed: open.executed });
        const r = engine.apply(
          {
            kind: 'amendOrder',
            userId: o.user_id as UserId,
            orderId: o.id as OrderId,
            volume: o.volume as Volume,
          },
          time as Micros,
        );
        if (!r.ok) fail(`replay: the amend lowering ${o.id}'s volume was refused: ${r.error.message}`);
        else record(r.events);
      }
    }
    replayCancels(n);
  }
  applyLedgerUpTo(Number.MAX_SAFE_INTEGER);
  // Every number the id sequence issued is accounted for: an order's id or the number its move took.
  const issued = c.meta.get('nextOrderId');
  const replayedNext = engine.snapshot().sequences.nextOrderId;
  if (c.orders.length > 0 && issued !== undefined && issued !== replayedNext)
    fail(`replay: the order id sequence is at ${issued}, the replay's at ${replayedNext}`);

  // A lowered open buy's hold, by the number of its fills before the amend: the stored one must be
  // one of those; the replay (all fills after it) takes the stored one, and its owner's balance
  // the difference.
  const math = marketMath(c);
  const holdShift = new Map<string, number>();
  const loweredHold = (o: OrderRow, replayed: number): number => {
    const before = beforeLowering.get(o.id);
    const m = math.get(o.market_id);
    if (o.side !== 'buy' || o.status !== 'open' || before === undefined || m === undefined) return replayed;
    const fills = c.trades.filter((t) => t.maker_order_id === o.id);
    let spent = 0n;
    let executed = BigInt(before.executed);
    const spentThen: bigint[] = [0n];
    const executedThen: bigint[] = [executed];
    for (const t of fills) {
      spent += BigInt(t.cost) + BigInt(t.maker_fee);
      executed += BigInt(t.volume);
      spentThen.push(spent);
      executedThen.push(executed);
    }
    for (let j = 0; j < spentThen.length; j++) {
      if (executedThen[j]! >= BigInt(o.volume)) break;
      const held = BigInt(before.reserved) - spentThen[j]!;
      const resized = holdFor(m, o.price, o.volume - Number(executedThen[j]!));
      const now = (held < resized ? held : resized) - (spent - spentThen[j]!);
      if (now !== BigInt(o.reserved)) continue;
      const k = `${o.user_id}/${m.row.quote}`;
      holdShift.set(k, (holdShift.get(k) ?? 0) + o.reserved - replayed);
      return o.reserved;
    }
    return replayed;
  };

  // Orders: every stored field.
  for (const o of c.orders) {
    const state = engine.openOrder(o.id as OrderId) ?? finals.get(o.id);
    if (state === undefined) {
      fail(`replay: order ${o.id} never appeared`);
      continue;
    }
    const replayed = {
      user_id: state.userId,
      status: state.status,
      executed: state.executed,
      cost: state.cost,
      fee: state.fee,
      fee_excess: state.feeExcess,
      reserved: lowered.has(o.id) ? loweredHold(o, state.reserved) : state.reserved,
      // Replayed as a plain cancel, a cancel-all's order says so; the stored reason says cancel-all.
      reason:
        state.reason === USER_CANCEL_REASON && o.reason === CANCEL_ALL_REASON
          ? CANCEL_ALL_REASON
          : state.reason,
      close_time: state.closeTime,
      price: state.price,
      volume: state.volume,
      priority: state.priority ?? null,
    };
    const storedView = {
      user_id: o.user_id,
      status: o.status,
      executed: o.executed,
      cost: o.cost,
      fee: o.fee,
      fee_excess: o.fee_excess,
      reserved: o.reserved,
      reason: o.reason,
      close_time: o.close_time,
      price: o.price,
      volume: o.volume,
      priority: o.priority,
    };
    if (JSON.stringify(replayed) !== JSON.stringify(storedView))
      fail(`replay: order ${o.id} stored ${JSON.stringify(storedView)}, replay ${JSON.stringify(replayed)}`);
  }
  // Trades: the same list, field for field.
  if (trades.length !== c.trades.length) fail(`replay: ${trades.length} trades, stored ${c.trades.length}`);
  for (let i = 0; i < Math.min(trades.length, c.trades.length); i++) {
    const t = trades[i]!;
    const s = c.trades[i]!;
    const replayed = [
      t.id,
      t.marketId,
      t.price,
      t.volume,
      t.cost,
      t.takerOrderId,
      t.makerOrderId,
      t.takerUserId,
      t.makerUserId,
      t.takerSide,
      t.takerType,
      t.takerFee,
      t.makerFee,
      t.time,
    ];
    const storedView = [
      s.id,
      s.market_id,
      s.price,
      s.volume,
      s.cost,
      s.taker_order_id,
      s.maker_order_id,
      s.taker_user_id,
      s.maker_user_id,
      s.taker_side,
      s.taker_type,
      s.taker_fee,
      s.maker_fee,
      s.time,
    ];
    if (JSON.stringify(replayed) !== JSON.stringify(storedView)) {
      fail(
        `replay: trade #${i + 1} stored ${JSON.stringify(storedView)}, replay ${JSON.stringify(replayed)}`,
      );
      break;
    }
  }
  // Balances and totals.
  const snapshot = engine.snapshot();
  const nonZero = (
    rows: readonly { user_id: number; asset: string; available: number; reserved: number }[],
  ) =>
    new Map(
      rows
        .filter((b) => b.available !== 0 || b.reserved !== 0)
        .map((b) => [`${b.user_id}/${b.asset}`, `${b.available}/${b.reserved}`]),
    );
  const replayedBalances = nonZero(
    snapshot.balances.map((b) => {
      const shift = holdShift.get(`${b.userId}/${b.asset}`) ?? 0;
      return {
        user_id: b.userId,
        asset: b.asset,
        available: b.available - shift,
        reserved: b.reserved + shift,
      };
    }),
  );
  const storedBalances = nonZero(c.balances);
  for (const k of new Set([...replayedBalances.keys(), ...storedBalances.keys()]))
    if (replayedBalances.get(k) !== storedBalances.get(k))
      fail(
        `replay: balance ${k} stored ${storedBalances.get(k) ?? '0/0'}, replay ${replayedBalances.get(k) ?? '0/0'}`,
      );
  for (const t of snapshot.totals) {
    const s = c.totals.find((x) => x.asset === t.asset);
    if ((s?.net_deposits ?? 0) !== t.netDeposits || (s?.fees ?? 0) !== t.fees)
      fail(
        `replay: totals ${t.asset} stored ${s?.net_deposits}/${s?.fees}, replay ${t.netDeposits}/${t.fees}`,
      );
  }
  return problems;
}

/** The highest of the sorted step numbers below `n` (0: none). */
function stepBefore(sorted: readonly number[], n: number): number {
  let lo = 0;
  let hi = sorted.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (sorted[mid]! < n) lo = mid + 1;
    else hi = mid;
  }
  return lo === 0 ? 0 : sorted[lo - 1]!;
}

/** The committed books, for the book hash: every market, its open orders with what remains. */
export function committedBooks(c: Committed): MarketBook[] {
  return c.markets.map((m) =>
    bookFromOrders(
      `${m.base}/${m.quote}`,
      c.orders
        .filter((o) => o.market_id === m.id && o.status === 'open' && inBook(o))
        .map((o) => ({
          id: o.id,
          userId: o.user_id,
          side: o.side,
          price: BigInt(o.price),
          remaining: BigInt(o.volume - o.executed),
        })),
    ),
  );
}
