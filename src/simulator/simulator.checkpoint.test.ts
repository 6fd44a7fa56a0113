/**
 * Reproducible simulated markets: from one checkpoint, with one seed, the simulator driven step by
 * step on its own clock makes exactly the same trades every time; another seed makes others.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { MarketId } from '../domain/types.js';
import { startTestVenue, type TestVenue } from '../testing/index.js';
import { type SimulatorLogger, type SimulatorOptions, steppedSimulator } from './simulator.js';

const quiet: SimulatorLogger = { debug() {}, info() {}, warn() {}, error() {} };
const MARKETS = ['BTC/EUR', 'ETH/EUR'];
const FUNDS = { EUR: '1000000', BTC: '100', ETH: '1000' };

let venue: TestVenue;
let base: Omit<SimulatorOptions, 'seed' | 'now'>;

before(async () => {
  venue = await startTestVenue({ accounts: 0 });
  const credentials = async () => {
    const account = await venue.admin.createAccount({ balances: FUNDS });
    return { apiKey: account.apiKey, apiSecret: account.apiSecret };
  };
  base = {
    baseUrl: venue.baseUrl,
    makers: [await credentials(), await credentials()],
    takers: [await credentials(), await credentials()],
    markets: MARKETS,
    ratePerSecond: 20,
    referencePrices: { 'BTC/EUR': '60000', 'ETH/EUR': '3000' },
    logger: quiet,
    refreshMs: 500,
    restingMs: 1000,
  };
});
after(() => venue.close());

/** Runs `steps` actions on a clock that advances 50 ms per action; answers the trades made. */
async function run(seed: number, steps: number) {
  let now = 1_000_000;
  const sim = steppedSimulator({ ...base, seed, now: () => now });
  await sim.start();
  for (let i = 0; i < steps; i++) {
    now += 50;
    await sim.step();
  }
  return { trades: await tradesMade(), stats: sim.stats() };
}

/** Every trade of the venue, oldest first. */
async function tradesMade() {
  const trades = [];
  for (const market of venue.server.exchange.catalogue.markets()) {
    for (const t of await venue.server.exchange.store.listPublicTrades({ marketId: market.id as MarketId })) {
      // Everything but the time, which is the venue's (wall) clock.
      const { time: _time, ...rest } = t;
      trades.push(rest);
    }
  }
  return trades.sort((a, b) => a.id - b.id);
}

test('two runs from the same checkpoint with the same seed make the same trades', {
  timeout: 120_000,
}, async () => {
  // Some history and a book to start from, then the checkpoint.
  await run(1, 40);
  await venue.checkpoint('start');
  const tradesAtCheckpoint = (await tradesMade()).length;

  await venue.restore('start');
  const first = await run(42, 150);
  await venue.restore('start');
  const second = await run(42, 150);
  await venue.restore('start');
  const other = await run(43, 150);

  const made = first.trades.length - tradesAtCheckpoint;
  assert.ok(made >= 20, `the run made only ${made} trades`);
  assert.deepEqual(second.trades, first.trades);
  assert.deepEqual(second.stats, first.stats);
  assert.notDeepEqual(other.trades, first.trades);
  assert.equal((await venue.admin.ledgerCheck()).ok, true);
});
