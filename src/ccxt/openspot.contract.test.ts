/**
 * The ccxt contract: every unified and watch* method of `openspot/ccxt`, driven through ccxt
 * against a test venue, each result checked against the venue's own answers — raw signed REST
 * and the admin API, never the class itself. Includes partial fills, a market order with no
 * liquidity, a canceled partly filled order, book-update gaps injected through chaos, a lost
 * order answer retried under the same Idempotency-Key, and each error class.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import {
  AuthenticationError,
  ExchangeNotAvailable,
  InsufficientFunds,
  InvalidOrder,
  type Order,
  OrderNotFound,
  PermissionDenied,
  RateLimitExceeded,
  type Str,
} from 'ccxt';
import { signRequest } from '../client/sign.js';
import type {
  Candle,
  Envelope,
  HistoricalTrades,
  Market as VenueMarket,
  Order as VenueOrder,
  OrderBook as VenueOrderBook,
  Ticker as VenueTicker,
  UserTrade as VenueUserTrade,
} from '../client/types.js';
import { startTestVenue, type TestAccount, type TestVenue } from '../testing/index.js';
import { OpenSpot } from './index.js';

let venue: TestVenue;
let bot: TestAccount;
let reader: TestAccount;
let exchange: OpenSpot;

/** A request signed by hand, as the interface documents it: the venue's own answer. */
async function raw<T>(method: string, path: string, as: TestAccount = bot, body?: unknown): Promise<T> {
  const text = body === undefined ? '' : JSON.stringify(body);
  const headers: Record<string, string> = {
    'X-API-Key': as.apiKey,
    'X-API-Sign': signRequest(method, text, as.apiSecret),
  };
  if (text !== '') headers['Content-Type'] = 'application/json';
  const response = await fetch(`${venue.baseUrl}${path}`, {
    method,
    headers,
    ...(text === '' ? {} : { body: text }),
  });
  return (await response.json()) as T;
}

/** GET /v1/fees (docs/interface-decisions.md H193). */
interface FeeRecord {
  readonly wsname: string;
  readonly maker_fee: string;
  readonly taker_fee: string;
}
type Listed<T> = Envelope<T[]>;

/** A resting order of another user (the venue's market maker), placed through the signed API. */
const offer = (pair: string, direction: 'buy' | 'sell', price: string, volume: string) =>
  venue.admin.placeRestingOrder({ pair, direction, price, volume });

/** The one item a list must hold. */
function first<T>(list: readonly T[]): T {
  const [item] = list;
  assert.ok(item !== undefined, 'an empty list');
  return item;
}

const num = (decimal: string | null | undefined): number | undefined =>
  decimal === null || decimal === undefined ? undefined : Number(decimal);

const openSpot = (account: TestAccount, extra: Record<string, unknown> = {}) =>
  new OpenSpot({
    apiKey: account.apiKey,
    secret: account.apiSecret,
    urls: { api: { rest: venue.baseUrl } },
    options: { wsAppKey: venue.ws.key },
    ...extra,
  });

/** The order as GET /orders/:id shows it, in ccxt's terms. */
async function assertSameOrder(order: Order): Promise<void> {
  const { data } = await raw<Envelope<VenueOrder>>('GET', `/orders/${order.id}`);
  assert.equal(order.status, data.status);
  assert.equal(order.symbol, data.asset_pair.display_name);
  assert.equal(order.side, data.type);
  assert.equal(order.type, data.order_type);
  assert.equal(order.amount, num(data.volume.amount));
  assert.equal(order.filled, num(data.volume_executed.amount));
  assert.equal(order.remaining, num(data.volume.amount)! - num(data.volume_executed.amount)!);
  assert.equal(order.cost, num(data.cost?.amount) ?? 0);
  assert.equal(order.fee?.cost, num(data.fee?.amount));
  if (data.order_type === 'limit') assert.equal(order.price, num(data.description.price));
  if (order.filled! > 0) assert.ok(Math.abs(order.average! - order.cost! / order.filled!) < 1e-6);
}

