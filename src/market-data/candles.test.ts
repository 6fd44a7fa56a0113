import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import type { Amount, MarketId, Micros, OrderId, Price, TradeId, UserId, Volume } from '../domain/types.js';
import type { Trade } from '../engine/types.js';
import { type Candle, INTERVALS, type Interval } from './candle.js';
import { CandleAggregator, candleStart } from './candles.js';

const MARKET = 1 as MarketId;
const DAY = 86_400;
const WEEK = 7 * DAY;

const secondsOf = (iso: string): number => Date.parse(iso) / 1000;
const microsOf = (seconds: number, micros = 0): Micros => (seconds * 1_000_000 + micros) as Micros;

let nextId = 1;
function trade(time: Micros, price: number, volume: number, cost = price * volume, marketId = MARKET): Trade {
  const id = nextId++;
  return {
    id: id as TradeId,
    marketId,
    price: price as Price,
    volume: volume as Volume,
    cost: cost as Amount,
    takerOrderId: (2 * id) as OrderId,
    makerOrderId: (2 * id + 1) as OrderId,
    takerUserId: 1 as UserId,
    makerUserId: 2 as UserId,
    takerSide: 'buy',
    takerType: 'limit',
    takerFee: 0 as Amount,
    makerFee: 0 as Amount,
    time,
  };
}

const only = (candles: Candle[], interval: Interval): Candle[] =>
  candles.filter((c) => c.interval === interval);

describe('candleStart', () => {
  test('aligns to the Unix epoch, so weekly candles start on Thursday 00:00 UTC', () => {
    const thursday = secondsOf('2024-01-04T00:00:00Z');
    assert.equal(new Date(thursday * 1000).getUTCDay(), 4);
    assert.equal(candleStart(thursday, 10080), thursday);
    assert.equal(candleStart(thursday + WEEK - 1, 10080), thursday);
    assert.equal(candleStart(thursday - 1, 10080), thursday - WEEK);
    assert.equal(candleStart(thursday + WEEK, 10080), thursday + WEEK);
  });

  test('aligns every interval to a multiple of its length', () => {
    const s = secondsOf('2024-03-15T13:47:31Z');
    assert.equal(candleStart(s, 1), secondsOf('2024-03-15T13:47:00Z'));
    assert.equal(candleStart(s, 5), secondsOf('2024-03-15T13:45:00Z'));
    assert.equal(candleStart(s, 15), secondsOf('2024-03-15T13:45:00Z'));
    assert.equal(candleStart(s, 30), secondsOf('2024-03-15T13:30:00Z'));
    assert.equal(candleStart(s, 60), secondsOf('2024-03-15T13:00:00Z'));
    assert.equal(candleStart(s, 240), secondsOf('2024-03-15T12:00:00Z'));
    assert.equal(candleStart(s, 1440), secondsOf('2024-03-15T00:00:00Z'));
    for (const interval of INTERVALS) assert.equal(candleStart(s, interval) % (interval * 60), 0);
  });
});

