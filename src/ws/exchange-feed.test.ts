/**
 * The feed end to end: a real exchange on an in-memory SQLite store, the realtime server with the
 * exchange's channels, and raw WebSocket clients watching every channel while orders trade.
 */
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { test } from 'node:test';
import type { Amount, AssetCode, FeeRate, MarketId, Micros, Price, UserId, Volume } from '../domain/types.js';
import type { Command } from '../engine/types.js';
import { openExchange } from '../sequencer/sequencer.js';
import { asyncStore } from '../store/async-store.js';
import { SqliteStore } from '../store/sqlite/sqlite-store.js';
import { signChannelAuth } from './channel-auth.js';
import { bookChecksum, type TextLevel } from './crc32.js';
import { startExchangeFeed } from './exchange-feed.js';
import { mountRealtime } from './mount.js';
import { APP_KEY, APP_SECRET, type Frame, RawClient } from './test-support.js';

const BTC = 'BTC' as AssetCode;
const EUR = 'EUR' as AssetCode;
const MAKER = 1 as UserId;
const TAKER = 2 as UserId;

async function setup() {
  const store = SqliteStore.open({ path: ':memory:' });
  const exchange = await openExchange({ store: asyncStore(store) });
  const submit = async (command: Command) => {
    const result = await exchange.submit(command);
    assert.ok(result.ok, JSON.stringify(result));
    return result;
  };
  await submit({ kind: 'createAsset', code: 'BTC', name: 'Bitcoin', type: 'crypto', decimals: 8 });
  await submit({ kind: 'createAsset', code: 'EUR', name: 'Euro', type: 'fiat', decimals: 2 });
  await submit({
    kind: 'createMarket',
    base: BTC,
    quote: EUR,
    pairDecimals: 1,
    lotDecimals: 8,
    ordermin: 10_000 as Volume,
    makerFee: 100_000 as FeeRate,
    takerFee: 160_000 as FeeRate,
  });
  await submit({ kind: 'deposit', userId: MAKER, asset: BTC, amount: 200_000_000 as Amount });
  await submit({ kind: 'deposit', userId: TAKER, asset: EUR, amount: 10_000_000 as Amount });
  const marketId = exchange.catalogue.marketByName('BTCEUR')!.id;

  const http = createServer();
  const { realtime, close } = mountRealtime({
    server: http,
    exchange,
    appKey: APP_KEY,
    appSecret: APP_SECRET,
    clock: () => (Date.now() * 1000) as Micros,
    closeGraceMs: 500,
  });
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  const url = `ws://127.0.0.1:${(http.address() as AddressInfo).port}/app/${APP_KEY}`;
  return {
    exchange,
    marketId,
    realtime,
    url,
    submit,
    place: (userId: UserId, side: 'buy' | 'sell', type: 'limit' | 'market', price: number, volume: number) =>
      submit({
        kind: 'placeOrder',
        userId,
        marketId: marketId as MarketId,
        side,
        type,
        price: price as Price,
        volume: volume as Volume,
      }),
    async stop() {
      await close();
      await new Promise<void>((resolve) => http.close(() => resolve()));
      await exchange.close();
      store.close();
    },
  };
}

/** Subscribes and returns the snapshot frame, or undefined when the channel has none yet. */
async function subscribe(client: RawClient, socketId: string, channel: string): Promise<unknown> {
  const auth = channel.startsWith('private-')
    ? signChannelAuth(APP_KEY, APP_SECRET, socketId, channel)
    : undefined;
  client.subscribe(channel, auth);
  await client.next((f) => f.event === 'pusher_internal:subscription_succeeded' && f.channel === channel);
  // The snapshot, when there is one, is sent in the same turn as the confirmation.
  await new Promise((resolve) => setTimeout(resolve, 20));
  const snapshot = client.pending().find((f) => f.channel === channel && f.event === 'snapshot');
  return snapshot === undefined ? undefined : JSON.parse(String(snapshot.data));
}

const on =
  (channel: string, event = 'update') =>
  (f: Frame) =>
    f.channel === channel && f.event === event;
const payload = (f: Frame): { channel: string; type: string; data: unknown } => JSON.parse(String(f.data));