before(async () => {
  venue = await startTestVenue({
    accounts: [
      { name: 'bot', balances: { EUR: '100000', BTC: '10', ETH: '50', USD: '100000' } },
      { name: 'reader', scopes: ['read'] },
    ],
  });
  [bot, reader] = venue.accounts as [TestAccount, TestAccount];
  // A market with fees of its own: a client guessing the defaults would be wrong here.
  const created = await venue.admin.request('POST', '/markets', {
    base: 'ETH',
    quote: 'USD',
    pair_decimals: 2,
    lot_decimals: 4,
    ordermin: '0.01',
    maker_fee: '0.0005',
    taker_fee: '0.0009',
  });
  assert.equal(created.status, 201);
  exchange = openSpot(bot);
});

after(async () => {
  await exchange?.close();
  await venue?.close();
});

describe('ccxt contract: markets and market data', () => {
  test('loadMarkets: precision and limits from pairDecimals, lotDecimals and ordermin; fees from /fees', async () => {
    const markets = await exchange.loadMarkets();
    const { data } = await raw<Envelope<Record<string, VenueMarket>>>('GET', '/markets');
    const fees = (await raw<Envelope<Record<string, FeeRecord>>>('GET', '/fees')).data;
    assert.deepEqual(
      Object.keys(markets).sort(),
      Object.values(data)
        .map((m) => m.wsname)
        .sort(),
    );
    for (const record of Object.values(data)) {
      const market = markets[record.wsname]!;
      assert.equal(market.id, record.altname);
      assert.equal(market.spot, true);
      assert.equal(market.precision.price, Number(`1e-${record.pairDecimals}`));
      assert.equal(market.precision.amount, Number(`1e-${record.lotDecimals}`));
      assert.equal(market.limits.amount?.min, Number(record.ordermin));
      assert.equal(market.maker, Number(fees[record.altname]!.maker_fee));
      assert.equal(market.taker, Number(fees[record.altname]!.taker_fee));
    }
    assert.equal(markets['ETH/USD']?.maker, 0.0005);
  });

  test('fetchTradingFees: the rates /fees answers, per market', async () => {
    const fees = await exchange.fetchTradingFees();
    const { data } = await raw<Envelope<Record<string, FeeRecord>>>('GET', '/fees');
    for (const record of Object.values(data)) {
      assert.equal(fees[record.wsname]?.maker, Number(record.maker_fee));
      assert.equal(fees[record.wsname]?.taker, Number(record.taker_fee));
    }
    assert.deepEqual([fees['ETH/USD']?.maker, fees['ETH/USD']?.taker], [0.0005, 0.0009]);
  });

  test('fetchOrderBook, fetchTicker, fetchTickers: the venue’s book and tickers', async () => {
    await offer('BTC/EUR', 'sell', '50100.0', '0.4');
    await offer('BTC/EUR', 'buy', '49900.0', '0.7');
    const book = await exchange.fetchOrderBook('BTC/EUR');
    const rawBook = first(await raw<VenueOrderBook[]>('GET', '/orderbook?ticker_id=BTC/EUR&depth=0'));
    assert.deepEqual(book.asks, levels(rawBook.asks));
    assert.deepEqual(book.bids, levels(rawBook.bids));
    const ticker = await exchange.fetchTicker('BTC/EUR');
    const rawTicker = first(await raw<VenueTicker[]>('GET', '/tickers?ticker_id=BTC/EUR'));
    assert.equal(ticker.ask, Number(rawTicker.ask));
    assert.equal(ticker.bid, Number(rawTicker.bid));
    assert.equal(ticker.baseVolume, Number(rawTicker.base_volume));
    const tickers = await exchange.fetchTickers();
    const all = await raw<VenueTicker[]>('GET', '/tickers');
    assert.deepEqual(Object.keys(tickers).sort(), all.map((t) => t.ticker_id).sort());
  });
});

