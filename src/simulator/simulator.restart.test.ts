/**
 * restart(): after a checkpoint restore the simulator starts over from the venue's state: it
 * cancels whatever its accounts have open (quotes it no longer knows) and quotes afresh.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { startTestServer } from '../../test/support/server-fixture.js';
import { OpenSpotClient } from '../client/client.js';
import { type Simulator, startSimulator } from './simulator.js';

const quiet = { debug() {}, info() {}, warn() {}, error() {} };

test('restart cancels the orders its accounts have open and quotes again', { timeout: 30_000 }, async () => {
  const t = await startTestServer();
  let sim: Simulator | undefined;
  try {
    const funds = { EUR: '1000000', BTC: '100' };
    const maker = await t.trader(funds);
    const taker = await t.trader(funds);
    sim = startSimulator({
      baseUrl: `${t.url}/v1`,
      makers: [{ apiKey: maker.apiKey, apiSecret: maker.apiSecret }],
      takers: [{ apiKey: taker.apiKey, apiSecret: taker.apiSecret }],
      markets: ['BTC/EUR'],
      ratePerSecond: 20,
      referencePrices: { 'BTC/EUR': '60000' },
      seed: 3,
      logger: quiet,
    });
    const client = new OpenSpotClient({
      baseUrl: `${t.url}/v1`,
      apiKey: maker.apiKey,
      apiSecret: maker.apiSecret,
    });
    // The simulator's start cancels its accounts' leftovers: wait until it quotes, so that start
    // is over (on a slower store its open-orders read could otherwise come after `far`).
    const started = Date.now() + 10_000;
    while ((await client.openOrders()).data.length === 0 && Date.now() < started)
      await new Promise((r) => setTimeout(r, 50));
    // An order of the maker's account the running simulator knows nothing of (as a restored
    // checkpoint's quotes are), far from the market so nothing trades it.
    const far = await client.createOrder({
      pair: 'BTC/EUR',
      direction: 'buy',
      type: 'limit',
      price: '1',
      volume: '0.001',
    });
    await new Promise((r) => setTimeout(r, 500));
    assert.equal((await client.order(far.id!)).data.status, 'open');

    await sim.restart();
    const deadline = Date.now() + 10_000;
    let status = (await client.order(far.id!)).data.status;
    while (status === 'open' && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 100));
      status = (await client.order(far.id!)).data.status;
    }
    assert.equal(status, 'canceled');
    const open = (await client.openOrders()).data;
    await new Promise((r) => setTimeout(r, 300));
    assert.ok(open.length > 0 || (await client.openOrders()).data.length > 0, 'quotes again');
    await sim.stop();
    await sim.restart(); // after stop: nothing starts again
  } finally {
    await sim?.stop();
    await t.close();
  }
});
