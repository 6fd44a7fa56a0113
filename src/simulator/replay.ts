/**
 * Replaying a historical trade file (trade-file.ts) through the simulator: the file's prices
 * become the market's reference price and its volumes the size of the takers' trades, at the
 * file's own pace divided by a speed factor (1 to 1000).
 *
 * ReplayFeed is pure: the caller passes the time (milliseconds of its own clock) and gets back the
 * trades that fell due since the last call, merged into one step (the last price, the summed
 * volume), because the simulator acts a few times a second while a file at speed 1000 may hold
 * hundreds of trades per second of replay.
 */
import { readFileSync } from 'node:fs';
import type { Side } from '../client/types.js';
import { MAX_UNITS } from '../domain/money.js';
import { type FileTrade, formatExact, parseTradeFile, TradeFileError, toUnits } from './trade-file.js';

export const MIN_SPEED = 1;
export const MAX_SPEED = 1000;

/** A file trade at a market's precision: the price in ticks, the volume in lots. */
export interface ReplayTrade {
  readonly line: number;
  /** Microseconds since the file's first trade. */
  readonly offset: number;
  readonly ticks: bigint;
  readonly lots: bigint;
}

export interface ReplayMarket {
  /** Slash pair, for messages. */
  readonly pair: string;
  readonly pairDecimals: number;
  readonly lotDecimals: number;
}

/** Reads and parses a trade file; every failure is a TradeFileError naming the file. */
export function loadTradeFile(path: string): FileTrade[] {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    const reason = (error as NodeJS.ErrnoException).code === 'ENOENT' ? 'no such file' : String(error);
    throw new TradeFileError(`cannot read the trade file ${path}: ${reason}`);
  }
  return parseTradeFile(text, path);
}

/**
 * The file's trades at the market's precision: prices rounded to the nearest tick (halves up),
 * volumes rounded down to whole lots (the simulator raises what is below ordermin to it). A price
 * that rounds to no tick at all, or beyond the exact range, is an error naming its line.
 */
export function replayTradesFor(
  trades: readonly FileTrade[],
  market: ReplayMarket,
  name: string,
): ReplayTrade[] {
  const first = trades[0]?.time ?? 0;
  return trades.map((t) => {
    const ticks = toUnits(t.price, market.pairDecimals, 'nearest');
    const lots = toUnits(t.volume, market.lotDecimals, 'floor');
    const where = `${name}:${t.line}`;
    if (ticks === 0n)
      throw new TradeFileError(
        `${where}: the price ${formatExact(t.price)} is below one tick of ${market.pair} (${market.pairDecimals} decimals)`,
      );
    if (ticks > BigInt(MAX_UNITS) || lots > BigInt(MAX_UNITS))
      throw new TradeFileError(`${where}: the price or volume is too large for ${market.pair}`);
    return { line: t.line, offset: t.time - first, ticks, lots };
  });
}

/** What one simulator action replays: the due trades, merged. */
export interface ReplayStep {
  /** The last due trade's price, in ticks. */
  readonly ticks: bigint;
  /** The due trades' volumes summed, in lots, at most the feed's maxLots. */
  readonly lots: bigint;
  /** The taker's side by the tick rule: up is a buy, down a sell, unchanged repeats the last side. */
  readonly side: Side;
  /** How many file trades the step stands for. */
  readonly trades: number;
  /** The last due trade's line. */
  readonly line: number;
}

export interface ReplayFeedOptions {
  /** File seconds per second of replay, 1 to 1000. */
  readonly speed: number;
  /** Cap on a step's summed volume, in lots (the simulator's accounts must be able to pay). */
  readonly maxLots?: bigint;
}

export class ReplayFeed {
  readonly #trades: readonly ReplayTrade[];
  readonly #speed: number;
  readonly #maxLots: bigint | undefined;
  #next = 0;
  #startMs: number | undefined;
  #ticks: bigint;
  #side: Side = 'buy';

  constructor(trades: readonly ReplayTrade[], options: ReplayFeedOptions) {
    if (trades.length === 0) throw new RangeError('a replay needs at least one trade');
    if (!Number.isInteger(options.speed) || options.speed < MIN_SPEED || options.speed > MAX_SPEED)
      throw new RangeError(`the replay speed must be a whole number from ${MIN_SPEED} to ${MAX_SPEED}`);
    this.#trades = trades;
    this.#speed = options.speed;
    this.#maxLots = options.maxLots;
    this.#ticks = trades[0]!.ticks;
  }

  /** The reference price: the last replayed trade's, or the first trade's before the start. */
  get ticks(): bigint {
    return this.#ticks;
  }

  get finished(): boolean {
    return this.#next >= this.#trades.length;
  }

  /** How many file trades were replayed so far. */
  get replayed(): number {
    return this.#next;
  }

  /** Starts the replay clock at `nowMs` (the first trade is due at once); later calls do nothing. */
  start(nowMs: number): void {
    this.#startMs ??= nowMs;
  }

  /** The trades due at `nowMs` (starting the replay if needed), merged; undefined when none. */
  take(nowMs: number): ReplayStep | undefined {
    this.start(nowMs);
    // File microseconds elapsed: real milliseconds × 1000 × speed.
    const elapsed = (nowMs - this.#startMs!) * 1000 * this.#speed;
    const before = this.#ticks;
    let lots = 0n;
    let count = 0;
    let last: ReplayTrade | undefined;
    while (this.#next < this.#trades.length && this.#trades[this.#next]!.offset <= elapsed) {
      last = this.#trades[this.#next]!;
      lots += last.lots;
      count += 1;
      this.#next += 1;
    }
    if (last === undefined) return undefined;
    this.#ticks = last.ticks;
    if (last.ticks > before) this.#side = 'buy';
    else if (last.ticks < before) this.#side = 'sell';
    const capped = this.#maxLots !== undefined && lots > this.#maxLots ? this.#maxLots : lots;
    return { ticks: last.ticks, lots: capped, side: this.#side, trades: count, line: last.line };
  }
}

/** The simulator's replay options, from the server's settings: the file read, parsed and checked. */
export interface PreparedReplay {
  readonly pair: string;
  readonly trades: readonly FileTrade[];
  readonly speed: number;
  readonly name: string;
}

/**
 * Reads and checks a replay before the server listens, so a bad file or pair stops the start
 * with a message naming the file and line, instead of a simulator that silently does nothing.
 */
export function prepareReplay(
  settings: { readonly file: string; readonly speed: number; readonly pair: string },
  findMarket: (pair: string) => ReplayMarket | undefined,
): PreparedReplay {
  const market = findMarket(settings.pair);
  if (market === undefined)
    throw new TradeFileError(`the replay pair ${settings.pair} is not a market of this venue`);
  const trades = loadTradeFile(settings.file);
  replayTradesFor(trades, market, settings.file);
  return { pair: settings.pair, trades, speed: settings.speed, name: settings.file };
}