describe('ccxt contract: orders, fills, balances', () => {
  let partial: Order;

  test('createOrder: a limit buy partly filled stays open with filled, remaining, cost, fee and average', async () => {
    await offer('BTC/EUR', 'sell', '50000.0', '0.3');
    partial = await exchange.createOrder('BTC/EUR', 'limit', 'buy', 0.5, 50000);
    assert.equal(partial.status, 'open');
    assert.equal(partial.filled, 0.3);
    assert.equal(partial.remaining, 0.2);
    assert.equal(partial.average, 50000);
    await assertSameOrder(partial);
    const open = await exchange.fetchOpenOrders('BTC/EUR');
    const rawOpen = (await raw<Listed<VenueOrder>>('GET', '/open-orders?pair=BTC/EUR')).data;
    assert.deepEqual(open.map((o) => o.id).sort(), rawOpen.map((o) => String(o.id)).sort());
  });

  test('fetchBalance: free, used and total as the admin API reports them', async () => {
    const balance = await exchange.fetchBalance();
    for (const entry of await venue.admin.balances(bot)) {
      assert.equal(balance[entry.asset]?.total, Number(entry.total), entry.asset);
      assert.equal(balance[entry.asset]?.used, Number(entry.reserved), entry.asset);
      assert.equal(balance[entry.asset]?.free, Number(entry.available), entry.asset);
    }
    assert.ok((balance.EUR?.used ?? 0) > 0, 'the open order holds EUR');
  });

  test('cancelOrder: a partly filled order is canceled with its fills kept; fetchClosedOrders lists it', async () => {
    const canceled = await exchange.cancelOrder(partial.id as string, 'BTC/EUR');
    assert.equal(canceled.status, 'canceled');
    assert.equal(canceled.filled, 0.3);
    assert.equal(canceled.remaining, 0.2);
    await assertSameOrder(canceled);
    const closed = await exchange.fetchClosedOrders('BTC/EUR');
    const found = closed.find((o) => o.id === partial.id);
    assert.ok(found);
    await assertSameOrder(found);
    assert.equal(
      (await exchange.fetchOpenOrders('BTC/EUR')).length,
      (await raw<Listed<VenueOrder>>('GET', '/open-orders?pair=BTC/EUR')).data.length,
    );
  });

  test('a market order with no liquidity is canceled with nothing filled', async () => {
    const order = await exchange.createOrder('ETH/EUR', 'market', 'sell', 1);
    assert.equal(order.status, 'canceled');
    assert.equal(order.filled, 0);
    assert.equal(order.remaining, 1);
    await assertSameOrder(order);
    assert.equal((await raw<Envelope<VenueOrder>>('GET', `/orders/${order.id}`)).data.reason, 'no liquidity');
  });

  test('a market order that fills: average and cost from its executions; fetchOrder agrees', async () => {
    await offer('ETH/USD', 'sell', '3000.00', '0.5');
    await offer('ETH/USD', 'sell', '3010.00', '0.5');
    const order = await exchange.createOrder('ETH/USD', 'market', 'buy', 0.8);
    assert.equal(order.status, 'closed');
    assert.equal(order.filled, 0.8);
    await assertSameOrder(order);
    await assertSameOrder(await exchange.fetchOrder(order.id as string));
    // The market's own taker fee (0.09 %) was charged: 0.5 × 3000 + 0.3 × 3010 = 2403 USD.
    assert.equal(
      order.fee?.cost,
      Number((await raw<Envelope<VenueOrder>>('GET', `/orders/${order.id}`)).data.fee?.amount),
    );
    assert.equal(order.fee?.cost, 2.1627);
  });

  test('fetchMyTrades: the caller’s trades as GET /trades answers them', async () => {
    const mine = await exchange.fetchMyTrades();
    const { data } = await raw<Listed<VenueUserTrade>>('GET', '/trades');
    assert.equal(mine.length, data.length);
    for (const record of data) {
      const trade = mine.find((t) => t.id === String(record.id));
      assert.ok(trade, `trade ${record.id}`);
      assert.equal(trade.order, String(record.order_id));
      assert.equal(trade.symbol, record.pair);
      assert.equal(trade.side, record.type);
      assert.equal(trade.price, Number(record.price.amount));
      assert.equal(trade.amount, Number(record.volume.amount));
      assert.equal(trade.cost, Number(record.cost.amount));
      assert.equal(trade.fee?.cost, Number(record.fee.amount));
      assert.equal(trade.fee?.currency, record.fee.currency);
    }
    const btc = await exchange.fetchMyTrades('BTC/EUR');
    assert.ok(btc.length > 0 && btc.every((t) => t.symbol === 'BTC/EUR'));
  });

  test('fetchTrades and fetchOHLCV: public history as /historical_trades and /ohlc answer it', async () => {
    const trades = await exchange.fetchTrades('BTC/EUR');
    const history = await raw<HistoricalTrades>('GET', '/historical_trades?ticker_id=BTC/EUR');
    const ids = [...history.buy, ...history.sell].map((t) => String(t.trade_id)).sort();
    assert.deepEqual(trades.map((t) => t.id).sort(), ids);
    for (let i = 1; i < trades.length; i++) assert.ok(trades[i]!.timestamp! >= trades[i - 1]!.timestamp!);
    const since = trades[0]!.timestamp!;
    assert.deepEqual(
      (await exchange.fetchTrades('BTC/EUR', since, 1)).map((t) => t.id),
      [trades[0]!.id],
    );
    const candles = await exchange.fetchOHLCV('BTC/EUR', '1m');
    const rawCandles = await raw<Candle[]>('GET', '/ohlc?ticker_id=BTC/EUR&interval=1');
    assert.deepEqual(
      candles,
      rawCandles.map((c) => [c.time * 1000, +c.open, +c.high, +c.low, +c.close, +c.volume]),
    );
    assert.deepEqual(await exchange.fetchOHLCV('BTC/EUR', '1m', candles[0]![0], 1), [candles[0]]);
  });
});

