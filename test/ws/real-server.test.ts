/**
 * The WebSocket channels against the REAL server (`startTestServer()`: HTTP /v1 and the Pusher
 * protocol on one ephemeral port, real SQLite store in a temp dir), driven over HTTP like a client
 * would: pusher-js 8, laravel-echo 2 on top of it, and raw `ws` sockets. Expected values are
 * written out from the interface and docs/interface-decisions.md W, not computed with the server's code.
 * Only 127.0.0.1 is contacted (checked at the end); every wait is bounded.
 */
import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import Echo from 'laravel-echo';
import type { MarketId } from '../../src/domain/types.js';
import { Pusher, recordOutgoingConnections } from '../../src/ws/test-support.js';
import { startTestServer, type TestServer, type Trader } from '../support/server-fixture.js';
import {
  APP_KEY,
  api,
  channelAuth,
  decimal,
  FrameLog,
  krakenChecksum,
  type Level,
  type OrderInput,
  placeOrder,
  portOf,
  SERVER_ENV,
  units,
  waitFor,
  wsUrl,
} from './helpers.js';

const outgoing = recordOutgoingConnections();

const servers: TestServer[] = [];
/** A fresh real server per test: each scenario starts from an empty book and no trades. */
async function freshServer(): Promise<TestServer> {
  const t = await startTestServer(SERVER_ENV);
  servers.push(t);
  return t;
}

after(async () => {
  for (const t of servers.splice(0)) await t.close();
  assert.deepEqual(outgoing.stop(), ['127.0.0.1']);
});

const BTCEUR = 'BTCEUR';
const SYMBOL = 'BTC/EUR';
const PRIVATE = (userId: number): string => `private-order-executed.${userId}`;
const PUBLIC_CHANNELS = [
  `ticker-information.${BTCEUR}`,
  `ohlc.${BTCEUR}.1`,
  `ohlc.${BTCEUR}.60`,
  `trade.${BTCEUR}`,
  `order-book.${BTCEUR}`,
] as const;

const RFC3339_MICROS = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/;

// ---------------------------------------------------------------------------------------------
// pusher-js with the interface's authorizer: a signed JSON body posted to /v1/broadcasting/auth.

function pusherClient(t: TestServer, trader: Trader): Pusher {
  return new Pusher(APP_KEY, {
    cluster: 'eu',
    wsHost: '127.0.0.1',
    wsPort: portOf(t),
    forceTLS: false,
    enabledTransports: ['ws'],
    // pusher-js 8's spelling of `disableStats: true` (which it still accepts, with a deprecation warning).
    enableStats: false,
    activityTimeout: 10_000,
    channelAuthorization: {
      customHandler: ({ socketId, channelName }, callback) => {
        channelAuth(t, trader, socketId, channelName).then(
          (response) =>
            response.status === 200
              ? callback(null, response.body as { auth: string })
              : callback(new Error(`broadcasting/auth answered ${response.status}`), null),
          (error: unknown) => callback(error as Error, null),
        );
      },
    },
  });
}

function connected(pusher: Pusher): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('pusher-js did not connect')), 5000);
    pusher.connection.bind('connected', () => {
      clearTimeout(timer);
      resolve();
    });
    pusher.connection.bind('failed', () => reject(new Error('pusher-js failed to connect')));
  });
}

/** The part of a laravel-echo channel the test uses. */
interface EchoChannel {
  listen(event: string, callback: CallableFunction): EchoChannel;
  subscribed(callback: CallableFunction): EchoChannel;
  error(callback: CallableFunction): EchoChannel;
}

/** What a client received, per channel and event (`snapshot`, `update`), in arrival order. */
type Received = Map<string, { snapshot: unknown[]; update: unknown[] }>;

function emptyReceived(channels: readonly string[]): Received {
  return new Map(channels.map((c) => [c, { snapshot: [], update: [] }]));
}

// ---------------------------------------------------------------------------------------------
// The crossing scenario shared by the pusher-js and laravel-echo tests, and what it must produce.

interface Scenario {
  maker: Trader;
  taker: Trader;
  /** maker sell 0.2 @ 30000, maker sell 0.3 @ 30010, taker limit buy 0.2 @ 30100, taker market buy 0.3. */
  orders: [number, number, number, number];
}

async function newTraders(t: TestServer): Promise<{ maker: Trader; taker: Trader }> {
  return { maker: await t.trader(), taker: await t.trader() };
}

async function runScenario(t: TestServer, maker: Trader, taker: Trader): Promise<Scenario> {
  const steps: [Trader, OrderInput][] = [
    [maker, { side: 'sell', type: 'limit', volume: '0.2', price: '30000' }],
    [maker, { side: 'sell', type: 'limit', volume: '0.3', price: '30010' }],
    [taker, { side: 'buy', type: 'limit', volume: '0.2', price: '30100' }],
    [taker, { side: 'buy', type: 'market', volume: '0.3' }],
  ];
  const ids: number[] = [];
  for (const [trader, order] of steps) {
    const placed = await placeOrder(t, trader, order);
    assert.equal(placed.status, 201);
    assert.ok(placed.id !== undefined);
    ids.push(placed.id);
  }
  return { maker, taker, orders: ids as Scenario['orders'] };
}

