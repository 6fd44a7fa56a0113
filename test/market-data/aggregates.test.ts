/**
 * Aggregates summed over many trades (candles, the tickers' statistics) stay exact however large
 * they grow, and their VWAP always lies within the prices that made it: low <= vwap <= high, for
 * every candle as the REST /ohlc and the WebSocket `ohlc` channel show it, and for the WebSocket
 * ticker's rolling 24 hours.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import { mulDiv } from '../../src/domain/money.js';
import type {
  Amount,
  AssetCode,
  AssetSpec,
  FeeRate,
  MarketId,
  MarketSpec,
  Micros,
  OrderId,
  Price,
  TradeId,
  UserId,
  Volume,
} from '../../src/domain/types.js';
import type { Trade } from '../../src/engine/types.js';
import type { Candle } from '../../src/market-data/candle.js';
import { CandleAggregator } from '../../src/market-data/candles.js';
import { openExchange } from '../../src/sequencer/sequencer.js';
import { TradeStatsBook } from '../../src/sequencer/trade-stats.js';
import { asyncStore } from '../../src/store/async-store.js';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { serializeCandle } from '../../src/wire/serializers.js';
import { candleMessage, feedMarket, tickerMessage } from '../../src/ws/payloads.js';

const EUR: AssetSpec = { code: 'EUR' as AssetCode, name: 'Euro', type: 'fiat', decimals: 4 };
const BTCEUR: MarketSpec = {
  id: 1 as MarketId,
  base: 'BTC' as AssetCode,
  quote: 'EUR' as AssetCode,
  pairDecimals: 1,
  lotDecimals: 8,
  ordermin: 1 as Volume,
  makerFee: 0 as FeeRate,
  takerFee: 0 as FeeRate,
};
const feed = feedMarket(BTCEUR, EUR);
/** cost = floor(price × volume × 10^4 / 10^(1 + 8)), as the engine rounds it (docs/money.md). */
const COST_DIVISOR = 10 ** 5;
const MINUTE = 60_000_000;
const T0 = 1_700_000_000_000_000;

let nextId = 1;
function trade(time: number, price: number, volume: number): Trade {
  const id = nextId++;
  return {
    id: id as TradeId,
    marketId: BTCEUR.id,
    price: price as Price,
    volume: volume as Volume,
    cost: mulDiv(price, volume, COST_DIVISOR, 'floor') as Amount,
    takerOrderId: (2 * id) as OrderId,
    makerOrderId: (2 * id + 1) as OrderId,
    takerUserId: 1 as UserId,
    makerUserId: 2 as UserId,
    takerSide: 'buy',
    takerType: 'limit',
    takerFee: 0 as Amount,
    makerFee: 0 as Amount,
    time: time as Micros,
  };
}

/** A fixed-decimals price string as ticks (exact, any size). */
const ticks = (text: string): bigint => BigInt(text.replace('.', ''));

function assertWithin(what: string, vwap: string, low: string, high: string): void {
  assert.ok(
    ticks(low) <= ticks(vwap) && ticks(vwap) <= ticks(high),
    `${what}: vwap ${vwap} outside low ${low} .. high ${high}`,
  );
}

function checkCandle(candle: Candle): void {
  const rest = serializeCandle(candle, BTCEUR);
  assertWithin(`REST ${candle.interval}m candle`, rest.vwap, rest.low, rest.high);
  const ws = candleMessage(feed, 'update', candle, T0 as Micros).data;
  assertWithin(`WS ${candle.interval}m candle`, ws.vwap, ws.low, ws.high);
}

describe('candle and ticker VWAP', () => {
  test('the reported case: one price all along, costs rounded down, the VWAP is that price', () => {
    const candles = new CandleAggregator([]);
    // 60226.8 EUR for 0.00000123 BTC is 0.07407896.. EUR: the cost rounds down to 0.0740 EUR.
    const touched = candles.apply(BTCEUR.id, [trade(T0, 602_268, 123), trade(T0 + 1, 602_268, 77)]);
    for (const candle of touched) {
      assert.equal(serializeCandle(candle, BTCEUR).vwap, '60226.8');
      assert.equal(candleMessage(feed, 'update', candle, T0 as Micros).data.vwap, '60226.8');
    }
  });

  test('property: low <= vwap <= high for every candle (REST and WS) and the 24-hour ticker', () => {
    const trades = fc.array(
      fc.record({
        minutes: fc.integer({ min: 0, max: 3 * 1440 }),
        price: fc.oneof(fc.integer({ min: 1, max: 20 }), fc.integer({ min: 1, max: 1_000_000_000 })),
        volume: fc.oneof(
          fc.integer({ min: 1, max: 1_000 }),
          fc.integer({ min: 1, max: 6_000_000_000_000_000 }),
        ),
      }),
      { minLength: 1, maxLength: 40 },
    );
    fc.assert(
      fc.property(trades, (specs) => {
        const candles = new CandleAggregator([]);
        const stats = new TradeStatsBook();
        const sorted = [...specs].sort((a, b) => a.minutes - b.minutes);
        for (const s of sorted) {
          // What the engine can trade: a cost within 2^53 - 1 quote units.
          const volume = Math.min(
            s.volume,
            Number((BigInt(Number.MAX_SAFE_INTEGER) * 100_000n) / BigInt(s.price)),
          );
          const touched = candles.apply(BTCEUR.id, [trade(T0 + s.minutes * MINUTE, s.price, volume)]);
          stats.record(touched);
          for (const candle of touched) checkCandle(candle);
          const now = (T0 + s.minutes * MINUTE) as Micros;
          const ticker = tickerMessage(feed, 'update', {
            stats: stats.rolling24h(BTCEUR.id, now),
            last: null,
            bestBid: undefined,
            bestAsk: undefined,
          }).data[0]!;
          assertWithin('WS ticker', ticker.vwap, ticker.low, ticker.high);
        }
      }),
    );
  });
});