describe('CandleAggregator', () => {
  test('builds open, high, low, close, volume, quote volume and count', () => {
    const agg = new CandleAggregator([]);
    const t0 = secondsOf('2024-03-15T13:47:00Z');
    const touched = agg.apply(MARKET, [
      trade(microsOf(t0, 1), 100, 2),
      trade(microsOf(t0 + 10), 120, 1),
      trade(microsOf(t0 + 20), 90, 3, 271),
      trade(microsOf(t0 + 59, 999_999), 110, 4),
    ]);
    assert.equal(touched.length, INTERVALS.length);
    assert.deepEqual(
      touched.map((c) => c.interval),
      [...INTERVALS],
    );
    const minute = only(touched, 1)[0];
    assert.deepEqual(minute, {
      marketId: MARKET,
      interval: 1,
      start: t0,
      open: 100,
      high: 120,
      low: 90,
      close: 110,
      volume: 10n,
      quoteVolume: BigInt(200 + 120 + 271 + 440),
      notional: BigInt(200 + 120 + 270 + 440),
      count: 4,
    });
    assert.deepEqual(agg.current(MARKET, 1), minute);
  });

  test('opens a new candle when a trade is past the current one, returning both', () => {
    const agg = new CandleAggregator([]);
    const t0 = secondsOf('2024-03-15T13:47:00Z');
    const touched = agg.apply(MARKET, [
      trade(microsOf(t0 + 59, 999_999), 100, 1),
      trade(microsOf(t0 + 60), 101, 2),
    ]);
    const minutes = only(touched, 1);
    assert.deepEqual(
      minutes.map((c) => [c.start, c.open, c.close, c.count]),
      [
        [t0, 100, 100, 1],
        [t0 + 60, 101, 101, 1],
      ],
    );
    assert.equal(only(touched, 5).length, 1);
    assert.equal(only(touched, 5)[0]?.count, 2);
    assert.equal(agg.current(MARKET, 1)?.start, t0 + 60);
  });

  test('puts a Wednesday 23:59:59 trade and a Thursday 00:00 trade in different weekly candles', () => {
    const thursday = secondsOf('2024-01-04T00:00:00Z');
    const agg = new CandleAggregator([]);
    const weeks = only(
      agg.apply(MARKET, [trade(microsOf(thursday - 1, 999_999), 5, 1), trade(microsOf(thursday), 6, 1)]),
      10080,
    );
    assert.deepEqual(
      weeks.map((c) => c.start),
      [thursday - WEEK, thursday],
    );
  });

  test('continues the stored candles it is given, ignoring older ones', () => {
    const t0 = secondsOf('2024-03-15T13:47:00Z');
    const stored: Candle = {
      marketId: MARKET,
      interval: 1,
      start: t0,
      open: 50 as Price,
      high: 70 as Price,
      low: 40 as Price,
      close: 60 as Price,
      volume: 5n,
      quoteVolume: 300n,
      notional: 301n,
      count: 3,
    };
    const older: Candle = { ...stored, start: t0 - 60, open: 1 as Price };
    const agg = new CandleAggregator([stored, older]);
    assert.deepEqual(agg.current(MARKET, 1), stored);
    assert.equal(agg.current(MARKET, 5), undefined);
    assert.equal(agg.current(2 as MarketId, 1), undefined);
    const [minute] = only(agg.apply(MARKET, [trade(microsOf(t0 + 30), 80, 1)]), 1);
    assert.deepEqual(minute, {
      ...stored,
      high: 80,
      close: 80,
      volume: 6n,
      quoteVolume: 380n,
      notional: 381n,
      count: 4,
    });
  });

  test('folds a trade timed before the current candle into it', () => {
    const t0 = secondsOf('2024-03-15T13:47:00Z');
    const agg = new CandleAggregator([]);
    agg.apply(MARKET, [trade(microsOf(t0 + 61), 10, 1)]);
    const [minute] = only(agg.apply(MARKET, [trade(microsOf(t0 + 30), 8, 1)]), 1);
    assert.equal(minute?.start, t0 + 60);
    assert.equal(minute?.count, 2);
    assert.equal(minute?.low, 8);
  });

  test('keeps markets apart and refuses a trade of another market', () => {
    const agg = new CandleAggregator([]);
    const t = microsOf(secondsOf('2024-03-15T13:47:00Z'));
    agg.apply(MARKET, [trade(t, 10, 1)]);
    agg.apply(2 as MarketId, [trade(t, 20, 1, 20, 2 as MarketId)]);
    assert.equal(agg.current(MARKET, 1)?.close, 10);
    assert.equal(agg.current(2 as MarketId, 1)?.close, 20);
    assert.throws(() => agg.apply(MARKET, [trade(t, 20, 1, 20, 2 as MarketId)]), RangeError);
    assert.deepEqual(agg.apply(MARKET, []), []);
  });

  test('sums past the exact integer range of numbers stay exact (BigInt)', () => {
    const agg = new CandleAggregator([]);
    const t = microsOf(secondsOf('2024-03-15T13:47:00Z'));
    agg.apply(MARKET, [trade(t, 3, Number.MAX_SAFE_INTEGER, Number.MAX_SAFE_INTEGER)]);
    const [minute] = only(agg.apply(MARKET, [trade(t, 2, 1, 1)]), 1);
    assert.equal(minute?.volume, BigInt(Number.MAX_SAFE_INTEGER) + 1n);
    assert.equal(minute?.quoteVolume, BigInt(Number.MAX_SAFE_INTEGER) + 1n);
    assert.equal(minute?.notional, 3n * BigInt(Number.MAX_SAFE_INTEGER) + 2n);
  });
});