/** Counts of update messages the scenario produces per channel (ticker: not on the second ask, same top). */
const scenarioCounts = (makerId: number): Record<string, number> => ({
  [`order-book.${BTCEUR}`]: 4,
  [`trade.${BTCEUR}`]: 2,
  [`ticker-information.${BTCEUR}`]: 3,
  [`ohlc.${BTCEUR}.1`]: 2,
  [`ohlc.${BTCEUR}.60`]: 2,
  [PRIVATE(makerId)]: 6,
});

async function waitForScenario(received: Received, makerId: number): Promise<void> {
  for (const [channel, count] of Object.entries(scenarioCounts(makerId)))
    await waitFor(
      () => (received.get(channel)?.update.length ?? 0) >= count,
      `${count} updates on ${channel}`,
    );
}

/** An update of one ask level (the interface's shape: `bids` is `[]`, `asks` one object). */
const bookUpdate = ([price, qty]: Level, book: { bids: Level[]; asks: Level[] }, sequence: number) => ({
  channel: 'book',
  type: 'update',
  data: {
    symbol: SYMBOL,
    bids: [],
    asks: { price, qty },
    sequence,
    checksum: krakenChecksum(book.bids, book.asks),
  },
});

const tickerItem = (fields: Partial<Record<string, string>>) => ({
  channel: 'ticker',
  data: [
    {
      symbol: SYMBOL,
      bid: '0.0',
      bid_qty: '0.00000000',
      ask: '0.0',
      ask_qty: '0.00000000',
      last: '0.0',
      volume: '0.00000000',
      vwap: '0.0',
      low: '0.0',
      high: '0.0',
      change: '0.0',
      change_pct: '0.00',
      ...fields,
    },
  ],
});

interface PublicTrade {
  price: string;
  qty: string;
  timestamp: string;
}

const spaced = (seconds: number): string => {
  const iso = new Date(seconds * 1000).toISOString();
  return `${iso.slice(0, 10)} ${iso.slice(11, 19)}.000000`;
};
const rfcSeconds = (seconds: number): string =>
  `${new Date(seconds * 1000).toISOString().slice(0, 19)}.000000Z`;

/**
 * The ohlc update after each trade (one trade per batch here): the candle of the trade's interval,
 * aggregated over the trades so far that fall in it; vwap in ticks rounded half up.
 */
function expectedCandles(trades: readonly PublicTrade[], interval: number): unknown[] {
  const span = interval * 60;
  const startOf = (trade: PublicTrade): number =>
    Math.floor(Date.parse(`${trade.timestamp.slice(0, 19)}Z`) / 1000 / span) * span;
  return trades.map((trade, k) => {
    const start = startOf(trade);
    const inCandle = trades.slice(0, k + 1).filter((x) => startOf(x) === start);
    const prices = inCandle.map((x) => units(x.price, 1));
    const lots = inCandle.map((x) => units(x.qty, 8));
    const volume = lots.reduce((a, b) => a + b, 0n);
    const notional = inCandle.reduce((sum, _x, i) => sum + prices[i]! * lots[i]!, 0n);
    const sorted = [...prices].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
    return {
      channel: 'ohlc',
      type: 'update',
      timestamp: spaced(start),
      data: {
        symbol: SYMBOL,
        open: inCandle[0]!.price,
        high: decimal(sorted.at(-1)!, 1),
        low: decimal(sorted[0]!, 1),
        close: trade.price,
        trades: inCandle.length,
        volume: decimal(volume, 8),
        vwap: decimal((2n * notional + volume) / (2n * volume), 1),
        interval_begin: rfcSeconds(start),
        interval,
        timestamp: trade.timestamp,
      },
    };
  });
}

