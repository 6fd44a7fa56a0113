import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { MarketId } from '../../domain/types.js';
import type { CommittedBatch } from '../../sequencer/ports.js';
import { type Harness, limit, startHarness, type Trader } from '../testing/harness.js';
import { PublicResponseCache } from './public-cache.js';

type Book = { timestamp: number; bids: string[][]; asks: string[][] }[];
type Ticker = { ticker_id: string; bid: string; ask: string; last_price: string; high: string }[];

const order = (price: string, direction: 'buy' | 'sell' = 'buy', volume = '0.01') => ({
  order_direction: direction,
  order_type: 'limit',
  pair: 'BTC/EUR',
  volume,
  price,
});

describe('public GETs answered from the cache are never stale', () => {
  let h: Harness;
  let alice: Trader;
  let bob: Trader;
  before(async () => {
    h = await startHarness();
    alice = await h.trader();
    bob = await h.trader();
    await h.submit(limit(bob.userId, h.btceur, 'sell', 310_000, 1_000_000));
  });
  after(() => h.close());

  const book = async (url = '/v1/orderbook?ticker_id=BTC/EUR&depth=10') => {
    const r = await h.request('GET', url);
    assert.equal(r.status, 200);
    assert.equal(r.headers['content-type'], 'application/json; charset=utf-8');
    assert.equal(Number(r.headers['content-length']), Buffer.byteLength(r.text));
    return r.json as Book;
  };
  const tickers = async (url = '/v1/tickers') => {
    const r = await h.request('GET', url);
    assert.equal(r.status, 200);
    assert.equal(r.headers['content-type'], 'application/json; charset=utf-8');
    return r.json as Ticker;
  };

  test('a GET right after an order’s 201 (and its cancel’s 200) reflects it', async () => {
    assert.deepEqual((await book())[0]!.bids, []);
    assert.deepEqual((await book())[0]!.bids, []); // now answered from the cache
    assert.equal((await tickers())[0]!.bid, '0.0');
    const created = await h.request('POST', '/v1/orders', { as: alice, body: order('30000.0') });
    assert.equal(created.status, 201);
    assert.deepEqual((await book())[0]!.bids, [['30000.0', '0.01000000']]);
    assert.equal((await tickers())[0]!.bid, '30000.0');
    assert.equal((await tickers('/v1/tickers?ticker_id=BTC/EUR'))[0]!.bid, '30000.0');

    const location = String(created.headers.location);
    const canceled = await h.request('DELETE', location, { as: alice });
    assert.equal(canceled.status, 200);
    assert.deepEqual((await book())[0]!.bids, []);
    assert.equal((await tickers())[0]!.bid, '0.0');
    assert.equal((await tickers('/v1/tickers?ticker_id=BTC/EUR'))[0]!.bid, '0.0');
  });

  test('a trade shows at once in the book and the tickers', async () => {
    await book();
    await tickers();
    const r = await h.request('POST', '/v1/orders', { as: alice, body: order('31000.0', 'buy', '0.004') });
    assert.equal(r.status, 201);
    assert.deepEqual((await book())[0]!.asks, [['31000.0', '0.00600000']]);
    const [btc] = await tickers();
    assert.equal(btc!.last_price, '31000.0');
    assert.equal(btc!.high, '31000.0');
  });

  test('the order book timestamp follows the clock; the tickers’ day rolls over at midnight', async () => {
    const first = await book();
    assert.deepEqual(await book(), first);
    h.advance(1_000_000);
    const next = await book();
    assert.equal(next[0]!.timestamp, first[0]!.timestamp + 1);

    assert.equal((await tickers())[0]!.high, '31000.0');
    const toMidnight = 86_400_000_000 - (h.now() % 86_400_000_000);
    h.advance(toMidnight);
    assert.equal((await tickers())[0]!.high, '0.0'); // no trade yet today
    assert.equal((await tickers())[0]!.last_price, '31000.0');
  });

  test('another market’s change does not matter; errors are never cached', async () => {
    const url = '/v1/orderbook?ticker_id=BTCEUR&depth=4';
    const before = await book(url);
    await h.submit(limit(bob.userId, h.ethbtc, 'sell', 5_000_000, 100));
    assert.deepEqual(await book(url), before);
    const all = await tickers();
    assert.equal(all.find((t) => t.ticker_id === 'ETH/BTC')!.ask, '50.00000');
    for (let i = 0; i < 2; i++) {
      const bad = await h.request('GET', '/v1/orderbook?ticker_id=DOGE/EUR');
      assert.equal(bad.status, 422);
    }
  });

  test('HEAD still answers with headers only', async () => {
    const r = await h.request('HEAD', '/v1/orderbook?ticker_id=BTC/EUR&depth=10');
    assert.equal(r.status, 200);
    assert.equal(r.text, '');
  });
});