describe('ccxt contract: errors map to ccxt classes, and nothing is placed', () => {
  const openCount = async () => (await raw<Listed<VenueOrder>>('GET', '/open-orders')).data.length;

  test('Invalid Signature → AuthenticationError', async () => {
    const forged = openSpot({ ...bot, apiSecret: reader.apiSecret });
    await assert.rejects(forged.fetchBalance(), AuthenticationError);
  });

  test('Access Denied → PermissionDenied (a read-only key placing an order)', async () => {
    const readOnly = openSpot(reader);
    const before = await openCount();
    await assert.rejects(readOnly.createOrder('BTC/EUR', 'limit', 'buy', 0.01, 40000), PermissionDenied);
    assert.equal(await openCount(), before);
  });

  test('a trade-only key loads the public markets (fees unknown), and reading is PermissionDenied', async () => {
    const tradeOnly = openSpot(await venue.admin.createAccount({ scopes: ['trade'] }));
    const markets = await tradeOnly.loadMarkets();
    assert.equal(markets['BTC/EUR']?.maker, undefined);
    await assert.rejects(tradeOnly.fetchBalance(), PermissionDenied);
  });

  test('unknown order → OrderNotFound, on fetch and on cancel; canceling a canceled order too', async () => {
    await assert.rejects(exchange.fetchOrder('999999'), OrderNotFound);
    await assert.rejects(exchange.cancelOrder('999999'), OrderNotFound);
    const order = await exchange.createOrder('BTC/EUR', 'limit', 'buy', 0.01, 40000);
    await exchange.cancelOrder(order.id as string);
    await assert.rejects(exchange.cancelOrder(order.id as string), OrderNotFound);
  });

  test('insufficient funds → InsufficientFunds', async () => {
    const before = await openCount();
    await assert.rejects(exchange.createOrder('BTC/EUR', 'limit', 'buy', 5, 50000), InsufficientFunds);
    assert.equal(await openCount(), before);
  });

  test('any other invalid order → InvalidOrder (below ordermin)', async () => {
    const before = await openCount();
    await assert.rejects(exchange.createOrder('BTC/EUR', 'limit', 'buy', 0.00001, 40000), InvalidOrder);
    assert.equal(await openCount(), before);
  });

  test('429 → RateLimitExceeded and 503 → ExchangeNotAvailable (fault injection)', async () => {
    await venue.chaos.set({ errors: { rate: 1, status: 429, count: 1 } }, { apiKey: bot.apiKey });
    await assert.rejects(exchange.fetchBalance(), RateLimitExceeded);
    const before = await openCount();
    await venue.chaos.set({ errors: { rate: 1, status: 503, count: 1 } }, { apiKey: bot.apiKey });
    await assert.rejects(exchange.createOrder('BTC/EUR', 'limit', 'buy', 0.01, 40000), ExchangeNotAvailable);
    assert.equal(await openCount(), before);
    await venue.chaos.clear();
  });

  test('a lost answer retried by ccxt places the order once (Idempotency-Key)', async () => {
    const retrying = openSpot(bot, {
      timeout: 1500,
      options: { wsAppKey: venue.ws.key, maxRetriesOnFailure: 2 },
    });
    const before = (await raw<Listed<VenueOrder>>('GET', '/open-orders')).data.map((o) => o.id);
    await venue.chaos.set({ timeouts: { rate: 1, hold_ms: 3000, count: 1 } }, { apiKey: bot.apiKey });
    const order = await retrying.createOrder('BTC/EUR', 'limit', 'buy', 0.02, 41000);
    await venue.chaos.clear();
    const after = (await raw<Listed<VenueOrder>>('GET', '/open-orders')).data.map((o) => o.id);
    assert.deepEqual(
      after.filter((id: number) => !before.includes(id)),
      [Number(order.id)],
    );
    await exchange.cancelOrder(order.id as string);
    await retrying.close();
  });
});

