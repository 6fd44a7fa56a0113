/**
 * How a bot's test uses each order control against the test venue (docs/bot-testing.md shows
 * this file): post-only, IOC, FOK, GTD, client order ids, amend, batches, cancel-all, the dead
 * man's switch and self-trade prevention.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { OrderParams, Side } from '../../src/client/index.js';
import { startTestVenue, type TestVenue } from '../../src/testing/index.js';

let venue: TestVenue;

before(async () => {
  venue = await startTestVenue({ accounts: 1 });
});

after(async () => {
  await venue.close();
});

const pair = 'BTC/EUR';
const bot = () => venue.client();
const orderOf = async (id: number | undefined) => (await bot().order(id!)).data;
/** A limit order of the bot's, with the controls given. */
const limit = (direction: Side, price: string, volume: string, controls: Partial<OrderParams> = {}) =>
  bot().createOrder({ pair, direction, type: 'limit', price, volume, ...controls });

test('post-only: a quote that would take is canceled instead of trading', async () => {
  await venue.admin.placeRestingOrder({ pair, direction: 'sell', price: '50000.0', volume: '0.5' });
  const { id } = await limit('buy', '50000.0', '0.01', { postOnly: true });
  const order = await orderOf(id);
  assert.equal(order.status, 'canceled');
  assert.equal(order.reason, 'post-only would take liquidity');
  assert.equal(order.volume_executed.amount, '0.00000000');
});

test('IOC trades what is there and cancels the rest; FOK trades all or nothing', async () => {
  const ioc = await limit('buy', '50000.0', '1', { timeInForce: 'IOC' });
  const taken = await orderOf(ioc.id);
  assert.equal(taken.volume_executed.amount, '0.50000000');
  assert.equal(taken.reason, 'immediate-or-cancel remainder');

  await venue.admin.placeRestingOrder({ pair, direction: 'sell', price: '51000.0', volume: '0.5' });
  const fok = await limit('buy', '51000.0', '1', { timeInForce: 'FOK' });
  const killed = await orderOf(fok.id);
  assert.equal(killed.status, 'canceled');
  assert.equal(killed.volume_executed.amount, '0.00000000');
  const [book] = await bot().orderbook({ tickerId: pair, depth: 2 });
  assert.deepEqual(book?.asks[0], ['51000.0', '0.50000000'], 'the ask is untouched');
});

test('GTD: the order is canceled at its expiry', async () => {
  const { id } = await limit('buy', '40000.0', '0.01', {
    timeInForce: 'GTD',
    expireTime: Math.floor(Date.now() / 1000) + 2,
  });
  assert.equal((await orderOf(id)).status, 'open');
  await new Promise((resolve) => setTimeout(resolve, 3500));
  const order = await orderOf(id);
  assert.equal(order.status, 'canceled');
  assert.equal(order.reason, 'expired');
});

test('client order ids: find and cancel an order by your own id', async () => {
  await limit('buy', '40000.0', '0.01', { clientOrderId: 'grid-1' });
  assert.equal((await bot().getByClientOrderId('grid-1')).data.status, 'open');
  await bot().cancelByClientOrderId('grid-1');
  assert.equal((await bot().getByClientOrderId('grid-1')).data.status, 'canceled');
});

test('amend: a lower volume keeps the place in the queue; the reservation follows', async () => {
  const { id } = await limit('buy', '40000.0', '0.1');
  await bot().amend(id!, { volume: '0.05' });
  assert.equal((await orderOf(id)).volume.amount, '0.05000000');
  await bot().amend(id!, { price: '40100.0' });
  assert.equal((await orderOf(id)).price.amount, '40100.0');
  await bot().cancelOrder(id!);
});

test('a batch places each order on its own, in order', async () => {
  const answer = await bot().placeBatch([
    { pair, direction: 'buy', type: 'limit', price: '39000.0', volume: '0.01', postOnly: true },
    { pair, direction: 'buy', type: 'limit', price: '38999.99', volume: '0.01' },
    { pair, direction: 'buy', type: 'limit', price: '38000.0', volume: '0.01', clientOrderId: 'grid-2' },
  ]);
  assert.deepEqual(
    answer.data.map((item) => item.success),
    [true, false, true],
  );
  const refused = answer.data[1]!;
  assert.ok(!refused.success && refused.errors.price !== undefined, 'too many decimals for BTC/EUR');
});

test('cancel-all: every open order of one market, or of all', async () => {
  assert.deepEqual((await bot().cancelAll({ pair })).data, { canceled: 2 });
  assert.equal((await bot().openOrders()).data.length, 0);
});

test("the dead man's switch cancels everything once it is not renewed", async () => {
  const { id } = await limit('buy', '40000.0', '0.01');
  const { trigger_time } = (await bot().cancelAllAfter(1)).data;
  assert.notEqual(trigger_time, '0.0000');
  await new Promise((resolve) => setTimeout(resolve, 2500));
  const order = await orderOf(id);
  assert.equal(order.status, 'canceled');
  assert.equal(order.reason, "dead man's switch");
});

test('self-trade prevention: decrement shrinks the larger order, trades nothing', async () => {
  const ask = await limit('sell', '45000.0', '0.3');
  const bid = await limit('buy', '45000.0', '0.1', { stp: 'decrement' });
  assert.equal((await orderOf(bid.id)).status, 'canceled');
  const rest = await orderOf(ask.id);
  assert.equal(rest.status, 'open');
  assert.equal(rest.volume.amount, '0.20000000');
  assert.equal(rest.volume_executed.amount, '0.00000000');
  await bot().cancelAll();
});
