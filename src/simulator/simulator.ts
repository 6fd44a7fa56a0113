/**
 * A market simulator that trades through the public client only (signed HTTP, exactly what any
 * trader sends), so running it exercises the real request path: auth, validation, matching,
 * settlement, market data and the WebSocket feed.
 *
 * - Market makers quote a few levels on both sides around a reference price that does a bounded
 *   random walk (price-walk.ts); every refresh cancels the maker's previous quotes first. Quotes
 *   are post-only (a quote never takes), and each maker keeps the venue's dead man's switch armed,
 *   so the quotes of a simulator that stops or dies leave the book within its timeout.
 * - Takers send market orders and crossing limit orders; what a limit order leaves resting is
 *   canceled after a few seconds, so takers never build a book of their own.
 *
 * - Replay (options.replay): one market's reference price and its takers' trade sizes follow a
 *   historical trade file instead (replay.ts): each due step moves every maker quote there, puts
 *   the level a taker meets exactly at the file's price, and a taker trades the file's volume at
 *   it. No random taker trades there, so the market's trades are the file's.
 *
 * All amounts are built from integers (ticks and lots) and formatted at the market's precision.
 * Errors are logged and the loop goes on; 503/429 and unreachable servers make it back off.
 */
import { OpenSpotClient } from '../client/client.js';
import { formatUnits, isZeroDecimal, parseUnits } from '../client/decimal.js';
import { OpenSpotApiError, OpenSpotTransportError } from '../client/errors.js';
import type { BookLevel, Credentials, Market, Side } from '../client/types.js';
import { type PriceWalk, priceWalk } from './price-walk.js';
import { type Random, seededRandom } from './random.js';
import { ReplayFeed, type ReplayStep, replayTradesFor } from './replay.js';
import type { FileTrade } from './trade-file.js';

/** The subset of a pino logger the simulator uses. */
export interface SimulatorLogger {
  debug(obj: object, msg?: string): void;
  info(obj: object, msg?: string): void;
  warn(obj: object, msg?: string): void;
  error(obj: object, msg?: string): void;
}

export interface SimulatorOptions {
  /** `{base_url}`, ending in /v1. */
  readonly baseUrl: string;
  readonly makers: readonly Credentials[];
  readonly takers: readonly Credentials[];
  /** Slash pairs, e.g. `BTC/EUR`. */
  readonly markets: readonly string[];
  /** Simulator actions per second over all markets (a maker refresh or one taker order). */
  readonly ratePerSecond: number;
  /** Centre of each market's random walk, by slash pair. */
  readonly referencePrices: Readonly<Record<string, string>>;
  readonly seed: number;
  readonly logger: SimulatorLogger;
  /** Quote levels per side. Default 3. */
  readonly levels?: number;
  /** How often a market's quotes are refreshed. Default 3000 ms. */
  readonly refreshMs?: number;
  /** Taker limit orders still resting after this are canceled. Default 5000 ms. */
  readonly restingMs?: number;
  /** Per-request timeout. Default 5000 ms. */
  readonly timeoutMs?: number;
  readonly fetch?: typeof fetch;
  /** Replay a historical trade file in one market (docs/simulation.md). */
  readonly replay?: SimulatorReplay;
  /**
   * The clock the simulator's decisions read, in ms (when quotes are due for a refresh, when a
   * taker's resting order expires). Default Date.now. A test drives it (steppedSimulator).
   */
  readonly now?: () => number;
  /**
   * Sends a round's orders and cancels one after another instead of concurrently, so the venue
   * receives them in one fixed order. Default false. With `now` and a seed, a run from a given
   * checkpoint is then the same every time (steppedSimulator).
   */
  readonly sequential?: boolean;
  /**
   * Every maker arms the venue's dead man's switch with this timeout (seconds) and renews it every
   * quarter of it. Default 60 (Kraken's advice: renew every 15 to 30 s); 0 leaves it off, the
   * default of steppedSimulator, whose steps follow its own clock while the switch follows the
   * venue's.
   */
  readonly deadManSeconds?: number;
}

export interface SimulatorReplay {
  /** Slash pair, e.g. `BTC/EUR`; must be one of `markets`. */
  readonly pair: string;
  /** The parsed file (trade-file.ts). */
  readonly trades: readonly FileTrade[];
  /** File seconds per real second, 1 to 1000. */
  readonly speed: number;
  /** The file's name, for messages. */
  readonly name?: string;
}