test('exchange feed: snapshots on subscribe, then updates of every channel after each commit', async () => {
  const x = await setup();
  try {
    const { client, socketId } = await RawClient.established(x.url);
    const channels = {
      book: 'order-book.BTCEUR',
      trade: 'trade.BTCEUR',
      ticker: 'ticker-information.BTCEUR',
      ohlc: 'ohlc.BTCEUR.1',
      maker: 'private-order-executed.1',
      taker: 'private-order-executed.2',
    };
    const snapshots: Record<string, unknown> = {};
    for (const [name, channel] of Object.entries(channels))
      snapshots[name] = await subscribe(client, socketId, channel);

    assert.deepEqual(snapshots.book, {
      channel: 'book',
      type: 'snapshot',
      data: { symbol: 'BTC/EUR', bids: [], asks: [], sequence: 0, checksum: 0 },
    });
    assert.deepEqual(snapshots.trade, { channel: 'trade', type: 'snapshot', data: [] });
    assert.equal((snapshots.ticker as { data: { last: string }[] }).data[0]!.last, '0.0');
    assert.equal(snapshots.ohlc, undefined, 'no candle before the first trade');
    assert.deepEqual(snapshots.maker, {
      channel: 'executions',
      type: 'snapshot',
      data: { orders: [], truncated: false },
    });

    // The maker rests 1 BTC at 30000.0.
    await x.place(MAKER, 'sell', 'limit', 300_000, 100_000_000);
    const book1 = payload(await client.next(on(channels.book)));
    assert.deepEqual(book1.data, {
      symbol: 'BTC/EUR',
      bids: [],
      asks: { price: '30000.0', qty: '1.00000000' },
      sequence: 1,
      checksum: bookChecksum([{ price: '30000.0', qty: '1.00000000' }], []),
    });
    const ticker1 = payload(await client.next(on(channels.ticker))).data as Record<string, string>[];
    assert.equal(ticker1[0]!.ask, '30000.0');
    assert.equal(ticker1[0]!.ask_qty, '1.00000000');
    const accepted = payload(await client.next(on(channels.maker))).data as {
      event: string;
      order: { id: number; status: string; trades: unknown[] };
      trades: unknown[];
    };
    assert.equal(accepted.event, 'accepted');
    assert.equal(accepted.order.status, 'open');
    assert.deepEqual(accepted.trades, []);
    const makerOrderId = accepted.order.id;

    // The taker buys 0.4 BTC at market.
    await x.place(TAKER, 'buy', 'market', 0, 40_000_000);
    const trades = payload(await client.next(on(channels.trade)));
    assert.equal(trades.type, 'update');
    const [item] = trades.data as Record<string, unknown>[];
    assert.deepEqual(
      { ...item, timestamp: undefined, trade_id: undefined },
      {
        symbol: 'BTC/EUR',
        side: 'buy',
        price: '30000.0',
        qty: '0.40000000',
        ord_type: 'market',
        trade_id: undefined,
        timestamp: undefined,
      },
    );
    assert.match(String(item!.timestamp), /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/);
    assert.equal(typeof item!.trade_id, 'number');

    const book2 = payload(await client.next(on(channels.book))).data as {
      asks: TextLevel;
      sequence: number;
    };
    assert.deepEqual(book2.asks, { price: '30000.0', qty: '0.60000000' });
    assert.equal(book2.sequence, 2);

    const ticker2 = (payload(await client.next(on(channels.ticker))).data as Record<string, string>[])[0]!;
    assert.equal(ticker2.last, '30000.0');
    assert.equal(ticker2.volume, '0.40000000');
    assert.equal(ticker2.vwap, '30000.0');
    assert.equal(ticker2.high, '30000.0');

    const candle = payload(await client.next(on(channels.ohlc))) as unknown as {
      timestamp: string;
      data: Record<string, unknown>;
    };
    assert.match(candle.timestamp, /^\d{4}-\d\d-\d\d \d\d:\d\d:00\.000000$/);
    assert.equal(candle.data.open, '30000.0');
    assert.equal(candle.data.trades, 1);
    assert.equal(candle.data.volume, '0.40000000');
    assert.equal(candle.data.interval, 1);

    const takerSteps: { event: string; order: Record<string, unknown>; trades: unknown[] }[] = [];
    for (let i = 0; i < 3; i += 1)
      takerSteps.push(payload(await client.next(on(channels.taker))).data as (typeof takerSteps)[number]);
    assert.deepEqual(
      takerSteps.map((s) => [s.event, s.order.status, s.trades.length]),
      [
        ['accepted', 'open', 0],
        ['trade', 'closed', 1],
        ['closed', 'closed', 0],
      ],
    );
    assert.deepEqual(takerSteps[1]!.order.volume_executed, { amount: '0.40000000', currency: 'BTC' });
    const makerTrade = payload(await client.next(on(channels.maker))).data as typeof accepted & {
      order: { volume_executed: unknown; status: string };
    };
    assert.equal(makerTrade.event, 'trade');
    assert.equal(makerTrade.order.id, makerOrderId);
    assert.equal(makerTrade.order.status, 'open');
    assert.deepEqual(makerTrade.order.volume_executed, { amount: '0.40000000', currency: 'BTC' });
    assert.equal(makerTrade.order.trades.length, 1);

    // A late subscriber's snapshots agree with what the updates built.
    const late = await RawClient.established(x.url);
    const bookSnapshot = (await subscribe(late.client, late.socketId, channels.book)) as {
      data: { asks: TextLevel[]; sequence: number; checksum: number };
    };
    assert.deepEqual(bookSnapshot.data.asks, [book2.asks]);
    assert.equal(bookSnapshot.data.sequence, 2);
    const tradeSnapshot = (await subscribe(late.client, late.socketId, channels.trade)) as {
      data: unknown[];
    };
    assert.deepEqual(tradeSnapshot.data, trades.data);
    const candleSnapshot = (await subscribe(late.client, late.socketId, channels.ohlc)) as {
      type: string;
      data: unknown;
    };
    assert.equal(candleSnapshot.type, 'snapshot');
    assert.deepEqual(candleSnapshot.data, candle.data);
    const makerSnapshot = (await subscribe(late.client, late.socketId, channels.maker)) as {
      data: { orders: { id: number }[] };
    };
    assert.deepEqual(
      makerSnapshot.data.orders.map((o) => o.id),
      [makerOrderId],
    );
    // Unknown pairs and intervals are refused.
    late.client.subscribe('ohlc.BTCEUR.2');
    assert.equal(
      ((await late.client.next(on('ohlc.BTCEUR.2', 'pusher:subscription_error'))).data as { status: number })
        .status,
      404,
    );
    late.client.subscribe('trade.BTC/EUR');
    assert.equal(
      ((await late.client.next(on('trade.BTC/EUR', 'pusher:subscription_error'))).data as { status: number })
        .status,
      404,
    );
    late.client.close();
    client.close();
  } finally {
    await x.stop();
  }
});

