/**
 * Engine throughput benchmark: `npm run bench:engine [-- --commands N] [--runs R] [--seed S] [--only abc]`
 * (`--only b` runs the engine alone, e.g. under `node --cpu-prof`).
 *
 * One deterministic stream (default 1,000,000 commands: ~55% limit orders near the spread, ~35%
 * cancels of orders that are live at that point, ~10% market orders; 200 users; one BTC/EUR-style
 * market) is generated up front and not timed. Then, each measured R times (default 5) on fresh
 * state, interleaved:
 *   (a) the order book alone: BookSide from src/engine/book-side.ts with the minimal match loop
 *       below (price-time priority, self-trade prevention, no ledger, no events);
 *   (b) the full engine: Engine.apply with the ledger, fees and events; drainChanges() every 1,000
 *       commands as the sequencer would;
 *   (c) the nodejs-order-book package (limit / market / cancel with accountId and EXPIRE_MAKER
 *       self-trade prevention, i.e. the same matching rules).
 * The median commands/s of each and the ratios engine/book and engine/nodejs-order-book are printed,
 * with the number of trades each produced (identical workloads produce identical trade counts).
 */
import {
  type LimitOrderOptions,
  type MarketOrderOptions,
  Side as ObSide,
  OrderBook,
  SelfTradePreventionMode,
} from 'nodejs-order-book';
import type {
  Amount,
  AssetCode,
  FeeRate,
  MarketId,
  Micros,
  OrderId,
  Price,
  UserId,
  Volume,
} from '../src/domain/types.js';
import { BookSide, type RestingOrder } from '../src/engine/book-side.js';
import { Engine } from '../src/engine/engine.js';
import type { Command } from '../src/engine/types.js';

// ---- options -------------------------------------------------------------------------------

function option(name: string, fallback: number): number {
  const i = process.argv.indexOf(`--${name}`);
  if (i === -1) return fallback;
  const value = Number(process.argv[i + 1]);
  if (!Number.isSafeInteger(value) || value <= 0) throw new Error(`--${name} needs a positive integer`);
  return value;
}

const only = process.argv.indexOf('--only');
/** `--only b` (or `a`, `c`, `ab`, ...) runs a subset, e.g. to profile the engine alone. */
const ONLY = only === -1 ? 'abc' : (process.argv[only + 1] ?? 'abc');
const COMMANDS = option('commands', 1_000_000);
const RUNS = option('runs', 5);
const SEED = option('seed', 20_240_601);
const USERS = 200;
const DRAIN_EVERY = 1_000;
const MID0 = 300_000; // 30000.0 EUR in ticks of 0.1

// ---- the stream ----------------------------------------------------------------------------

const KIND_LIMIT = 0;
const KIND_MARKET = 1;
const KIND_CANCEL = 2;

/** Structure-of-arrays form of the stream, for the book-only run. */
interface Stream {
  readonly n: number;
  readonly kind: Uint8Array;
  /** 1 = buy, 0 = sell. */
  readonly buy: Uint8Array;
  readonly user: Int32Array;
  readonly price: Float64Array;
  readonly volume: Float64Array;
  /** The order id a limit/market order gets (engines number accepted orders 1, 2, ...), or the id a cancel targets. */
  readonly id: Float64Array;
  readonly counts: { limit: number; market: number; cancel: number };
  readonly restingAtEnd: number;
  /** Resting orders and price levels, averaged over the stream. */
  readonly meanResting: number;
  readonly meanLevels: number;
  readonly trades: number;
}

function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

// ---- (a) the book alone --------------------------------------------------------------------

interface BenchOrder extends RestingOrder {
  readonly buy: boolean;
}

/** BookSide pair plus the smallest match loop that keeps the engine's matching rules. */
class MiniBook {
  readonly bids = new BookSide(true);
  readonly asks = new BookSide(false);
  readonly orders = new Map<number, BenchOrder>();
  trades = 0;

  /** Takes liquidity; returns the unfilled volume. A null limit is a market order. */
  private take(userId: number, buy: boolean, limit: number | null, volume: number): number {
    const book = buy ? this.asks : this.bids;
    let remaining = volume;
    for (let level = book.best; level !== null && remaining > 0; level = book.best) {
      if (limit !== null && (buy ? level.price > limit : level.price < limit)) break;
      let maker = level.head;
      while (maker !== null && remaining > 0) {
        const next = maker.next;
        if (maker.userId === userId) {
          book.unlink(maker);
          this.orders.delete(maker.id);
        } else {
          const v = Math.min(remaining, maker.remaining);
          remaining -= v;
          this.trades++;
          if (v === maker.remaining) {
            book.unlink(maker);
            this.orders.delete(maker.id);
          } else book.reduce(maker, v);
        }
        maker = next;
      }
    }
    return remaining;
  }

