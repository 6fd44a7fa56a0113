/**
 * How a bot's test sees its protective stop-loss fire inside the test venue (docs/bot-testing.md
 * shows this file): the stop waits out of the book, a fall of the last trade price to its trigger
 * fires it in the same step, and it sells at its limit; a trailing stop follows the price up.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { OpenSpotApiError } from '../../src/client/index.js';
import { startTestVenue, type TestVenue } from '../../src/testing/index.js';

let venue: TestVenue;

before(async () => {
  // The bot, and a crowd whose trades move the last price.
  venue = await startTestVenue({ accounts: [{ name: 'bot' }, { name: 'crowd' }] });
});

after(async () => {
  await venue.close();
});

const pair = 'BTC/EUR';
const bot = () => venue.client(0);
const crowd = () => venue.client(1);
const orderOf = async (id: number | undefined) => (await bot().order(id!)).data;

/** One trade at `price`: the venue's market maker offers, the crowd takes. */
async function tradeAt(price: string, side: 'buy' | 'sell'): Promise<void> {
  await venue.admin.placeRestingOrder({
    pair,
    direction: side === 'buy' ? 'sell' : 'buy',
    price,
    volume: '0.01',
  });
  await crowd().createOrder({ pair, direction: side, type: 'market', volume: '0.01' });
}

test('a stop-loss-limit waits out of the book until the last price falls to its trigger', async () => {
  await tradeAt('60000.0', 'buy'); // the last price is now 60000.0

  const { id } = await bot().createOrder({
    pair,
    direction: 'sell',
    type: 'stop-loss-limit',
    volume: '0.01',
    triggerPrice: '58000.0',
    price: '57900.0', // the worst price it may sell at once triggered
  });
  const waiting = await orderOf(id);
  assert.equal(waiting.status, 'open');
  assert.equal(waiting.order_type, 'stop-loss-limit');
  assert.equal(waiting.price.amount, '58000.0'); // a stop's `price` is its trigger (Kraken's)
  assert.equal(waiting.limit_price?.amount, '57900.0');
  assert.equal(waiting.trigger_conditions, 'last price <= 58000.0');
  const [book] = await bot().orderbook({ tickerId: pair });
  assert.deepEqual(book?.asks, [], 'a waiting stop is not in the book');

  // The market falls: a bid at 57950.0 for the stop to sell into, then a trade at 58000.0.
  await venue.admin.placeRestingOrder({ pair, direction: 'buy', price: '57950.0', volume: '0.01' });
  await tradeAt('58000.0', 'sell');

  const fired = await orderOf(id);
  assert.equal(fired.status, 'closed');
  assert.equal(fired.trigger_conditions, 'triggered: last price <= 58000.0');
  assert.deepEqual(
    fired.trades.map((t) => t.price.amount),
    ['57950.0'],
  );
});

test('a trigger the last price has already reached is refused, not traded', async () => {
  await assert.rejects(
    bot().createOrder({
      pair,
      direction: 'sell',
      type: 'stop-loss',
      volume: '0.01',
      triggerPrice: '59000.0',
    }),
    (error: unknown) => {
      assert.ok(error instanceof OpenSpotApiError && error.status === 422);
      const errors = error.body !== undefined && 'errors' in error.body ? error.body.errors : {};
      assert.match(
        errors.trigger_price?.[0] ?? '',
        /The last trade price, 57950\.0, has reached this trigger already/,
      );
      return true;
    },
  );
});

test('a trailing stop follows the best price since it was placed', async () => {
  const { id } = await bot().createOrder({
    pair,
    direction: 'sell',
    type: 'trailing-stop',
    volume: '0.01',
    trailingOffset: '2%',
  });
  await tradeAt('59000.0', 'buy'); // a new high: the trigger moves up to 2 % below it
  const trailing = await orderOf(id);
  assert.equal(trailing.price.amount, '57820.0');
  assert.equal(
    trailing.trigger_conditions,
    'last price <= 57820.0 (trailing 2% below the best price 59000.0)',
  );
  await bot().cancelOrder(id!);
});