test('exchange feed: a batch that changes several levels sends one order-book update per level, in order', async () => {
  const x = await setup();
  try {
    const { client, socketId } = await RawClient.established(x.url);
    const channel = 'order-book.BTCEUR';
    await subscribe(client, socketId, channel);
    // One batch: three asks rest, 30010.0 first.
    await Promise.all([
      x.place(MAKER, 'sell', 'limit', 300_100, 20_000_000),
      x.place(MAKER, 'sell', 'limit', 300_000, 10_000_000),
      x.place(MAKER, 'sell', 'limit', 300_200, 30_000_000),
    ]);
    // One taker sweeps 30000.0 and 30010.0 and takes part of 30020.0.
    await x.place(TAKER, 'buy', 'market', 0, 40_000_000);
    const updates: { bids: unknown; asks: TextLevel; sequence: number; checksum: number }[] = [];
    for (let i = 0; i < 6; i += 1)
      updates.push(payload(await client.next(on(channel))).data as (typeof updates)[number]);
    const level = (price: string, qty: string): TextLevel => ({ price, qty });
    assert.deepEqual(
      updates.map((u) => [u.bids, u.asks, u.sequence]),
      [
        [[], level('30010.0', '0.20000000'), 1],
        [[], level('30000.0', '0.10000000'), 2],
        [[], level('30020.0', '0.30000000'), 3],
        [[], level('30000.0', '0.00000000'), 4],
        [[], level('30010.0', '0.00000000'), 5],
        [[], level('30020.0', '0.20000000'), 6],
      ],
    );
    // Each checksum is the book's right after that message.
    const books = [
      [level('30010.0', '0.20000000')],
      [level('30000.0', '0.10000000'), level('30010.0', '0.20000000')],
      [level('30000.0', '0.10000000'), level('30010.0', '0.20000000'), level('30020.0', '0.30000000')],
      [level('30010.0', '0.20000000'), level('30020.0', '0.30000000')],
      [level('30020.0', '0.30000000')],
      [level('30020.0', '0.20000000')],
    ];
    assert.deepEqual(
      updates.map((u) => u.checksum),
      books.map((asks) => bookChecksum(asks, [])),
    );
    // REST and a new subscription's snapshot carry the sequence the next update follows.
    assert.equal(x.exchange.book(x.marketId, 0).sequence, 6);
    const late = await RawClient.established(x.url);
    const snapshot = (await subscribe(late.client, late.socketId, channel)) as { data: { sequence: number } };
    assert.equal(snapshot.data.sequence, 6);
    late.client.close();
    client.close();
  } finally {
    await x.stop();
  }
});