  limit(id: number, userId: number, buy: boolean, price: number, volume: number): void {
    const remaining = this.take(userId, buy, price, volume);
    if (remaining > 0) {
      const order: BenchOrder = { id, userId, buy, price, remaining, level: null, prev: null, next: null };
      (buy ? this.bids : this.asks).append(order);
      this.orders.set(id, order);
    }
  }

  market(userId: number, buy: boolean, volume: number): void {
    this.take(userId, buy, null, volume);
  }

  cancel(id: number): boolean {
    const order = this.orders.get(id);
    if (order === undefined) return false;
    (order.buy ? this.bids : this.asks).unlink(order);
    this.orders.delete(id);
    return true;
  }
}

function generate(n: number, seed: number): Stream {
  const rnd = mulberry32(seed);
  const s: Stream = {
    n,
    kind: new Uint8Array(n),
    buy: new Uint8Array(n),
    user: new Int32Array(n),
    price: new Float64Array(n),
    volume: new Float64Array(n),
    id: new Float64Array(n),
    counts: { limit: 0, market: 0, cancel: 0 },
    restingAtEnd: 0,
    meanResting: 0,
    meanLevels: 0,
    trades: 0,
  };
  let restingSum = 0;
  let levelSum = 0;
  // The generator runs the stream through a MiniBook to know which orders are still live when a
  // cancel is drawn; `live` holds candidate ids and is cleaned lazily.
  const book = new MiniBook();
  const live: number[] = [];
  let nextId = 1;
  let mid = MID0;
  const volume = (): number =>
    Math.floor(Math.exp(Math.log(10_000) + rnd() * (Math.log(20_000_000) - Math.log(10_000))));
  for (let i = 0; i < n; i++) {
    restingSum += book.orders.size;
    levelSum += book.bids.levelCount + book.asks.levelCount;
    if (rnd() < 0.1) mid += rnd() < 0.5 ? -1 : 1;
    const r = rnd();
    const buy = rnd() < 0.5;
    const user = 1 + Math.floor(rnd() * USERS);
    let kind = r < 0.55 ? KIND_LIMIT : r < 0.9 ? KIND_CANCEL : KIND_MARKET;
    if (kind === KIND_CANCEL) {
      let target = -1;
      while (live.length > 0 && target === -1) {
        const k = Math.floor(rnd() * live.length);
        const id = live[k]!;
        live[k] = live[live.length - 1]!;
        live.pop();
        if (book.orders.has(id)) target = id;
      }
      if (target === -1) kind = KIND_LIMIT;
      else {
        s.kind[i] = KIND_CANCEL;
        s.user[i] = book.orders.get(target)!.userId;
        s.id[i] = target;
        book.cancel(target);
        s.counts.cancel++;
        continue;
      }
    }
    s.kind[i] = kind;
    s.buy[i] = buy ? 1 : 0;
    s.user[i] = user;
    s.volume[i] = volume();
    s.id[i] = nextId++;
    if (kind === KIND_LIMIT) {
      // Distance from the mid in ticks: exponential with a mean of ~25 ticks behind it, and about
      // one order in twenty priced through the mid (those usually cross).
      const distance = Math.floor(-Math.log(1 - rnd()) * 25) - 1;
      const price = buy ? mid - distance : mid + distance;
      s.price[i] = price;
      book.limit(s.id[i]!, user, buy, price, s.volume[i]!);
      if (book.orders.has(s.id[i]!)) live.push(s.id[i]!);
      s.counts.limit++;
    } else {
      book.market(user, buy, s.volume[i]!);
      s.counts.market++;
    }
  }
  return {
    ...s,
    restingAtEnd: book.orders.size,
    meanResting: restingSum / n,
    meanLevels: levelSum / n,
    trades: book.trades,
  };
}

// ---- runs ----------------------------------------------------------------------------------

interface RunResult {
  readonly seconds: number;
  readonly trades: number;
  readonly refused: number;
}