describe('CandleAggregator properties', () => {
  const START = secondsOf('2024-01-01T00:00:00Z');
  /** Trades with non-decreasing times spread over ~40 days, so every interval crosses boundaries. */
  const tradeList = fc
    .array(
      fc.record({
        gapMicros: fc.oneof(
          fc.integer({ min: 0, max: 90_000_000 }),
          fc.integer({ min: 0, max: 400_000_000_000 }),
        ),
        price: fc.integer({ min: 1, max: 1_000_000 }),
        volume: fc.integer({ min: 1, max: 1_000_000 }),
      }),
      { minLength: 1, maxLength: 60 },
    )
    .map((specs) => {
      let time = START * 1_000_000;
      return specs.map((s) => {
        time += s.gapMicros;
        return trade(time as Micros, s.price, s.volume);
      });
    });

  /** Splits a list into consecutive chunks at the given cut points. */
  function chunked<T>(items: readonly T[], cuts: readonly number[]): T[][] {
    const points = [...new Set(cuts.map((c) => c % (items.length + 1)))].sort((a, b) => a - b);
    const chunks: T[][] = [];
    let from = 0;
    for (const p of [...points, items.length]) {
      chunks.push(items.slice(from, p));
      from = p;
    }
    return chunks;
  }

  const key = (c: Candle): string => `${c.interval}:${c.start}`;

  test('aggregating in one call equals aggregating in random chunks', () => {
    fc.assert(
      fc.property(tradeList, fc.array(fc.nat(), { maxLength: 10 }), (trades, cuts) => {
        const whole = new CandleAggregator([]);
        const once = whole.apply(MARKET, trades);

        const parts = new CandleAggregator([]);
        const merged = new Map<string, Candle>();
        for (const chunk of chunked(trades, cuts))
          for (const c of parts.apply(MARKET, chunk)) merged.set(key(c), c);

        const inOrder = [...merged.values()].sort(
          (a, b) => INTERVALS.indexOf(a.interval) - INTERVALS.indexOf(b.interval) || a.start - b.start,
        );
        assert.deepEqual(inOrder, once);
        for (const interval of INTERVALS)
          assert.deepEqual(parts.current(MARKET, interval), whole.current(MARKET, interval));
      }),
    );
  });

  test('with a clock that steps back, one call equals folding the trades one at a time', () => {
    // Times within a few minutes that may go back: trades of one minute, of the next, of an
    // earlier one (folded into the current candle) follow each other in any order.
    const jumpy = fc
      .array(
        fc.record({
          seconds: fc.integer({ min: 0, max: 300 }),
          price: fc.integer({ min: 1, max: 1_000_000 }),
          volume: fc.integer({ min: 1, max: 1_000_000 }),
        }),
        { minLength: 1, maxLength: 40 },
      )
      .map((specs) => specs.map((s) => trade(microsOf(START + s.seconds), s.price, s.volume)));
    fc.assert(
      fc.property(jumpy, (trades) => {
        const whole = new CandleAggregator([]);
        const once = whole.apply(MARKET, trades);
        const single = new CandleAggregator([]);
        const merged = new Map<string, Candle>();
        for (const t of trades) for (const c of single.apply(MARKET, [t])) merged.set(key(c), c);
        const inOrder = [...merged.values()].sort(
          (a, b) => INTERVALS.indexOf(a.interval) - INTERVALS.indexOf(b.interval) || a.start - b.start,
        );
        assert.deepEqual(once, inOrder);
      }),
    );
  });

  test('resuming from the stored latest candles equals one aggregator', () => {
    fc.assert(
      fc.property(tradeList, fc.nat(), (trades, cut) => {
        const split = cut % (trades.length + 1);
        const whole = new CandleAggregator([]);
        whole.apply(MARKET, trades);

        const before = new CandleAggregator([]);
        before.apply(MARKET, trades.slice(0, split));
        const latest = INTERVALS.flatMap((i) => before.current(MARKET, i) ?? []);
        const resumed = new CandleAggregator(latest);
        resumed.apply(MARKET, trades.slice(split));
        for (const interval of INTERVALS)
          assert.deepEqual(resumed.current(MARKET, interval), whole.current(MARKET, interval));
      }),
    );
  });

  test('each candle summarises exactly the trades inside its interval', () => {
    fc.assert(
      fc.property(tradeList, (trades) => {
        const touched = new CandleAggregator([]).apply(MARKET, trades);
        for (const candle of touched) {
          const length = candle.interval * 60;
          const inside = trades.filter((t) => {
            const s = Math.floor(t.time / 1_000_000);
            return s >= candle.start && s < candle.start + length;
          });
          assert.ok(inside.length > 0);
          const prices = inside.map((t) => t.price);
          assert.equal(candle.open, inside[0]?.price);
          assert.equal(candle.close, inside[inside.length - 1]?.price);
          assert.equal(candle.high, Math.max(...prices));
          assert.equal(candle.low, Math.min(...prices));
          assert.equal(
            candle.volume,
            inside.reduce((sum, t) => sum + BigInt(t.volume), 0n),
          );
          assert.equal(
            candle.quoteVolume,
            inside.reduce((sum, t) => sum + BigInt(t.cost), 0n),
          );
          assert.equal(
            candle.notional,
            inside.reduce((sum, t) => sum + BigInt(t.price) * BigInt(t.volume), 0n),
          );
          assert.equal(candle.count, inside.length);
        }
        const minuteTrades = only(touched, 1).reduce((n, c) => n + c.count, 0);
        assert.equal(minuteTrades, trades.length);
      }),
    );
  });
});
