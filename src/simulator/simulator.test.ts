/**
 * The simulator against a small fake of the /v1 routes it uses: what it sends (exact decimals at
 * the market's precision, both sides, stale quotes canceled, leftovers swept), how it backs off
 * on 503 and how it stops. The run against the real server is in simulator.server.test.ts.
 */
import assert from 'node:assert/strict';
import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { test } from 'node:test';
import { priceWalk } from './price-walk.js';
import { seededRandom } from './random.js';
import { type SimulatorLogger, startSimulator } from './simulator.js';

interface Posted {
  order_direction: string;
  order_type: string;
  pair: string;
  volume: string;
  price?: string;
  post_only?: boolean;
  /** The API key that sent it (added by the fake). */
  key: string;
}

const MARKETS = {
  BTCEUR: {
    altname: 'BTCEUR',
    wsname: 'BTC/EUR',
    classBase: 'currency',
    base: 'BTC',
    classQuote: 'currency',
    quote: 'EUR',
    pairDecimals: 1,
    lotDecimals: 8,
    ordermin: '0.00005',
  },
  ETHBTC: {
    altname: 'ETHBTC',
    wsname: 'ETH/BTC',
    classBase: 'currency',
    base: 'ETH',
    classQuote: 'currency',
    quote: 'BTC',
    pairDecimals: 5,
    lotDecimals: 8,
    ordermin: '0.002',
  },
  ETHEUR: {
    altname: 'ETHEUR',
    wsname: 'ETH/EUR',
    classBase: 'currency',
    base: 'ETH',
    classQuote: 'currency',
    quote: 'EUR',
    pairDecimals: 2,
    lotDecimals: 8,
    ordermin: '0.002',
  },
};

