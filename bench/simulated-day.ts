/**
 * Records simulated history as engine commands, for `bench:engine`'s replay row.
 *
 * The market simulator (src/simulator) runs unchanged, through its public interface only:
 * `startSimulator` with a `fetch` of our own. Each of its signed requests becomes an engine command,
 * applied at once to an engine of this module (so its answers, order ids and refusals are the real
 * ones) and answered in the interface's shape, with the fields the simulator reads. Its clock is
 * simulated: node:test's mock timers stand in for `Date` and `setTimeout`, and the driver below
 * moves time one simulator interval at a time, so a day takes as long as the work it does, not a
 * day. Nothing here is timed: the bench replays the recorded commands afterwards.
 *
 * The venue is a fresh one with the default catalogue (src/config/default-catalogue.ts) and the
 * simulator's usual cast (2 makers, 3 takers), each funded with 100,000 of every asset.
 */

import { mock } from 'node:test';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { formatUnits, parseUnits } from '../src/client/decimal.js';
import { DEFAULT_CATALOGUE } from '../src/config/default-catalogue.js';
import type {
  Amount,
  AssetCode,
  MarketId,
  Micros,
  OrderId,
  Price,
  UserId,
  Volume,
} from '../src/domain/types.js';
import { Engine } from '../src/engine/engine.js';
import type { Command } from '../src/engine/types.js';
import { DEFAULT_REFERENCE_PRICES, startSimulator } from '../src/simulator/index.js';

export interface RecordedHistory {
  /** Catalogue and deposits, applied before the recorded commands. */
  readonly setup: readonly Command[];
  /** What the simulator's requests became, in order, with the (simulated) time of each. */
  readonly commands: readonly Command[];
  readonly times: readonly Micros[];
  /** Of the recorded commands: accepted, refused, and trades made. */
  readonly accepted: number;
  readonly refused: number;
  readonly trades: number;
  readonly simulatorActions: number;
}

export interface HistoryOptions {
  /** Simulated seconds (86,400: a day). */
  readonly seconds: number;
  /** Simulator actions per second (the server's SIMULATOR_RATE; its default is 5). */
  readonly ratePerSecond: number;
  readonly seed: number;
}

const START_MS = Date.UTC(2026, 0, 1);
const MAKERS = 2;
const TAKERS = 3;
const FUNDS_UNITS = 100_000n;

interface FakeResponse {
  readonly ok: boolean;
  readonly status: number;
  readonly headers: { get(name: string): string | null };
  text(): Promise<string>;
}

function answer(status: number, body: unknown, location?: string): FakeResponse {
  const text = JSON.stringify(body);
  return {
    ok: status >= 200 && status < 300,
    status,
    headers: { get: (name) => (name.toLowerCase() === 'location' ? (location ?? null) : null) },
    text: async () => text,
  };
}

const envelope = (code: number, data?: unknown) =>
  data === undefined ? { success: true, message: 'OK', code } : { success: true, message: 'OK', code, data };

