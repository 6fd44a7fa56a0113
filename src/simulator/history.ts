/**
 * Simulated history (`openspot simulate --days N`): days of trading written into a new venue in
 * minutes, so its charts, tickers and trade lists are full on the first start.
 *
 * The same market behaviour as the live simulator (simulator.ts: makers quoting a ladder around a
 * bounded random walk, takers crossing it), but submitted straight to the exchange as commands,
 * at engine speed, with simulated time: the exchange's clock is a SimulatedClock that this loop
 * moves forward step by step from `from` to `to`. Every trade, candle, order and ledger entry is
 * therefore stamped with the simulated time, through the ordinary clock port; the engine is the
 * same pure engine.
 *
 * One step (default 20 simulated seconds) is one batch (one commit): every market gets a taker
 * order, and once a simulated minute its quotes are renewed. Candles of every interval, 24-hour
 * ticker statistics and the public trade history follow from the trades, as they do live.
 */

import type {
  Amount,
  AssetCode,
  MarketSpec,
  Micros,
  OrderId,
  Price,
  UserId,
  Volume,
} from '../domain/types.js';
import type { Command, CommandResult } from '../engine/types.js';
import type { LocalExchange } from '../sequencer/sequencer.js';
import type { Store } from '../store/store.js';
import { demoBalances } from './demo.js';
import { type PriceWalk, priceWalk } from './price-walk.js';
import { seededRandom } from './random.js';
import { parseExact, toUnits } from './trade-file.js';

/** A clock the caller sets: simulated time enters the exchange through its clock port. */
export interface SimulatedClock {
  (): Micros;
  set(time: Micros): void;
}

export function simulatedClock(start: Micros): SimulatedClock {
  let now = start;
  const clock = (() => now) as SimulatedClock;
  clock.set = (time) => {
    // Command times order events: simulated time may stand still, never go back.
    if (time < now) throw new RangeError('simulated time cannot go backwards');
    now = time;
  };
  return clock;
}

export interface HistoryOptions {
  /** An exchange whose clock is `clock`, on a store holding no trading yet. */
  readonly exchange: LocalExchange;
  readonly store: Store;
  readonly clock: SimulatedClock;
  readonly from: Micros;
  readonly to: Micros;
  readonly seed: number;
  /** Centre of each market's walk, by slash pair; markets without one are left alone. */
  readonly referencePrices: Readonly<Record<string, string>>;
  /** Simulated seconds between steps. Default 20. */
  readonly stepSeconds?: number;
  /** Simulated seconds between quote renewals. Default 60. */
  readonly refreshSeconds?: number;
  /** Stops the run between two steps (it then throws an AbortError). */
  readonly signal?: AbortSignal;
  /** Called about once per simulated hour. */
  readonly onProgress?: (done: number, total: number) => void;
}

export interface HistorySummary {
  readonly markets: readonly string[];
  readonly steps: number;
  readonly commands: number;
  readonly trades: number;
  readonly users: readonly number[];
}

interface Market {
  readonly spec: MarketSpec;
  readonly pair: string;
  readonly walk: PriceWalk;
  readonly halfSpread: bigint;
  readonly gap: bigint;
  readonly minLots: bigint;
  /** Open quotes (maker user, order id). */
  quotes: Array<readonly [UserId, OrderId]>;
  nextMaker: number;
}

const MAKERS = 2;
const TAKERS = 3;
const LEVELS = 3;
const SIMULATOR_FACTOR = 10n;
const maxBig = (a: bigint, b: bigint): bigint => (a > b ? a : b);

