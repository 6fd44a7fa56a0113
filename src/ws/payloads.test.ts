import assert from 'node:assert/strict';
import { test } from 'node:test';
import type {
  Amount,
  AssetCode,
  FeeRate,
  MarketId,
  MarketSpec,
  Micros,
  OrderId,
  Price,
  TradeId,
  UserId,
  Volume,
} from '../domain/types.js';
import type { Trade } from '../engine/types.js';
import type { Candle } from '../market-data/candle.js';
import type { BookView, TradeStats } from '../sequencer/ports.js';
import { bookChecksum } from './crc32.js';
import {
  bookSnapshotMessage,
  bookUpdateMessages,
  candleMessage,
  changePercent,
  feedMarket,
  rfc3339,
  spacedTimestamp,
  tickerMessage,
  tradeMessage,
} from './payloads.js';

const spec: MarketSpec = {
  id: 1 as MarketId,
  base: 'BTC' as AssetCode,
  quote: 'EUR' as AssetCode,
  pairDecimals: 1,
  lotDecimals: 8,
  ordermin: 10_000 as Volume,
  makerFee: 100_000 as FeeRate,
  takerFee: 160_000 as FeeRate,
};
const m = feedMarket(spec, { code: 'EUR' as AssetCode, name: 'Euro', type: 'fiat', decimals: 2 });
const p = (n: number) => n as Price;
const v = (n: number) => n as Volume;
const T0 = 1_700_000_000_123_456 as Micros; // 2023-11-14T22:13:20.123456Z

test('times: RFC 3339 and the spaced form keep every microsecond', () => {
  assert.equal(rfc3339(T0), '2023-11-14T22:13:20.123456Z');
  assert.equal(spacedTimestamp(T0), '2023-11-14 22:13:20.123456');
  assert.equal(rfc3339(1_700_000_000_000_000 as Micros), '2023-11-14T22:13:20.000000Z');
  assert.equal(rfc3339(7 as Micros), '1970-01-01T00:00:00.000007Z');
});

test('book snapshot: every level, formatted, with sequence and the checksum of the top 10', () => {
  const view: BookView = {
    sequence: 42,
    bids: [
      [p(299_990), v(50_000_000)],
      [p(299_500), v(1)],
    ],
    asks: [[p(300_010), v(120_000_000)]],
  };
  const message = bookSnapshotMessage(m, view);
  assert.deepEqual(message, {
    channel: 'book',
    type: 'snapshot',
    data: {
      symbol: 'BTC/EUR',
      bids: [
        { price: '29999.0', qty: '0.50000000' },
        { price: '29950.0', qty: '0.00000001' },
      ],
      asks: [{ price: '30001.0', qty: '1.20000000' }],
      sequence: 42,
      checksum: bookChecksum(
        [{ price: '30001.0', qty: '1.20000000' }],
        [
          { price: '29999.0', qty: '0.50000000' },
          { price: '29950.0', qty: '0.00000001' },
        ],
      ),
    },
  });
});

test('book updates: one message per changed level, in order, one side an object and the other []', () => {
  // Before the batch: bids 20.0 × 7, asks 30.0 × 3. The batch: a bid at 10.0 rests, the ask at 30.0
  // is taken, the bid at 20.0 is canceled, an ask at 25.0 rests.
  const messages = bookUpdateMessages(
    m,
    [
      { side: 'buy', price: p(100), before: v(0), volume: v(5), sequence: 7 },
      { side: 'sell', price: p(300), before: v(3), volume: v(0), sequence: 8 },
      { side: 'buy', price: p(200), before: v(7), volume: v(0), sequence: 9 },
      { side: 'sell', price: p(250), before: v(0), volume: v(9), sequence: 10 },
    ],
    { bids: [[p(100), v(5)]], asks: [[p(250), v(9)]] },
  );
  const level = (price: string, qty: string) => ({ price, qty });
  const expected = [
    // [bids, asks] of each message, then the book after it: asks, bids (best first).
    [
      level('10.0', '0.00000005'),
      [],
      [level('30.0', '0.00000003')],
      [level('20.0', '0.00000007'), level('10.0', '0.00000005')],
    ],
    [[], level('30.0', '0.00000000'), [], [level('20.0', '0.00000007'), level('10.0', '0.00000005')]],
    [level('20.0', '0.00000000'), [], [], [level('10.0', '0.00000005')]],
    [[], level('25.0', '0.00000009'), [level('25.0', '0.00000009')], [level('10.0', '0.00000005')]],
  ] as const;
  assert.deepEqual(
    messages,
    expected.map(([bids, asks, bookAsks, bookBids], i) => ({
      channel: 'book',
      type: 'update',
      data: {
        symbol: 'BTC/EUR',
        bids,
        asks,
        sequence: 7 + i,
        checksum: bookChecksum(bookAsks, bookBids),
      },
    })),
  );
});