export async function recordHistory(options: HistoryOptions): Promise<RecordedHistory> {
  const engine = new Engine();
  const setup: Command[] = [];
  for (const a of DEFAULT_CATALOGUE.assets) setup.push({ kind: 'createAsset', ...a });
  for (const m of DEFAULT_CATALOGUE.markets) {
    setup.push({
      kind: 'createMarket',
      base: m.base as AssetCode,
      quote: m.quote as AssetCode,
      pairDecimals: m.pair_decimals,
      lotDecimals: m.lot_decimals,
      ordermin: Number(parseUnits(m.ordermin, m.lot_decimals)) as Volume,
      // The catalogue's markets use the venue's default fees (src/admin/inputs.ts).
      makerFee: 160_000 as never,
      takerFee: 260_000 as never,
    });
  }
  const keys = [...Array(MAKERS + TAKERS).keys()].map((i) => `key-${i + 1}`);
  const userOf = new Map(keys.map((key, i) => [key, (i + 1) as UserId]));
  for (const userId of userOf.values()) {
    for (const a of DEFAULT_CATALOGUE.assets) {
      const amount = Number(FUNDS_UNITS * 10n ** BigInt(a.decimals)) as Amount;
      setup.push({ kind: 'deposit', userId, asset: a.code as AssetCode, amount });
    }
  }
  for (const c of setup) {
    const r = engine.apply(c, (START_MS * 1000) as Micros);
    if (!r.ok) throw new Error(`set-up refused: ${r.error.message}`);
  }
  const markets = engine.marketList();
  const bySlash = new Map(markets.map((m) => [`${m.base}/${m.quote}`, m]));

  const commands: Command[] = [];
  const times: Micros[] = [];
  let accepted = 0;
  let refused = 0;
  let trades = 0;
  const run = (command: Command) => {
    const time = (Date.now() * 1000) as Micros;
    commands.push(command);
    times.push(time);
    const result = engine.apply(command, time);
    if (result.ok) {
      accepted++;
      for (const e of result.events) if (e.type === 'trade') trades++;
    } else refused++;
    // The store would persist these; dropping them keeps the engine's change lists short.
    if (commands.length % 1000 === 0) engine.drainChanges();
    return result;
  };

  const fakeFetch = async (input: string | URL | Request, init?: RequestInit): Promise<FakeResponse> => {
    const url = new URL(String(input));
    const path = url.pathname.replace(/^\/v1/, '');
    const method = init?.method ?? 'GET';
    const headers = (init?.headers ?? {}) as Record<string, string>;
    const userId = userOf.get(headers['x-api-key'] ?? '');
    if (method === 'GET' && path === '/markets') {
      const data = Object.fromEntries(
        markets.map((m) => [
          `${m.base}${m.quote}`,
          {
            altname: `${m.base}${m.quote}`,
            wsname: `${m.base}/${m.quote}`,
            classBase: 'currency',
            base: m.base,
            classQuote: 'currency',
            quote: m.quote,
            pairDecimals: m.pairDecimals,
            lotDecimals: m.lotDecimals,
            ordermin: formatUnits(BigInt(m.ordermin), m.lotDecimals),
          },
        ]),
      );
      return answer(200, envelope(200, data));
    }
    // A fresh venue: nothing traded yet (the simulator starts from its reference prices).
    if (method === 'GET' && path === '/tickers')
      return answer(
        200,
        markets.map((m) => ({ ticker_id: `${m.base}/${m.quote}`, last_price: '0' })),
      );
    if (method === 'GET' && path === '/open-orders') return answer(200, envelope(200, []));
    if (userId === undefined) return answer(401, { error: 'Unknown API key.' });
    if (method === 'POST' && path === '/orders') {
      const body = JSON.parse(String(init?.body)) as Record<string, string>;
      const market = bySlash.get(body.pair ?? '');
      if (market === undefined) return answer(422, { message: 'Unknown pair.', errors: { pair: ['?'] } });
      const result = run({
        kind: 'placeOrder',
        userId,
        marketId: market.id as MarketId,
        side: body.order_direction === 'buy' ? 'buy' : 'sell',
        type: body.order_type === 'market' ? 'market' : 'limit',
        price: (body.price === undefined ? 0 : Number(parseUnits(body.price, market.pairDecimals))) as Price,
        volume: Number(parseUnits(body.volume ?? '0', market.lotDecimals)) as Volume,
      });
      if (!result.ok)
        return answer(422, { message: result.error.message, errors: { volume: [result.error.message] } });
      const placed = result.events[0];
      const id = placed?.type === 'orderAccepted' ? placed.order.id : 0;
      return answer(201, envelope(201), `/v1/orders/${id}`);
    }
    const cancel = /^\/orders\/(\d+)$/.exec(path);
    if (method === 'DELETE' && cancel !== null) {
      const result = run({ kind: 'cancelOrder', userId, orderId: Number(cancel[1]) as OrderId });
      return result.ok ? answer(200, envelope(200)) : answer(404, { error: 'Order not found.' });
    }
    return answer(404, { error: `No route ${method} ${path}.` });
  };

  const secret = Buffer.from('simulated-day').toString('base64');
  const credentials = keys.map((apiKey) => ({ apiKey, apiSecret: secret }));
  const silent = { debug() {}, info() {}, warn() {}, error() {} };
  mock.timers.enable({ apis: ['setTimeout', 'Date'], now: START_MS });
  try {
    const simulator = startSimulator({
      baseUrl: 'http://simulated.invalid/v1',
      makers: credentials.slice(0, MAKERS),
      takers: credentials.slice(MAKERS),
      markets: markets.map((m) => `${m.base}/${m.quote}`),
      ratePerSecond: options.ratePerSecond,
      referencePrices: DEFAULT_REFERENCE_PRICES,
      seed: options.seed,
      logger: silent,
      fetch: fakeFetch as unknown as typeof fetch,
    });
    // One simulator interval per step: its loop sleeps that long after each action, and every
    // request is answered within the same turn, so one turn of the event loop finishes an action.
    const step = 1000 / options.ratePerSecond;
    for (let elapsed = 0; elapsed < options.seconds * 1000; elapsed += step) {
      await nextTurn();
      mock.timers.tick(step);
    }
    await nextTurn();
    const stopped = simulator.stop();
    mock.timers.tick(step);
    await stopped;
    return {
      setup,
      commands,
      times,
      accepted,
      refused,
      trades,
      simulatorActions: simulator.stats().actions,
    };
  } finally {
    mock.timers.reset();
  }
}