describe('ccxt contract: order controls', () => {
  /** The control fields of GET /orders/:id (H163): shown when not the default. */
  type Controlled = VenueOrder & {
    client_order_id: string | null;
    post_only?: boolean;
    time_in_force?: string;
  };
  const controls = async (id: Str) => (await raw<Envelope<Controlled>>('GET', `/orders/${id}`)).data;
  let resting: Order;

  test('createOrder maps clientOrderId, postOnly and timeInForce to the venue’s fields', async () => {
    resting = await exchange.createOrder('BTC/EUR', 'limit', 'buy', 0.01, 30000, {
      clientOrderId: 'ccxt-1',
      postOnly: true,
    });
    const venueOrder = await controls(resting.id);
    assert.equal(venueOrder.client_order_id, 'ccxt-1');
    assert.equal(venueOrder.post_only, true);
    assert.equal(resting.clientOrderId, 'ccxt-1');
    assert.equal(resting.postOnly, true);
    await assertSameOrder(resting);
    // Nothing rests at 40000 or below on the ask side: a fill-or-kill buy ends at once.
    const fok = await exchange.createOrder('BTC/EUR', 'limit', 'buy', 0.5, 40000, { timeInForce: 'FOK' });
    assert.equal(fok.timeInForce, 'FOK');
    assert.equal(fok.status, 'canceled');
    assert.equal((await controls(fok.id)).time_in_force, 'FOK');
    await assertSameOrder(fok);
  });

  test('a post-only order that would take ends canceled with nothing filled, and never rests', async () => {
    const before = (await raw<Listed<VenueOrder>>('GET', '/open-orders')).data.length;
    const [ask] = (await exchange.fetchOrderBook('BTC/EUR', 1)).asks;
    const order = await exchange.createOrder('BTC/EUR', 'limit', 'buy', 0.01, ask![0]!, { postOnly: true });
    assert.equal(order.status, 'canceled');
    assert.equal(order.filled, 0);
    assert.equal(order.postOnly, true);
    await assertSameOrder(order);
    assert.equal((await raw<Listed<VenueOrder>>('GET', '/open-orders')).data.length, before);
  });

  test('editOrder: a new price and amount, as the venue then shows the order', async () => {
    const amended = await exchange.editOrder(resting.id as string, 'BTC/EUR', 'limit', 'buy', 0.02, 30500);
    assert.equal(amended.price, 30500);
    assert.equal(amended.amount, 0.02);
    assert.equal(amended.clientOrderId, 'ccxt-1');
    await assertSameOrder(amended);
  });

  test('createOrders: each order placed or refused on its own', async () => {
    const [placed, refused] = await exchange.createOrders([
      { symbol: 'BTC/EUR', type: 'limit', side: 'buy', amount: 0.01, price: 31000 },
      { symbol: 'BTC/EUR', type: 'limit', side: 'buy', amount: 0.00001, price: 31000 },
    ]);
    assert.equal(placed?.status, 'open');
    await assertSameOrder(placed!);
    assert.equal(refused?.status, 'rejected');
  });

  test('cancelAllOrders: every open order of the pair, and only of that pair', async () => {
    const other = await exchange.createOrder('ETH/EUR', 'limit', 'buy', 0.01, 1000);
    await exchange.cancelAllOrders('BTC/EUR');
    assert.deepEqual((await raw<Listed<VenueOrder>>('GET', '/open-orders?pair=BTC/EUR')).data, []);
    const open = (await raw<Listed<VenueOrder>>('GET', '/open-orders')).data.map((o) => String(o.id));
    assert.ok(open.includes(other.id as string));
    await exchange.cancelOrder(other.id as string);
  });
});

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Calls a watch* method in a loop, as a ccxt bot does, keeping every result; `until` waits for a
 * result that passes a check. ccxt resolves a call with the next message only, so a test that
 * awaited single calls could miss one that arrived in between.
 */
