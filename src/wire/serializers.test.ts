import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import type { Amount, Micros, OrderId, Price, TradeId, UserId, Volume } from '../domain/types.js';
import type { OrderState, Trade } from '../engine/types.js';
import { BTC, BTCEUR, ETH, ETHBTC, fixedCatalogue } from '../http/testing/catalogue.js';
import type { Valuation } from '../http/valuation.js';
import type { Candle } from '../market-data/candle.js';
import type { TradeStats } from '../sequencer/ports.js';
import type { UserTrade } from '../store/store.js';
import {
  averagePrice,
  paginationMeta,
  serializeCandle,
  serializeLevels,
  serializeMarket,
  serializeOrder,
  serializePublicTrade,
  serializeTicker,
  serializeUserTrade,
  serializeWalletEntry,
  tradesAveragePrice,
} from './serializers.js';
import { orderTransactionId, tradeTransactionId } from './txid.js';

const catalogue = fixedCatalogue();
const T0 = 1_700_000_000_123_456 as Micros;

const order = (over: Partial<OrderState> = {}): OrderState => ({
  id: 42 as OrderId,
  userId: 7 as UserId,
  marketId: BTCEUR.id,
  side: 'buy',
  type: 'limit',
  price: 300_000 as Price, // 30000.0
  volume: 125_000_000 as Volume, // 1.25
  executed: 0 as Volume,
  status: 'open',
  reason: null,
  openTime: T0,
  closeTime: null,
  cost: 0 as Amount,
  fee: 0 as Amount,
  feeExcess: 0,
  reserved: 3_750_000 as Amount,
  ...over,
});

const trade = (over: Partial<Trade> = {}): Trade => ({
  id: 9 as TradeId,
  marketId: BTCEUR.id,
  price: 299_995 as Price, // 29999.5
  volume: 50_000_000 as Volume, // 0.5
  cost: 1_499_975 as Amount, // 14999.75 EUR
  takerOrderId: 42 as OrderId,
  makerOrderId: 40 as OrderId,
  takerUserId: 7 as UserId,
  makerUserId: 8 as UserId,
  takerSide: 'buy',
  takerType: 'limit',
  takerFee: 2_400 as Amount,
  makerFee: 1_500 as Amount,
  time: 1_700_000_005_999_999 as Micros,
  ...over,
});

test('market record', () => {
  assert.deepEqual(serializeMarket(BTCEUR), {
    altname: 'BTCEUR',
    wsname: 'BTC/EUR',
    classBase: 'currency',
    base: 'BTC',
    classQuote: 'currency',
    quote: 'EUR',
    pairDecimals: 1,
    lotDecimals: 8,
    ordermin: '0.00010000',
  });
});

test('ticker: decimals per field; missing values are zeros', () => {
  const today: TradeStats = {
    open: 290_000 as Price,
    high: 310_000 as Price,
    low: 280_005 as Price,
    last: 300_000 as Price,
    volume: 1_234_567_891n,
    quoteVolume: 37_037_036_73n,
    notional: 370_370_367_300n,
    count: 12,
  };
  assert.deepEqual(
    serializeTicker(BTCEUR, catalogue, {
      today,
      last: 300_001 as Price,
      bestBid: 299_990 as Price,
      bestAsk: null,
    }),
    {
      ticker_id: 'BTC/EUR',
      base_currency: 'BTC',
      target_currency: 'EUR',
      last_price: '30000.1',
      base_volume: '12.34567891',
      target_volume: '37037036.73',
      bid: '29999.0',
      ask: '0.0',
      high: '31000.0',
      low: '28000.5',
    },
  );
  const empty: TradeStats = {
    open: null,
    high: null,
    low: null,
    last: null,
    volume: 0n,
    quoteVolume: 0n,
    notional: 0n,
    count: 0,
  };
  const t = serializeTicker(BTCEUR, catalogue, { today: empty, last: null, bestBid: null, bestAsk: null });
  assert.equal(t.high, '0.0');
  assert.equal(t.base_volume, '0.00000000');
  assert.equal(t.target_volume, '0.00');
});