async function checkScenario(t: TestServer, scenario: Scenario, received: Received): Promise<void> {
  const { maker, taker, orders } = scenario;
  const [sell1, sell2] = orders;
  const get = (channel: string) => received.get(channel)!;

  // Snapshots of a fresh market: empty book at sequence 0, no trades, zero ticker, no candle yet.
  assert.deepEqual(get(`order-book.${BTCEUR}`).snapshot, [
    {
      channel: 'book',
      type: 'snapshot',
      data: { symbol: SYMBOL, bids: [], asks: [], sequence: 0, checksum: 0 },
    },
  ]);
  assert.deepEqual(get(`trade.${BTCEUR}`).snapshot, [{ channel: 'trade', type: 'snapshot', data: [] }]);
  assert.deepEqual(get(`ticker-information.${BTCEUR}`).snapshot, [{ ...tickerItem({}), type: 'snapshot' }]);
  assert.deepEqual(get(`ohlc.${BTCEUR}.1`).snapshot, []);
  assert.deepEqual(get(`ohlc.${BTCEUR}.60`).snapshot, []);
  assert.deepEqual(get(PRIVATE(maker.userId)).snapshot, [
    { channel: 'executions', type: 'snapshot', data: { orders: [], truncated: false } },
  ]);

  // order-book: one message per changed level with its new total; 0 removes it; sequence +1 per message.
  const a1: Level = ['30000.0', '0.20000000'];
  const a2: Level = ['30010.0', '0.30000000'];
  assert.deepEqual(get(`order-book.${BTCEUR}`).update, [
    bookUpdate(a1, { bids: [], asks: [a1] }, 1),
    bookUpdate(a2, { bids: [], asks: [a1, a2] }, 2),
    bookUpdate(['30000.0', '0.00000000'], { bids: [], asks: [a2] }, 3),
    bookUpdate(['30010.0', '0.00000000'], { bids: [], asks: [] }, 4),
  ]);

  // trade: the taker's side and order type, the execution's price; trade_id = the trade's id.
  const restTrades = (await api(t, taker, 'GET', '/v1/trades')).body as {
    data: { id: number; timestamp: string; order_id: number }[];
  };
  const takerTrades = [...restTrades.data].sort((x, y) => x.id - y.id);
  assert.equal(takerTrades.length, 2);
  const tradeUpdates = get(`trade.${BTCEUR}`).update as { data: PublicTrade[] }[];
  const items = tradeUpdates.map((m) => m.data[0]!);
  assert.deepEqual(tradeUpdates, [
    {
      channel: 'trade',
      type: 'update',
      data: [
        {
          symbol: SYMBOL,
          side: 'buy',
          price: '30000.0',
          qty: '0.20000000',
          ord_type: 'limit',
          trade_id: takerTrades[0]!.id,
          timestamp: items[0]!.timestamp,
        },
      ],
    },
    {
      channel: 'trade',
      type: 'update',
      data: [
        {
          symbol: SYMBOL,
          side: 'buy',
          price: '30010.0',
          qty: '0.30000000',
          ord_type: 'market',
          trade_id: takerTrades[1]!.id,
          timestamp: items[1]!.timestamp,
        },
      ],
    },
  ]);
  items.forEach((item, i) => {
    assert.match(item.timestamp, RFC3339_MICROS);
    // The same execution time as the REST trade record (which has whole seconds).
    assert.equal(item.timestamp.slice(0, 19).replace('T', ' '), takerTrades[i]!.timestamp);
  });

  // ticker-information: rolling 24 h; updated when the top of book changes or a trade happens.
  assert.deepEqual(get(`ticker-information.${BTCEUR}`).update, [
    { ...tickerItem({ ask: '30000.0', ask_qty: '0.20000000' }), type: 'update' },
    {
      ...tickerItem({
        ask: '30010.0',
        ask_qty: '0.30000000',
        last: '30000.0',
        volume: '0.20000000',
        vwap: '30000.0',
        low: '30000.0',
        high: '30000.0',
      }),
      type: 'update',
    },
    {
      ...tickerItem({
        last: '30010.0',
        volume: '0.50000000',
        // (0.2 · 30000 + 0.3 · 30010) / 0.5
        vwap: '30006.0',
        low: '30000.0',
        high: '30010.0',
        change: '10.0',
        // 10 / 30000 = 0.0333 %
        change_pct: '0.03',
      }),
      type: 'update',
    },
  ]);

  // ohlc: one update per touched candle and batch, for both intervals subscribed.
  assert.deepEqual(get(`ohlc.${BTCEUR}.1`).update, expectedCandles(items, 1));
  assert.deepEqual(get(`ohlc.${BTCEUR}.60`).update, expectedCandles(items, 60));

  // private-order-executed: accepted, trade, closed for each of the maker's orders, in engine order.
  const orderOf = async (id: number) =>
    ((await api(t, maker, 'GET', `/v1/orders/${id}`)).body as { data: Record<string, unknown> }).data;
  const tradeOf = async (id: number) =>
    ((await api(t, maker, 'GET', `/v1/trades/${id}`)).body as { data: Record<string, unknown> }).data;
  const final1 = await orderOf(sell1);
  const final2 = await orderOf(sell2);
  assert.equal(final1.status, 'closed');
  assert.equal(final2.status, 'closed');
  const executions = get(PRIVATE(maker.userId)).update as {
    channel: string;
    type: string;
    data: { event: string; order: Record<string, unknown>; trades: unknown[] };
  }[];
  assert.deepEqual(
    executions.map((m) => [m.channel, m.type, m.data.event, m.data.order.id]),
    [
      ['executions', 'update', 'accepted', sell1],
      ['executions', 'update', 'accepted', sell2],
      ['executions', 'update', 'trade', sell1],
      ['executions', 'update', 'closed', sell1],
      ['executions', 'update', 'trade', sell2],
      ['executions', 'update', 'closed', sell2],
    ],
  );
  for (const [index, volume, price] of [
    [0, '0.20000000', '30000.0'],
    [1, '0.30000000', '30010.0'],
  ] as const) {
    const accepted = executions[index]!.data;
    assert.equal(accepted.order.status, 'open');
    assert.equal(accepted.order.user_id, maker.userId);
    assert.deepEqual(accepted.order.volume, { amount: volume, currency: 'BTC' });
    assert.deepEqual(accepted.order.volume_executed, { amount: '0.00000000', currency: 'BTC' });
    assert.deepEqual(accepted.order.price, { amount: price, currency: 'EUR' });
    assert.equal(accepted.order.fee, null);
    assert.deepEqual(accepted.order.trades, []);
    assert.deepEqual(accepted.trades, []);
  }
  // Each maker order is completed by its single execution: the `trade` step already shows it closed,
  // exactly as GET /orders/:id does; the execution is the maker's GET /trades/:id record.
  for (const [index, final, trade] of [
    [2, final1, takerTrades[0]!.id],
    [4, final2, takerTrades[1]!.id],
  ] as const) {
    const step = executions[index]!.data;
    assert.deepEqual(step.order, final);
    assert.deepEqual(step.trades, [await tradeOf(trade)]);
    assert.deepEqual(executions[index + 1]!.data, { event: 'closed', order: final, trades: [] });
  }
  const makerTrade = (await tradeOf(takerTrades[0]!.id)) as { type: string; order_id: number };
  assert.equal(makerTrade.type, 'sell');
  assert.equal(makerTrade.order_id, sell1);
}

