/**
 * The realtime helper (pusher-js underneath) against OpenSpot's WebSocket server with a fake
 * channel provider, and a local HTTP endpoint for POST /v1/broadcasting/auth that checks the
 * request signature as the real route does.
 */
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { test } from 'node:test';
import { verifySignature } from '../auth/signature.js';
import type { AssetCode, FeeRate, MarketId, Price, Volume } from '../domain/types.js';
import type { BookView } from '../sequencer/ports.js';
import { signChannelAuth } from '../ws/channel-auth.js';
import { type ChannelProvider, parseChannelName } from '../ws/channels.js';
import { bookSnapshotMessage, bookUpdateMessages, feedMarket } from '../ws/payloads.js';
import { createRealtimeServer } from '../ws/server.js';
import type { BookMessage, ExecutionMessage, MessageType, TickerMessage } from './channels.js';
import { OpenSpotClient } from './client.js';
import type { BookApplyResult } from './local-book.js';
import { connectRealtime } from './realtime.js';

const APP_KEY = 'rt-key';
const APP_SECRET = 'rt-secret';
const API_SECRET = Buffer.from('a realtime test secret of 32 b..').toString('base64');

const market = feedMarket(
  {
    id: 1 as MarketId,
    base: 'BTC' as AssetCode,
    quote: 'EUR' as AssetCode,
    pairDecimals: 1,
    lotDecimals: 8,
    ordermin: 1 as Volume,
    makerFee: 0 as FeeRate,
    takerFee: 0 as FeeRate,
  },
  { code: 'EUR' as AssetCode, name: 'Euro', type: 'fiat', decimals: 4 },
);

async function start() {
  let book: BookView = { sequence: 5, bids: [[1000 as Price, 3 as Volume]], asks: [] };
  const authRequests: string[] = [];
  const provider: ChannelProvider = {
    resolve(channel) {
      const parsed = parseChannelName(channel);
      if (parsed === undefined) return undefined;
      if (parsed.kind === 'executions') return { kind: 'executions', userId: parsed.userId };
      if (parsed.pair !== 'BTCEUR') return undefined;
      return parsed.kind === 'ohlc'
        ? { kind: 'ohlc', marketId: market.spec.id, interval: parsed.interval }
        : { kind: parsed.kind, marketId: market.spec.id };
    },
    snapshot(_channel, resolved) {
      if (resolved.kind === 'book') return bookSnapshotMessage(market, book);
      if (resolved.kind === 'executions')
        return { channel: 'executions', type: 'snapshot', data: { orders: [], truncated: false } };
      return { channel: resolved.kind, type: 'snapshot', data: [] };
    },
  };
  const http = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const raw = Buffer.concat(chunks).toString('utf8');
      authRequests.push(raw);
      const sign = String(req.headers['x-api-sign'] ?? '');
      if (req.url !== '/v1/broadcasting/auth' || !verifySignature('POST', raw, API_SECRET, sign)) {
        res.writeHead(422, { 'content-type': 'application/json' }).end('{"error":"Invalid Signature"}');
        return;
      }
      const body = JSON.parse(raw) as { socket_id: number; channel_name: string };
      const auth = signChannelAuth(APP_KEY, APP_SECRET, String(body.socket_id), body.channel_name);
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ auth }));
    });
  });
  const realtime = createRealtimeServer({
    server: http,
    appKey: APP_KEY,
    appSecret: APP_SECRET,
    provider,
    closeGraceMs: 200,
  });
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  const port = (http.address() as AddressInfo).port;
  return {
    port,
    realtime,
    authRequests,
    setBook(next: BookView) {
      book = next;
    },
    async stop() {
      await realtime.close();
      http.closeAllConnections();
      await new Promise<void>((resolve) => http.close(() => resolve()));
    },
  };
}

/** Collects values and lets a test await the n-th one. */
function collector<T>() {
  const items: T[] = [];
  const waiters: Array<() => void> = [];
  return {
    items,
    push(item: T) {
      items.push(item);
      for (const w of waiters.splice(0)) w();
    },
    async count(n: number, timeoutMs = 3000): Promise<T[]> {
      const deadline = Date.now() + timeoutMs;
      while (items.length < n) {
        if (Date.now() > deadline)
          throw new Error(`only ${items.length} of ${n} arrived: ${JSON.stringify(items)}`);
        await new Promise<void>((resolve) => {
          waiters.push(resolve);
          setTimeout(resolve, 50);
        });
      }
      return items;
    },
  };
}