test('ticker: volumes past 2^53 units are formatted exactly', () => {
  const today: TradeStats = {
    open: 1 as Price,
    high: 1 as Price,
    low: 1 as Price,
    last: 1 as Price,
    volume: 12_000_000_000_000_000n,
    quoteVolume: 9_007_199_254_740_993n,
    notional: 12_000_000_000_000_000n,
    count: 2,
  };
  const t = serializeTicker(BTCEUR, catalogue, { today, last: null, bestBid: null, bestAsk: null });
  assert.equal(t.base_volume, '120000000.00000000');
  assert.equal(t.target_volume, '90071992547409.93');
});

test('candle: vwap from the exact sums, rounded half up', () => {
  const candle: Candle = {
    marketId: BTCEUR.id,
    interval: 1,
    start: 1_700_000_040,
    open: 300_000 as Price,
    high: 300_010 as Price,
    low: 299_990 as Price,
    close: 300_005 as Price,
    volume: 150_000_000n, // 1.5 BTC
    quoteVolume: 4_500_010n, // 45000.10 EUR
    notional: 45_000_100_000_000n, // Σ price × volume: 300000.666.. ticks -> 30000.1
    count: 3,
  };
  assert.deepEqual(serializeCandle(candle, BTCEUR), {
    time: 1_700_000_040,
    open: '30000.0',
    high: '30001.0',
    low: '29999.0',
    close: '30000.5',
    vwap: '30000.1',
    volume: '1.50000000',
    count: 3,
  });
});

test('average price: half up, any decimal combination, zero volume', () => {
  // Σ price × volume (ticks × lots) over Σ volume (lots), in ticks.
  assert.equal(averagePrice(50_000_000n, 10_000n), 5_000n);
  assert.equal(averagePrice(10_000_000n, 3n), 3_333_333n); // 3333333.33.. -> 3333333
  assert.equal(averagePrice(10n, 4n), 3n); // 2.5 -> half up to 3
  assert.equal(averagePrice(9n, 4n), 2n); // 2.25 -> 2
  assert.equal(averagePrice(5n, 0n), 0n);
  assert.equal(tradesAveragePrice([]), 0n);
  assert.equal(
    tradesAveragePrice([
      trade({ price: 100 as Price, volume: 1 as Volume }),
      trade({ price: 101 as Price, volume: 1 as Volume }),
    ]),
    101n,
  );
  assert.equal(
    tradesAveragePrice([
      trade({ price: 100 as Price, volume: 2 as Volume }),
      trade({ price: 101 as Price, volume: 1 as Volume }),
    ]),
    100n,
  );
});

test('order: open limit order with nothing executed', () => {
  const record = serializeOrder(order(), BTCEUR, catalogue, []);
  assert.deepEqual(record, {
    id: 42,
    user_id: 7,
    transaction_id: orderTransactionId(42),
    status: 'open',
    open_time: '1700000000.1234',
    close_time: null,
    expire_time: '0.0000',
    reason: null,
    pair: 'BTCEUR',
    type: 'buy',
    order_type: 'limit',
    description: {
      pair: 'BTCEUR',
      type: 'buy',
      close: '',
      order: 'buy 1.25000000 BTCEUR @ limit 30000.0',
      price: '30000.0',
      leverage: 'none',
      orderType: 'limit',
      secondaryPrice: null,
    },
    volume: { amount: '1.25000000', currency: 'BTC' },
    volume_executed: { amount: '0.00000000', currency: 'BTC' },
    fee: null,
    price: { amount: '30000.0', currency: 'EUR' },
    secondary_price: null,
    limit_price: null,
    cost: null,
    asset_pair: { id: 1, name: 'BTCEUR', display_name: 'BTC/EUR', base_name: 'BTC', quote_name: 'EUR' },
    trigger_conditions: 'none',
    trades: [],
    client_order_id: null,
  });
  // The key order too: the interface's fields as before, the client id appended.
  assert.equal(Object.keys(record).at(-1), 'client_order_id');
});