// ---------------------------------------------------------------------------------------------

describe('client libraries against the real server', () => {
  test('pusher-js: every public channel of BTCEUR and the private channel receive the crossing orders', async () => {
    const t = await freshServer();
    const { maker, taker } = await newTraders(t);
    const pusher = pusherClient(t, maker);
    try {
      await connected(pusher);
      assert.match(pusher.connection.socket_id, /^\d+\.\d+$/);
      const channels = [...PUBLIC_CHANNELS, PRIVATE(maker.userId)];
      const received = emptyReceived(channels);
      const subscribed = channels.map((name) => {
        const channel = pusher.subscribe(name);
        channel.bind('snapshot', (data: unknown) => received.get(name)!.snapshot.push(data));
        channel.bind('update', (data: unknown) => received.get(name)!.update.push(data));
        return new Promise<void>((resolve, reject) => {
          channel.bind('pusher:subscription_succeeded', () => resolve());
          channel.bind('pusher:subscription_error', (e: unknown) =>
            reject(new Error(`${name}: ${JSON.stringify(e)}`)),
          );
        });
      });
      await Promise.all(subscribed);

      const scenario = await runScenario(t, maker, taker);
      await waitForScenario(received, maker.userId);
      await checkScenario(t, scenario, received);
    } finally {
      pusher.disconnect();
    }
  });

  test('laravel-echo (on pusher-js) receives the same data, with raw event names', async () => {
    const t = await freshServer();
    const { maker, taker } = await newTraders(t);
    const pusher = pusherClient(t, maker);
    const echo = new Echo({ broadcaster: 'pusher', client: pusher });
    try {
      await connected(pusher);
      const privateName = PRIVATE(maker.userId);
      const received = emptyReceived([...PUBLIC_CHANNELS, privateName]);
      const subscriptions: Promise<void>[] = [];
      const watch = (name: string, channel: EchoChannel) => {
        channel
          .listen('.snapshot', (data: unknown) => received.get(name)!.snapshot.push(data))
          .listen('.update', (data: unknown) => received.get(name)!.update.push(data));
        subscriptions.push(
          new Promise<void>((resolve, reject) => {
            channel.subscribed(() => resolve());
            channel.error((e: unknown) => reject(new Error(`${name}: ${JSON.stringify(e)}`)));
          }),
        );
      };
      for (const name of PUBLIC_CHANNELS) watch(name, echo.channel(name));
      // Echo's private() adds the `private-` prefix itself.
      watch(privateName, echo.private(`order-executed.${maker.userId}`));
      await Promise.all(subscriptions);
      assert.deepEqual(Object.keys(echo.connector.channels).sort(), [...PUBLIC_CHANNELS, privateName].sort());

      const scenario = await runScenario(t, maker, taker);
      await waitForScenario(received, maker.userId);
      await checkScenario(t, scenario, received);
    } finally {
      echo.disconnect();
    }
  });
});

// ---------------------------------------------------------------------------------------------
// The book rebuilt from order-book.{pair} equals GET /v1/orderbook after a random stream.

/** mulberry32: a small seeded generator, so the stream is the same on every run. */
function seeded(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let x = state;
    x = Math.imul(x ^ (x >>> 15), x | 1);
    x ^= x + Math.imul(x ^ (x >>> 7), x | 61);
    return ((x ^ (x >>> 14)) >>> 0) / 4294967296;
  };
}

interface BookMessage {
  type: string;
  data: {
    symbol: string;
    /** Every level in a snapshot; `[]` or one level in an update. */
    bids: { price: string; qty: string }[] | { price: string; qty: string };
    asks: { price: string; qty: string }[] | { price: string; qty: string };
    sequence: number;
    checksum: number;
  };
}

/** A book rebuilt from a snapshot and contiguous updates, every checksum verified on the way. */
class RebuiltBook {
  readonly bids = new Map<string, string>();
  readonly asks = new Map<string, string>();
  sequence = -1;
  updates = 0;

