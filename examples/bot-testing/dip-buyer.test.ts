/**
 * A bot's own test suite, written with node:test against a venue started in the test process.
 * Run: node --import tsx --test examples/bot-testing/dip-buyer.test.ts (npm test runs it too).
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { connectRealtime, type Realtime } from '../../src/client/realtime.js'; // `openspot/client/realtime`
import { startTestVenue, type TestVenue } from '../../src/testing/index.js'; // `openspot/testing`
import { buyTheDip } from './dip-buyer.js';

let venue: TestVenue;
let realtime: Realtime;

before(async () => {
  // In memory, on a free port, the default markets, one account with 10000 EUR and nothing else.
  venue = await startTestVenue({ accounts: [{ name: 'bot', balances: { EUR: '10000' } }] });
  realtime = connectRealtime({
    wsHost: venue.ws.wsHost,
    wsPort: venue.ws.wsPort,
    appKey: venue.ws.key,
    client: venue.client(), // signs the private channel's authorization
  });
  await realtime.connected();
});

after(async () => {
  realtime.disconnect();
  await venue.close();
});

const bot = () => ({
  client: venue.client(),
  realtime,
  userId: venue.accounts[0]!.userId,
  pair: 'BTC/EUR',
  limit: '50000.0',
  volume: '0.01',
});

test('does nothing while the best ask is above its limit', async () => {
  await venue.admin.placeRestingOrder({ pair: 'BTC/EUR', direction: 'sell', price: '51000.0', volume: '1' });
  assert.equal(await buyTheDip(bot()), undefined);
  assert.equal((await venue.client().openOrders()).data.length, 0);
});

test('buys at the best ask once it is at or below the limit, and sees the fill', async () => {
  // Another user (the venue's market maker) offers below the limit.
  await venue.admin.placeRestingOrder({
    pair: 'BTC/EUR',
    direction: 'sell',
    price: '49500.0',
    volume: '0.01',
  });
  const fills = await buyTheDip(bot());
  assert.equal(fills?.length, 1);
  assert.equal(fills?.[0]?.price.amount, '49500.0');
  const wallet = (await venue.client().spotWallet()).data;
  assert.equal(wallet.find((w) => w.asset_id === 'BTC')?.balance.balance_total, '0.0100000000');
  assert.equal((await venue.admin.ledgerCheck()).ok, true);
});

test('with too little money the order is refused: the bot sees the API error', async () => {
  await venue.admin.setBalance(venue.accounts[0]!, 'EUR', '10');
  await venue.admin.placeRestingOrder({
    pair: 'BTC/EUR',
    direction: 'sell',
    price: '49000.0',
    volume: '0.01',
  });
  await assert.rejects(buyTheDip(bot()), /[Ii]nsufficient/);
});
