import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { type Harness, limit, START, startHarness } from '../testing/harness.js';

const B = (message: string, validations = [message]) => ({
  success: false,
  error: { message, validations, code: 422 },
});

describe('public market data', () => {
  let h: Harness;
  before(async () => {
    h = await startHarness();
    const maker = await h.trader();
    const taker = await h.trader();
    // Yesterday: one trade at 29000.0 that must not count in today's ticker.
    h.advance(-86_400_000_000);
    await h.submit(limit(maker.userId, h.btceur, 'sell', 290_000, 10_000_000));
    await h.submit(limit(taker.userId, h.btceur, 'buy', 290_000, 10_000_000));
    h.advance(86_400_000_000);
    // Today: taker buys 0.2 at 30000.0, then sells 0.1 into a bid at 29990.0.
    await h.submit(limit(maker.userId, h.btceur, 'sell', 300_000, 50_000_000));
    await h.submit(limit(taker.userId, h.btceur, 'buy', 300_000, 20_000_000));
    h.advance(90_000_000);
    await h.submit(limit(maker.userId, h.btceur, 'buy', 299_900, 30_000_000));
    await h.submit(limit(taker.userId, h.btceur, 'sell', 299_900, 10_000_000));
    await h.submit(limit(maker.userId, h.btceur, 'buy', 299_000, 1_000_000));
    await h.submit(limit(maker.userId, h.btceur, 'sell', 301_000, 2_000_000));
  });
  after(() => h.close());

  test('GET /markets: envelope keyed by joined pair; one pair; unknown pair is 400 shape A', async () => {
    const all = await h.request('GET', '/v1/markets');
    assert.equal(all.status, 200);
    const body = all.json as { success: boolean; code: number; data: Record<string, unknown> };
    assert.equal(body.success, true);
    assert.equal(body.code, 200);
    assert.deepEqual(Object.keys(body.data), ['BTCEUR', 'ETHBTC']);
    assert.deepEqual(body.data.ETHBTC, {
      altname: 'ETHBTC',
      wsname: 'ETH/BTC',
      classBase: 'currency',
      base: 'ETH',
      classQuote: 'currency',
      quote: 'BTC',
      pairDecimals: 5,
      lotDecimals: 4,
      ordermin: '0.0100',
    });
    for (const pair of ['BTC/EUR', 'BTCEUR', 'BTC%2FEUR']) {
      const one = await h.request('GET', `/v1/markets?pair=${pair}`);
      assert.deepEqual(Object.keys((one.json as { data: object }).data), ['BTCEUR'], pair);
    }
    const bad = await h.request('GET', '/v1/markets?pair=DOGE/EUR');
    assert.equal(bad.status, 400);
    assert.deepEqual(bad.json, { success: false, error: { message: 'Unknown asset pair', code: 400 } });
    const twice = await h.request('GET', '/v1/markets?pair=BTCEUR&pair=ETHBTC');
    assert.equal(twice.status, 400);
    assert.equal((twice.json as { success: boolean }).success, false);
  });

  test('GET /tickers: today since 00:00 UTC for high/low/volumes, current last/bid/ask', async () => {
    const r = await h.request('GET', '/v1/tickers?ticker_id=BTC/EUR');
    assert.equal(r.status, 200);
    assert.deepEqual(r.json, [
      {
        ticker_id: 'BTC/EUR',
        base_currency: 'BTC',
        target_currency: 'EUR',
        last_price: '29990.0',
        base_volume: '0.30000000',
        target_volume: '8999.00',
        bid: '29990.0',
        ask: '30000.0',
        high: '30000.0',
        low: '29990.0',
      },
    ]);
    const all = (await h.request('GET', '/v1/tickers')).json as { ticker_id: string }[];
    assert.deepEqual(
      all.map((t) => t.ticker_id),
      ['BTC/EUR', 'ETH/BTC'],
    );
    const unknown = await h.request('GET', '/v1/tickers?ticker_id=NOPE');
    assert.equal(unknown.status, 400);
    assert.deepEqual(unknown.json, { error: 'Invalid request' });
  });

  test('GET /ohlc: default interval 1, since exclusive, Kraken-like records', async () => {
    const r = await h.request('GET', '/v1/ohlc?ticker_id=BTCEUR');
    assert.equal(r.status, 200);
    const candles = r.json as { time: number; count: number; close: string; vwap: string }[];
    const startMinute = Math.floor(START / 60_000_000) * 60;
    assert.deepEqual(
      candles.map((c) => c.time),
      [startMinute - 86_400, startMinute, startMinute + 60],
    );
    assert.deepEqual(candles[1], {
      time: startMinute,
      open: '30000.0',
      high: '30000.0',
      low: '30000.0',
      close: '30000.0',
      vwap: '30000.0',
      volume: '0.20000000',
      count: 1,
    });
    const since = await h.request('GET', `/v1/ohlc?ticker_id=BTC/EUR&since=${startMinute}`);
    assert.deepEqual(
      (since.json as { time: number }[]).map((c) => c.time),
      [startMinute + 60],
    );
    const daily = await h.request('GET', '/v1/ohlc?ticker_id=BTC/EUR&interval=1440');
    assert.equal((daily.json as unknown[]).length, 2);
  });

  test('GET /ohlc, /orderbook, /historical_trades: missing or bad parameters are 422 shape B', async () => {
    for (const path of ['/v1/ohlc', '/v1/orderbook', '/v1/historical_trades']) {
      const r = await h.request('GET', path);
      assert.equal(r.status, 422, path);
      assert.deepEqual(r.json, B('The ticker id field is required.'), path);
      const unknown = await h.request('GET', `${path}?ticker_id=DOGE/EUR`);
      assert.equal(unknown.status, 422);
      assert.deepEqual(unknown.json, B('The selected ticker id is invalid.'));
    }
    const cases: [string, string][] = [
      ['/v1/ohlc?ticker_id=BTC/EUR&interval=7', 'The selected interval is invalid.'],
      ['/v1/ohlc?ticker_id=BTC/EUR&since=yesterday', 'The since field format is invalid.'],
      ['/v1/ohlc?ticker_id=BTC/EUR&since=999999999999', 'The since field format is invalid.'],
      ['/v1/orderbook?ticker_id=BTC/EUR&depth=-1', 'The depth field format is invalid.'],
      ['/v1/historical_trades?ticker_id=BTC/EUR&type=both', 'The selected type is invalid.'],
      [
        '/v1/historical_trades?ticker_id=BTC/EUR&limit=1001',
        'The limit field must not be greater than 1000.',
      ],
      ['/v1/historical_trades?ticker_id=BTC/EUR&start_time=x', 'The start time field format is invalid.'],
    ];
    for (const [url, message] of cases) {
      const r = await h.request('GET', url);
      assert.equal(r.status, 422, url);
      assert.deepEqual(r.json, B(message), url);
    }
    const two = await h.request('GET', '/v1/ohlc?interval=2');
    assert.deepEqual(
      two.json,
      B('The ticker id field is required. (and 1 more error)', [
        'The ticker id field is required.',
        'The selected interval is invalid.',
      ]),
    );
  });

  test('GET /orderbook: depth counts both sides, 0 is the full book', async () => {
    const full = await h.request('GET', '/v1/orderbook?ticker_id=BTC/EUR&depth=0');
    assert.equal(full.status, 200);
    assert.deepEqual(full.json, [
      {
        ticker_id: 'BTC/EUR',
        timestamp: Math.floor(h.now() / 1_000_000),
        bids: [
          ['29990.0', '0.20000000'],
          ['29900.0', '0.01000000'],
        ],
        asks: [
          ['30000.0', '0.30000000'],
          ['30100.0', '0.02000000'],
        ],
      },
    ]);
    const two = (await h.request('GET', '/v1/orderbook?ticker_id=BTCEUR&depth=2')).json as {
      bids: unknown[];
      asks: unknown[];
    }[];
    assert.equal(two[0]!.bids.length, 1);
    assert.equal(two[0]!.asks.length, 1);
    const byDefault = (await h.request('GET', '/v1/orderbook?ticker_id=BTCEUR')).json as {
      bids: unknown[];
    }[];
    assert.equal(byDefault[0]!.bids.length, 2);
  });

  test('GET /historical_trades: by taker side, newest first, filters', async () => {
    const r = await h.request('GET', '/v1/historical_trades?ticker_id=BTC/EUR');
    assert.equal(r.status, 200);
    const body = r.json as { buy: { trade_id: number }[]; sell: { trade_id: number; type: string }[] };
    assert.deepEqual(
      body.buy.map((t) => t.trade_id),
      [2, 1],
    );
    assert.deepEqual(body.sell, [
      {
        trade_id: 3,
        price: '29990.0',
        base_volume: '0.10000000',
        target_volume: '2999.00',
        trade_timestamp: String(Math.floor(h.now() / 1_000_000)),
        type: 'sell',
      },
    ]);
    const onlySell = (await h.request('GET', '/v1/historical_trades?ticker_id=BTC/EUR&type=sell')).json as {
      buy: unknown[];
      sell: unknown[];
    };
    assert.equal(onlySell.buy.length, 0);
    assert.equal(onlySell.sell.length, 1);
    const limited = (await h.request('GET', '/v1/historical_trades?ticker_id=BTC/EUR&limit=1')).json as {
      buy: { trade_id: number }[];
    };
    assert.deepEqual(
      limited.buy.map((t) => t.trade_id),
      [2],
    );
    const today = (
      await h.request('GET', `/v1/historical_trades?ticker_id=BTC/EUR&start_time=${START / 1_000_000}`)
    ).json as { buy: { trade_id: number }[] };
    assert.deepEqual(
      today.buy.map((t) => t.trade_id),
      [2],
    );
  });
});