/**
 * A replay step's volume is capped at this many times the market's ordermin (1 BTC on BTC/EUR),
 * so the simulator's accounts (funded at ten times the demo account) can always pay.
 */
export const REPLAY_MAX_ORDERMINS = 20_000n;

export interface SimulatorStats {
  readonly actions: number;
  readonly ordersPlaced: number;
  readonly ordersCanceled: number;
  readonly errors: number;
}

export interface Simulator {
  /** Stops the loop and waits for the action in flight; resting quotes stay (swept at next start). */
  stop(): Promise<void>;
  /**
   * Starts over from the venue's state as it is now, with the same seed, once the action in
   * flight is done: after a checkpoint restore, the quotes it remembers are gone and the book
   * holds the checkpoint's. The new start cancels its accounts' open orders and quotes afresh.
   */
  restart(): Promise<void>;
  stats(): SimulatorStats;
}

/** A simulator with no loop of its own: the caller decides when each action happens. */
export interface SteppedSimulator {
  /** Loads the markets, cancels leftovers and places the first quotes. */
  start(): Promise<void>;
  /** One action (a maker refresh or a taker order), as the loop would take it. */
  step(): Promise<void>;
  stats(): SimulatorStats;
}

interface Account {
  readonly name: string;
  readonly client: OpenSpotClient;
}

interface MarketState {
  readonly market: Market;
  /** Slash form, as sent in order bodies. */
  readonly pair: string;
  readonly walk: PriceWalk;
  /** Distance of the best quotes from the reference, in ticks. */
  readonly halfSpread: bigint;
  /** Distance between quote levels, in ticks. */
  readonly gap: bigint;
  /** ordermin in lots. */
  readonly minLots: bigint;
  /** Open quote ids per maker index. */
  readonly quotes: Map<number, number[]>;
  /** Set for the replayed market: its reference price and taker trades come from the file. */
  readonly replay?: ReplayFeed;
  nextMaker: number;
  lastRefresh: number;
}

interface Resting {
  readonly account: Account;
  readonly id: number;
  readonly placedAt: number;
}

const maxBig = (a: bigint, b: bigint): bigint => (a > b ? a : b);
const MAX_BACKOFF_MS = 30_000;
const WARN_EVERY_MS = 30_000;

/**
 * A decimal at `decimals`, dropping digits beyond them (a reference price may be finer), or
 * undefined when the text is not a plain decimal.
 */
function ticksOf(text: string, decimals: number): bigint | undefined {
  const [whole = '0', fraction = ''] = text.trim().split('.');
  try {
    return parseUnits(`${whole}.${fraction.slice(0, decimals) || '0'}`, decimals);
  } catch {
    return undefined;
  }
}

interface BookTop {
  readonly bid: bigint | undefined;
  readonly ask: bigint | undefined;
}

/**
 * Moves a side of a ladder back, whole, when its best quote would meet the best opposite order
 * (another maker's quote from before the walk moved, a taker's resting order): a post-only quote
 * that would take is canceled, so a maker quotes just behind that order instead, as a real one
 * does. Bids pushed to zero or below are dropped.
 */
function behindTheBook(orders: Array<{ side: Side; ticks: bigint }>, top: BookTop): void {
  const bids = orders.filter((o) => o.side === 'buy');
  const asks = orders.filter((o) => o.side === 'sell');
  const topBid = bids.reduce((high, o) => maxBig(high, o.ticks), 0n);
  if (top.ask !== undefined && bids.length > 0 && topBid >= top.ask)
    for (const o of bids) o.ticks -= topBid - top.ask + 1n;
  const lowAsk = asks.reduce<bigint | undefined>(
    (low, o) => (low === undefined || o.ticks < low ? o.ticks : low),
    undefined,
  );
  if (top.bid !== undefined && lowAsk !== undefined && lowAsk <= top.bid)
    for (const o of asks) o.ticks += top.bid - lowAsk + 1n;
  for (let i = orders.length - 1; i >= 0; i -= 1) if (orders[i]!.ticks < 1n) orders.splice(i, 1);
}