async function fakeExchange(
  options: { failOrders?: number; book?: { bids: string[][]; asks: string[][] } } = {},
) {
  const posted: Posted[] = [];
  const canceled: number[] = [];
  /** Dead man's switch calls: the key and the timeout. */
  const switches: Array<{ key: string; timeout: number }> = [];
  /** The markets of the cancel-alls received. */
  const cancelAlls: string[] = [];
  const open = new Set<number>([999]);
  let nextId = 1;
  let failures = 0;
  const send = (res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) => {
    res.writeHead(status, { 'content-type': 'application/json', ...headers });
    res.end(JSON.stringify(body));
  };
  const server = createServer((req, res) => {
    let raw = '';
    req.on('data', (c: Buffer) => {
      raw += c.toString('utf8');
    });
    req.on('end', () => {
      const url = req.url ?? '';
      if (req.method === 'GET' && url === '/v1/markets')
        return send(res, 200, { success: true, message: 'ok', code: 200, data: MARKETS });
      if (req.method === 'GET' && url === '/v1/tickers')
        return send(res, 200, [
          { ticker_id: 'BTC/EUR', last_price: '0.0' },
          { ticker_id: 'ETH/EUR', last_price: '2500.00' },
        ]);
      // Cancel-all of one market: order 999 is a BTC/EUR order an earlier run left open.
      if (req.method === 'DELETE' && url.startsWith('/v1/orders?pair=')) {
        const pair = decodeURIComponent(url.slice('/v1/orders?pair='.length));
        cancelAlls.push(pair);
        const mine = pair === 'BTC/EUR' && open.delete(999) ? [999] : [];
        canceled.push(...mine);
        return send(res, 200, { success: true, message: 'ok', code: 200, data: { canceled: mine.length } });
      }
      if (req.method === 'GET' && url.startsWith('/v1/orderbook?'))
        return send(res, 200, [{ ticker_id: 'BTC/EUR', timestamp: 1, bids: [], asks: [], ...options.book }]);
      const key = String(req.headers['x-api-key']);
      if (req.method === 'POST' && url === '/v1/orders/cancel-all-after') {
        const { timeout } = JSON.parse(raw) as { timeout: number };
        switches.push({ key, timeout });
        return send(res, 200, { success: true, message: 'ok', code: 200, data: { trigger_time: '1.0000' } });
      }
      if (req.method === 'POST' && url === '/v1/orders') {
        if (failures < (options.failOrders ?? 0)) {
          failures += 1;
          return send(res, 503, { error: 'Service Unavailable' }, { 'retry-after': '1' });
        }
        posted.push({ ...(JSON.parse(raw) as Omit<Posted, 'key'>), key });
        const id = nextId++;
        open.add(id);
        return send(
          res,
          201,
          { success: true, message: 'Order created successfully.', code: 201 },
          { location: `/v1/orders/${id}` },
        );
      }
      const cancel = /^\/v1\/orders\/(\d+)$/.exec(url);
      if (req.method === 'DELETE' && cancel !== null) {
        const id = Number(cancel[1]);
        canceled.push(id);
        if (!open.delete(id)) return send(res, 409, { error: 'Order is not open (status: closed).' });
        return send(res, 200, { success: true, message: 'Order canceled successfully.', code: 200 });
      }
      send(res, 404, { success: false, message: 'Not Found', error: { message: 'Not Found', code: 404 } });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`,
    posted,
    canceled,
    switches,
    cancelAlls,
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

function memoryLogger() {
  const lines: Array<{ level: string; msg: string | undefined; obj: object }> = [];
  const at = (level: string) => (obj: object, msg?: string) => lines.push({ level, msg, obj });
  const logger: SimulatorLogger = {
    debug: at('debug'),
    info: at('info'),
    warn: at('warn'),
    error: at('error'),
  };
  return { lines, logger };
}

const creds = (n: number) => ({ apiKey: `key${n}`, apiSecret: Buffer.from(`secret${n}`).toString('base64') });
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

test('the random walk stays in its band, in whole ticks, and is reproducible', () => {
  const walk = (seed: number) => {
    const w = priceWalk(seededRandom(seed), { center: 600_000n, start: 10_000_000n });
    return Array.from({ length: 2000 }, () => w.step());
  };
  const a = walk(1);
  assert.deepEqual(a, walk(1));
  assert.notDeepEqual(a, walk(2));
  assert.equal(a[0]! <= 660_000n, true, 'a start outside the band is clamped');
  for (const t of a) assert.ok(t >= 540_000n && t <= 660_000n && typeof t === 'bigint');
  assert.ok(new Set(a).size > 20, 'it moves');
  // A one-tick market still moves and never reaches zero.
  const tiny = priceWalk(seededRandom(3), { center: 1n });
  for (let i = 0; i < 100; i += 1) assert.ok(tiny.step() >= 1n);
});

test('makers quote both sides in exact decimals, refresh by canceling, takers trade', {
  timeout: 10_000,
}, async () => {
  const fake = await fakeExchange();
  const { lines, logger } = memoryLogger();
  const sim = startSimulator({
    baseUrl: fake.baseUrl,
    makers: [creds(1), creds(2)],
    takers: [creds(3)],
    markets: ['BTC/EUR', 'ETH/BTC', 'NOPE/EUR', 'ETH/EUR'],
    ratePerSecond: 40,
    referencePrices: { 'BTC/EUR': '60000', 'ETH/BTC': '0.051234567' },
    seed: 42,
    logger,
    refreshMs: 200,
  });
  try {
    await sleep(1500);
  } finally {
    await sim.stop();
    await fake.close();
  }
  const stats = sim.stats();
  assert.ok(stats.ordersPlaced > 20, `placed ${stats.ordersPlaced}`);
  assert.ok(fake.canceled.includes(999), 'leftover open order of an earlier run swept');
  assert.deepEqual(
    [...fake.cancelAlls].sort(),
    ['BTC/EUR', 'ETH/BTC', 'ETH/EUR'].flatMap((pair) => [pair, pair, pair]),
    'one cancel-all per account (3) and simulated market, none for other markets',
  );
  // Makers (keys 1 and 2) quote post-only and arm the dead man's switch; the taker does neither.
  const makerKeys = new Set(['key1', 'key2']);
  const quotes = fake.posted.filter((o) => makerKeys.has(o.key));
  assert.ok(quotes.length > 0 && quotes.every((o) => o.post_only === true && o.order_type === 'limit'));
  assert.ok(fake.posted.filter((o) => o.key === 'key3').every((o) => o.post_only === undefined));
  assert.deepEqual([...new Set(fake.switches.map((x) => x.key))].sort(), ['key1', 'key2']);
  assert.ok(fake.switches.every((x) => x.timeout === 60));
  assert.ok(lines.some((l) => l.level === 'warn' && (l.obj as { pair?: string }).pair === 'NOPE/EUR'));
  assert.ok(lines.some((l) => l.msg === 'simulator is trading'));

  const btc = fake.posted.filter((o) => o.pair === 'BTC/EUR');
  const eth = fake.posted.filter((o) => o.pair === 'ETH/BTC');
  for (const o of btc) {
    assert.match(o.volume, /^\d+\.\d{8}$/);
    // Volumes are whole multiples of ordermin (5000 lots).
    assert.equal(BigInt(o.volume.replace('.', '')) % 5000n, 0n);
    if (o.order_type === 'limit') {
      assert.match(o.price!, /^\d+\.\d$/);
      const price = Number(o.price);
      assert.ok(price > 60000 * 0.85 && price < 60000 * 1.15, o.price);
    } else assert.equal(o.price, undefined);
  }
  for (const o of eth) if (o.price !== undefined) assert.match(o.price, /^0\.0\d{4}$/);
  // Without a configured reference, ETH/EUR walks around its last trade.
  const ethEur = fake.posted.filter((o) => o.pair === 'ETH/EUR' && o.price !== undefined);
  assert.ok(ethEur.length > 0);
  for (const o of ethEur) assert.ok(Math.abs(Number(o.price) - 2500) < 300, o.price);
  for (const side of ['buy', 'sell'])
    for (const type of ['limit', 'market'])
      assert.ok(
        fake.posted.some((o) => o.order_direction === side && o.order_type === type),
        `${side} ${type} sent`,
      );
  // Refreshes cancel the maker's earlier quotes (ids 1..6 were the first BTC/EUR quotes).
  assert.ok([1, 2, 3, 4, 5, 6].every((id) => fake.canceled.includes(id)));
});

test('the switch is renewed every quarter of its timeout while the loop runs', {
  timeout: 10_000,
}, async () => {
  const fake = await fakeExchange();
  const options = {
    baseUrl: fake.baseUrl,
    makers: [creds(1)],
    takers: [creds(2)],
    markets: ['BTC/EUR'],
    ratePerSecond: 50,
    referencePrices: { 'BTC/EUR': '60000' },
    seed: 5,
    logger: memoryLogger().logger,
    deadManSeconds: 2,
  };
  assert.throws(() => startSimulator({ ...options, deadManSeconds: 1.5 }), RangeError);
  const sim = startSimulator(options);
  try {
    await sleep(2200);
  } finally {
    await sim.stop();
    await fake.close();
  }
  // Armed at the start, then every 0.5 s: about 5 times in 2.2 s (fewer on a slow machine).
  const armed = fake.switches.filter((x) => x.key === 'key1');
  assert.ok(armed.length >= 3 && armed.length <= 6, `armed ${armed.length} times`);
  assert.ok(armed.every((x) => x.timeout === 2));
  assert.equal(sim.stats().errors, 0);
});

test('post-only quotes are placed behind the best opposite order, never into it', {
  timeout: 10_000,
}, async () => {
  // A stale ask far below the reference and a bid far above it: quotes placed where the walk is
  // would all take, so each side moves back behind them.
  const fake = await fakeExchange({ book: { bids: [['61000.0', '1']], asks: [['59000.0', '1']] } });
  const sim = startSimulator({
    baseUrl: fake.baseUrl,
    makers: [creds(1)],
    takers: [],
    markets: ['BTC/EUR'],
    ratePerSecond: 20,
    referencePrices: { 'BTC/EUR': '60000' },
    seed: 3,
    logger: memoryLogger().logger,
  });
  try {
    await sleep(800);
  } finally {
    await sim.stop();
    await fake.close();
  }
  const bids = fake.posted.filter((o) => o.order_direction === 'buy').map((o) => Number(o.price));
  const asks = fake.posted.filter((o) => o.order_direction === 'sell').map((o) => Number(o.price));
  assert.ok(bids.length > 0 && asks.length > 0);
  assert.equal(Math.max(...bids), 58999.9, 'the best bid one tick under the best ask');
  assert.equal(Math.min(...asks), 61000.1, 'the best ask one tick over the best bid');
});

test('503 with Retry-After makes it back off; stop() returns promptly', { timeout: 10_000 }, async () => {
  const fake = await fakeExchange({ failOrders: 1_000_000 });
  const { lines, logger } = memoryLogger();
  const sim = startSimulator({
    baseUrl: fake.baseUrl,
    makers: [creds(1)],
    takers: [creds(2)],
    markets: ['BTC/EUR'],
    ratePerSecond: 100,
    referencePrices: { 'BTC/EUR': '60000' },
    seed: 1,
    logger,
  });
  try {
    await sleep(1500);
    const started = Date.now();
    await sim.stop();
    assert.ok(Date.now() - started < 1000, 'stop interrupts the backoff sleep');
  } finally {
    await fake.close();
  }
  // Without backoff, 100 actions per second would be ~150 actions here.
  assert.ok(sim.stats().actions <= 4, `actions: ${sim.stats().actions}`);
  assert.equal(
    lines.filter((l) => l.msg === 'simulator backs off').length,
    1,
    'warned once, not per request',
  );
});

test('an unreachable server: it keeps retrying quietly and stops cleanly', { timeout: 10_000 }, async () => {
  const { lines, logger } = memoryLogger();
  const sim = startSimulator({
    baseUrl: 'http://127.0.0.1:1/v1',
    makers: [creds(1)],
    takers: [],
    markets: ['BTC/EUR'],
    ratePerSecond: 5,
    referencePrices: { 'BTC/EUR': '60000' },
    seed: 1,
    logger,
  });
  await sleep(700);
  await sim.stop();
  assert.equal(sim.stats().ordersPlaced, 0);
  assert.equal(lines.filter((l) => l.level === 'warn').length, 1);
  assert.equal(lines.filter((l) => l.level === 'error').length, 0);
});
