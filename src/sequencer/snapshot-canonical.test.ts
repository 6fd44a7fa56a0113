/**
 * The canonical encoding a gateway compares an engine's reset with (decision 105): equal for the
 * same state however it was assembled, different for anything a reader can see.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Amount, AssetCode, MarketId, Micros, Price, UserId, Volume } from '../domain/types.js';
import type { Candle } from '../market-data/candle.js';
import type { MarketSnapshot } from './market-view.js';
import { canonicalSnapshot } from './snapshot-canonical.js';

const BTCEUR = 1 as MarketId;
const ETHEUR = 2 as MarketId;
const NOW = (1_800_000_000 * 1_000_000) as Micros;
const nowSeconds = 1_800_000_000;

const candle = (marketId: MarketId, interval: Candle['interval'], start: number, close = 10): Candle => ({
  marketId,
  interval,
  start,
  open: 10 as Price,
  high: 12 as Price,
  low: 9 as Price,
  close: close as Price,
  volume: 5n,
  quoteVolume: 50n,
  notional: 50n,
  count: 1,
});

const balance = (userId: number, asset: string, available: number) => ({
  userId: userId as UserId,
  asset: asset as AssetCode,
  available: available as Amount,
  reserved: 0 as Amount,
});

const trade = (id: number) =>
  ({
    id,
    marketId: BTCEUR,
    price: 10,
    volume: 5,
    cost: 50,
    takerOrderId: 1,
    makerOrderId: 2,
    takerUserId: 7,
    makerUserId: 9,
    takerSide: 'buy',
    takerType: 'limit',
    takerFee: 0,
    makerFee: 0,
    time: NOW - 1,
  }) as unknown as MarketSnapshot['recentTrades'][number]['trades'][number];

const minute = Math.floor(nowSeconds / 60) * 60;

/** As an engine loads it from the store: every market listed, in id order. */
const loaded: MarketSnapshot = {
  sequence: 0,
  assets: [],
  markets: [],
  books: [
    { marketId: BTCEUR, sequence: 4, bids: [[9 as Price, 3 as Volume]], asks: [] },
    { marketId: ETHEUR, sequence: 0, bids: [], asks: [] },
  ],
  lastPrices: [{ marketId: BTCEUR, price: 10 as Price }],
  candles: [candle(BTCEUR, 1, minute), candle(BTCEUR, 5, minute - 60 * 4)],
  statsCandles: [candle(BTCEUR, 1, minute), candle(BTCEUR, 1440, Math.floor(nowSeconds / 86_400) * 86_400)],
  recentTrades: [
    { marketId: BTCEUR, trades: [trade(1)] },
    { marketId: ETHEUR, trades: [] },
  ],
  balances: [balance(7, 'BTC', 5), balance(7, 'EUR', 100), balance(9, 'EUR', 1)],
};

/** The same state as a gateway's view holds it after following batches. */
const followed: MarketSnapshot = {
  ...loaded,
  sequence: 812,
  books: [{ marketId: BTCEUR, sequence: 4, bids: [[9 as Price, 3 as Volume]], asks: [] }],
  candles: [...loaded.candles].reverse(),
  statsCandles: [
    // A minute that left the 24-hour window: nothing can read it any more.
    candle(BTCEUR, 1, minute - 86_400 - 600),
    ...[...loaded.statsCandles].reverse(),
  ],
  recentTrades: [{ marketId: BTCEUR, trades: [{ ...trade(1), extra: undefined } as never] }],
  balances: [balance(9, 'EUR', 1), balance(7, 'EUR', 100), balance(7, 'BTC', 5)],
};

test('the same state assembled differently encodes the same', () => {
  assert.equal(canonicalSnapshot(followed, NOW), canonicalSnapshot(loaded, NOW));
});

test('anything a reader can see makes a difference', () => {
  const base = canonicalSnapshot(loaded, NOW);
  const changed: Array<[string, MarketSnapshot]> = [
    ['a book sequence', { ...loaded, books: [{ ...loaded.books[0]!, sequence: 5 }, loaded.books[1]!] }],
    [
      'a level',
      { ...loaded, books: [{ ...loaded.books[0]!, bids: [[9 as Price, 4 as Volume]] }, loaded.books[1]!] },
    ],
    [
      'a market’s book at sequence 1',
      { ...loaded, books: [loaded.books[0]!, { ...loaded.books[1]!, sequence: 1 }] },
    ],
    ['a last price', { ...loaded, lastPrices: [{ marketId: BTCEUR, price: 11 as Price }] }],
    ['a current candle', { ...loaded, candles: [candle(BTCEUR, 1, minute, 11), loaded.candles[1]!] }],
    [
      'a minute of the last 24 hours',
      { ...loaded, statsCandles: [...loaded.statsCandles, candle(BTCEUR, 1, minute - 60)] },
    ],
    ['a trade', { ...loaded, recentTrades: [{ marketId: BTCEUR, trades: [trade(1), trade(2)] }] }],
    ['a balance', { ...loaded, balances: [...loaded.balances.slice(0, 2), balance(9, 'EUR', 2)] }],
    [
      'a bigint for a number',
      { ...loaded, candles: [{ ...loaded.candles[0]!, count: 1n as never }, loaded.candles[1]!] },
    ],
  ];
  for (const [what, snapshot] of changed) assert.notEqual(canonicalSnapshot(snapshot, NOW), base, what);
});