  apply(message: BookMessage): void {
    const { data } = message;
    assert.equal(data.symbol, SYMBOL);
    if (message.type === 'snapshot') {
      this.bids.clear();
      this.asks.clear();
    } else {
      assert.equal(message.type, 'update');
      assert.equal(data.sequence, this.sequence + 1, 'updates are contiguous');
      assert.ok(Array.isArray(data.bids) !== Array.isArray(data.asks), 'one side is an object, the other []');
      assert.deepEqual(Array.isArray(data.bids) ? data.bids : data.asks, []);
      this.updates += 1;
    }
    for (const [side, levels] of [
      [this.bids, data.bids],
      [this.asks, data.asks],
    ] as const) {
      for (const { price, qty } of Array.isArray(levels) ? levels : [levels]) {
        if (units(qty, 8) === 0n) side.delete(price);
        else side.set(price, qty);
      }
    }
    this.sequence = data.sequence;
    assert.equal(data.checksum, krakenChecksum(this.levels('bids'), this.levels('asks')), 'checksum');
  }

  /** Best first: bids high→low, asks low→high. */
  levels(side: 'bids' | 'asks'): Level[] {
    const sign = side === 'bids' ? -1n : 1n;
    return [...(side === 'bids' ? this.bids : this.asks).entries()].sort(([p], [q]) => {
      const d = (units(p, 1) - units(q, 1)) * sign;
      return d < 0n ? -1 : d > 0n ? 1 : 0;
    });
  }
}

test('a book rebuilt from order-book snapshot + updates equals GET /v1/orderbook after a random stream', async () => {
  const t = await freshServer();
  const traders: Trader[] = [];
  for (let i = 0; i < 5; i++) traders.push(await t.trader({ EUR: '100000000', BTC: '10000' }));
  const marketId = t.server.exchange.catalogue.marketByName(BTCEUR)!.id as MarketId;

  // Some resting depth before the watcher subscribes, so the snapshot is not empty.
  for (let i = 0; i < 10; i++) {
    const trader = traders[i % traders.length]!;
    const buy = i % 2 === 0;
    const price = buy ? `${29_900 - i * 5}` : `${30_100 + i * 5}`;
    const placed = await placeOrder(t, trader, {
      side: buy ? 'buy' : 'sell',
      type: 'limit',
      volume: '0.1',
      price,
    });
    assert.equal(placed.status, 201);
  }

  const { log, socketId } = await FrameLog.open(wsUrl(t));
  try {
    assert.match(socketId, /^\d+\.\d+$/);
    log.subscribe(`order-book.${BTCEUR}`);
    log.subscribe(`trade.${BTCEUR}`);
    await log.next((f) => f.event === 'snapshot' && f.channel === `order-book.${BTCEUR}`);
    await log.next((f) => f.event === 'snapshot' && f.channel === `trade.${BTCEUR}`);

    const random = seeded(20_240_501);
    const pick = <T>(list: readonly T[]): T => list[Math.floor(random() * list.length)]!;
    const open = new Map<Trader, number[]>(traders.map((trader) => [trader, []]));
    const statuses = new Map<string, number>();
    const count = (key: string) => statuses.set(key, (statuses.get(key) ?? 0) + 1);

    async function operation(
      trader: Trader,
      roll: number,
      side: 'buy' | 'sell',
      price: string,
      lots: number,
    ) {
      const volume = decimal(BigInt(lots), 8);
      const own = open.get(trader)!;
      if (roll < 0.25 && own.length > 0) {
        const id = own.splice(Math.floor(random() * own.length), 1)[0]!;
        const response = await api(t, trader, 'DELETE', `/v1/orders/${id}`);
        // 409: the order was filled (or self-trade canceled) before the cancel arrived.
        assert.ok(response.status === 200 || response.status === 409, `cancel: ${response.status}`);
        count(`cancel ${response.status}`);
        return;
      }
      const type = roll < 0.4 ? 'market' : 'limit';
      const placed = await placeOrder(t, trader, {
        side,
        type,
        volume,
        ...(type === 'limit' ? { price } : {}),
      });
      assert.equal(placed.status, 201, `${type} ${side} ${volume} @ ${price}`);
      count(`${type} 201`);
      if (type === 'limit') own.push(placed.id!);
    }

    // 300 operations in bursts of 1–4 concurrent requests, so some batches change several levels.
    const OPERATIONS = 300;
    let done = 0;
    while (done < OPERATIONS) {
      const burst = Math.min(OPERATIONS - done, 1 + Math.floor(random() * 4));
      const work: Promise<void>[] = [];
      for (let i = 0; i < burst; i++) {
        const trader = pick(traders);
        const side = random() < 0.5 ? 'buy' : 'sell';
        // Prices around 30000 on a 0.5 grid (so levels aggregate orders) crossing the spread often.
        const ticks = 300_000 + (side === 'buy' ? -1 : 1) * (Math.floor(random() * 60) - 20) * 5;
        const lots = 5_000 + Math.floor(random() * 2_000_000);
        work.push(operation(trader, random(), side, decimal(BigInt(ticks), 1), lots));
      }
      await Promise.all(work);
      done += burst;
    }
    assert.ok((statuses.get('limit 201') ?? 0) > 100, JSON.stringify([...statuses]));
    assert.ok((statuses.get('market 201') ?? 0) > 20, JSON.stringify([...statuses]));
    assert.ok((statuses.get('cancel 200') ?? 0) > 20, JSON.stringify([...statuses]));

    // Wait until the update carrying the book's committed sequence has arrived.
    const finalSequence = t.server.exchange.book(marketId, 0).sequence;
    const lastSequence = () =>
      (log.on(`order-book.${BTCEUR}`).at(-1) as BookMessage | undefined)?.data.sequence ?? -1;
    await waitFor(() => lastSequence() >= finalSequence, `order-book sequence ${finalSequence}`, 10_000);

    const book = new RebuiltBook();
    const messages = log.frames
      .filter((f) => f.channel === `order-book.${BTCEUR}` && (f.event === 'snapshot' || f.event === 'update'))
      .map((f) => f.data as BookMessage);
    assert.equal(messages[0]!.type, 'snapshot');
    const first = messages[0]!.data as { bids: unknown[]; asks: unknown[] };
    assert.ok(first.bids.length > 0 && first.asks.length > 0);
    for (const message of messages) book.apply(message);
    assert.equal(book.sequence, finalSequence);
    assert.ok(book.updates > 80, `updates: ${book.updates}`);
    if (process.env.WS_TEST_VERBOSE)
      console.log({
        statuses: [...statuses],
        updates: book.updates,
        bids: book.bids.size,
        asks: book.asks.size,
      });

    const response = await fetch(`${t.url}/v1/orderbook?ticker_id=BTC/EUR&depth=0`);
    const [rest] = (await response.json()) as { ticker_id: string; bids: Level[]; asks: Level[] }[];
    assert.equal(rest!.ticker_id, SYMBOL);
    assert.deepEqual(book.levels('bids'), rest!.bids);
    assert.deepEqual(book.levels('asks'), rest!.asks);
    assert.ok(rest!.bids.length > 5 && rest!.asks.length > 5, 'a non-trivial final book');

    // Every trade of the stream reached trade.{pair} once, as GET /historical_trades records it.
    const streamed = new Map<number, [string, string, string]>();
    for (const message of log.on(`trade.${BTCEUR}`) as {
      data: { trade_id: number; price: string; qty: string; side: string }[];
    }[])
      for (const item of message.data) {
        assert.ok(!streamed.has(item.trade_id), `trade ${item.trade_id} sent twice`);
        streamed.set(item.trade_id, [item.price, item.qty, item.side]);
      }
    const history = (await (
      await fetch(`${t.url}/v1/historical_trades?ticker_id=BTC/EUR&limit=0`)
    ).json()) as Record<'buy' | 'sell', { trade_id: number; price: string; base_volume: string }[]>;
    const recorded = new Map<number, [string, string, string]>();
    for (const side of ['buy', 'sell'] as const)
      for (const trade of history[side]) recorded.set(trade.trade_id, [trade.price, trade.base_volume, side]);
    assert.ok(recorded.size > 50, `trades: ${recorded.size}`);
    assert.deepEqual(
      [...streamed].sort(([a], [b]) => a - b),
      [...recorded].sort(([a], [b]) => a - b),
    );
  } finally {
    log.close();
  }
});