test('public channels deliver the snapshot then updates', { timeout: 10_000 }, async () => {
  const s = await start();
  const rt = connectRealtime({ wsHost: '127.0.0.1', wsPort: s.port, appKey: APP_KEY });
  try {
    await rt.connected();
    const got = collector<[TickerMessage, MessageType]>();
    const sub = rt.ticker('BTC/EUR', (m, e) => got.push([m, e]));
    assert.equal(sub.channel, 'ticker-information.BTCEUR');
    await sub.ready;
    await got.count(1);
    s.realtime.publish('ticker-information.BTCEUR', 'update', {
      channel: 'ticker',
      type: 'update',
      data: [],
    });
    const [[, first], [update, second]] = (await got.count(2)) as [
      [TickerMessage, MessageType],
      [TickerMessage, MessageType],
    ];
    assert.equal(first, 'snapshot');
    assert.equal(second, 'update');
    assert.equal(update.type, 'update');

    const refused = rt.trades('NOPE/EUR', () => undefined);
    await assert.rejects(refused.ready, /refused/);
    assert.equal(rt.ohlc('BTCEUR', 5, () => undefined).channel, 'ohlc.BTCEUR.5');
  } finally {
    rt.disconnect();
    await s.stop();
  }
});

test('private channels authorize through a signed POST /broadcasting/auth', { timeout: 10_000 }, async () => {
  const s = await start();
  const client = new OpenSpotClient({
    baseUrl: `http://127.0.0.1:${s.port}/v1`,
    apiKey: 'k',
    apiSecret: API_SECRET,
  });
  const rt = connectRealtime({ wsHost: '127.0.0.1', wsPort: s.port, appKey: APP_KEY, client });
  const anonymous = connectRealtime({ wsHost: '127.0.0.1', wsPort: s.port, appKey: APP_KEY });
  try {
    await rt.connected();
    const got = collector<ExecutionMessage>();
    const sub = rt.executions(42, (m) => got.push(m));
    await sub.ready;
    assert.match(
      s.authRequests[0]!,
      /^\{"socket_id":\d+\.\d+,"channel_name":"private-order-executed\.42"\}$/,
    );
    s.realtime.publish('private-order-executed.42', 'update', {
      channel: 'executions',
      type: 'update',
      data: {},
    });
    const [snapshot, update] = await got.count(2);
    assert.equal(snapshot!.type, 'snapshot');
    assert.equal(update!.type, 'update');

    await anonymous.connected();
    await assert.rejects(anonymous.executions(42, () => undefined).ready, /refused/);
  } finally {
    rt.disconnect();
    anonymous.disconnect();
    await s.stop();
  }
});

test('localBook resubscribes after a sequence gap and is whole again', { timeout: 10_000 }, async () => {
  const s = await start();
  const rt = connectRealtime({ wsHost: '127.0.0.1', wsPort: s.port, appKey: APP_KEY });
  try {
    await rt.connected();
    const results = collector<BookApplyResult['status']>();
    const sub = rt.localBook('BTC/EUR', (_book, result) => results.push(result.status));
    await sub.ready;
    await results.count(1);
    assert.deepEqual(sub.book.bids(), [{ price: '100.0', qty: '0.00000003' }]);

    const six: BookView = { sequence: 6, bids: [[1000 as Price, 4 as Volume]], asks: [] };
    /** The one message of a one-level change that brings the book to `view`. */
    const update = (view: BookView, price: number, before: number, qty: number, side: 'buy' | 'sell') =>
      bookUpdateMessages(
        market,
        [
          {
            side,
            price: price as Price,
            before: before as Volume,
            volume: qty as Volume,
            sequence: view.sequence,
          },
        ],
        view,
      )[0] as BookMessage;
    s.realtime.publish('order-book.BTCEUR', 'update', update(six, 1000, 3, 4, 'buy'));
    await results.count(2);
    assert.deepEqual(sub.book.bids(), [{ price: '100.0', qty: '0.00000004' }]);

    // Sequence 7 is lost; 8 arrives. The server's book is now at 8.
    const eight: BookView = {
      sequence: 8,
      bids: [[1000 as Price, 4 as Volume]],
      asks: [[1100 as Price, 2 as Volume]],
    };
    s.setBook(eight);
    s.realtime.publish('order-book.BTCEUR', 'update', update(eight, 1100, 0, 2, 'sell'));
    const statuses = await results.count(4);
    assert.deepEqual(statuses, ['ok', 'ok', 'gap', 'ok']);
    assert.equal(sub.book.sequence, 8);
    assert.deepEqual(sub.book.asks(), [{ price: '110.0', qty: '0.00000002' }]);
    assert.equal(s.realtime.subscriberCount('order-book.BTCEUR'), 1);

    // A dropped connection marks the copy stale; the reconnection's snapshot restores it.
    s.realtime.closeAll();
    assert.deepEqual((await results.count(6)).slice(4), ['awaiting-snapshot', 'ok']);
    assert.equal(sub.book.sequence, 8);
    assert.deepEqual(sub.book.asks(), [{ price: '110.0', qty: '0.00000002' }]);
  } finally {
    rt.disconnect();
    await s.stop();
  }
});