test('exchange feed: nothing is published to channels without subscribers', async () => {
  const x = await setup();
  try {
    let publishes = 0;
    const stop = startExchangeFeed({
      exchange: x.exchange,
      publisher: {
        publish: () => {
          publishes += 1;
          return 0;
        },
        subscriberCount: () => 0,
      },
    });
    await x.place(MAKER, 'sell', 'limit', 300_000, 100_000_000);
    await x.place(TAKER, 'buy', 'market', 0, 40_000_000);
    stop();
    assert.equal(publishes, 0);
  } finally {
    await x.stop();
  }
});

test('private channel: the exact cost and fee of fills that need rounding, in the messages as sent', async () => {
  const x = await setup(); // maker 0.1 %, taker 0.16 %
  try {
    const { client, socketId } = await RawClient.established(x.url);
    const maker = 'private-order-executed.1';
    const taker = 'private-order-executed.2';
    await subscribe(client, socketId, maker);
    await subscribe(client, socketId, taker);
    // The maker rests 0.00024694 BTC at 30001.3; the taker buys half of it, twice.
    await x.place(MAKER, 'sell', 'limit', 300_013, 24_694);
    await client.next(on(maker));
    const money = (amount: string) => `{"amount":"${amount}","currency":"EUR"}`;
    const eur = (amount: string) => ({ amount, currency: 'EUR' });
    for (const [makerFee, makerOrderFee, makerOrderCost] of [
      // cost floor(30001.3 x 0.00012347) = floor(3.7042605...) = 3.70 EUR. Taker: 0.16 % = 0.00592
      // -> 0.01. Maker: 0.1 % = 0.0037 -> 0.01, then its order's exact fee 0.0074 -> 0.01 again:
      // nothing more on the second fill.
      ['0.01', '0.01', '3.70'],
      ['0.00', '0.01', '7.40'],
    ] as const) {
      await x.place(TAKER, 'buy', 'market', 0, 12_347);
      await client.next(on(taker)); // accepted
      for (const [channel, fee, orderFee, orderCost] of [
        [taker, '0.01', '0.01', '3.70'],
        [maker, makerFee, makerOrderFee, makerOrderCost],
      ] as const) {
        const sent = String((await client.next(on(channel))).data);
        const { data } = JSON.parse(sent) as {
          data: {
            event: string;
            order: { cost: unknown; fee: unknown };
            trades: { cost: unknown; fee: unknown }[];
          };
        };
        assert.equal(data.event, 'trade');
        // The order as it stands, and the execution from this user's side: exact strings as sent.
        assert.ok(sent.includes(`"fee":${money(orderFee)},`), sent);
        assert.ok(sent.includes(`"cost":${money(orderCost)},`), sent);
        assert.deepEqual([data.order.cost, data.order.fee], [eur(orderCost), eur(orderFee)]);
        assert.deepEqual([data.trades[0]?.cost, data.trades[0]?.fee], [eur('3.70'), eur(fee)]);
        assert.ok(sent.includes(`"cost":${money('3.70')},"fee":${money(fee)}`), sent);
      }
      await client.next(on(taker)); // the taker's closed step
    }
    client.close();
  } finally {
    await x.stop();
  }
});
