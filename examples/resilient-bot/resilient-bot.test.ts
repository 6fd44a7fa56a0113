/**
 * A bot's own test suite rehearsing production failures with the venue's fault injection:
 * dropped order-book updates, a burst of 503s, and an order whose answer never comes.
 * Run: node --import tsx --test examples/resilient-bot/resilient-bot.test.ts (npm test runs it too).
 */
import assert from 'node:assert/strict';
import { after, afterEach, before, test } from 'node:test';
import { OpenSpotClient } from '../../src/client/index.js'; // `openspot/client`
import { connectRealtime, type Realtime } from '../../src/client/realtime.js'; // `openspot/client/realtime`
import { startTestVenue, type TestVenue } from '../../src/testing/index.js'; // `openspot/testing`
import { ResilientBot } from './resilient-bot.js';

let venue: TestVenue;
let realtime: Realtime;
let bot: ResilientBot;

before(async () => {
  venue = await startTestVenue({ accounts: [{ name: 'bot', balances: { EUR: '100000', BTC: '10' } }] });
  realtime = connectRealtime({ wsHost: venue.ws.wsHost, wsPort: venue.ws.wsPort, appKey: venue.ws.key });
  await realtime.connected();
  bot = new ResilientBot({ client: venue.client(), realtime, pair: 'BTC/EUR' });
  await bot.start();
});

afterEach(async () => {
  await venue.chaos.clear();
});

after(async () => {
  bot.stop();
  realtime.disconnect();
  await venue.close();
});

/** Another trader moves the book: each resting order is one order-book update. */
async function moveTheBook(orders: number, from: number): Promise<void> {
  for (let i = 0; i < orders; i++)
    await venue.admin.placeRestingOrder({
      pair: 'BTC/EUR',
      direction: i % 2 === 0 ? 'buy' : 'sell',
      price: i % 2 === 0 ? `${from - i}.0` : `${from + 10_000 + i}.0`,
      volume: '0.1',
    });
}

test('dropped book updates: the bot notices, resubscribes, and its book equals the REST snapshot', async () => {
  // Half of the order-book updates to every connection are lost on the way.
  await venue.chaos.set({ book_updates: { drop: 0.5 } });
  await moveTheBook(20, 40_000);
  await venue.chaos.clear();
  // One more update after the storm: the last loss shows as a gap too.
  await moveTheBook(1, 39_000);
  await bot.resynchronised();
  assert.ok(bot.resyncs > 0, 'the bot saw at least one sequence gap');
  assert.equal(await bot.bookMatchesRest(), true);
});

test('a burst of 503s: the bot retries and its order is placed exactly once', async () => {
  const account = venue.accounts[0]!;
  // The next three requests of the bot's key are refused with 503 and Retry-After: 1.
  await venue.chaos.set({ errors: { rate: 1, status: 503, count: 3 } }, { apiKey: account.apiKey });
  const retriesBefore = bot.retries;
  const placed = await bot.placeOnce({ pair: 'BTC/EUR', direction: 'buy', price: '30000.0', volume: '0.01' });
  const open = (await venue.client().openOrders({ pair: 'BTC/EUR' })).data;
  assert.deepEqual(
    open.map((o) => o.id),
    [placed.id],
  );
  assert.equal(bot.retries - retriesBefore, 3, 'the bot waited out each 503');
  await venue.client().cancelOrder(placed.id);
});

test('an order whose answer never comes: the bot finds it through GET /open-orders', async () => {
  const account = venue.accounts[0]!;
  // The order is placed and committed; the answer is held 200 ms, then the connection dropped.
  await venue.chaos.set({ timeouts: { rate: 1, hold_ms: 200, count: 1 } }, { apiKey: account.apiKey });
  const impatient = new ResilientBot({
    client: new OpenSpotClient({
      baseUrl: venue.baseUrl,
      apiKey: account.apiKey,
      apiSecret: account.apiSecret,
      orderRetries: 0,
    }),
    realtime,
    pair: 'BTC/EUR',
  });
  const placed = await impatient.placeOnce({
    pair: 'BTC/EUR',
    direction: 'buy',
    price: '30001.0',
    volume: '0.01',
  });
  assert.equal(placed.reconciled, true);
  const open = (await venue.client().openOrders({ pair: 'BTC/EUR' })).data;
  assert.deepEqual(
    open.map((o) => o.id),
    [placed.id],
  );
  assert.equal((await venue.admin.ledgerCheck()).ok, true);
});
