/**
 * The simulator against the real server: within a few seconds the public data move (trades,
 * ticker, candles, book), the ledger still balances, and it stops cleanly before the server. Its
 * makers quote post-only, and their dead man's switch clears their quotes once it has stopped.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { startTestServer } from '../../test/support/server-fixture.js';
import { OpenSpotClient } from '../client/client.js';
import { type SimulatorLogger, startSimulator } from './simulator.js';

test('the simulator makes the markets trade within seconds', { timeout: 30_000 }, async () => {
  const t = await startTestServer();
  const warnings: unknown[] = [];
  const logger: SimulatorLogger = {
    debug() {},
    info() {},
    warn: (obj, msg) => warnings.push([msg, obj]),
    error: (obj, msg) => warnings.push([msg, obj]),
  };
  try {
    const funds = { EUR: '1000000', BTC: '100', ETH: '1000' };
    const credentials = async () => {
      const trader = await t.trader(funds);
      return { apiKey: trader.apiKey, apiSecret: trader.apiSecret };
    };
    const makers = [await credentials(), await credentials()];
    const sim = startSimulator({
      baseUrl: `${t.url}/v1`,
      makers,
      takers: [await credentials(), await credentials()],
      markets: ['BTC/EUR', 'ETH/BTC'],
      ratePerSecond: 20,
      referencePrices: { 'BTC/EUR': '60000', 'ETH/BTC': '0.05' },
      seed: 7,
      logger,
      refreshMs: 500,
      deadManSeconds: 2,
    });
    const pub = new OpenSpotClient({ baseUrl: `${t.url}/v1` });
    const deadline = Date.now() + 8000;
    let history = await pub.historicalTrades({ tickerId: 'BTC/EUR' });
    while (history.buy.length + history.sell.length < 5 && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 200));
      history = await pub.historicalTrades({ tickerId: 'BTC/EUR' });
    }
    const makerClients = makers.map((m) => new OpenSpotClient({ baseUrl: `${t.url}/v1`, ...m }));
    const quotes = (await Promise.all(makerClients.map((c) => c.openOrders()))).flatMap((a) => a.data);
    await sim.stop();
    assert.ok(quotes.length > 0, 'the makers quote');
    assert.deepEqual(
      quotes.filter((o) => o.post_only !== true).map((o) => o.id),
      [],
      'every quote is post-only',
    );

    assert.ok(history.buy.length + history.sell.length >= 5, 'trades within seconds');
    assert.ok(history.buy.length > 0 && history.sell.length > 0, 'takers buy and sell');
    const [ticker] = await pub.tickers('BTC/EUR');
    assert.notEqual(Number(ticker!.last_price), 0);
    const last = Number(ticker!.last_price);
    assert.ok(last > 50_000 && last < 70_000, ticker!.last_price);
    assert.ok((await pub.ohlc({ tickerId: 'BTC/EUR' })).length >= 1, 'candles');
    const [book] = await pub.orderbook({ tickerId: 'BTC/EUR', depth: 0 });
    assert.ok(book!.bids.length > 0 && book!.asks.length > 0, 'both sides quoted');
    assert.ok(Number(book!.bids[0]![0]) < Number(book!.asks[0]![0]), 'the book is not crossed');
    const eth = await pub.historicalTrades({ tickerId: 'ETH/BTC' });
    assert.ok(eth.buy.length + eth.sell.length > 0, 'the second market trades too');

    const stats = sim.stats();
    assert.ok(stats.ordersPlaced > 20, JSON.stringify(stats));
    const ledger = (await t.admin('GET', '/ledger/check')).body as { ok: boolean };
    assert.equal(ledger.ok, true);
    assert.deepEqual(warnings, []);

    // Stopped, the makers renew nothing: within the switch's 2 s (and the venue's second to fire
    // it) their quotes are gone.
    const stoppedAt = Date.now();
    let left = quotes.length;
    while (left > 0 && Date.now() - stoppedAt < 6000) {
      await new Promise((resolve) => setTimeout(resolve, 200));
      left = (await Promise.all(makerClients.map((c) => c.openOrders()))).flatMap((a) => a.data).length;
    }
    assert.equal(left, 0, "the dead man's switch canceled the quotes");
  } finally {
    await t.close();
  }
});