function runBook(s: Stream): RunResult {
  const book = new MiniBook();
  const { kind, buy, user, price, volume, id } = s;
  const started = process.hrtime.bigint();
  let refused = 0;
  for (let i = 0; i < s.n; i++) {
    const k = kind[i];
    if (k === KIND_LIMIT) book.limit(id[i]!, user[i]!, buy[i] === 1, price[i]!, volume[i]!);
    else if (k === KIND_MARKET) book.market(user[i]!, buy[i] === 1, volume[i]!);
    else if (!book.cancel(id[i]!)) refused++;
  }
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  return { seconds, trades: book.trades, refused };
}

function engineCommands(s: Stream): Command[] {
  const commands: Command[] = new Array(s.n);
  for (let i = 0; i < s.n; i++) {
    const k = s.kind[i];
    commands[i] =
      k === KIND_CANCEL
        ? { kind: 'cancelOrder', userId: s.user[i]! as UserId, orderId: s.id[i]! as OrderId }
        : {
            kind: 'placeOrder',
            userId: s.user[i]! as UserId,
            marketId: 1 as MarketId,
            side: s.buy[i] === 1 ? 'buy' : 'sell',
            type: k === KIND_LIMIT ? 'limit' : 'market',
            price: (k === KIND_LIMIT ? s.price[i]! : 0) as Price,
            volume: s.volume[i]! as Volume,
          };
  }
  return commands;
}

function freshEngine(): Engine {
  const engine = new Engine();
  const setup: Command[] = [
    { kind: 'createAsset', code: 'BTC', name: 'Bitcoin', type: 'crypto', decimals: 8 },
    { kind: 'createAsset', code: 'EUR', name: 'Euro', type: 'fiat', decimals: 2 },
    {
      kind: 'createMarket',
      base: 'BTC' as AssetCode,
      quote: 'EUR' as AssetCode,
      pairDecimals: 1,
      lotDecimals: 8,
      ordermin: 1 as Volume,
      makerFee: 160_000 as FeeRate,
      takerFee: 260_000 as FeeRate,
    },
  ];
  // Generous funding: 4e13 units of each asset per user (400 billion EUR, 400,000 BTC); the
  // per-asset total stays below 2^53.
  for (let u = 1; u <= USERS; u++) {
    for (const asset of ['BTC', 'EUR']) {
      setup.push({
        kind: 'deposit',
        userId: u as UserId,
        asset: asset as AssetCode,
        amount: 40_000_000_000_000 as Amount,
      });
    }
  }
  for (const c of setup) {
    const r = engine.apply(c, 0 as Micros);
    if (!r.ok) throw new Error(`set-up refused: ${r.error.message}`);
  }
  engine.drainChanges();
  return engine;
}

function runEngine(commands: readonly Command[]): RunResult {
  const engine = freshEngine();
  const t0 = 1_700_000_000_000_000;
  let refused = 0;
  const started = process.hrtime.bigint();
  for (let i = 0; i < commands.length; i++) {
    if (!engine.apply(commands[i]!, (t0 + i) as Micros).ok) refused++;
    if (i % DRAIN_EVERY === DRAIN_EVERY - 1) engine.drainChanges();
  }
  engine.drainChanges();
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  return { seconds, trades: engine.sequences().nextTradeId - 1, refused };
}

type ObCommand =
  | { readonly kind: 0; readonly options: LimitOrderOptions }
  | { readonly kind: 1; readonly options: MarketOrderOptions }
  | { readonly kind: 2; readonly id: string };

function obCommands(s: Stream): ObCommand[] {
  const out: ObCommand[] = new Array(s.n);
  const stp = SelfTradePreventionMode.EXPIRE_MAKER;
  for (let i = 0; i < s.n; i++) {
    const side = s.buy[i] === 1 ? ObSide.BUY : ObSide.SELL;
    const accountId = String(s.user[i]);
    const k = s.kind[i];
    if (k === KIND_LIMIT) {
      out[i] = {
        kind: 0,
        options: {
          id: String(s.id[i]),
          side,
          size: s.volume[i]!,
          price: s.price[i]!,
          accountId,
          stpMode: stp,
        },
      };
    } else if (k === KIND_MARKET) {
      out[i] = { kind: 1, options: { side, size: s.volume[i]!, accountId, stpMode: stp } };
    } else out[i] = { kind: 2, id: String(s.id[i]) };
  }
  return out;
}

