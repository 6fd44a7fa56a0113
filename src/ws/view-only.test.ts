/**
 * The read seams: the WebSocket server and the public market-data routes answer from the
 * MarketView and the committed feed alone. The exchange they are given refuses every read of the
 * live engine (as a gateway process, which has no engine, would), and still every snapshot and
 * update is right: equal to the engine's own committed book.
 */
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { test } from 'node:test';
import type { Amount, AssetCode, FeeRate, MarketId, Micros, Price, UserId, Volume } from '../domain/types.js';
import { startHarness } from '../http/testing/harness.js';
import type { Exchange } from '../sequencer/ports.js';
import { type LocalExchange, openExchange } from '../sequencer/sequencer.js';
import { asyncStore } from '../store/async-store.js';
import { SqliteStore } from '../store/sqlite/sqlite-store.js';
import { mountRealtime } from './mount.js';
import { checksumOf, feedMarket } from './payloads.js';
import { APP_KEY, APP_SECRET, type Frame, RawClient } from './test-support.js';

const ENGINE_READS = new Set(['book', 'balances', 'readCommitted', 'audit']);

/** The exchange as a gateway would have it: commands and the feed, but no engine to read. */
function withoutEngineReads<T extends Exchange>(exchange: T): Exchange {
  return new Proxy(exchange, {
    get(target, key, receiver) {
      if (typeof key === 'string' && ENGINE_READS.has(key))
        return () => {
          throw new Error(`engine read: ${key}`);
        };
      const value = Reflect.get(target, key, receiver);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}

async function venue(): Promise<{ exchange: LocalExchange; marketId: MarketId }> {
  const exchange = await openExchange({ store: asyncStore(SqliteStore.open({ path: ':memory:' })) });
  const ok = async (command: Parameters<LocalExchange['submit']>[0]) =>
    assert.ok((await exchange.submit(command)).ok);
  await ok({ kind: 'createAsset', code: 'BTC', name: 'Bitcoin', type: 'crypto', decimals: 8 });
  await ok({ kind: 'createAsset', code: 'EUR', name: 'Euro', type: 'fiat', decimals: 2 });
  await ok({
    kind: 'createMarket',
    base: 'BTC' as AssetCode,
    quote: 'EUR' as AssetCode,
    pairDecimals: 1,
    lotDecimals: 8,
    ordermin: 10_000 as Volume,
    makerFee: 0 as FeeRate,
    takerFee: 0 as FeeRate,
  });
  for (const userId of [1, 2] as UserId[]) {
    await ok({ kind: 'deposit', userId, asset: 'BTC' as AssetCode, amount: 1_000_000_000 as Amount });
    await ok({ kind: 'deposit', userId, asset: 'EUR' as AssetCode, amount: 100_000_000 as Amount });
  }
  return { exchange, marketId: exchange.catalogue.markets()[0]!.id };
}

const snapshotOf = async (client: RawClient, channel: string): Promise<{ data: unknown }> => {
  client.subscribe(channel);
  const frame = await client.next((f: Frame) => f.channel === channel && f.event === 'snapshot');
  return JSON.parse(String(frame.data));
};

test('the WebSocket server sends every public snapshot and update without reading the engine', async () => {
  const { exchange, marketId } = await venue();
  const http = createServer();
  const mounted = mountRealtime({
    server: http,
    exchange: withoutEngineReads(exchange),
    appKey: APP_KEY,
    appSecret: APP_SECRET,
    clock: () => (Date.now() * 1000) as Micros,
    closeGraceMs: 200,
  });
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  const url = `ws://127.0.0.1:${(http.address() as AddressInfo).port}/app/${APP_KEY}`;
  try {
    const { client } = await RawClient.established(url);
    await snapshotOf(client, 'order-book.BTCEUR');
    await snapshotOf(client, 'ticker-information.BTCEUR');
    const place = (userId: number, side: 'buy' | 'sell', price: number, volume: number) =>
      exchange.submit({
        kind: 'placeOrder',
        userId: userId as UserId,
        marketId,
        side,
        type: 'limit',
        price: price as Price,
        volume: volume as Volume,
      });
    await place(1, 'sell', 1000, 300_000);
    await place(1, 'sell', 1010, 200_000);
    await place(2, 'buy', 990, 100_000);
    await place(2, 'buy', 1000, 100_000); // trades 100 000 at 1000
    const trade = await client.next(
      (f) => f.channel === 'trade.BTCEUR' || f.channel === 'ticker-information.BTCEUR',
    );
    assert.ok(trade !== undefined);
    const { client: late } = await RawClient.established(url);
    const book = (await snapshotOf(late, 'order-book.BTCEUR')) as {
      data: { sequence: number; checksum: number; bids: unknown[]; asks: unknown[] };
    };
    const trades = (await snapshotOf(late, 'trade.BTCEUR')) as { data: unknown[] };
    const ohlc = (await snapshotOf(late, 'ohlc.BTCEUR.1')) as { data: unknown };
    const engineBook = await exchange.readCommitted(() => exchange.book(marketId, 0));
    const spec = exchange.catalogue.market(marketId)!;
    assert.equal(book.data.sequence, engineBook.sequence);
    assert.equal(
      book.data.checksum,
      checksumOf(feedMarket(spec, exchange.catalogue.asset('EUR')!), engineBook),
    );
    assert.deepEqual([book.data.bids.length, book.data.asks.length], [1, 2]);
    assert.equal(trades.data.length, 1);
    assert.ok(ohlc.data !== undefined, 'the current candle');
    late.close();
    client.close();
  } finally {
    await mounted.close();
    await new Promise<void>((resolve) => http.close(() => resolve()));
    await exchange.close();
  }
});

test('GET /v1/orderbook, /v1/tickers and /v1/markets answer without reading the engine', async () => {
  const h = await startHarness({ wrap: withoutEngineReads });
  try {
    const maker = await h.trader();
    const taker = await h.trader();
    const order = (as: typeof maker, direction: 'buy' | 'sell', price: string) =>
      h.request('POST', '/v1/orders', {
        as,
        body: { order_direction: direction, order_type: 'limit', pair: 'BTC/EUR', volume: '0.01', price },
      });
    assert.equal((await order(maker, 'sell', '30000')).status, 201);
    assert.equal((await order(maker, 'sell', '30100')).status, 201);
    assert.equal((await order(taker, 'buy', '30000')).status, 201);
    const book = await h.request('GET', '/v1/orderbook?ticker_id=BTC/EUR&depth=0');
    assert.equal(book.status, 200);
    const [body] = book.json as Array<{ asks: unknown[]; bids: unknown[] }>;
    const engine = await h.exchange.readCommitted(() => h.exchange.book(h.btceur.id, 0));
    assert.deepEqual([body!.bids.length, body!.asks.length], [engine.bids.length, engine.asks.length]);
    assert.deepEqual([body!.bids.length, body!.asks.length], [0, 1]);
    const tickers = await h.request('GET', '/v1/tickers?ticker_id=BTC/EUR');
    assert.equal(tickers.status, 200);
    assert.equal((tickers.json as Array<{ last_price: string }>)[0]!.last_price, '30000.0');
    assert.equal((await h.request('GET', '/v1/markets')).status, 200);
  } finally {
    await h.close();
  }
});
