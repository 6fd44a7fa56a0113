/**
 * Engine throughput benchmark:
 *   npm run bench:engine [-- --commands N] [--runs R] [--seed S] [--only abc]
 *                           [--scenario shallow|deep|replay|both|all] [--preload P]
 *                           [--replay-seconds S] [--replay-rate A] [--compare GIT_REF] [--stops N]
 * (`--only b` runs the engine alone, e.g. under `node --cpu-prof`; `node --max-semi-space-size=64
 * --import tsx bench/engine.ts` runs it with a larger young generation, which the header reports.
 * `--scenario both` is shallow and deep; the default, all, adds the replay.)
 *
 * `--compare REF` also runs the engine of a git ref (its src/ extracted with `git archive` into a
 * temporary directory) as (b0), interleaved with this tree's, in every scenario, and prints the
 * ratio of the two round by round. It cancels the machine's load, but not V8's: the two engines
 * share this file's functions, so what is compiled for one depends on what ran before (the
 * generator and row (a) now have BookSide module instances of their own, see GeneratorBookSide): within ten minutes, this engine against deadba3
 * measured 0.72 and 0.94, and against a nearly identical engine 1.36 (docs/performance.md). Run each
 * version in its own processes, alternating, several times. Each run also reports commands per
 * CPU-second of the process (GC threads included), which varies less than wall time when other
 * jobs compete for the two cores. A full GC runs untimed before every timed span, so no run pays
 * for the garbage of the one before it.
 *
 * Two generated scenarios, each a deterministic stream (default 1,000,000 commands: ~55% limit orders near
 * the spread, ~35% cancels of orders that are live at that point, ~10% market orders; 200 users;
 * one BTC/EUR-style market) generated up front and not timed:
 *   shallow ("as generated"): the stream alone, on an empty book, its orders priced around a
 *       random-walk mid that wanders hundreds of ticks and keeps sweeping what rests, so the book
 *       stays shallow (~1,500 resting orders on ~220 levels).
 *   deep: first P resting limit orders (default 100,000) are placed, untimed, 2 to 301 ticks behind
 *       the mid on each side (uniformly: 600 levels, ~165 orders a level, all 200 users, none
 *       crossing); then the same kind of stream (same mix, same order sizes and distances from the
 *       mid) is timed, its cancels drawn from all live orders, the preloaded ones included. One
 *       difference: its orders are priced around the book's own mid rather than around an
 *       independent random walk, which would sweep the preload away (see generate()). With this mix
 *       the book then grows slowly (~100k to ~170k orders over 1M commands on ~600 levels).
 * Then, for each scenario, each implementation is measured R times (default 3) on fresh state,
 * interleaved:
 *   (a) the order book alone: BookSide from src/engine/book-side.ts with the minimal match loop
 *       below (price-time priority, self-trade prevention, no ledger, no events);
 *   (b) the full engine: Engine.apply with the ledger, fees and events; drainChanges() every 1,000
 *       commands as the sequencer would;
 *   (c) the nodejs-order-book package (limit / market / cancel with accountId and EXPIRE_MAKER
 *       self-trade prevention, i.e. the same matching rules).
 * The median commands/s of each and the ratios engine/book and engine/nodejs-order-book are printed
 * per scenario, with the number of trades each produced (the preload never trades). Identical workloads
 * produce identical trade counts: a mismatch prints a loud warning and sets exit code 1. Rounds run
 * the implementations in alternating order (the second of two runs tends to win here).
 *
 * A third scenario, replay: a simulated day of history replayed with simulated time. The market
 * simulator (src/simulator: 2 makers quoting 3 levels a side, 3 takers sending market and crossing
 * limit orders, 5 actions a second, the server's default SIMULATOR_RATE) trades the default
 * catalogue's 5 markets for --replay-seconds (default 86,400) of simulated time, through its public
 * interface with an in-process fetch and mocked timers (bench/simulated-day.ts); every request
 * becomes an engine command, recorded with its simulated time (about 2.2 million commands, 1-2
 * minutes to record, not timed). The engines then replay the recording through Engine.apply from a
 * fresh state (catalogue and deposits untimed), draining every 1,000 commands; a replay must make
 * the recording's trades and refusals. Only (b) and (b0) run it.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { availableParallelism, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
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
import type { BookSide, RestingOrder } from '../src/engine/book-side.js';
import { Engine } from '../src/engine/engine.js';
import type { Command } from '../src/engine/types.js';
import { recordHistory } from './simulated-day.js';

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
const RUNS = option('runs', 3);
const SEED = option('seed', 20_240_601);
const PRELOAD = option('preload', 100_000);
const compareAt = process.argv.indexOf('--compare');
/** A git ref whose engine runs as (b0), interleaved with this tree's, for a same-run ratio. */
const COMPARE = compareAt === -1 ? undefined : process.argv[compareAt + 1];
if (compareAt !== -1 && (COMPARE === undefined || COMPARE.startsWith('--')))
  throw new Error('--compare needs a git ref');