test('order: the controls appended after the interface fields, defaults left out; a GTD expiry in expire_time', () => {
  const record = serializeOrder(
    order({
      timeInForce: 'GTD',
      expireTime: 1_767_225_600_123_456 as Micros,
      postOnly: true,
      clientOrderId: 'mm-7',
      stp: 'decrement',
    }),
    BTCEUR,
    catalogue,
    [],
  );
  assert.equal(record.expire_time, '1767225600.1234');
  assert.deepEqual(Object.keys(record).slice(-5), [
    'trades',
    'client_order_id',
    'time_in_force',
    'post_only',
    'stp',
  ]);
  assert.deepEqual(
    [record.client_order_id, record.time_in_force, record.post_only, record.stp],
    ['mm-7', 'GTD', true, 'decrement'],
  );
  const ioc = serializeOrder(order({ timeInForce: 'IOC', clientOrderId: 'x' }), BTCEUR, catalogue, []);
  assert.deepEqual(Object.keys(ioc).slice(-3), ['trades', 'client_order_id', 'time_in_force']);
  assert.equal(ioc.expire_time, '0.0000');
});

test('order: canceled after a partial fill, with its execution', () => {
  const record = serializeOrder(
    order({
      status: 'canceled',
      reason: 'canceled by user',
      executed: 50_000_000 as Volume,
      cost: 1_499_975 as Amount,
      fee: 2_400 as Amount,
      closeTime: 1_700_000_010_000_050 as Micros,
    }),
    BTCEUR,
    catalogue,
    [trade()],
  );
  assert.equal(record.status, 'canceled');
  assert.equal(record.reason, 'canceled by user');
  assert.equal(record.close_time, '1700000010.0000');
  assert.deepEqual(record.volume_executed, { amount: '0.50000000', currency: 'BTC' });
  assert.deepEqual(record.cost, { amount: '14999.75', currency: 'EUR' });
  assert.deepEqual(record.fee, { amount: '24.00', currency: 'EUR' });
  assert.deepEqual(record.trades, [
    {
      id: 9,
      timestamp: '2023-11-14 22:13:25',
      type: 'buy',
      volume: { amount: '0.50000000', currency: 'BTC' },
      price: { amount: '29999.5', currency: 'BTC/EUR' },
      cost: { amount: '14999.75', currency: 'EUR' },
      transaction_id: tradeTransactionId(9),
    },
  ]);
});

test('order: a market order shows its average execution price, 0 before any', () => {
  const unfilled = serializeOrder(
    order({ type: 'market', price: 0 as Price, side: 'sell' }),
    BTCEUR,
    catalogue,
    [],
  );
  assert.equal(unfilled.description.order, 'sell 1.25000000 BTCEUR @ market');
  assert.equal(unfilled.description.price, '0.0');
  assert.deepEqual(unfilled.price, { amount: '0.0', currency: 'EUR' });
  const filled = serializeOrder(
    order({ type: 'market', price: 0 as Price, status: 'closed', executed: 125_000_000 as Volume }),
    BTCEUR,
    catalogue,
    [
      trade({ price: 300_000 as Price, volume: 100_000_000 as Volume }),
      trade({ id: 10 as TradeId, price: 300_010 as Price, volume: 25_000_000 as Volume }),
    ],
  );
  // (1 × 30000.0 + 0.25 × 30001.0) / 1.25 = 30000.2
  assert.deepEqual(filled.price, { amount: '30000.2', currency: 'EUR' });
  assert.equal(filled.description.price, '0.0');
  assert.equal(filled.trades.length, 2);
});