// ---------------------------------------------------------------------------------------------
// Raw `ws` against the real server: prefixes, private channel authorization, revocation.

describe('raw ws against the real server', () => {
  let t: TestServer;
  const logs: FrameLog[] = [];
  const open = async () => {
    const opened = await FrameLog.open(wsUrl(t));
    logs.push(opened.log);
    return opened;
  };
  after(() => {
    for (const log of logs) log.close();
  });

  before(async () => {
    t = await freshServer();
  });

  test('channelservice:subscribe (neutral prefix) works for a public and a private channel', async () => {
    const trader = await t.trader();
    const { log, socketId } = await open();
    log.subscribe(`trade.${BTCEUR}`, '', 'channelservice:');
    await log.next(
      (f) => f.event === 'pusher_internal:subscription_succeeded' && f.channel === `trade.${BTCEUR}`,
    );
    const snapshot = await log.next((f) => f.event === 'snapshot' && f.channel === `trade.${BTCEUR}`);
    assert.deepEqual(snapshot.data, { channel: 'trade', type: 'snapshot', data: [] });

    const channel = PRIVATE(trader.userId);
    const auth = await channelAuth(t, trader, socketId, channel);
    assert.equal(auth.status, 200);
    const token = (auth.body as { auth: string }).auth;
    assert.match(token, new RegExp(`^${APP_KEY}:[0-9a-f]{64}$`));
    log.subscribe(channel, token, 'channelservice:');
    await log.next((f) => f.event === 'pusher_internal:subscription_succeeded' && f.channel === channel);
    await log.next((f) => f.event === 'snapshot' && f.channel === channel);

    // The trader's own order arrives on the private channel.
    const placed = await placeOrder(t, trader, { side: 'buy', type: 'limit', volume: '0.01', price: '1000' });
    const accepted = await log.next((f) => f.event === 'update' && f.channel === channel);
    const data = (accepted.data as { data: { event: string; order: { id: number } } }).data;
    assert.equal(data.event, 'accepted');
    assert.equal(data.order.id, placed.id);

    // Ping and unsubscribe with the neutral prefix as well.
    log.send({ event: 'channelservice:ping', data: {} });
    await log.next((f) => f.event === 'pusher:pong');
    log.send({ event: 'channelservice:unsubscribe', data: { channel } });
    log.send({ event: 'channelservice:ping', data: {} });
    await waitFor(() => log.frames.filter((f) => f.event === 'pusher:pong').length === 2, 'second pong');
    const before = log.on(channel).length;
    const other = await placeOrder(t, trader, { side: 'buy', type: 'limit', volume: '0.01', price: '1001' });
    assert.equal(other.status, 201);
    // A public marker after it: by the time it arrives, a private frame would have arrived first.
    log.subscribe(`ticker-information.${BTCEUR}`, '', 'channelservice:');
    await log.next((f) => f.event === 'snapshot' && f.channel === `ticker-information.${BTCEUR}`);
    assert.equal(log.on(channel).length, before);
  });

  test("another user's private channel is refused: 403 from /broadcasting/auth, subscription_error for forged auth", async () => {
    const alice = await t.trader();
    const bob = await t.trader();
    const { log, socketId } = await open();
    const bobs = PRIVATE(bob.userId);

    // The HTTP side refuses to sign someone else's channel (the interface's 403 Access Denied).
    const denied = await channelAuth(t, alice, socketId, bobs);
    assert.equal(denied.status, 403);
    assert.deepEqual(denied.body, { error: 'Access Denied' });
    // A malformed socket id is 400 Invalid request.
    const malformed = await api(t, alice, 'POST', '/v1/broadcasting/auth', {
      socket_id: 'abc',
      channel_name: PRIVATE(alice.userId),
    });
    assert.equal(malformed.status, 400);

    const refusal = async (channel: string, auth: string) => {
      const before = log.frames.length;
      log.subscribe(channel, auth);
      const frame = await log.next(
        (f) =>
          log.frames.indexOf(f) >= before && f.event === 'pusher:subscription_error' && f.channel === channel,
      );
      return frame.data as { type: string; error: string; status: number };
    };
    // Alice's valid token for her own channel, presented for Bob's.
    const own = await channelAuth(t, alice, socketId, PRIVATE(alice.userId));
    assert.equal(own.status, 200);
    const ownToken = (own.body as { auth: string }).auth;
    assert.equal((await refusal(bobs, ownToken)).status, 403);
    // A token signed with a guessed secret.
    const guessed = `${APP_KEY}:${createHmac('sha256', 'openspot-secret-guess').update(`${socketId}:${bobs}`).digest('hex')}`;
    const forged = await refusal(bobs, guessed);
    assert.deepEqual({ type: forged.type, status: forged.status }, { type: 'AuthError', status: 403 });
    // Bob's genuine token, but for Bob's own socket: it does not transfer to Alice's connection.
    const bobSocket = await open();
    const bobToken = await channelAuth(t, bob, bobSocket.socketId, bobs);
    assert.equal(bobToken.status, 200);
    assert.equal((await refusal(bobs, (bobToken.body as { auth: string }).auth)).status, 403);
    // No auth at all.
    assert.equal((await refusal(bobs, '')).status, 401);

    // Nothing of Bob's reaches Alice's connection; Bob's own socket with his token does get it.
    bobSocket.log.subscribe(bobs, (bobToken.body as { auth: string }).auth);
    await bobSocket.log.next((f) => f.event === 'snapshot' && f.channel === bobs);
    const placed = await placeOrder(t, bob, { side: 'buy', type: 'limit', volume: '0.01', price: '1002' });
    assert.equal(placed.status, 201);
    await bobSocket.log.next((f) => f.event === 'update' && f.channel === bobs);
    log.subscribe(`trade.${BTCEUR}`);
    await log.next((f) => f.event === 'snapshot' && f.channel === `trade.${BTCEUR}`);
    assert.deepEqual(
      log.frames.filter((f) => f.channel === bobs).map((f) => f.event),
      [
        'pusher:subscription_error',
        'pusher:subscription_error',
        'pusher:subscription_error',
        'pusher:subscription_error',
      ],
    );
  });

  test("a revoked API key ends that user's private subscription; the connection and public channels stay", async () => {
    const user = await t.trader();
    const other = await t.trader();
    const channel = PRIVATE(user.userId);
    const { log, socketId } = await open();
    log.subscribe(`order-book.${BTCEUR}`);
    const auth = await channelAuth(t, user, socketId, channel);
    log.subscribe(channel, (auth.body as { auth: string }).auth);
    await log.next((f) => f.event === 'snapshot' && f.channel === channel);
    await log.next((f) => f.event === 'snapshot' && f.channel === `order-book.${BTCEUR}`);

    const revoked = await t.admin('DELETE', `/api-keys/${user.apiKey}`);
    assert.equal(revoked.status, 200);
    const error = await log.next((f) => f.event === 'pusher:subscription_error' && f.channel === channel);
    assert.deepEqual(error.data, { type: 'AuthError', error: 'Authorization revoked', status: 403 });
    // The revoked key can no longer obtain a token (the interface's 422 Invalid Signature).
    const again = await channelAuth(t, user, socketId, channel);
    assert.equal(again.status, 422);

    // With a new key the user trades; the old subscription receives nothing of it, the public
    // channel on the same connection does. A later marker order proves the private frames would
    // have arrived by then (same socket, published in commit order).
    const key = (await t.admin('POST', `/users/${user.userId}/api-keys`, { scopes: ['read', 'trade'] }))
      .body as {
      api_key: string;
      api_secret: string;
    };
    const renewed: Trader = { userId: user.userId, apiKey: key.api_key, apiSecret: key.api_secret };
    const placed = await placeOrder(t, renewed, {
      side: 'sell',
      type: 'limit',
      volume: '0.01',
      price: '99000',
    });
    assert.equal(placed.status, 201);
    const marker = await placeOrder(t, other, {
      side: 'sell',
      type: 'limit',
      volume: '0.01',
      price: '98765.4',
    });
    assert.equal(marker.status, 201);
    await log.next(
      (f) =>
        f.channel === `order-book.${BTCEUR}` &&
        f.event === 'update' &&
        ((f.data as BookMessage).data.asks as { price: string }).price === '98765.4',
    );
    assert.deepEqual(log.on(channel), []);
    assert.equal(log.closed, false);

    // Subscribing again with a token from the new key works and the snapshot shows the open order.
    const fresh = await channelAuth(t, renewed, socketId, channel);
    assert.equal(fresh.status, 200);
    log.subscribe(channel, (fresh.body as { auth: string }).auth);
    await waitFor(() => log.on(channel, 'snapshot').length === 2, 'a second executions snapshot');
    const snapshots = log.on(channel, 'snapshot') as { data: { orders: { id: number }[] } }[];
    assert.deepEqual(
      snapshots[1]!.data.orders.map((o) => o.id),
      [placed.id],
    );
  });
});

