/**
 * The PublicFront (public-front.ts) answers cached public GETs before Fastify: over real sockets,
 * its answers are byte for byte what Fastify sent for the same URL and what a fresh build gives,
 * they change as soon as a trade or an order changes what they show, and the front steps aside
 * whenever Fastify's hooks could answer otherwise.
 */
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { PublicFront } from './public-front.js';
import { type Harness, limit, startHarness, type Trader } from './testing/harness.js';

interface Raw {
  readonly status: number;
  /** Status line and headers as sent, without `Date` (it changes every second). */
  readonly head: string;
  readonly body: string;
}

/** One request on its own connection, answered in full (the exact bytes). */
function rawRequest(
  port: number,
  method: string,
  url: string,
  headers = 'Host: 127.0.0.1\r\n',
): Promise<Raw> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    const chunks: Buffer[] = [];
    socket.on('data', (chunk) => chunks.push(chunk));
    socket.on('error', reject);
    socket.on('end', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      const split = text.indexOf('\r\n\r\n');
      const head = text
        .slice(0, split)
        .split('\r\n')
        .filter((line) => !line.startsWith('Date: '))
        .join('\r\n');
      resolve({ status: Number(head.split(' ')[1]), head, body: text.slice(split + 4) });
    });
    socket.write(`${method} ${url} HTTP/1.1\r\n${headers}Connection: close\r\n\r\n`);
  });
}

/** Every public GET the market-data routes cache, with a query they answer alike under another key. */
const URLS: ReadonlyArray<{
  readonly url: string;
  readonly route: string;
  readonly fresh: (n: number) => string;
}> = [
  {
    url: '/v1/orderbook?ticker_id=BTC/EUR&depth=100',
    route: '/v1/orderbook',
    fresh: (n) => `/v1/orderbook?depth=100&ticker_id=BTC/EUR${'&'.repeat(n)}`,
  },
  {
    url: '/v1/orderbook?ticker_id=BTCEUR&depth=2',
    route: '/v1/orderbook',
    fresh: (n) => `/v1/orderbook?depth=2&ticker_id=BTCEUR${'&'.repeat(n)}`,
  },
  { url: '/v1/tickers', route: '/v1/tickers', fresh: (n) => `/v1/tickers?${'&'.repeat(n)}` },
  {
    url: '/v1/tickers?ticker_id=BTC/EUR',
    route: '/v1/tickers',
    fresh: (n) => `/v1/tickers?ticker_id=BTC/EUR${'&'.repeat(n + 1)}`,
  },
  { url: '/v1/markets', route: '/v1/markets', fresh: (n) => `/v1/markets?${'&'.repeat(n)}` },
  {
    url: '/v1/ohlc?ticker_id=BTC/EUR',
    route: '/v1/ohlc',
    fresh: (n) => `/v1/ohlc?ticker_id=BTC/EUR${'&'.repeat(n + 1)}`,
  },
  {
    url: '/v1/ohlc?ticker_id=BTC/EUR&interval=5&limit=3',
    route: '/v1/ohlc',
    fresh: (n) => `/v1/ohlc?limit=3&interval=5&ticker_id=BTC/EUR${'&'.repeat(n)}`,
  },
  {
    url: '/v1/historical_trades?ticker_id=BTC/EUR',
    route: '/v1/historical_trades',
    fresh: (n) => `/v1/historical_trades?ticker_id=BTC/EUR${'&'.repeat(n + 1)}`,
  },
  {
    url: '/v1/historical_trades?ticker_id=BTC/EUR&type=buy&limit=2',
    route: '/v1/historical_trades',
    fresh: (n) => `/v1/historical_trades?limit=2&type=buy&ticker_id=BTC/EUR${'&'.repeat(n)}`,
  },
];