class Runner {
  readonly #random: Random;
  readonly #makers: Account[];
  readonly #takers: Account[];
  readonly #public: OpenSpotClient;
  readonly #markets: MarketState[] = [];
  readonly #resting: Resting[] = [];
  readonly #lastWarn = new Map<string, number>();
  readonly #levels: number;
  readonly #refreshMs: number;
  readonly #restingMs: number;
  readonly #intervalMs: number;
  #stopped = false;
  #wake: (() => void) | undefined;
  #backoffMs = 0;
  /** Set when a request of the current round asked for a backoff (503, 429, unreachable). */
  #overloaded = false;
  #cursor = 0;
  readonly #deadManSeconds: number;
  /** When each maker last armed its switch, on the wall clock (the venue's deadline runs on it). */
  readonly #armedAt = new Map<Account, number>();
  readonly #now: () => number;
  readonly stats = { actions: 0, ordersPlaced: 0, ordersCanceled: 0, errors: 0 };

  constructor(private readonly options: SimulatorOptions) {
    if (!(options.ratePerSecond > 0)) throw new RangeError('ratePerSecond must be positive');
    this.#random = seededRandom(options.seed);
    const client = (c?: Credentials) =>
      new OpenSpotClient({
        baseUrl: options.baseUrl,
        apiKey: c?.apiKey,
        apiSecret: c?.apiSecret,
        fetch: options.fetch,
        timeoutMs: options.timeoutMs ?? 5000,
      });
    this.#makers = options.makers.map((c, i) => ({ name: `maker${i + 1}`, client: client(c) }));
    this.#takers = options.takers.map((c, i) => ({ name: `taker${i + 1}`, client: client(c) }));
    this.#public = client();
    this.#levels = Math.max(1, options.levels ?? 3);
    this.#refreshMs = options.refreshMs ?? 3000;
    this.#restingMs = options.restingMs ?? 5000;
    this.#intervalMs = 1000 / options.ratePerSecond;
    this.#now = options.now ?? Date.now;
    this.#deadManSeconds = options.deadManSeconds ?? 60;
    if (!Number.isInteger(this.#deadManSeconds) || this.#deadManSeconds < 0 || this.#deadManSeconds > 86_400)
      throw new RangeError('deadManSeconds must be a whole number from 0 to 86400');
  }

  stop(): void {
    this.#stopped = true;
    this.#wake?.();
  }

  async run(): Promise<void> {
    await this.init();
    while (!this.#stopped) {
      const started = Date.now();
      this.#overloaded = false;
      await this.round();
      // The backoff doubles while the server keeps refusing and resets after one good round.
      if (!this.#overloaded) this.#backoffMs = 0;
      const wait = this.#overloaded ? this.#backoffMs : this.#intervalMs - (Date.now() - started);
      if (wait > 0) await this.#sleep(wait);
    }
  }

  /** One action, after renewing the makers' switches and expiring the takers' resting orders. */
  async round(): Promise<void> {
    try {
      await this.#renewSwitches();
      await this.#expireResting();
      await this.#act();
    } catch (error) {
      // #act handles API errors itself; anything here is a bug, which must not end the loop.
      this.stats.errors += 1;
      this.options.logger.error({ err: error }, 'simulator action failed');
    }
    this.stats.actions += 1;
  }

  /** Each item's request: all at once, or one after another when `sequential`. */
  async #each<T, R>(items: readonly T[], request: (item: T) => Promise<R>): Promise<R[]> {
    if (this.options.sequential !== true) return Promise.all(items.map(request));
    const results: R[] = [];
    for (const item of items) results.push(await request(item));
    return results;
  }

  /** Loads the markets (retrying until the server answers), sweeps leftovers, places first quotes. */
  async init(): Promise<void> {
    let delay = 250;
    while (!this.#stopped) {
      try {
        await this.#loadMarkets();
        break;
      } catch (error) {
        this.#warn('markets', { err: errorSummary(error) }, 'simulator cannot load markets yet; retrying');
        await this.#sleep(delay);
        delay = Math.min(delay * 2, 5000);
      }
    }
    if (this.#stopped) return;
    await this.#sweep();
    await this.#renewSwitches();
    for (const m of this.#markets) if (!this.#stopped) await this.#refresh(m);
    // The file's first trade is due now; its pace counts from here.
    for (const m of this.#markets) m.replay?.start(this.#now());
    this.options.logger.info(
      { markets: this.#markets.map((m) => m.pair), makers: this.#makers.length, takers: this.#takers.length },
      'simulator is trading',
    );
  }

  async #loadMarkets(): Promise<void> {
    const [catalogue, tickers] = await Promise.all([this.#public.markets(), this.#public.tickers()]);
    const byName = new Map(Object.values(catalogue.data).map((m) => [m.wsname, m]));
    const lastPrice = new Map(tickers.map((t) => [t.ticker_id, t.last_price]));
    this.#markets.length = 0;
    for (const pair of this.options.markets) {
      const market = byName.get(pair);
      const traded = lastPrice.get(pair);
      const last = traded !== undefined && !isZeroDecimal(traded) ? traded : undefined;
      // A market of a custom catalogue without a configured reference walks around its last trade.
      const reference = this.options.referencePrices[pair] ?? last;
      const center =
        market === undefined || reference === undefined ? undefined : ticksOf(reference, market.pairDecimals);
      if (market === undefined || center === undefined || center <= 0n) {
        this.options.logger.warn(
          { pair, reference },
          'simulator skips a market that is unknown or has no usable reference price',
        );
        continue;
      }
      const minLots = maxBig(parseUnits(market.ordermin, market.lotDecimals), 1n);
      const replay = this.options.replay?.pair === pair ? this.#replayFeed(market, minLots) : undefined;
      // A replay starts at the file's first price, whatever the market did before.
      const base = replay === undefined ? center : replay.ticks;
      // Continue from the last trade after a restart; the walk clamps it into its band.
      const start = (last === undefined ? undefined : ticksOf(last, market.pairDecimals)) ?? center;
      this.#markets.push({
        market,
        pair,
        walk:
          replay === undefined
            ? priceWalk(this.#random, { center, start })
            : {
                get ticks() {
                  return replay.ticks;
                },
                step: () => replay.ticks,
              },
        halfSpread: maxBig(base / 4000n, 1n),
        gap: maxBig(base / 10_000n, 1n),
        minLots,
        quotes: new Map(),
        ...(replay === undefined ? {} : { replay }),
        nextMaker: 0,
        lastRefresh: 0,
      });
    }
    if (this.options.replay !== undefined && !this.#markets.some((m) => m.replay !== undefined))
      this.options.logger.error(
        { pair: this.options.replay.pair },
        'simulator cannot replay: the market is not simulated',
      );
  }

  /** The replay of options.replay at this market's precision; undefined (logged) when it does not fit. */
  #replayFeed(market: Market, minLots: bigint): ReplayFeed | undefined {
    const replay = this.options.replay!;
    try {
      const trades = replayTradesFor(
        replay.trades,
        { pair: replay.pair, ...market },
        replay.name ?? 'trade file',
      );
      return new ReplayFeed(trades, { speed: replay.speed, maxLots: minLots * REPLAY_MAX_ORDERMINS });
    } catch (error) {
      this.options.logger.error({ pair: replay.pair, err: errorSummary(error) }, 'simulator cannot replay');
      return undefined;
    }
  }

  /**
   * Cancels what earlier runs left open in the simulated markets (ids are not remembered): one
   * cancel-all per account and market, which leaves the accounts' orders elsewhere alone.
   */
  async #sweep(): Promise<void> {
    for (const account of [...this.#makers, ...this.#takers]) {
      if (this.#stopped) return;
      await this.#each(this.#markets, async (m) => {
        try {
          this.stats.ordersCanceled += (await account.client.cancelAll({ pair: m.pair })).data.canceled;
        } catch (error) {
          this.#failed(error, `${account.name} cancel-all ${m.pair}`);
        }
      });
    }
  }

  /**
   * Arms again each maker's dead man's switch once a quarter of its timeout has passed since the
   * last arming: while the loop runs, the deadline keeps moving ahead of it. Timed on the wall
   * clock, not `now`, because the venue fires the switch on its own clock; arming changes no
   * order, so the trades of a stepped run do not depend on when it happens.
   */
  async #renewSwitches(): Promise<void> {
    if (this.#deadManSeconds === 0) return;
    const now = Date.now();
    const due = this.#makers.filter(
      (maker) => now - (this.#armedAt.get(maker) ?? Number.NEGATIVE_INFINITY) >= this.#deadManSeconds * 250,
    );
    await this.#each(due, async (maker) => {
      try {
        await maker.client.cancelAllAfter(this.#deadManSeconds);
        this.#armedAt.set(maker, now);
      } catch (error) {
        this.#failed(error, `${maker.name} dead man's switch`);
      }
    });
  }

  /** One action: the next market's quote refresh when due, else a taker order there. */
  async #act(): Promise<void> {
    if (this.#markets.length === 0) return;
    // Due replay trades go first: they carry the file's pace.
    for (const r of this.#markets) {
      const step = r.replay?.take(this.#now());
      if (step === undefined) continue;
      await this.#replayStep(r, step);
      if (r.replay!.finished)
        this.options.logger.info(
          { pair: r.pair, trades: r.replay!.replayed },
          'replay finished; the market keeps its quotes around the last price',
        );
      return;
    }
    const m = this.#markets[this.#cursor % this.#markets.length]!;
    this.#cursor += 1;
    const due = this.#now() - m.lastRefresh >= this.#refreshMs;
    if (m.replay !== undefined) {
      // Between replay steps only the quotes are kept fresh: every trade there is the file's.
      if (due) await this.#refresh(m);
      return;
    }
    if (this.#makers.length > 0 && (due || this.#takers.length === 0)) await this.#refresh(m);
    else if (this.#takers.length > 0) await this.#take(m);
  }

  async #refresh(m: MarketState): Promise<void> {
    if (this.#makers.length === 0) return;
    m.lastRefresh = this.#now();
    const index = m.nextMaker % this.#makers.length;
    m.nextMaker += 1;
    const maker = this.#makers[index]!;
    const stale = m.quotes.get(index) ?? [];
    // Cancel first: a maker's new bid may not meet its own old ask (self-trade prevention would
    // cancel it anyway, but that wastes the quote). Quotes that could not be canceled are kept
    // for the next refresh rather than forgotten in the book.
    const cancelStale = () => this.#each(stale, (id) => this.#cancel(maker, id));
    // The book is read beside the cancels (one round trip less per refresh); a stale quote of the
    // maker's own it may still show only moves the new ladder back a little. In a sequential run
    // it is read after them, so that the same steps read the same book.
    const [gone, book] =
      this.options.sequential === true
        ? [await cancelStale(), await this.#bookTop(m)]
        : await Promise.all([cancelStale(), this.#bookTop(m)]);
    const kept = stale.filter((_id, i) => !gone[i]);
    const reference = m.walk.step();
    const jitter = BigInt(this.#random.int(0, Number(m.gap) - 1));
    const orders: Array<{ side: Side; ticks: bigint; lots: bigint }> = [];
    for (let level = 0; level < this.#levels; level += 1) {
      const distance = m.halfSpread + m.gap * BigInt(level) + jitter;
      // Quotes several times a taker's size, deeper levels larger: the book stays visible.
      const lots = () => m.minLots * BigInt(this.#random.int(5 + 5 * level, 20 + 10 * level));
      if (reference - distance >= 1n) orders.push({ side: 'buy', ticks: reference - distance, lots: lots() });
      orders.push({ side: 'sell', ticks: reference + distance, lots: lots() });
    }
    if (book !== undefined) behindTheBook(orders, book);
    const ids = await this.#each(orders, (o) => this.#quote(maker, m, o));
    m.quotes.set(index, [...kept, ...ids.filter((id): id is number => id !== undefined)]);
  }

  /**
   * One replay step: every maker quote of the market is canceled (an old one on the far side of
   * the new price would trade first), one maker quotes a ladder whose first level on the side the
   * taker meets is exactly the file's price and deep enough for the step's whole volume, then a
   * taker sends a limit order at that price for that volume: it trades at the file's price.
   */
  async #replayStep(m: MarketState, step: ReplayStep): Promise<void> {
    if (this.#makers.length === 0 || this.#takers.length === 0) return;
    await Promise.all(
      [...m.quotes].map(async ([index, ids]) => {
        const maker = this.#makers[index]!;
        const gone = await Promise.all(ids.map((id) => this.#cancel(maker, id)));
        m.quotes.set(
          index,
          ids.filter((_id, i) => !gone[i]),
        );
      }),
    );
    m.lastRefresh = Date.now();
    const index = m.nextMaker % this.#makers.length;
    m.nextMaker += 1;
    const maker = this.#makers[index]!;
    const lots = maxBig(step.lots, m.minLots);
    const price = step.ticks;
    // The taker buys: the maker sells from the price up, and bids a spread below it.
    const meets: Side = step.side === 'buy' ? 'sell' : 'buy';
    const away = (ticks: bigint) => (meets === 'sell' ? price + ticks : price - ticks);
    const back = (ticks: bigint) => (meets === 'sell' ? price - ticks : price + ticks);
    const orders: Array<{ side: Side; ticks: bigint; lots: bigint }> = [];
    for (let level = 0; level < this.#levels; level += 1) {
      const depth = () => m.minLots * BigInt(this.#random.int(5 + 5 * level, 20 + 10 * level));
      orders.push({
        side: meets,
        ticks: away(m.gap * BigInt(level)),
        lots: (level === 0 ? lots : 0n) + depth(),
      });
      const other = back(2n * m.halfSpread + m.gap * BigInt(level));
      if (other >= 1n) orders.push({ side: meets === 'sell' ? 'buy' : 'sell', ticks: other, lots: depth() });
    }
    const ids = await Promise.all(orders.filter((o) => o.ticks >= 1n).map((o) => this.#quote(maker, m, o)));
    m.quotes.set(index, [
      ...(m.quotes.get(index) ?? []),
      ...ids.filter((id): id is number => id !== undefined),
    ]);
    const taker = this.#random.pick(this.#takers);
    const id = await this.#place(taker, {
      pair: m.pair,
      direction: step.side,
      type: 'limit',
      volume: formatUnits(lots, m.market.lotDecimals),
      price: formatUnits(price, m.market.pairDecimals),
    });
    // Filled at once unless the maker's quote failed; what rests is canceled like any taker's.
    if (id !== undefined) this.#resting.push({ account: taker, id, placedAt: Date.now() });
  }

  /** The best bid and ask of the market's public book, in ticks; undefined when unreadable. */
  async #bookTop(m: MarketState): Promise<BookTop | undefined> {
    try {
      // The interface's depth counts both sides: 2 is the best level of each.
      const [book] = await this.#public.orderbook({ tickerId: m.pair, depth: 2 });
      const best = (level: BookLevel | undefined) =>
        level === undefined ? undefined : ticksOf(level[0], m.market.pairDecimals);
      return { bid: best(book?.bids[0]), ask: best(book?.asks[0]) };
    } catch (error) {
      this.#failed(error, `${m.pair} order book`);
      return undefined;
    }
  }

  /**
   * A maker's quote: post-only, so it only ever adds liquidity; one that would cross (the walk
   * moved past a taker's resting order) is canceled by the venue instead of trading.
   */
  #quote(maker: Account, m: MarketState, o: { side: Side; ticks: bigint; lots: bigint }) {
    return this.#place(maker, {
      pair: m.pair,
      direction: o.side,
      type: 'limit',
      volume: formatUnits(o.lots, m.market.lotDecimals),
      price: formatUnits(o.ticks, m.market.pairDecimals),
      postOnly: true,
    });
  }

  async #take(m: MarketState): Promise<void> {
    const taker = this.#random.pick(this.#takers);
    const side: Side = this.#random.chance(0.5) ? 'buy' : 'sell';
    const volume = formatUnits(m.minLots * BigInt(this.#random.int(1, 6)), m.market.lotDecimals);
    if (this.#random.chance(0.5)) {
      await this.#place(taker, { pair: m.pair, direction: side, type: 'market', volume });
      return;
    }
    // A limit that reaches into the makers' levels: it trades, and what is left rests briefly.
    const reach = m.halfSpread + m.gap * BigInt(this.#random.int(0, this.#levels - 1));
    const ticks = side === 'buy' ? m.walk.ticks + reach : maxBig(m.walk.ticks - reach, 1n);
    const price = formatUnits(ticks, m.market.pairDecimals);
    const id = await this.#place(taker, { pair: m.pair, direction: side, type: 'limit', volume, price });
    if (id !== undefined) this.#resting.push({ account: taker, id, placedAt: this.#now() });
  }

  async #expireResting(): Promise<void> {
    const cutoff = this.#now() - this.#restingMs;
    const expired: Resting[] = [];
    while (this.#resting.length > 0 && this.#resting[0]!.placedAt <= cutoff)
      expired.push(this.#resting.shift()!);
    const gone = await this.#each(expired, (r) => this.#cancel(r.account, r.id));
    this.#resting.push(...expired.filter((_r, i) => !gone[i]).map((r) => ({ ...r, placedAt: this.#now() })));
  }

  async #place(
    account: Account,
    order: Parameters<OpenSpotClient['createOrder']>[0],
  ): Promise<number | undefined> {
    try {
      const created = await account.client.createOrder(order);
      this.stats.ordersPlaced += 1;
      return created.id;
    } catch (error) {
      this.#failed(error, `${account.name} ${order.direction} ${order.type} ${order.pair}`);
      return undefined;
    }
  }

  /** True when the order is no longer open (canceled now, or already filled or canceled). */
  async #cancel(account: Account, id: number): Promise<boolean> {
    try {
      await account.client.cancelOrder(id);
      this.stats.ordersCanceled += 1;
      return true;
    } catch (error) {
      // Already filled or canceled (self-trade prevention, no liquidity): nothing to do.
      if (error instanceof OpenSpotApiError && (error.status === 404 || error.status === 409)) return true;
      this.#failed(error, `${account.name} cancel ${id}`);
      return false;
    }
  }

  /** Logs an error at the level it deserves and decides whether the loop backs off. */
  #failed(error: unknown, what: string): void {
    this.stats.errors += 1;
    const overloaded = error instanceof OpenSpotApiError && (error.status === 503 || error.status === 429);
    if (overloaded || error instanceof OpenSpotTransportError) {
      const hinted = error instanceof OpenSpotApiError ? (error.retryAfter ?? 0) * 1000 : 0;
      // Once per round: the concurrent requests of one refresh all fail together.
      if (!this.#overloaded)
        this.#backoffMs = Math.min(MAX_BACKOFF_MS, Math.max(hinted, this.#backoffMs * 2, 500));
      this.#overloaded = true;
      this.#warn('backoff', { what, err: errorSummary(error) }, 'simulator backs off');
    } else if (error instanceof OpenSpotApiError && error.status < 500) {
      // Insufficient funds, a price the walk pushed below a limit: expected now and then.
      this.options.logger.debug({ what, err: errorSummary(error) }, 'simulator order refused');
    } else {
      this.#warn(what, { what, err: errorSummary(error) }, 'simulator request failed');
    }
  }

  /** Warns at most once per key every 30 s, so an outage does not flood the log. */
  #warn(key: string, details: object, message: string): void {
    const now = Date.now();
    if (now - (this.#lastWarn.get(key) ?? 0) < WARN_EVERY_MS) return;
    this.#lastWarn.set(key, now);
    this.options.logger.warn(details, message);
  }

  #sleep(ms: number): Promise<void> {
    if (this.#stopped) return Promise.resolve();
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.#wake = undefined;
        resolve();
      };
      const timer = setTimeout(done, ms);
      this.#wake = done;
    });
  }
}

const errorSummary = (error: unknown): string => (error instanceof Error ? error.message : String(error));

/** Starts the loop in the background and returns at once; `stop()` ends it. */
export function startSimulator(options: SimulatorOptions): Simulator {
  const launch = (runner: Runner) =>
    runner.run().catch((error: unknown) => {
      options.logger.error({ err: error }, 'simulator stopped by an unexpected error');
    });
  let runner = new Runner(options);
  let running = launch(runner);
  let stopped = false;
  /** A restart waiting for the action in flight; restarts asked meanwhile share it. */
  let restarting: Promise<void> | undefined;
  return {
    async stop() {
      stopped = true;
      runner.stop();
      await running;
    },
    restart() {
      if (stopped) return Promise.resolve();
      restarting ??= (async () => {
        runner.stop();
        await running;
        restarting = undefined;
        if (stopped) return;
        runner = new Runner(options);
        running = launch(runner);
      })();
      return restarting;
    },
    stats: () => ({ ...runner.stats }),
  };
}

/**
 * The simulator driven step by step, with its decisions on the given clock (`now`, default
 * Date.now) and its requests sent one after another: from the same venue state (a checkpoint) with
 * the same seed, the same steps send the same requests in the same order, so the venue makes the
 * same trades (same ids, prices and volumes; the times are the venue's clock).
 */
export function steppedSimulator(options: SimulatorOptions): SteppedSimulator {
  const runner = new Runner({ deadManSeconds: 0, ...options, sequential: true });
  return {
    start: () => runner.init(),
    step: () => runner.round(),
    stats: () => ({ ...runner.stats }),
  };
}