const scenarioAt = process.argv.indexOf('--scenario');
const SCENARIO = scenarioAt === -1 ? 'all' : (process.argv[scenarioAt + 1] ?? '');
if (!['shallow', 'deep', 'replay', 'both', 'all'].includes(SCENARIO))
  throw new Error('--scenario needs shallow, deep, replay, both (shallow and deep) or all');
const RUN_SHALLOW = SCENARIO === 'shallow' || SCENARIO === 'both' || SCENARIO === 'all';
const RUN_DEEP = SCENARIO === 'deep' || SCENARIO === 'both' || SCENARIO === 'all';
const RUN_REPLAY = SCENARIO === 'replay' || SCENARIO === 'all';
/** Simulated seconds of history for the replay row (a day) and the simulator's actions per second. */
const REPLAY_SECONDS = option('replay-seconds', 86_400);
const REPLAY_RATE = option('replay-rate', 5);
const USERS = 200;
const DRAIN_EVERY = 1_000;
const MID0 = 300_000; // 30000.0 EUR in ticks of 0.1
/** Preloaded orders rest PRELOAD_NEAR..PRELOAD_FAR ticks behind MID0 (uniformly). */
const PRELOAD_NEAR = 2;
const PRELOAD_FAR = 301;

// ---- the stream ----------------------------------------------------------------------------

const KIND_LIMIT = 0;
const KIND_MARKET = 1;
const KIND_CANCEL = 2;

/**
 * Structure-of-arrays form of a scenario: entries [0, pre) are the preloaded limit orders (placed
 * untimed), entries [pre, pre + n) the timed stream.
 */