test('book updates: the checksums see the levels below the top 10 that the batch covered or uncovered', () => {
  // After the batch: asks 0.5, 0.7, then 1.0 … 15.0 (× 1 each). The batch added 0.5 and 0.7 and
  // removed 0.9 (× 4): between its messages the top 10 reaches levels below the final top 10.
  const rest = Array.from({ length: 15 }, (_, i) => [p(10 * (i + 1)), v(1)] as [Price, Volume]);
  const messages = bookUpdateMessages(
    m,
    [
      { side: 'sell', price: p(9), before: v(4), volume: v(0), sequence: 1 },
      { side: 'sell', price: p(5), before: v(0), volume: v(1), sequence: 2 },
      { side: 'sell', price: p(7), before: v(0), volume: v(1), sequence: 3 },
    ],
    { bids: [], asks: [[p(5), v(1)], [p(7), v(1)], ...rest] },
  );
  const text = (levels: [Price, Volume][]) =>
    levels.map(([price, qty]) => ({ price: (price / 10).toFixed(1), qty: `0.0000000${qty}` }));
  assert.deepEqual(
    messages.map((message) => message.data.checksum),
    [
      bookChecksum(text(rest), []),
      bookChecksum(text([[p(5), v(1)], ...rest]), []),
      bookChecksum(text([[p(5), v(1)], [p(7), v(1)], ...rest]), []),
    ],
  );
});

test('changePercent: two decimals, rounded half away from zero, integer math', () => {
  assert.equal(changePercent(8, 9), '12.50');
  assert.equal(changePercent(3, 2), '-33.33');
  assert.equal(changePercent(6, 5), '-16.67');
  assert.equal(changePercent(300_000, 310_000), '3.33');
  assert.equal(changePercent(null, 5), '0.00');
  assert.equal(changePercent(5, 5), '0.00');
});

const stats = (s: Partial<TradeStats>): TradeStats => ({
  open: null,
  high: null,
  low: null,
  last: null,
  volume: 0n,
  quoteVolume: 0n,
  notional: 0n,
  count: 0,
  ...s,
});

test('ticker: 24 h figures, best bid and ask, vwap from the exact sum of price × volume', () => {
  const message = tickerMessage(m, 'update', {
    // 1.5 BTC for 45 750.00 EUR: vwap 30 500.0
    stats: stats({
      open: p(300_000),
      high: p(310_000),
      low: p(299_000),
      last: p(310_000),
      volume: 150_000_000n,
      quoteVolume: 4_575_000n,
      notional: 45_750_000_000_000n,
      count: 3,
    }),
    last: p(310_000),
    bestBid: [p(309_990), v(25_000_000)],
    bestAsk: [p(310_010), v(1)],
  });
  assert.deepEqual(message, {
    channel: 'ticker',
    type: 'update',
    data: [
      {
        symbol: 'BTC/EUR',
        bid: '30999.0',
        bid_qty: '0.25000000',
        ask: '31001.0',
        ask_qty: '0.00000001',
        last: '31000.0',
        volume: '1.50000000',
        vwap: '30500.0',
        low: '29900.0',
        high: '31000.0',
        change: '1000.0',
        change_pct: '3.33',
      },
    ],
  });
});

test('ticker: an empty window and an empty book show zeros, a fall shows a negative change', () => {
  const empty = tickerMessage(m, 'snapshot', {
    stats: stats({}),
    last: null,
    bestBid: undefined,
    bestAsk: undefined,
  }).data[0]!;
  assert.equal(empty.bid, '0.0');
  assert.equal(empty.ask_qty, '0.00000000');
  assert.equal(empty.vwap, '0.0');
  assert.equal(empty.change, '0.0');
  assert.equal(empty.change_pct, '0.00');
  const fall = tickerMessage(m, 'update', {
    stats: stats({ open: p(310_000), last: p(300_000), volume: 1n, quoteVolume: 1n, notional: 300_000n }),
    last: p(300_000),
    bestBid: undefined,
    bestAsk: undefined,
  }).data[0]!;
  assert.equal(fall.change, '-1000.0');
  assert.equal(fall.change_pct, '-3.23');
});

test('ohlc: interval start in both forms, the candle at market precision, data.timestamp the last trade', () => {
  const candle: Candle = {
    marketId: spec.id,
    interval: 5,
    start: 1_700_000_100,
    open: p(300_000),
    high: p(301_000),
    low: p(299_000),
    close: p(300_500),
    volume: 200_000_000n,
    quoteVolume: 6_010_000n,
    notional: 60_100_000_000_000n,
    count: 4,
  };
  assert.deepEqual(candleMessage(m, 'update', candle, T0), {
    channel: 'ohlc',
    type: 'update',
    timestamp: '2023-11-14 22:15:00.000000',
    data: {
      symbol: 'BTC/EUR',
      open: '30000.0',
      high: '30100.0',
      low: '29900.0',
      close: '30050.0',
      trades: 4,
      volume: '2.00000000',
      vwap: '30050.0',
      interval_begin: '2023-11-14T22:15:00.000000Z',
      interval: 5,
      timestamp: '2023-11-14T22:13:20.123456Z',
    },
  });
});

test('trade: one item per trade with the taker side and order type', () => {
  const trade: Trade = {
    id: 17 as TradeId,
    marketId: spec.id,
    price: p(300_000),
    volume: v(40_000_000),
    cost: 1_200_000 as Amount,
    takerOrderId: 2 as OrderId,
    makerOrderId: 1 as OrderId,
    takerUserId: 2 as UserId,
    makerUserId: 1 as UserId,
    takerSide: 'buy',
    takerType: 'market',
    takerFee: 1920 as Amount,
    makerFee: 1200 as Amount,
    time: T0,
  };
  assert.deepEqual(tradeMessage(m, 'update', [trade]), {
    channel: 'trade',
    type: 'update',
    data: [
      {
        symbol: 'BTC/EUR',
        side: 'buy',
        price: '30000.0',
        qty: '0.40000000',
        ord_type: 'market',
        trade_id: 17,
        timestamp: '2023-11-14T22:13:20.123456Z',
      },
    ],
  });
});