describe('PublicFront: cached public GETs answered before Fastify', () => {
  let h: Harness;
  let port: number;
  let alice: Trader;
  let bob: Trader;
  const front = new PublicFront();
  /** The routes of the requests the front answered, in order. */
  const answered: string[] = [];
  front.observeWith((route, seconds) => {
    assert.ok(seconds >= 0);
    answered.push(route);
  });
  let gateClosed = false;
  front.stepAsideWhen(() => gateClosed);
  let fresh = 0;

  before(async () => {
    h = await startHarness({ publicFront: front });
    await h.app.listen({ port: 0, host: '127.0.0.1' });
    const address = h.app.server.address();
    port = typeof address === 'object' && address !== null ? address.port : 0;
    alice = await h.trader();
    bob = await h.trader();
    await h.submit(limit(bob.userId, h.btceur, 'sell', 310_000, 1_000_000));
    await h.submit(limit(alice.userId, h.btceur, 'buy', 300_000, 1_000_000));
    await h.submit(limit(alice.userId, h.btceur, 'buy', 310_000, 200_000)); // a first trade
  });
  after(() => h.close());

  const get = (url: string, headers?: string) => rawRequest(port, 'GET', url, headers);

  /**
   * Asks for `url` twice: the second is the front's (the first, Fastify's unless already cached,
   * files it); both are checked against a fresh build (a URL no request used before: the same
   * answer under another key).
   */
  async function cachedAnswer(entry: (typeof URLS)[number]): Promise<Raw> {
    const first = await get(entry.url);
    assert.equal(first.status, 200, `${entry.url}: ${first.head}\n${first.body}`);
    const count = answered.length;
    const second = await get(entry.url);
    assert.equal(answered.length, count + 1, `${entry.url}: the front answered the second GET`);
    assert.equal(answered.at(-1), entry.route);
    assert.deepEqual(second, first, `${entry.url}: the front sends what Fastify sent`);
    const built = await get(entry.fresh(fresh++));
    assert.equal(answered.length, count + 1, `${entry.url}: a new key is built by the route`);
    assert.deepEqual(built, first, `${entry.url}: the cached answer is a fresh build's`);
    return second;
  }

  test('each public GET: the front sends exactly what the route built, headers included', async () => {
    for (const entry of URLS) {
      const answer = await cachedAnswer(entry);
      assert.match(answer.head, /^HTTP\/1\.1 200 OK\r\ncontent-type: application\/json; charset=utf-8\r\n/);
      assert.match(answer.head, new RegExp(`\r\ncontent-length: ${Buffer.byteLength(answer.body)}\r\n`));
    }
  });

  test('a trade or an order changes every answer that shows it at once; the rest stays cached', async () => {
    const before = new Map<string, Raw>();
    for (const entry of URLS) before.set(entry.url, await cachedAnswer(entry));

    // A resting order: the books and the tickers' bid change; candles and trades do not.
    await h.submit(limit(alice.userId, h.btceur, 'buy', 305_000, 100_000));
    const count = answered.length;
    const book = await get('/v1/orderbook?ticker_id=BTC/EUR&depth=100');
    assert.equal(answered.length, count, 'the order invalidated the book');
    assert.notDeepEqual(book, before.get('/v1/orderbook?ticker_id=BTC/EUR&depth=100'));
    assert.match(book.body, /\["30500\.0","0\.00100000"\]/);
    const tickers = await get('/v1/tickers');
    assert.notDeepEqual(tickers, before.get('/v1/tickers'));
    assert.match(tickers.body, /"bid":"30500\.0"/);

    // A trade: the book, the tickers, the candles and the trades all change.
    await h.submit(limit(bob.userId, h.btceur, 'sell', 300_000, 300_000));
    for (const entry of URLS) {
      const count = answered.length;
      const after = await get(entry.url);
      // Every answer read from the market is built again; the taker buys did not change.
      const rebuilt = entry.route !== '/v1/markets';
      const changed = rebuilt && !entry.url.includes('type=buy');
      assert.equal(answered.length, rebuilt ? count : count + 1, `${entry.url}: answered by the front?`);
      if (changed) assert.notDeepEqual(after, before.get(entry.url), `${entry.url} shows the trade`);
      else assert.deepEqual(after, before.get(entry.url), `${entry.url} did not change`);
      assert.deepEqual(await cachedAnswer(entry), after);
    }
    const trades = JSON.parse((await get('/v1/historical_trades?ticker_id=BTC/EUR')).body) as {
      sell: { price: string }[];
    };
    assert.deepEqual(
      trades.sell.map((t) => t.price),
      ['30000.0', '30500.0'],
    );
  });

  test('the order book follows the clock: a new second is built again', async () => {
    const url = '/v1/orderbook?ticker_id=BTC/EUR&depth=100';
    await cachedAnswer(URLS[0]!);
    h.advance(1_000_000);
    const count = answered.length;
    const next = await get(url);
    assert.equal(answered.length, count);
    const [book] = JSON.parse(next.body) as { timestamp: number }[];
    assert.equal(book!.timestamp, Math.floor(h.now() / 1_000_000));
  });

  test('steps aside for HEAD, a missing Host, errors, a closed gate, an IP limit that refuses, and closing', async () => {
    const entry = URLS[2]!;
    const cached = await cachedAnswer(entry);
    const count = answered.length;

    const head = await rawRequest(port, 'HEAD', entry.url);
    assert.equal(head.status, 200);
    assert.equal(head.body, '');

    const noHost = await get(entry.url, '');
    assert.equal(noHost.status, 400);
    assert.deepEqual(JSON.parse(noHost.body), { error: 'Invalid request' });

    for (let i = 0; i < 2; i++) assert.equal((await get('/v1/orderbook?ticker_id=DOGE/EUR')).status, 422);

    gateClosed = true;
    assert.deepEqual(await get(entry.url), cached);
    gateClosed = false;

    const asked: string[] = [];
    let allow = false;
    front.limitByIp((ip) => {
      asked.push(ip);
      return { ok: allow };
    });
    assert.deepEqual(await get(entry.url), cached); // refused here: Fastify answers (it has no limit)
    assert.equal(answered.length, count);
    allow = true;
    assert.deepEqual(await get(entry.url), cached);
    assert.equal(answered.length, count + 1);
    assert.deepEqual(asked, ['127.0.0.1', '127.0.0.1']);

    front.close();
    assert.deepEqual(await get(entry.url), cached);
    assert.equal(answered.length, count + 1);
  });
});

describe('PublicFront where the history may not be cached (a gateway)', () => {
  test('the book is answered by the front; candles and trades are read every time', async () => {
    const front = new PublicFront();
    const answered: string[] = [];
    front.observeWith((route) => answered.push(route));
    const h = await startHarness({ publicFront: front, cacheHistory: false });
    try {
      await h.app.listen({ port: 0, host: '127.0.0.1' });
      const address = h.app.server.address();
      const port = typeof address === 'object' && address !== null ? address.port : 0;
      for (const url of ['/v1/ohlc?ticker_id=BTC/EUR', '/v1/historical_trades?ticker_id=BTC/EUR']) {
        const first = await rawRequest(port, 'GET', url);
        assert.equal(first.status, 200);
        assert.deepEqual(await rawRequest(port, 'GET', url), first);
      }
      assert.deepEqual(answered, []);
      const book = '/v1/orderbook?ticker_id=BTC/EUR';
      assert.deepEqual(await rawRequest(port, 'GET', book), await rawRequest(port, 'GET', book));
      assert.deepEqual(answered, ['/v1/orderbook']);
    } finally {
      await h.close();
    }
  });
});