function collect<T>(watch: () => Promise<T>) {
  const results: T[] = [];
  let running = true;
  void (async () => {
    while (running) {
      try {
        results.push(await watch());
      } catch {
        if (running) await sleep(50);
      }
    }
  })();
  return {
    async until(check: (result: T) => boolean, what: string, ms = 10_000): Promise<T> {
      const deadline = Date.now() + ms;
      for (;;) {
        const hit = results.findLast(check);
        if (hit !== undefined) return hit;
        if (Date.now() > deadline) throw new Error(`not seen within ${ms} ms: ${what}`);
        await sleep(20);
      }
    },
    stop() {
      running = false;
    },
  };
}

const levels = (side: readonly (readonly string[])[]) => side.map(([p, q]) => [Number(p), Number(q)]);

describe('ccxt contract: conditional orders', () => {
  // On BTC/USD, where no other test trades: the last price is what this block makes it.
  const symbol = 'BTC/USD';
  let crowd: OpenSpot;
  /** One trade at `price`: the venue's market maker quotes, a second account takes. */
  const tradeAt = async (price: string, takerSide: 'buy' | 'sell') => {
    await offer(symbol, takerSide === 'buy' ? 'sell' : 'buy', price, '0.001');
    await crowd.createOrder(symbol, 'market', takerSide, 0.001);
  };
  const venueOrder = async (id: Str) => (await raw<Envelope<VenueOrder>>('GET', `/orders/${id}`)).data;
  let stop: Order;

  before(async () => {
    crowd = openSpot(await venue.admin.createAccount({ balances: { USD: '100000', BTC: '1' } }));
    await tradeAt('60000.0', 'buy');
  });
  after(async () => {
    await crowd?.close();
  });

  test('createStopLossOrder with a price: a stop-loss-limit, shown as Kraken’s class shows one', async () => {
    stop = await exchange.createStopLossOrder(symbol, 'limit', 'sell', 0.01, 57900, 58000);
    const placed = await venueOrder(stop.id);
    assert.equal(placed.order_type, 'stop-loss-limit');
    assert.equal(placed.price.amount, '58000.0');
    assert.equal(placed.limit_price?.amount, '57900.0');
    assert.equal(stop.status, 'open');
    assert.equal(stop.type, 'limit');
    assert.equal(stop.price, 57900);
    assert.equal(stop.triggerPrice, 58000);
    assert.equal(stop.stopLossPrice, 58000);
    assert.equal(stop.takeProfitPrice, undefined);
    assert.equal(stop.info.trigger_conditions, 'last price <= 58000.0');
  });

  test('take-profit at market, a trigger order, trailing stops by percent and by amount', async () => {
    const take = await exchange.createTakeProfitOrder(symbol, 'market', 'sell', 0.01, undefined, 65000);
    assert.equal((await venueOrder(take.id)).order_type, 'take-profit');
    assert.equal(take.type, 'market');
    assert.equal(take.price, undefined);
    assert.equal(take.takeProfitPrice, 65000);
    const trigger = await exchange.createTriggerOrder(symbol, 'market', 'sell', 0.01, undefined, 57000);
    assert.equal((await venueOrder(trigger.id)).order_type, 'stop-loss');
    const percent = await exchange.createTrailingPercentOrder(symbol, 'market', 'sell', 0.01, undefined, 2);
    assert.equal(
      (await venueOrder(percent.id)).trigger_conditions,
      'last price <= 58800.0 (trailing 2% below the best price 60000.0)',
    );
    assert.equal(percent.triggerPrice, 58800);
    const amount = await exchange.createTrailingAmountOrder(symbol, 'market', 'sell', 0.01, undefined, 150.5);
    assert.equal(
      (await venueOrder(amount.id)).trigger_conditions,
      'last price <= 59849.5 (trailing 150.5 below the best price 60000.0)',
    );
    assert.equal(amount.type, 'market');
    for (const order of [take, trigger, percent, amount])
      await exchange.cancelOrder(order.id as string, symbol);
  });

  test('a trigger the last price already reached → InvalidOrder, and nothing is placed', async () => {
    const before = (await raw<Listed<VenueOrder>>('GET', '/open-orders')).data.length;
    await assert.rejects(
      exchange.createStopLossOrder(symbol, 'market', 'sell', 0.01, undefined, 61000),
      InvalidOrder,
    );
    assert.equal((await raw<Listed<VenueOrder>>('GET', '/open-orders')).data.length, before);
  });

  test('editOrder moves the trigger; a trade there fires the stop, which then sells at its limit', async () => {
    const moved = await exchange.editOrder(stop.id as string, symbol, 'limit', 'sell', undefined, undefined, {
      triggerPrice: 58500,
    });
    assert.equal(moved.triggerPrice, 58500);
    assert.equal((await venueOrder(stop.id)).price.amount, '58500.0');
    await offer(symbol, 'buy', '57950.0', '0.02');
    await tradeAt('58500.0', 'sell');
    const fired = await exchange.fetchOrder(stop.id as string);
    assert.equal(fired.status, 'closed');
    assert.equal(fired.filled, 0.01);
    assert.equal(fired.average, 57950);
    assert.equal(fired.stopLossPrice, 58500);
    assert.equal(fired.info.trigger_conditions, 'triggered: last price <= 58500.0');
  });
});