describe('PublicResponseCache', () => {
  const market = 1 as MarketId;
  const other = 2 as MarketId;
  const batch = (events: unknown[]): CommittedBatch =>
    ({ events, books: [], candles: [], trades: [] }) as unknown as CommittedBatch;
  const orderEvent = (marketId: MarketId) => ({ type: 'orderAccepted', order: { marketId } });

  test('invalidates by market, catalogue and bucket; refuses stale stamps', () => {
    let writable = true;
    const cache = new PublicResponseCache({ isWritable: () => writable });
    const one = cache.stamp(market);
    cache.store('/a', one, 7, '"a"');
    const all = cache.stamp('all');
    cache.store('/all', all, 7, '"all"');
    assert.equal(cache.lookup('/a', 7)?.toString(), '"a"');
    assert.equal(cache.lookup('/a', 8), undefined);

    cache.committed(batch([orderEvent(other)]));
    assert.equal(cache.lookup('/a', 7)?.toString(), '"a"');
    assert.equal(cache.lookup('/all', 7), undefined);

    cache.committed(batch([{ type: 'deposited' }]));
    assert.equal(cache.lookup('/a', 7)?.toString(), '"a"');

    const late = cache.stamp(market);
    cache.committed(batch([orderEvent(market)]));
    assert.equal(cache.lookup('/a', 7), undefined);
    cache.store('/late', late, 7, '"late"'); // built from state older than the last commit
    assert.equal(cache.lookup('/late', 7), undefined);

    cache.store('/b', cache.stamp(market), 7, '"b"');
    cache.committed(batch([{ type: 'marketCreated' }]));
    assert.equal(cache.lookup('/b', 7), undefined);

    cache.store('/c', cache.stamp(market), 7, '"c"');
    writable = false;
    assert.equal(cache.lookup('/c', 7), undefined);
  });

  test('catalogue answers outlive market changes; only entries filed with their route are answered before routing', () => {
    let now = 7;
    const route = { url: '/v1/x', bucket: () => now };
    const cache = new PublicResponseCache({ isWritable: () => true });
    cache.store('/markets', cache.stamp('catalogue'), 0, '"m"', { url: '/v1/markets', bucket: () => 0 });
    cache.store('/plain', cache.stamp(market), 7, '"p"');
    cache.store('/routed', cache.stamp(market), 7, '"r"', route);
    assert.equal(cache.answer('/plain'), undefined);
    assert.deepEqual(cache.answer('/routed'), { body: Buffer.from('"r"'), route: '/v1/x' });
    now = 8; // the route's bucket moved on
    assert.equal(cache.answer('/routed'), undefined);
    now = 7;
    cache.committed(batch([orderEvent(market)]));
    assert.equal(cache.answer('/routed'), undefined);
    assert.equal(cache.answer('/markets')?.body.toString(), '"m"');
    cache.committed(batch([{ type: 'assetCreated' }]));
    assert.equal(cache.answer('/markets'), undefined);
    assert.equal(cache.lookup('/markets', 0), undefined);
  });

  test('is bounded in entries and bytes', () => {
    const cache = new PublicResponseCache(
      { isWritable: () => true },
      { maxEntries: 3, maxBytes: 10, maxBodyBytes: 6 },
    );
    for (const key of ['a', 'b', 'c', 'd']) cache.store(key, cache.stamp(market), 0, key);
    assert.equal(cache.size, 3);
    assert.equal(cache.lookup('a', 0), undefined);
    cache.store('big', cache.stamp(market), 0, '1234567');
    assert.equal(cache.lookup('big', 0), undefined);
    cache.store('e', cache.stamp(market), 0, '123456');
    cache.store('f', cache.stamp(market), 0, '123456');
    assert.equal(cache.size, 1);
    assert.equal(cache.lookup('f', 0)?.toString(), '123456');
  });
});