describe('public market data: paging forward through history', () => {
  let h: Harness;
  /** 725 one-minute candles: more than one answer of 720 holds. */
  const MINUTES = 725;
  const first = Math.floor(START / 60_000_000) * 60;
  before(async () => {
    h = await startHarness();
    const maker = await h.trader({ BTC: '10' });
    const taker = await h.trader();
    await h.submit(limit(maker.userId, h.btceur, 'sell', 300_000, 1_000_000_000));
    for (let minute = 0; minute < MINUTES; minute++) {
      await h.submit(limit(taker.userId, h.btceur, 'buy', 300_000, 100_000));
      h.advance(60_000_000);
    }
  });
  after(() => h.close());

  const times = async (url: string) => {
    const r = await h.request('GET', url);
    assert.equal(r.status, 200, r.text);
    return (r.json as { time: number }[]).map((c) => c.time);
  };
  const minute = (n: number) => first + 60 * n;

  test('GET /ohlc with since: the oldest 720 after it, ascending, and the next page from the last', async () => {
    const page1 = await times(`/v1/ohlc?ticker_id=BTC/EUR&since=${first - 1}`);
    assert.equal(page1.length, 720);
    assert.equal(page1[0], minute(0));
    assert.equal(page1.at(-1), minute(719));
    const page2 = await times(`/v1/ohlc?ticker_id=BTC/EUR&since=${page1.at(-1)}`);
    assert.deepEqual(page2, [minute(720), minute(721), minute(722), minute(723), minute(724)]);
    assert.deepEqual(await times(`/v1/ohlc?ticker_id=BTC/EUR&since=${minute(10)}&limit=2`), [
      minute(11),
      minute(12),
    ]);
  });

  test('GET /ohlc without since: the most recent, as before; limit keeps the newest', async () => {
    const latest = await times('/v1/ohlc?ticker_id=BTC/EUR');
    assert.equal(latest.length, 720);
    assert.equal(latest[0], minute(5));
    assert.equal(latest.at(-1), minute(724));
    assert.deepEqual(await times('/v1/ohlc?ticker_id=BTC/EUR&limit=2'), [minute(723), minute(724)]);
  });

  test('GET /ohlc: a limit outside 1 to 720 is 422 shape B', async () => {
    for (const bad of ['0', '721', '999999999']) {
      const r = await h.request('GET', `/v1/ohlc?ticker_id=BTC/EUR&limit=${bad}`);
      assert.equal(r.status, 422, bad);
      assert.deepEqual(r.json, B('The limit field must be between 1 and 720.'), bad);
    }
  });

  test('GET /historical_trades with start_time: the oldest from it, oldest first, paged by limit', async () => {
    const page = async (start: number, count: number) => {
      const r = await h.request(
        'GET',
        `/v1/historical_trades?ticker_id=BTC/EUR&start_time=${start}&limit=${count}&type=buy`,
      );
      assert.equal(r.status, 200, r.text);
      return (r.json as { buy: { trade_id: number; trade_timestamp: string }[] }).buy;
    };
    const all = await page(first, 0);
    assert.equal(all.length, MINUTES);
    const ids = all.map((t) => t.trade_id);
    assert.deepEqual(
      ids,
      [...ids].sort((a, b) => a - b),
    );
    const oldest = await page(minute(3), 3);
    assert.deepEqual(
      oldest.map((t) => Number(t.trade_timestamp)),
      [minute(3), minute(4), minute(5)].map((m) => m + (START / 1_000_000 - first)),
    );
    const next = await page(Number(oldest.at(-1)!.trade_timestamp) + 1, 2);
    assert.deepEqual(
      next.map((t) => t.trade_id),
      [oldest.at(-1)!.trade_id + 1, oldest.at(-1)!.trade_id + 2],
    );
    // Without start_time: newest first, as before.
    const newest = (await h.request('GET', '/v1/historical_trades?ticker_id=BTC/EUR&limit=2')).json as {
      buy: { trade_id: number }[];
    };
    assert.deepEqual(
      newest.buy.map((t) => t.trade_id),
      [ids.at(-1), ids.at(-2)],
    );
  });
});