test('user trade from the taker and from the maker side', () => {
  const t = trade({ takerType: 'market' });
  const taker: UserTrade = {
    trade: t,
    orderId: 42 as OrderId,
    side: 'buy',
    fee: 2_400 as Amount,
    taker: true,
  };
  assert.deepEqual(serializeUserTrade(taker, BTCEUR, catalogue), {
    id: 9,
    timestamp: '2023-11-14 22:13:25',
    type: 'buy',
    order_id: 42,
    order_type: 'market',
    pair_id: 1,
    pair: 'BTC/EUR',
    volume: { amount: '0.50000000', currency: 'BTC' },
    price: { amount: '29999.5', currency: 'EUR' },
    cost: { amount: '14999.75', currency: 'EUR' },
    fee: { amount: '24.00', currency: 'EUR' },
    transaction_id: tradeTransactionId(9),
    leverage: null,
  });
  const maker: UserTrade = {
    trade: t,
    orderId: 40 as OrderId,
    side: 'sell',
    fee: 1_500 as Amount,
    taker: false,
  };
  const m = serializeUserTrade(maker, BTCEUR, catalogue);
  assert.equal(m.type, 'sell');
  assert.equal(m.order_type, 'limit');
  assert.equal(m.order_id, 40);
  assert.deepEqual(m.fee, { amount: '15.00', currency: 'EUR' });
});

test('public trade', () => {
  assert.deepEqual(serializePublicTrade(trade({ takerSide: 'sell' }), BTCEUR, catalogue), {
    trade_id: 9,
    price: '29999.5',
    base_volume: '0.50000000',
    target_volume: '14999.75',
    trade_timestamp: '1700000005',
    type: 'sell',
  });
});

test('order book levels', () => {
  assert.deepEqual(
    serializeLevels(ETHBTC, [
      [512 as Price, 10_001 as Volume],
      [500 as Price, 1 as Volume],
    ]),
    [
      ['0.00512', '1.0001'],
      ['0.00500', '0.0001'],
    ],
  );
});

test('wallet entry: total = available + held; pending = held by open orders', () => {
  const valuation: Valuation = {
    currency: 'EUR',
    decimals: 2,
    value: (a, amount) => (a.code === 'BTC' ? (BigInt(amount) * 30_000n) / 1_000_000n : 0n),
  };
  assert.deepEqual(
    serializeWalletEntry(
      BTC,
      { available: 150_000_000 as Amount, reserved: 50_000_000 as Amount },
      valuation,
    ),
    {
      asset_id: 'BTC',
      asset_name: 'Bitcoin',
      type: 'crypto',
      balance: { balance_total: '2.00000000', balance_total_in_fiat: '60000.00' },
      pending: { has_pending: true, balance_pending: '0.50000000', balance_pending_in_fiat: '15000.00' },
      balance_currency: 'EUR',
    },
  );
  const none = serializeWalletEntry(ETH, { available: 0 as Amount, reserved: 0 as Amount }, valuation);
  assert.equal(none.balance.balance_total, '0.000000000000');
  assert.equal(none.pending.has_pending, false);
  assert.equal(none.pending.balance_pending_in_fiat, '0.00');
});

test('pagination meta like LengthAwarePaginator', () => {
  const path = 'https://x.test/v1/closed-orders';
  assert.deepEqual(paginationMeta({ page: 2, perPage: 10 }, 25, 10, path), {
    current_page: 2,
    from: 11,
    to: 20,
    path,
    per_page: 10,
    total: 25,
    last_page: 3,
  });
  assert.deepEqual(paginationMeta({ page: 3, perPage: 10 }, 25, 5, path).to, 25);
  const empty = paginationMeta({ page: 1, perPage: 10 }, 0, 0, path);
  assert.equal(empty.from, null);
  assert.equal(empty.to, null);
  assert.equal(empty.last_page, 1);
  assert.equal(paginationMeta({ page: 9, perPage: 10 }, 25, 0, path).from, null);
});

test('property: every amount text round-trips to its integer (no float anywhere)', () => {
  fc.assert(
    fc.property(
      fc.maxSafeNat(),
      fc.maxSafeNat(),
      fc.integer({ min: 1, max: 2 ** 40 }),
      (price, volume, cost) => {
        const t = trade({ price: price as Price, volume: volume as Volume, cost: cost as Amount });
        const rec = serializePublicTrade(t, BTCEUR, catalogue);
        assert.equal(BigInt(rec.price.replace('.', '')), BigInt(price));
        assert.equal(BigInt(rec.base_volume.replace('.', '')), BigInt(volume));
        assert.equal(BigInt(rec.target_volume.replace('.', '')), BigInt(cost));
      },
    ),
  );
});