// ---------------------------------------------------------------------------------------------
// Conditional orders on the private channel (issue 22).

test('a stop that a trade fires: `triggered` on the private channel before its own trade, then closed', async () => {
  const t = await freshServer();
  const maker = await t.trader();
  const taker = await t.trader();
  const sam = await t.trader();
  const { log, socketId } = await FrameLog.open(wsUrl(t));
  try {
    const channel = PRIVATE(sam.userId);
    const auth = await channelAuth(t, sam, socketId, channel);
    log.subscribe(channel, (auth.body as { auth: string }).auth);
    await log.next((f) => f.event === 'snapshot' && f.channel === channel);
    const post = async (who: Trader, body: Record<string, unknown>) => {
      const r = await api(t, who, 'POST', '/v1/orders', { pair: SYMBOL, volume: '0.01', ...body });
      assert.equal(r.status, 201, JSON.stringify(r.body));
      return Number(/\/orders\/(\d+)$/.exec(r.location ?? '')![1]);
    };
    const tradeAt = async (price: string) => {
      await post(maker, { order_direction: 'sell', order_type: 'limit', price });
      await post(taker, { order_direction: 'buy', order_type: 'limit', price, time_in_force: 'IOC' });
    };
    await tradeAt('60000');
    const stop = await post(sam, {
      order_direction: 'sell',
      order_type: 'stop-loss',
      trigger_price: '58000',
    });
    await post(maker, { order_direction: 'buy', order_type: 'limit', price: '57900' });
    await tradeAt('58000');
    await log.next(
      (f) =>
        f.channel === channel &&
        f.event === 'update' &&
        (f.data as { data: { event: string } }).data.event === 'closed',
    );
    const updates = log.on(channel) as {
      data: {
        event: string;
        order: { id: number; order_type: string; trigger_conditions: string; status: string };
        trades: { price: { amount: string } }[];
      };
    }[];
    assert.deepEqual(
      updates.map(({ data }) => [
        data.event,
        data.order.id,
        data.order.status,
        data.order.trigger_conditions,
      ]),
      [
        ['accepted', stop, 'open', 'last price <= 58000.0'],
        ['triggered', stop, 'open', 'triggered: last price <= 58000.0'],
        ['trade', stop, 'closed', 'triggered: last price <= 58000.0'],
        ['closed', stop, 'closed', 'triggered: last price <= 58000.0'],
      ],
    );
    assert.equal(updates[1]!.data.order.order_type, 'stop-loss');
    assert.deepEqual(updates[1]!.data.trades, []);
    assert.deepEqual(
      updates[2]!.data.trades.map((x) => x.price.amount),
      ['57900.0'],
    );
  } finally {
    log.close();
  }
});