describe('ccxt contract: watch* methods over the WebSocket', () => {
  test('watchOrderBook: the venue’s book, kept through dropped updates (gaps resubscribe)', async () => {
    const watcher = openSpot(bot);
    const books = collect(() => watcher.watchOrderBook('BTC/EUR'));
    try {
      await books.until(() => true, 'the snapshot');
      // Half of the book updates to every connection are lost from here on.
      await venue.chaos.set({ book_updates: { drop: 0.5 } });
      for (let i = 1; i <= 12; i++) await offer('BTC/EUR', 'sell', String(52000 + i * 10), '0.1');
      await venue.chaos.clear();
      // One more change after the faults: the copy must end equal to the venue's.
      await offer('BTC/EUR', 'sell', '53000.0', '0.1');
      const rawBook = first(await raw<VenueOrderBook[]>('GET', '/orderbook?ticker_id=BTC/EUR&depth=0'));
      const expected = JSON.stringify([levels(rawBook.bids), levels(rawBook.asks)]);
      const book = await books.until((b) => JSON.stringify([b.bids, b.asks]) === expected, 'the REST book');
      assert.deepEqual([[...book.bids], [...book.asks]], [levels(rawBook.bids), levels(rawBook.asks)]);
      const metrics = await fetch(`${venue.url}/metrics`, {
        headers: { authorization: `Bearer ${venue.admin.token}` },
      });
      assert.match(await metrics.text(), /openspot_chaos_faults_total\{fault="book_drop"\} [1-9]/);
    } finally {
      books.stop();
      await venue.chaos.clear();
      await watcher.close();
    }
  });

  test('watchTicker, watchTrades, watchOHLCV: a trade as the REST API reports it', async () => {
    const watcher = openSpot(bot);
    const tickers = collect(() => watcher.watchTicker('BTC/EUR'));
    const trades = collect(() => watcher.watchTrades('BTC/EUR'));
    const candles = collect(() => watcher.watchOHLCV('BTC/EUR', '1m'));
    try {
      await tickers.until(() => true, 'the ticker snapshot');
      await trades.until(() => true, 'the trades snapshot');
      // Below the best ask and above the best bid: it rests, then the market buy takes it.
      await offer('BTC/EUR', 'sell', '50050.0', '0.05');
      await exchange.createOrder('BTC/EUR', 'market', 'buy', 0.05);
      const history = await raw<HistoricalTrades>(
        'GET',
        '/historical_trades?ticker_id=BTC/EUR&limit=1&type=buy',
      );
      const newest = first(history.buy);
      const batch = await trades.until(
        (list) => list.some((t) => t.id === String(newest.trade_id)),
        'the trade',
      );
      const trade = batch.find((t) => t.id === String(newest.trade_id))!;
      assert.equal(trade.price, Number(newest.price));
      assert.equal(trade.amount, Number(newest.base_volume));
      assert.equal(trade.side, 'buy');
      const rawTicker = first(await raw<VenueTicker[]>('GET', '/tickers?ticker_id=BTC/EUR'));
      const ticker = await tickers.until(
        (t) => t.last === Number(newest.price),
        'the ticker after the trade',
      );
      assert.equal(ticker.last, Number(rawTicker.last_price));
      assert.equal(ticker.ask, Number(rawTicker.ask));
      const rawCandle = first(await raw<Candle[]>('GET', '/ohlc?ticker_id=BTC/EUR&interval=1&limit=1'));
      const expected = [
        rawCandle.time * 1000,
        +rawCandle.open,
        +rawCandle.high,
        +rawCandle.low,
        +rawCandle.close,
        +rawCandle.volume,
      ];
      const seen = await candles.until(
        (list) => JSON.stringify(list.at(-1)) === JSON.stringify(expected),
        'the candle REST reports',
      );
      assert.deepEqual(seen.at(-1), expected);
    } finally {
      for (const loop of [tickers, trades, candles]) loop.stop();
      await watcher.close();
    }
  });

  test('watchOrders and watchMyTrades: the private channel, with the user id asked of /account', async () => {
    const watcher = openSpot(bot); // no uid given
    // An open order of the bot: the channel's snapshot then carries it, which shows the
    // subscription is in place before anything happens.
    const resting = await exchange.createOrder('ETH/EUR', 'limit', 'buy', 0.01, 1000);
    const orders = collect(() => watcher.watchOrders('ETH/EUR'));
    const myTrades = collect(() => watcher.watchMyTrades('ETH/EUR'));
    try {
      await orders.until((list) => list.some((o) => o.id === resting.id), 'the snapshot');
      assert.equal(watcher.uid, String(bot.userId));
      await offer('ETH/EUR', 'sell', '2000.00', '0.3');
      const placed = await exchange.createOrder('ETH/EUR', 'limit', 'buy', 0.5, 2000);
      const list = await orders.until(
        (l) => l.some((o) => o.id === placed.id && o.filled === 0.3),
        'the partial fill',
      );
      await assertSameOrder(list.find((o) => o.id === placed.id)!);
      const fills = await myTrades.until((l) => l.some((t) => t.order === placed.id), 'the fill');
      const fill = fills.find((t) => t.order === placed.id)!;
      const { data } = await raw<Listed<VenueUserTrade>>('GET', '/trades?pairs[]=ETH/EUR');
      const record = data.find((t) => String(t.order_id) === placed.id);
      assert.ok(record, 'the fill in GET /trades');
      assert.equal(fill.id, String(record.id));
      assert.equal(fill.amount, Number(record.volume.amount));
      assert.equal(fill.price, Number(record.price.amount));
      assert.equal(fill.fee?.cost, Number(record.fee.amount));
      await exchange.cancelOrder(placed.id as string);
      const canceled = await orders.until(
        (l) => l.some((o) => o.id === placed.id && o.status === 'canceled'),
        'the cancel',
      );
      await assertSameOrder(canceled.find((o) => o.id === placed.id)!);
    } finally {
      orders.stop();
      myTrades.stop();
      await exchange.cancelOrder(resting.id as string);
      await watcher.close();
    }
  });

  test('keepalive: ccxt pings and the venue’s pongs keep the connection alive', async () => {
    const watcher = openSpot(bot, { streaming: { keepAlive: 150 } });
    const tickers = collect(() => watcher.watchTicker('BTC/EUR'));
    try {
      await tickers.until(() => true, 'the snapshot');
      // Without pongs ccxt would close the connection after two missed intervals (300 ms).
      await sleep(1000);
      await offer('BTC/EUR', 'buy', '49950.0', '0.01');
      const ticker = await tickers.until((t) => t.bid === 49950, 'the new best bid');
      const rawTicker = first(await raw<VenueTicker[]>('GET', '/tickers?ticker_id=BTC/EUR'));
      assert.equal(ticker.bid, Number(rawTicker.bid));
    } finally {
      tickers.stop();
      await watcher.close();
    }
  });
});