function runNodejsOrderBook(commands: readonly ObCommand[]): RunResult {
  const ob = new OrderBook();
  let trades = 0;
  let refused = 0;
  const started = process.hrtime.bigint();
  for (let i = 0; i < commands.length; i++) {
    const c = commands[i]!;
    if (c.kind === 2) {
      if (ob.cancel(c.id) === undefined) refused++;
      continue;
    }
    const r = c.kind === 0 ? ob.limit(c.options) : ob.market(c.options);
    if (r.err !== null) {
      refused++;
      continue;
    }
    // Trades = makers touched: every done order except the taker itself, plus a partially filled maker.
    const takerId = c.kind === 0 ? c.options.id : undefined;
    for (const o of r.done) if (o.id !== takerId) trades++;
    if (r.partial !== null && r.partial.id !== takerId) trades++;
  }
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  return { seconds, trades, refused };
}

// ---- main ----------------------------------------------------------------------------------

const fmt = (n: number): string => Math.round(n).toLocaleString('en-US');
const median = (xs: readonly number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 === 1 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
};

function main(): void {
  console.log(`OpenSpot engine benchmark: node ${process.version}, ${process.arch}`);
  const g0 = performance.now();
  const stream = generate(COMMANDS, SEED);
  const engineStream = engineCommands(stream);
  const obStream = obCommands(stream);
  const genSeconds = (performance.now() - g0) / 1000;
  const { limit, market, cancel } = stream.counts;
  const pct = (x: number): string => `${((100 * x) / COMMANDS).toFixed(1)}%`;
  console.log(
    `stream: ${fmt(COMMANDS)} commands (seed ${SEED}): ${fmt(limit)} limit (${pct(limit)}), ` +
      `${fmt(cancel)} cancel (${pct(cancel)}), ${fmt(market)} market (${pct(market)}); ${USERS} users`,
  );
  console.log(
    `        ${fmt(stream.trades)} trades; on average ${fmt(stream.meanResting)} orders resting on ${fmt(stream.meanLevels)} price levels ` +
      `(${fmt(stream.restingAtEnd)} at the end); generated in ${genSeconds.toFixed(1)} s (not timed)`,
  );
  // One untimed warm-up pass of each on a prefix, so the first measured run is not mostly JIT time.
  const warm = Math.min(COMMANDS, 100_000);
  if (ONLY.includes('a')) runBook({ ...stream, n: warm });
  if (ONLY.includes('b')) runEngine(engineStream.slice(0, warm));
  if (ONLY.includes('c')) runNodejsOrderBook(obStream.slice(0, warm));
  console.log(
    `runs: ${RUNS} of each after an untimed warm-up on ${fmt(warm)} commands; fresh state each run, interleaved a/b/c\n`,
  );

  const names = [
    '(a) order book only (BookSide)',
    '(b) full engine (Engine.apply)',
    '(c) nodejs-order-book',
  ] as const;
  const runners = [() => runBook(stream), () => runEngine(engineStream), () => runNodejsOrderBook(obStream)];
  const active = [0, 1, 2].filter((k) => ONLY.includes('abc'[k]!));
  const results: RunResult[][] = [[], [], []];
  for (let run = 0; run < RUNS; run++) {
    for (const k of active) results[k]!.push(runners[k]!());
    const line = active.map((k) => `${'abc'[k]} ${fmt(COMMANDS / results[k]![run]!.seconds)}/s`).join('  ');
    console.log(`run ${run + 1}/${RUNS}: ${line}`);
  }

  const medians = results.map((rs) =>
    rs.length === 0 ? Number.NaN : median(rs.map((r) => COMMANDS / r.seconds)),
  );
  console.log('');
  console.log(
    `${'implementation'.padEnd(34)}${'median cmd/s'.padStart(14)}${'trades'.padStart(12)}${'refused'.padStart(10)}   runs (cmd/s)`,
  );
  for (const k of active) {
    const rs = results[k]!;
    console.log(
      `${names[k]!.padEnd(34)}${fmt(medians[k]!).padStart(14)}${fmt(rs[0]!.trades).padStart(12)}${fmt(rs[0]!.refused).padStart(10)}   ` +
        rs.map((r) => fmt(COMMANDS / r.seconds)).join(', '),
    );
  }
  const [book, engine, ob] = medians as [number, number, number];
  console.log('');
  console.log(`engine / book              = ${(engine / book).toFixed(2)}`);
  console.log(`engine / nodejs-order-book = ${(engine / ob).toFixed(2)}`);
  const trades = active.map((k) => results[k]![0]!.trades);
  if (trades.some((t) => t !== stream.trades)) {
    console.log(
      `WARNING: trade counts differ (${trades.join(' / ')} vs ${stream.trades} when generated): the workloads are not identical`,
    );
  }
  if (results.some((rs) => rs.some((r) => r.refused !== 0))) {
    console.log('WARNING: some commands were refused (see the refused column)');
  }
}

main();