export async function simulateHistory(options: HistoryOptions): Promise<HistorySummary> {
  const { exchange, store, clock } = options;
  const stepMicros = (options.stepSeconds ?? 20) * 1_000_000;
  const refreshMicros = (options.refreshSeconds ?? 60) * 1_000_000;
  if (!(stepMicros > 0) || !(refreshMicros > 0) || !(options.to > options.from))
    throw new RangeError('simulated history needs a positive step and from < to');
  const random = seededRandom(options.seed);
  clock.set(options.from);

  let commands = 0;
  let trades = 0;
  const submit = (command: Command): Promise<CommandResult> => {
    commands += 1;
    return exchange.submit(command);
  };

  // The accounts: users of their own (no API key: nothing here signs a request), funded like the
  // live simulator's accounts, by deposits, so the ledger check holds.
  const funds = Object.entries(demoBalances(exchange.catalogue.assets()));
  const account = async (email: string): Promise<UserId> => {
    const user = store.createUser(email, clock());
    for (const [code, whole] of funds) {
      const asset = exchange.catalogue.asset(code)!;
      const amount = toUnits(parseExact(whole)!, asset.decimals, 'floor') * SIMULATOR_FACTOR;
      const result = await submit({
        kind: 'deposit',
        userId: user.id,
        asset: code as AssetCode,
        amount: Number(amount) as Amount,
      });
      if (!result.ok) throw new Error(`simulated history: deposit refused: ${result.error.message}`);
    }
    return user.id;
  };
  const makers: UserId[] = [];
  const takers: UserId[] = [];
  for (let i = 1; i <= MAKERS; i++) makers.push(await account(`history-maker-${i}@openspot.local`));
  for (let i = 1; i <= TAKERS; i++) takers.push(await account(`history-taker-${i}@openspot.local`));

  const markets: Market[] = [];
  for (const spec of exchange.catalogue.markets()) {
    const pair = `${spec.base}/${spec.quote}`;
    const reference = options.referencePrices[pair];
    const decimal = reference === undefined ? undefined : parseExact(reference);
    const center = decimal === undefined ? 0n : toUnits(decimal, spec.pairDecimals, 'nearest');
    if (center <= 0n) continue;
    markets.push({
      spec,
      pair,
      walk: priceWalk(random, { center }),
      halfSpread: maxBig(center / 4000n, 1n),
      gap: maxBig(center / 10_000n, 1n),
      minLots: maxBig(BigInt(spec.ordermin), 1n),
      quotes: [],
      nextMaker: 0,
    });
  }

  const order = (
    userId: UserId,
    m: Market,
    side: 'buy' | 'sell',
    type: 'limit' | 'market',
    ticks: bigint,
    lots: bigint,
  ) =>
    submit({
      kind: 'placeOrder',
      userId,
      marketId: m.spec.id,
      side,
      type,
      price: Number(type === 'market' ? 0n : ticks) as Price,
      volume: Number(lots) as Volume,
    });
  /** The order's id when it is still open after the command (resting), else undefined. */
  const resting = (result: CommandResult): OrderId | undefined => {
    if (!result.ok) return undefined;
    let id: OrderId | undefined;
    for (const event of result.events) {
      if (event.type === 'orderAccepted') id = event.order.id;
      else if (event.type === 'orderDone' && event.order.id === id) id = undefined;
      else if (event.type === 'trade') trades += 1;
    }
    return id;
  };

  let takerLeftovers: Array<readonly [UserId, OrderId]> = [];
  let lastRefresh = Number.NEGATIVE_INFINITY;
  let steps = 0;
  const total = options.to - options.from;
  let reported = 0;
  for (let time = options.from as number; time <= options.to; time += stepMicros) {
    options.signal?.throwIfAborted();
    clock.set(time as Micros);
    steps += 1;
    // Everything of one step is submitted in the same turn: one batch, one commit, one time.
    const pending: Array<Promise<unknown>> = [];
    for (const [userId, orderId] of takerLeftovers)
      pending.push(submit({ kind: 'cancelOrder', userId, orderId }));
    takerLeftovers = [];
    const refresh = time - lastRefresh >= refreshMicros;
    if (refresh) lastRefresh = time;
    for (const m of markets) {
      if (refresh) {
        for (const [userId, orderId] of m.quotes)
          pending.push(submit({ kind: 'cancelOrder', userId, orderId }));
        m.quotes = [];
        const maker = makers[m.nextMaker++ % makers.length]!;
        const reference = m.walk.step();
        const jitter = BigInt(random.int(0, Number(m.gap) - 1));
        for (let level = 0; level < LEVELS; level++) {
          const distance = m.halfSpread + m.gap * BigInt(level) + jitter;
          for (const [side, ticks] of [
            ['buy', reference - distance],
            ['sell', reference + distance],
          ] as const) {
            if (ticks < 1n) continue;
            const lots = m.minLots * BigInt(random.int(5 + 5 * level, 20 + 10 * level));
            pending.push(
              order(maker, m, side, 'limit', ticks, lots).then((r) => {
                const id = resting(r);
                if (id !== undefined) m.quotes.push([maker, id]);
              }),
            );
          }
        }
      }
      // A taker: a market order, or a limit reaching into the makers' levels (the rest is
      // canceled at the next step).
      const taker = random.pick(takers);
      const side = random.chance(0.5) ? 'buy' : 'sell';
      const lots = m.minLots * BigInt(random.int(1, 6));
      if (random.chance(0.5)) pending.push(order(taker, m, side, 'market', 0n, lots).then(resting));
      else {
        const reach = m.halfSpread + m.gap * BigInt(random.int(0, LEVELS - 1));
        const ticks = side === 'buy' ? m.walk.ticks + reach : maxBig(m.walk.ticks - reach, 1n);
        pending.push(
          order(taker, m, side, 'limit', ticks, lots).then((r) => {
            const id = resting(r);
            if (id !== undefined) takerLeftovers.push([taker, id]);
          }),
        );
      }
    }
    await Promise.all(pending);
    if (options.onProgress !== undefined && time - reported >= 3_600_000_000) {
      reported = time;
      options.onProgress(time - options.from, total);
    }
  }

  // The history ends with an empty book: the simulated accounts leave nothing resting, so a live
  // simulator (or the first user) starts from the last price without stale quotes in the way.
  clock.set(options.to);
  const closing: Array<Promise<unknown>> = [];
  for (const [userId, orderId] of [...takerLeftovers, ...markets.flatMap((m) => m.quotes)])
    closing.push(submit({ kind: 'cancelOrder', userId, orderId }));
  await Promise.all(closing);
  return { markets: markets.map((m) => m.pair), steps, commands, trades, users: [...makers, ...takers] };
}