interface Stream {
  readonly name: string;
  readonly pre: number;
  readonly n: number;
  readonly kind: Uint8Array;
  /** 1 = buy, 0 = sell. */
  readonly buy: Uint8Array;
  readonly user: Int32Array;
  readonly price: Float64Array;
  readonly volume: Float64Array;
  /** The order id a limit/market order gets (engines number accepted orders 1, 2, ...), or the id a cancel targets. */
  readonly id: Float64Array;
  /** Of the timed stream. */
  readonly counts: { limit: number; market: number; cancel: number };
  readonly levelsAtStart: number;
  readonly restingAtEnd: number;
  /** Preloaded orders still resting at the end. */
  readonly preloadAtEnd: number;
  /** Resting orders and price levels, averaged over the timed stream. */
  readonly meanResting: number;
  readonly meanLevels: number;
  /** Trades in the timed stream (the preload never trades). */
  readonly trades: number;
  /** Where the stream's reference mid went, in ticks from MID0. */
  readonly midLow: number;
  readonly midHigh: number;
  readonly midEnd: number;
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

/**
 * Module instances of src/engine/book-side.ts of their own (a query string makes a separate
 * instance) for the stream generator and for row (a): the engine's BookSide then only ever sees
 * the engine's orders, as in the server. Shared with the generator's orders, its methods were
 * compiled for two kinds of object in this tree's engine and for one in --compare's (b0).
 */
type BookSideModule = typeof import('../src/engine/book-side.js');
const bookSideModule = '../src/engine/book-side.js';
const GeneratorBookSide = ((await import(`${bookSideModule}?generator`)) as BookSideModule).BookSide;
const BookOnlyBookSide = ((await import(`${bookSideModule}?book-only`)) as BookSideModule).BookSide;

/** BookSide pair plus the smallest match loop that keeps the engine's matching rules. */
class MiniBook {
  readonly bids: BookSide;
  readonly asks: BookSide;
  constructor(Side: typeof BookSide) {
    this.bids = new Side(true);
    this.asks = new Side(false);
  }
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
      const order: BenchOrder = {
        id,
        priority: id,
        userId,
        buy,
        price,
        remaining,
        level: null,
        prev: null,
        next: null,
      };
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

function generate(name: string, n: number, seed: number, pre: number): Stream {
  const total = pre + n;
  const s = {
    kind: new Uint8Array(total),
    buy: new Uint8Array(total),
    user: new Int32Array(total),
    price: new Float64Array(total),
    volume: new Float64Array(total),
    id: new Float64Array(total),
    counts: { limit: 0, market: 0, cancel: 0 },
  };
  let restingSum = 0;
  let levelSum = 0;
  // The generator runs the stream through a MiniBook to know which orders are still live when a
  // cancel is drawn; `live` holds candidate ids and is cleaned lazily.
  const book = new MiniBook(GeneratorBookSide);
  const live: number[] = [];
  let nextId = 1;
  const volume = (rnd: () => number): number =>
    Math.floor(Math.exp(Math.log(10_000) + rnd() * (Math.log(20_000_000) - Math.log(10_000))));

  // The preload has its own generator, so the stream below draws exactly what it draws without one.
  const prnd = mulberry32(seed ^ 0x5bd1e995);
  for (let i = 0; i < pre; i++) {
    const buy = prnd() < 0.5;
    const user = 1 + Math.floor(prnd() * USERS);
    const distance = PRELOAD_NEAR + Math.floor(prnd() * (PRELOAD_FAR - PRELOAD_NEAR + 1));
    s.kind[i] = KIND_LIMIT;
    s.buy[i] = buy ? 1 : 0;
    s.user[i] = user;
    s.price[i] = buy ? MID0 - distance : MID0 + distance;
    s.volume[i] = volume(prnd);
    s.id[i] = nextId++;
    book.limit(s.id[i]!, user, buy, s.price[i]!, s.volume[i]!);
    live.push(s.id[i]!);
  }
  if (book.trades !== 0 || book.orders.size !== pre) throw new Error('the preload crossed itself');
  const levelsAtStart = book.bids.levelCount + book.asks.levelCount;

  const rnd = mulberry32(seed);
  // The reference mid new orders are priced around. Without a preload it is a random walk of its
  // own (one tick every ten commands on average), as the stream was first written. With one it is
  // the book's own mid, like order flow on a real venue: the walk wanders +-300..500 ticks over a
  // million commands, so its orders would sweep a 300-tick-deep book within a few hundred thousand
  // commands and leave the shallow book again (the walk's draws are still made, and ignored).
  const anchored = pre > 0;
  let mid = MID0;
  let midLow = MID0;
  let midHigh = MID0;
  for (let i = pre; i < total; i++) {
    restingSum += book.orders.size;
    levelSum += book.bids.levelCount + book.asks.levelCount;
    if (rnd() < 0.1) {
      const step = rnd() < 0.5 ? -1 : 1;
      if (!anchored) mid += step;
    }
    if (anchored && book.bids.best !== null && book.asks.best !== null) {
      mid = Math.floor((book.bids.best.price + book.asks.best.price) / 2);
    }
    if (mid < midLow) midLow = mid;
    else if (mid > midHigh) midHigh = mid;
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
    s.volume[i] = volume(rnd);
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
  let preloadAtEnd = 0;
  for (const id of book.orders.keys()) if (id <= pre) preloadAtEnd++;
  return {
    ...s,
    name,
    pre,
    n,
    levelsAtStart,
    restingAtEnd: book.orders.size,
    preloadAtEnd,
    meanResting: restingSum / n,
    meanLevels: levelSum / n,
    trades: book.trades,
    midLow: midLow - MID0,
    midHigh: midHigh - MID0,
    midEnd: mid - MID0,
  };
}

// ---- runs ----------------------------------------------------------------------------------

interface RunResult {
  /** Of the timed stream only. */
  readonly seconds: number;
  /**
   * CPU time of the process over the same span (all threads: GC helpers included). On a shared
   * machine wall time also counts waiting for a core; CPU time does not, so it varies less.
   */
  readonly cpuSeconds: number;
  /** All trades, preload included (the preload never crosses, so a preload trade is a mismatch). */
  readonly trades: number;
  readonly refused: number;
}

/**
 * A full garbage collection, run untimed just before each timed span. Without it the previous
 * run's state (170,000 orders of the deep book, or an older engine's Maps under --compare) is
 * garbage that the next run's major GCs pay for: measured here, the engine at HEAD ran at 1.1 M
 * commands/s alone and at 0.55 M interleaved with the engine at 10eeddb, whose garbage it collected.
 */
const collectGarbage: () => void = (() => {
  setFlagsFromString('--expose-gc');
  return runInNewContext('gc') as () => void;
})();

type Clock = readonly [bigint, NodeJS.CpuUsage];
const startClock = (): Clock => {
  collectGarbage();
  return [process.hrtime.bigint(), process.cpuUsage()];
};
function stopClock([wall, cpu]: Clock): { seconds: number; cpuSeconds: number } {
  const seconds = Number(process.hrtime.bigint() - wall) / 1e9;
  const used = process.cpuUsage(cpu);
  return { seconds, cpuSeconds: (used.user + used.system) / 1e6 };
}

/** Applies entries [from, to) of the stream to a MiniBook; returns how many cancels found nothing. */
function applyBook(book: MiniBook, s: Stream, from: number, to: number): number {
  const { kind, buy, user, price, volume, id } = s;
  let refused = 0;
  for (let i = from; i < to; i++) {
    const k = kind[i];
    if (k === KIND_LIMIT) book.limit(id[i]!, user[i]!, buy[i] === 1, price[i]!, volume[i]!);
    else if (k === KIND_MARKET) book.market(user[i]!, buy[i] === 1, volume[i]!);
    else if (!book.cancel(id[i]!)) refused++;
  }
  return refused;
}

/** Runs the preload untimed, then times the stream. */
function runBook(s: Stream): RunResult {
  const book = new MiniBook(BookOnlyBookSide);
  let refused = applyBook(book, s, 0, s.pre);
  const started = startClock();
  refused += applyBook(book, s, s.pre, s.pre + s.n);
  return { ...stopClock(started), trades: book.trades, refused };
}

/** The engine's form of the whole scenario, preload included. */
function engineCommands(s: Stream): Command[] {
  const total = s.pre + s.n;
  const commands: Command[] = new Array(total);
  for (let i = 0; i < total; i++) {
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

type EngineClass = new () => Engine;

function freshEngine(EngineImpl: EngineClass): Engine {
  const engine = new EngineImpl();
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
  // per-asset total stays below 2^53. The deep preload holds at most ~1e10 units a user.
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

const T0 = 1_700_000_000_000_000;

/** Applies commands [from, to), draining every DRAIN_EVERY commands; returns how many were refused. */
function applyEngine(engine: Engine, commands: readonly Command[], from: number, to: number): number {
  let refused = 0;
  for (let i = from; i < to; i++) {
    if (!engine.apply(commands[i]!, (T0 + i) as Micros).ok) refused++;
    if (i % DRAIN_EVERY === DRAIN_EVERY - 1) engine.drainChanges();
  }
  engine.drainChanges();
  return refused;
}

/**
 * `--stops N`: N conditional orders waiting through the whole run (placed untimed after the
 * preload, this tree's engine only: a ref from before issue 22 has none), by 200 users of their
 * own, a third each a sell stop-loss, a sell take-profit and a buy take-profit-limit, with triggers
 * no trade reaches (1 tick, or 10^12 ticks). Every trade then checks the tops of both heaps.
 */
const STOPS = option('stops', 0);
const STOP_USERS = 200;

function placeWaitingStops(engine: Engine): void {
  const place = (c: Command): void => {
    const r = engine.apply(c, (T0 - 1) as Micros);
    if (!r.ok) throw new Error(`waiting stop refused: ${r.error.message}`);
  };
  for (let u = 0; u < STOP_USERS; u++) {
    for (const asset of ['BTC', 'EUR'])
      place({
        kind: 'deposit',
        userId: (USERS + 1 + u) as UserId,
        asset: asset as AssetCode,
        // Enough for 500 stops of 0.1 BTC; the users' 4e13 units each leave little room below 2^53.
        amount: 100_000_000_000 as Amount,
      });
  }
  for (let i = 0; i < STOPS; i++) {
    const userId = (USERS + 1 + (i % STOP_USERS)) as UserId;
    const common = {
      kind: 'placeOrder',
      userId,
      marketId: 1 as MarketId,
      volume: 10_000_000 as Volume,
    } as const;
    const kind = i % 3;
    if (kind === 0)
      place({ ...common, side: 'sell', type: 'stop-loss', price: 0 as Price, triggerPrice: 1 as Price });
    else if (kind === 1)
      place({ ...common, side: 'sell', type: 'take-profit', price: 0 as Price, triggerPrice: 1e12 as Price });
    else
      place({
        ...common,
        side: 'buy',
        type: 'take-profit-limit',
        price: 1 as Price,
        triggerPrice: 1 as Price,
      });
  }
  engine.drainChanges();
}

/** The stream as this tree's engine runs it after the waiting stops took the first STOPS order ids. */
function withStopIds(commands: readonly Command[]): readonly Command[] {
  if (STOPS === 0) return commands;
  return commands.map((c) =>
    c.kind === 'cancelOrder' ? { ...c, orderId: (c.orderId + STOPS) as OrderId } : c,
  );
}

/** Runs the first `pre` commands untimed, then times the rest. */
function runEngine(commands: readonly Command[], pre: number, EngineImpl: EngineClass = Engine): RunResult {
  const engine = freshEngine(EngineImpl);
  // Before the preload, so every order id of the stream moves by STOPS (see withStopIds).
  if (STOPS > 0 && EngineImpl === Engine) placeWaitingStops(engine);
  let refused = applyEngine(engine, commands, 0, pre);
  const started = startClock();
  refused += applyEngine(engine, commands, pre, commands.length);
  return { ...stopClock(started), trades: engine.sequences().nextTradeId - 1, refused };
}

type ObCommand =
  | { readonly kind: 0; readonly options: LimitOrderOptions }
  | { readonly kind: 1; readonly options: MarketOrderOptions }
  | { readonly kind: 2; readonly id: string };

/** The nodejs-order-book form of the whole scenario, preload included. */
function obCommands(s: Stream): ObCommand[] {
  const total = s.pre + s.n;
  const out: ObCommand[] = new Array(total);
  const stp = SelfTradePreventionMode.EXPIRE_MAKER;
  for (let i = 0; i < total; i++) {
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

/** Applies commands [from, to); returns the trades made and the commands refused. */
function applyOb(ob: OrderBook, commands: readonly ObCommand[], from: number, to: number): [number, number] {
  let trades = 0;
  let refused = 0;
  for (let i = from; i < to; i++) {
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
  return [trades, refused];
}

/** Runs the first `pre` commands untimed, then times the rest. */
function runNodejsOrderBook(commands: readonly ObCommand[], pre: number): RunResult {
  const ob = new OrderBook();
  const [preTrades, preRefused] = applyOb(ob, commands, 0, pre);
  const started = startClock();
  const [trades, refused] = applyOb(ob, commands, pre, commands.length);
  return { ...stopClock(started), trades: trades + preTrades, refused: refused + preRefused };
}

// ---- main ----------------------------------------------------------------------------------

const fmt = (n: number): string => (Number.isFinite(n) ? Math.round(n).toLocaleString('en-US') : 'n/a');
const median = (xs: readonly number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 === 1 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
};

/** Whether the young generation was resized on the command line (V8 picks the default otherwise). */
function semiSpaceSetting(): string {
  const flag = /^--max[-_]semi[-_]space[-_]size(?:=(.*))?$/;
  const argv = process.execArgv;
  for (let i = 0; i < argv.length; i++) {
    const m = flag.exec(argv[i]!);
    if (m !== null) return `NON-DEFAULT: --max-semi-space-size=${m[1] ?? argv[i + 1] ?? '?'} (MB)`;
  }
  const env = /--max[-_]semi[-_]space[-_]size[= ](\S+)/.exec(process.env.NODE_OPTIONS ?? '');
  if (env !== null) return `NON-DEFAULT: --max-semi-space-size=${env[1]} (MB, from NODE_OPTIONS)`;
  return 'default (no --max-semi-space-size in process.execArgv or NODE_OPTIONS)';
}

/** The load average against the cores, printed at the start and the end: a busy machine's wall times say little. */
const loadLine = (): string =>
  `load average ${loadavg()
    .map((x) => x.toFixed(1))
    .join(' / ')} (1 / 5 / 15 min) on ${availableParallelism()} cores`;

const NAMES = [
  '(a) order book only (BookSide)',
  '(b) full engine (Engine.apply)',
  '(c) nodejs-order-book',
  `(b0) engine at ${COMPARE ?? ''}`.slice(0, 33),
] as const;
/** Letters of the implementations in the output; (b0) is the engine at the --compare ref. */
const LETTERS = ['a', 'b', 'c', 'b0'] as const;
const ACTIVE = [0, 1, 2, 3].filter((k) => (k === 3 ? COMPARE !== undefined : ONLY.includes('abc'[k]!)));
/** The Engine class of the --compare ref, loaded by main(). */
let CompareEngine: EngineClass | undefined;

interface ScenarioResult {
  readonly title: string;
  readonly meanResting: number;
  readonly meanLevels: number;
  readonly medians: readonly number[];
  readonly trades: readonly (number | undefined)[];
  readonly consistent: boolean;
}

const signed = (n: number): string => (n > 0 ? `+${n}` : `${n}`);
const ratio = (x: number, y: number): string => (Number.isFinite(x / y) ? (x / y).toFixed(2) : 'n/a');

function runScenario(title: string, pre: number): ScenarioResult {
  console.log(`\n=== scenario: ${title} ${'='.repeat(Math.max(3, 95 - title.length))}`);
  const g0 = performance.now();
  const stream = generate(title, COMMANDS, SEED, pre);
  const engineStream = ACTIVE.includes(1) || ACTIVE.includes(3) ? engineCommands(stream) : [];
  const obStream = ACTIVE.includes(2) ? obCommands(stream) : [];
  const genSeconds = (performance.now() - g0) / 1000;
  const { limit, market, cancel } = stream.counts;
  const pct = (x: number): string => `${((100 * x) / COMMANDS).toFixed(1)}%`;
  if (pre > 0) {
    console.log(
      `preload: ${fmt(pre)} resting limit orders on ${fmt(stream.levelsAtStart)} price levels, ` +
        `${PRELOAD_NEAR}-${PRELOAD_FAR} ticks behind the mid on each side, ${USERS} users, none crossing ` +
        `(placed untimed before each run)`,
    );
  }
  if (STOPS > 0)
    console.log(
      `stops:   ${fmt(STOPS)} conditional orders waiting through each run of this tree's engine (b), none reached`,
    );
  console.log(
    `stream:  ${fmt(COMMANDS)} commands (seed ${SEED}): ${fmt(limit)} limit (${pct(limit)}), ` +
      `${fmt(cancel)} cancel (${pct(cancel)}), ${fmt(market)} market (${pct(market)}); ${USERS} users`,
  );
  console.log(
    `         ${fmt(stream.trades)} trades; on average ${fmt(stream.meanResting)} orders resting on ` +
      `${fmt(stream.meanLevels)} price levels (${fmt(stream.restingAtEnd)} at the end` +
      (pre > 0 ? `, ${fmt(stream.preloadAtEnd)} of them preloaded` : '') +
      `); generated in ${genSeconds.toFixed(1)} s (not timed)`,
  );
  console.log(
    `         reference mid (${pre > 0 ? "the book's own mid" : 'a random walk'}) between ${signed(stream.midLow)} ` +
      `and ${signed(stream.midHigh)} ticks from the start, ${signed(stream.midEnd)} at the end`,
  );
  // One untimed warm-up pass of each on the preload plus a prefix of the stream, so the first
  // measured run is not mostly JIT time.
  const warm = Math.min(COMMANDS, 100_000);
  if (ACTIVE.includes(0)) runBook({ ...stream, n: warm });
  const ownStream = withStopIds(engineStream);
  if (ACTIVE.includes(1)) runEngine(ownStream.slice(0, pre + warm), pre);
  if (ACTIVE.includes(2)) runNodejsOrderBook(obStream.slice(0, pre + warm), pre);
  if (ACTIVE.includes(3)) runEngine(engineStream.slice(0, pre + warm), pre, CompareEngine);
  console.log(
    `runs: ${RUNS} of each after an untimed warm-up on ${pre > 0 ? 'the preload + ' : ''}${fmt(warm)} commands; ` +
      `fresh state each run${pre > 0 ? ' (preload untimed)' : ''}, interleaved ` +
      `${ACTIVE.map((k) => LETTERS[k]).join('/')} (reversed every other round)\n`,
  );

  const runners = [
    () => runBook(stream),
    () => runEngine(ownStream, pre),
    () => runNodejsOrderBook(obStream, pre),
    () => runEngine(engineStream, pre, CompareEngine),
  ];
  const results: RunResult[][] = [[], [], [], []];
  for (let run = 0; run < RUNS; run++) {
    // Every other round runs them in reverse order: here the second of two runs often wins.
    for (const k of run % 2 === 0 ? ACTIVE : [...ACTIVE].reverse()) results[k]!.push(runners[k]!());
    const line = ACTIVE.map((k) => {
      const r = results[k]![run]!;
      return `${LETTERS[k]} ${fmt(COMMANDS / r.seconds)}/s (${fmt(COMMANDS / r.cpuSeconds)}/CPU-s)`;
    }).join('  ');
    console.log(`run ${run + 1}/${RUNS}: ${line}`);
  }

  const medians = results.map((rs) =>
    rs.length === 0 ? Number.NaN : median(rs.map((r) => COMMANDS / r.seconds)),
  );
  console.log('');
  const cpuMedians = results.map((rs) =>
    rs.length === 0 ? Number.NaN : median(rs.map((r) => COMMANDS / r.cpuSeconds)),
  );
  console.log(
    `${'implementation'.padEnd(34)}${'median cmd/s'.padStart(14)}${'cmd/CPU-s'.padStart(12)}${'trades'.padStart(10)}${'refused'.padStart(9)}   runs (cmd/s)`,
  );
  for (const k of ACTIVE) {
    const rs = results[k]!;
    console.log(
      `${NAMES[k]!.padEnd(34)}${fmt(medians[k]!).padStart(14)}${fmt(cpuMedians[k]!).padStart(12)}${fmt(rs[0]!.trades).padStart(10)}${fmt(rs[0]!.refused).padStart(9)}   ` +
        rs.map((r) => fmt(COMMANDS / r.seconds)).join(', '),
    );
  }
  const [book, engine, ob, old] = medians as [number, number, number, number];
  console.log('');
  console.log(`[${title}] engine / book              = ${ratio(engine, book)}`);
  console.log(`[${title}] engine / nodejs-order-book = ${ratio(engine, ob)}`);
  if (COMPARE !== undefined) {
    // Per-round ratios as well: rounds share the machine's load, whole runs need not.
    const perRound = results[1]!.map((r, i) => results[3]![i]!.seconds / r.seconds);
    const perRoundCpu = results[1]!.map((r, i) => results[3]![i]!.cpuSeconds / r.cpuSeconds);
    const list = (xs: number[]): string => xs.map((x) => x.toFixed(2)).join(', ');
    console.log(
      `[${title}] engine / engine at ${COMPARE} = ${ratio(engine, old)} (medians of cmd/s); ` +
        `per round ${list(perRound)}: median ${median(perRound).toFixed(2)}; ` +
        `in CPU time per round ${list(perRoundCpu)}: median ${median(perRoundCpu).toFixed(2)}`,
    );
  }

  // Identical workloads must produce identical trade counts, in every run of every implementation.
  const consistent = ACTIVE.every((k) => results[k]!.every((r) => r.trades === stream.trades));
  if (!consistent) {
    const bar = '!'.repeat(110);
    const got = ACTIVE.map((k) => `${LETTERS[k]} ${results[k]!.map((r) => fmt(r.trades)).join('/')}`).join(
      ', ',
    );
    console.log(`\n${bar}`);
    console.log(
      `!!! WARNING [${title}]: TRADE COUNTS DIFFER: ${got}; the generator made ${fmt(stream.trades)}.`,
    );
    console.log(
      '!!! The implementations did not run the same workload: the figures above are NOT comparable.',
    );
    console.log(bar);
    process.exitCode = 1;
  } else {
    console.log(`[${title}] trade counts equal across implementations and runs: ${fmt(stream.trades)}`);
  }
  if (results.some((rs) => rs.some((r) => r.refused !== 0))) {
    console.log(`WARNING [${title}]: some commands were refused (see the refused column)`);
    process.exitCode = 1;
  }
  return {
    title,
    meanResting: stream.meanResting,
    meanLevels: stream.meanLevels,
    medians,
    trades: results.map((rs) => rs[0]?.trades),
    consistent,
  };
}

/**
 * The replay row: a simulated day of the market simulator's activity (bench/simulated-day.ts),
 * recorded untimed as engine commands with their simulated times, then replayed through
 * Engine.apply on a fresh engine (set-up untimed), draining every DRAIN_EVERY commands. Only the
 * engines run it: the simulator uses five markets, market orders and refusals, which the book
 * alone and nodejs-order-book do not model.
 */
async function runReplay(): Promise<ScenarioResult> {
  const days = REPLAY_SECONDS / 86_400;
  const title = `replay (${days === 1 ? 'a simulated day' : `${fmt(REPLAY_SECONDS)} simulated s`})`;
  console.log(`\n=== scenario: ${title} ${'='.repeat(Math.max(3, 95 - title.length))}`);
  const g0 = performance.now();
  const history = await recordHistory({ seconds: REPLAY_SECONDS, ratePerSecond: REPLAY_RATE, seed: SEED });
  const n = history.commands.length;
  let limits = 0;
  let markets = 0;
  for (const c of history.commands)
    if (c.kind === 'placeOrder') {
      if (c.type === 'limit') limits++;
      else markets++;
    }
  const pct = (x: number): string => `${((100 * x) / n).toFixed(1)}%`;
  console.log(
    `history: the simulator (2 makers, 3 takers, ${REPLAY_RATE} actions/s, seed ${SEED}) on the default catalogue's ` +
      `5 markets for ${fmt(REPLAY_SECONDS)} simulated seconds: ${fmt(history.simulatorActions)} actions`,
  );
  console.log(
    `         ${fmt(n)} commands: ${fmt(limits)} limit (${pct(limits)}), ${fmt(markets)} market (${pct(markets)}), ` +
      `${fmt(n - limits - markets)} cancel (${pct(n - limits - markets)}); ${fmt(history.refused)} refused ` +
      `(mostly cancels of orders already filled), ${fmt(history.trades)} trades; recorded in ` +
      `${((performance.now() - g0) / 1000).toFixed(1)} s (not timed)`,
  );
  const replay = (EngineImpl: EngineClass, upTo = n): RunResult => {
    const engine = new EngineImpl();
    for (const c of history.setup) engine.apply(c, history.times[0]!);
    engine.drainChanges();
    let refused = 0;
    const { commands, times } = history;
    const started = startClock();
    for (let i = 0; i < upTo; i++) {
      if (!engine.apply(commands[i]!, times[i]!).ok) refused++;
      if (i % DRAIN_EVERY === DRAIN_EVERY - 1) engine.drainChanges();
    }
    engine.drainChanges();
    return { ...stopClock(started), trades: engine.sequences().nextTradeId - 1, refused };
  };
  const engines = ACTIVE.filter((k) => k === 1 || k === 3);
  const implOf = (k: number): EngineClass => (k === 3 ? CompareEngine! : Engine);
  for (const k of engines) replay(implOf(k), Math.min(n, 100_000));
  console.log(`runs: ${RUNS} of each after an untimed warm-up on ${fmt(Math.min(n, 100_000))} commands\n`);
  const results: RunResult[][] = [[], [], [], []];
  for (let run = 0; run < RUNS; run++) {
    for (const k of run % 2 === 0 ? engines : [...engines].reverse()) results[k]!.push(replay(implOf(k)));
    const line = engines
      .map((k) => {
        const r = results[k]![run]!;
        return `${LETTERS[k]} ${fmt(n / r.seconds)}/s (${fmt(n / r.cpuSeconds)}/CPU-s)`;
      })
      .join('  ');
    console.log(`run ${run + 1}/${RUNS}: ${line}`);
  }
  const medians = results.map((rs) => (rs.length === 0 ? Number.NaN : median(rs.map((r) => n / r.seconds))));
  console.log('');
  for (const k of engines) {
    const rs = results[k]!;
    console.log(
      `${NAMES[k]!.padEnd(34)}${fmt(medians[k]!).padStart(14)} cmd/s (median)   runs: ${rs.map((r) => fmt(n / r.seconds)).join(', ')}`,
    );
  }
  if (COMPARE !== undefined) {
    const perRound = results[1]!.map((r, i) => results[3]![i]!.seconds / r.seconds);
    const perRoundCpu = results[1]!.map((r, i) => results[3]![i]!.cpuSeconds / r.cpuSeconds);
    const list = (xs: number[]): string => xs.map((x) => x.toFixed(2)).join(', ');
    console.log(
      `[${title}] engine / engine at ${COMPARE} = ${ratio(medians[1]!, medians[3]!)} (medians of cmd/s); ` +
        `per round ${list(perRound)}: median ${median(perRound).toFixed(2)}; ` +
        `in CPU time per round ${list(perRoundCpu)}: median ${median(perRoundCpu).toFixed(2)}`,
    );
  }
  // The replay must reproduce the recording: same refusals, same trades.
  const consistent = engines.every((k) =>
    results[k]!.every((r) => r.trades === history.trades && r.refused === history.refused),
  );
  if (!consistent) {
    console.log(
      `!!! WARNING [${title}]: a replay differed from the recording (trades or refusals); exit code 1`,
    );
    process.exitCode = 1;
  } else
    console.log(`[${title}] every replay made the recording's ${fmt(history.trades)} trades and refusals`);
  return {
    title,
    meanResting: Number.NaN,
    meanLevels: Number.NaN,
    medians,
    trades: results.map((rs) => rs[0]?.trades),
    consistent,
  };
}

/** Extracts src/ at the --compare ref into a temporary directory and loads its Engine. */
async function loadCompareEngine(ref: string): Promise<EngineClass> {
  const dir = mkdtempSync(join(tmpdir(), 'openspot-bench-engine-'));
  process.on('exit', () => rmSync(dir, { recursive: true, force: true }));
  const archive = execFileSync('git', ['archive', ref, 'src'], { maxBuffer: 1 << 28 });
  execFileSync('tar', ['-x', '-C', dir], { input: archive });
  const module = (await import(pathToFileURL(join(dir, 'src/engine/engine.ts')).href)) as {
    Engine: EngineClass;
  };
  return module.Engine;
}

async function main(): Promise<void> {
  if (COMPARE !== undefined) CompareEngine = await loadCompareEngine(COMPARE);
  console.log(`OpenSpot engine benchmark: node ${process.version}, ${process.arch}`);
  console.log(`semi-space (young generation): ${semiSpaceSetting()}`);
  console.log(
    `machine: ${loadLine()} (above the core count, other jobs take turns on the cores: quote --compare ratios in CPU time)`,
  );
  console.log(
    `options: --commands ${COMMANDS} --runs ${RUNS} --seed ${SEED} --only ${ONLY} --scenario ${SCENARIO} --preload ${PRELOAD}` +
      (COMPARE === undefined ? '' : ` --compare ${COMPARE}`),
  );
  const scenarios: ScenarioResult[] = [];
  if (RUN_SHALLOW) scenarios.push(runScenario('shallow (as generated)', 0));
  if (RUN_DEEP) scenarios.push(runScenario(`deep book (${fmt(PRELOAD)} preloaded)`, PRELOAD));
  if (RUN_REPLAY) scenarios.push(await runReplay());
  console.log(`\nmachine at the end: ${loadLine()}`);
  if (scenarios.length < 2) return;

  console.log(`\n=== summary (median commands/s of the timed stream) ${'='.repeat(50)}`);
  const w = 32;
  const row = (label: string, cells: readonly string[]): void =>
    console.log(`${label.padEnd(34)}${cells.map((c) => c.padStart(w)).join('')}`);
  row(
    'scenario',
    scenarios.map((r) => r.title),
  );
  row(
    'mean resting orders / levels',
    scenarios.map((r) => `${fmt(r.meanResting)} / ${fmt(r.meanLevels)}`),
  );
  for (const k of ACTIVE)
    row(
      NAMES[k]!,
      scenarios.map((r) => fmt(r.medians[k]!)),
    );
  for (const k of ACTIVE)
    row(
      `trades ${LETTERS[k]}`,
      scenarios.map((r) => fmt(r.trades[k]!)),
    );
  const ratios = (r: ScenarioResult): [number, number, number] => r.medians as [number, number, number];
  row(
    'engine / book',
    scenarios.map((r) => ratio(ratios(r)[1], ratios(r)[0])),
  );
  row(
    'engine / nodejs-order-book',
    scenarios.map((r) => ratio(ratios(r)[1], ratios(r)[2])),
  );
  if (COMPARE !== undefined)
    row(
      `engine / engine at ${COMPARE}`.slice(0, 33),
      scenarios.map((r) => ratio(ratios(r)[1], r.medians[3]!)),
    );
  if (scenarios.some((r) => !r.consistent)) {
    console.log('!!! WARNING: trade counts differed in at least one scenario (see above); exit code 1');
  }
}

await main();