describe('aggregates past 2^53', () => {
  // 60,000,000 BTC in lots of 10^-8 is 6·10^15 lots: two such trades pass 2^53 - 1.
  const huge = 6_000_000_000_000_000;

  test('candle volume, quote volume and the VWAP sum stay exact; nothing throws', () => {
    const candles = new CandleAggregator([]);
    const touched = candles.apply(BTCEUR.id, [
      trade(T0, 3, huge),
      trade(T0 + 1, 5, huge),
      trade(T0 + 2, 4, huge),
    ]);
    const minute = touched.find((c) => c.interval === 1)!;
    assert.equal(minute.volume, 18_000_000_000_000_000n);
    assert.equal(minute.quoteVolume, 720_000_000_000n); // (3 + 5 + 4) · 6·10^15 / 10^5
    assert.equal(serializeCandle(minute, BTCEUR).volume, '180000000.00000000');
    assert.equal(serializeCandle(minute, BTCEUR).vwap, '0.4');
    assert.equal(candleMessage(feed, 'update', minute, T0 as Micros).data.volume, '180000000.00000000');
  });

  test('the 24-hour and daily statistics stay exact', () => {
    const candles = new CandleAggregator([]);
    const stats = new TradeStatsBook();
    for (let i = 0; i < 4; i++)
      stats.record(candles.apply(BTCEUR.id, [trade(T0 + i * 10 * MINUTE, 7, huge)]));
    const now = (T0 + 40 * MINUTE) as Micros;
    const rolling = stats.rolling24h(BTCEUR.id, now);
    assert.equal(rolling.volume, 24_000_000_000_000_000n);
    assert.equal(rolling.quoteVolume, 1_680_000_000_000n);
    assert.equal(rolling.count, 4);
    const ticker = tickerMessage(feed, 'update', {
      stats: rolling,
      last: null,
      bestBid: undefined,
      bestAsk: undefined,
    }).data[0]!;
    assert.equal(ticker.volume, '240000000.00000000');
    assert.equal(ticker.vwap, '0.7');
  });
});

describe('the reported outage: one trader moving 60,000,000 units at a tiny price', () => {
  test('trades whose candle volume passes 2^53 lots commit, and a restart restores the same sums', async (t) => {
    const dir = mkdtempSync(join(tmpdir(), 'openspot-aggregates-'));
    t.after(() => rmSync(dir, { recursive: true, force: true }));
    const path = join(dir, 'openspot.db');
    const TOK = 'TOK' as AssetCode;
    const EURO = 'EUR' as AssetCode;
    const [A, B] = [1 as UserId, 2 as UserId];
    let exchange = await openExchange({ store: asyncStore(SqliteStore.open({ path })) });
    await exchange.submit({ kind: 'createAsset', code: TOK, name: 'Token', type: 'crypto', decimals: 8 });
    await exchange.submit({ kind: 'createAsset', code: EURO, name: 'Euro', type: 'fiat', decimals: 2 });
    const created = await exchange.submit({
      kind: 'createMarket',
      base: TOK,
      quote: EURO,
      pairDecimals: 8,
      lotDecimals: 8,
      ordermin: 1 as Volume,
      makerFee: 0 as FeeRate,
      takerFee: 0 as FeeRate,
    });
    assert.equal(created.ok, true);
    const market = exchange.catalogue.marketByName('TOK/EUR')!.id;
    const units = 6_000_000_000_000_000 as Volume; // 60,000,000 TOK
    await exchange.submit({ kind: 'deposit', userId: A, asset: TOK, amount: units as number as Amount });
    await exchange.submit({ kind: 'deposit', userId: A, asset: EURO, amount: 1_000_000 as Amount });
    await exchange.submit({ kind: 'deposit', userId: B, asset: EURO, amount: 1_000_000 as Amount });
    const order = (userId: UserId, side: 'buy' | 'sell') =>
      exchange.submit({
        kind: 'placeOrder',
        userId,
        marketId: market,
        side,
        type: 'limit',
        price: 1 as Price,
        volume: units,
      });
    // The tokens go from A to B and back, three times: 3.6·10^16 lots in one candle.
    for (let round = 0; round < 3; round++) {
      for (const [seller, buyer] of [
        [A, B],
        [B, A],
      ] as const) {
        const [sold, bought] = await Promise.all([order(seller, 'sell'), order(buyer, 'buy')]);
        assert.equal(sold.ok && bought.ok, true);
      }
    }
    assert.equal(exchange.isWritable(), true, 'the store became "unavailable"');
    const [before] = await exchange.store.listCandles(market, 1, 0, 10);
    assert.equal(before?.volume, 36_000_000_000_000_000n);
    assert.equal(before?.count, 6);
    const stats = exchange.view.stats24h(market, exchange.clock());
    assert.equal(stats.volume, 36_000_000_000_000_000n);
    await exchange.close();

    exchange = await openExchange({ store: asyncStore(SqliteStore.open({ path })) });
    t.after(() => exchange.close());
    assert.deepEqual(exchange.view.stats24h(market, exchange.clock()), stats);
    assert.deepEqual(await exchange.store.listCandles(market, 1, 0, 10), [before]);
  });
});
