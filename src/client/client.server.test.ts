/**
 * The client against the real server (startTestServer): every endpoint, error typing by status
 * and shape, and the realtime helper on the real WebSocket feed (private executions, a local book
 * kept in sync and checksum-verified against what the engine really does).
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { eventually } from '../../test/support/polling.js';
import { startTestServer, type TestServer, type Trader } from '../../test/support/server-fixture.js';
import { FrameLog, wsUrl } from '../../test/ws/helpers.js';
import type { ExecutionMessage } from './channels.js';
import { OpenSpotClient } from './client.js';
import { OpenSpotApiError } from './errors.js';
import { connectRealtime } from './realtime.js';

const clientFor = (t: TestServer, trader?: Trader) =>
  new OpenSpotClient({
    baseUrl: `${t.url}/v1`,
    apiKey: trader?.apiKey,
    apiSecret: trader?.apiSecret,
    timeoutMs: 5000,
  });

async function apiError(promise: Promise<unknown>): Promise<OpenSpotApiError> {
  try {
    await promise;
  } catch (error) {
    if (error instanceof OpenSpotApiError) return error;
    throw error;
  }
  assert.fail('expected an OpenSpotApiError');
}

describe('OpenSpotClient against the server', { timeout: 30_000 }, () => {
  let t: TestServer;
  let seller: Trader;
  let buyer: Trader;
  before(async () => {
    t = await startTestServer();
    seller = await t.trader();
    buyer = await t.trader();
  });
  after(() => t.close());

  test('public market data', async () => {
    const pub = clientFor(t);
    const markets = await pub.markets();
    assert.equal(markets.success, true);
    assert.equal(markets.data.BTCEUR?.wsname, 'BTC/EUR');
    assert.equal(markets.data.BTCEUR?.pairDecimals, 1);
    assert.deepEqual(Object.keys((await pub.markets('BTC/EUR')).data), ['BTCEUR']);
    const a = await apiError(pub.markets('NOPE/EUR'));
    assert.equal(a.status, 400);
    assert.equal(a.shape, 'A');

    const tickers = await pub.tickers();
    assert.ok(tickers.some((x) => x.ticker_id === 'BTC/EUR'));
    assert.equal((await pub.tickers('ETH/EUR')).length, 1);
    const e = await apiError(pub.tickers('NOPE/EUR'));
    assert.equal(e.status, 400);
    assert.equal(e.shape, 'E');

    const b = await apiError(pub.ohlc({ tickerId: '' }));
    assert.equal(b.status, 422);
    assert.equal(b.shape, 'B');
    assert.equal((await apiError(pub.orderbook({ tickerId: 'NOPE' }))).shape, 'B');
    assert.equal((await apiError(pub.historicalTrades({ tickerId: '' }))).shape, 'B');
  });

  test('orders, executions, lists, wallets and trades', async () => {
    const s = clientFor(t, seller);
    const b = clientFor(t, buyer);
    const resting = await s.createOrder({
      pair: 'BTC/EUR',
      direction: 'sell',
      type: 'limit',
      volume: '0.01',
      price: '30000.0',
    });
    assert.equal(typeof resting.id, 'number');
    assert.equal(resting.envelope.code, 201);

    const book = await clientFor(t).orderbook({ tickerId: 'BTC/EUR', depth: 10 });
    assert.deepEqual(book[0]?.asks[0], ['30000.0', '0.01000000']);

    const taker = await b.createOrder({ pair: 'BTC/EUR', direction: 'buy', type: 'market', volume: '0.004' });
    const filled = (await b.order(taker.id!)).data;
    assert.equal(filled.status, 'closed');
    assert.equal(filled.volume_executed.amount, '0.00400000');
    assert.equal(filled.trades.length, 1);

    const open = await s.openOrders({ pair: 'BTC/EUR' });
    assert.deepEqual(
      open.data.map((o) => o.id),
      [resting.id],
    );
    assert.equal(open.meta, undefined);
    const paged = await s.openOrders({ pageSize: 1, page: 1 });
    assert.equal(paged.meta?.per_page, 1);
    assert.equal(paged.meta?.total, 1);

    const closed = await b.closedOrders({ pair: 'BTC/EUR' });
    assert.equal(closed.data[0]?.id, taker.id);

    const trades = await b.trades({ pairs: ['BTC/EUR'] });
    assert.equal(trades.data.length, 1);
    const trade = trades.data[0]!;
    assert.equal(trade.order_id, taker.id);
    assert.equal(trade.price.amount, '30000.0');
    assert.deepEqual((await b.trade(trade.id)).data, trade);
    assert.equal((await b.trades({ pairs: ['ETH/EUR'] })).data.length, 0);

    const wallet = await b.spotWallet();
    assert.equal(wallet.data.find((w) => w.asset_id === 'BTC')?.balance.balance_total, '10.0040000000');
    assert.deepEqual((await b.tradeWallet()).data, wallet.data);

    const pub = clientFor(t);
    const history = await pub.historicalTrades({ tickerId: 'BTC/EUR' });
    assert.equal(history.buy.length, 1);
    assert.equal(history.buy[0]?.price, '30000.0');
    const candles = await pub.ohlc({ tickerId: 'BTC/EUR', interval: 1 });
    assert.equal(candles.at(-1)?.close, '30000.0');
    assert.equal(candles.at(-1)?.count, 1);
    await eventually(async () => {
      const [ticker] = await pub.tickers('BTC/EUR');
      assert.equal(ticker?.last_price, '30000.0');
    });

    const canceled = await s.cancelOrder(resting.id!);
    assert.equal(canceled.success, true);
    assert.equal((await s.order(resting.id!)).data.status, 'canceled');
    const again = await apiError(s.cancelOrder(resting.id!));
    assert.equal(again.status, 409);
    assert.equal(again.shape, 'E');
  });

  test('order controls: client ids, post-only, GTD, amend, batches, cancel-all and the switch', async () => {
    const maker = clientFor(t, await t.trader());
    const taker = clientFor(t, await t.trader());
    const pair = 'ETH/EUR';
    const soon = Math.floor(Date.now() / 1000) + 3600;

    const quote = await maker.createOrder({
      pair,
      direction: 'sell',
      type: 'limit',
      volume: '1',
      price: '3000.00',
      timeInForce: 'GTD',
      expireTime: soon,
      postOnly: true,
      clientOrderId: 'mm-ask-1',
    });
    const byClientId = (await maker.getByClientOrderId('mm-ask-1')).data;
    assert.equal(byClientId.id, quote.id);
    assert.equal(byClientId.client_order_id, 'mm-ask-1');
    assert.equal(byClientId.time_in_force, 'GTD');
    assert.equal(byClientId.post_only, true);
    assert.equal(byClientId.expire_time, `${soon}.0000`);
    const duplicate = await apiError(
      maker.createOrder({
        pair,
        direction: 'sell',
        type: 'limit',
        volume: '1',
        price: '3100.00',
        clientOrderId: 'mm-ask-1',
      }),
    );
    assert.equal(duplicate.status, 422);
    assert.ok(
      duplicate.body !== undefined && 'errors' in duplicate.body && duplicate.body.errors.client_order_id,
    );

    // A post-only bid at the ask would take: canceled, nothing traded.
    const crossing = await taker.createOrder({
      pair,
      direction: 'buy',
      type: 'limit',
      volume: '0.1',
      price: '3000.00',
      postOnly: true,
    });
    const ended = (await taker.order(crossing.id!)).data;
    assert.equal(ended.status, 'canceled');
    assert.equal(ended.volume_executed.amount, '0.00000000');

    // Amend: the volume down, then the price; the record follows.
    await maker.amend(quote.id!, { volume: '0.5' });
    const amended = await maker.amend(quote.id!, { price: '3001.00' });
    assert.equal(amended.success, true);
    const now = (await maker.order(quote.id!)).data;
    assert.equal(now.volume.amount, '0.50000000');
    assert.equal(now.price.amount, '3001.00');

    // A batch: each order on its own, in the order given.
    const batch = await maker.placeBatch([
      { pair, direction: 'sell', type: 'limit', volume: '0.1', price: '3100.00', postOnly: true },
      { pair, direction: 'sell', type: 'limit', volume: '0.1', price: '-1' },
      {
        pair: 'BTC/EUR',
        direction: 'sell',
        type: 'limit',
        volume: '0.01',
        price: '90000.0',
        clientOrderId: 'mm-btc',
      },
    ]);
    assert.deepEqual(
      batch.data.map((r) => r.success),
      [true, false, true],
    );
    const [first, refused] = batch.data;
    assert.ok(first?.success === true && first.location === `/v1/orders/${first.id}`);
    assert.ok(refused?.success === false && refused.errors.price !== undefined);
    const tooMany = await apiError(
      maker.placeBatch(
        Array.from({ length: 21 }, () => ({
          pair,
          direction: 'sell' as const,
          type: 'market' as const,
          volume: '1',
        })),
      ),
    );
    assert.equal(tooMany.status, 422);

    // Cancel by client id, then all of one market, then the rest.
    assert.equal((await maker.cancelByClientOrderId('mm-btc')).success, true);
    assert.equal((await maker.getByClientOrderId('mm-btc')).data.status, 'canceled');
    await maker.createOrder({
      pair: 'BTC/EUR',
      direction: 'sell',
      type: 'limit',
      volume: '0.01',
      price: '90000.0',
    });
    assert.deepEqual((await maker.cancelAll({ pair })).data, { canceled: 2 });
    assert.deepEqual((await maker.cancelAll()).data, { canceled: 1 });
    assert.deepEqual((await maker.cancelAll()).data, { canceled: 0 });

    // The switch: armed, it reports when it fires; 0 disarms it.
    const before = Date.now() / 1000;
    const armed = (await maker.cancelAllAfter(60)).data.trigger_time;
    assert.match(armed, /^\d+\.\d{4}$/);
    assert.ok(Number(armed) >= before + 59 && Number(armed) <= Date.now() / 1000 + 61, armed);
    assert.deepEqual((await maker.cancelAllAfter(0)).data, { trigger_time: '0.0000' });
    assert.equal((await apiError(maker.cancelAllAfter(86_401))).status, 422);
  });

  test("the dead man's switch cancels the open orders once it is not renewed", async () => {
    const c = clientFor(t, await t.trader());
    const placed = await c.createOrder({
      pair: 'ETH/EUR',
      direction: 'buy',
      type: 'limit',
      volume: '0.01',
      price: '100.00',
    });
    await c.cancelAllAfter(1);
    await eventually(async () => {
      const order = (await c.order(placed.id!)).data;
      assert.equal(order.status, 'canceled');
      assert.equal(order.reason, "dead man's switch");
    }, 5000);
  });

  test('error statuses and shapes of private endpoints', async () => {
    const s = clientFor(t, seller);
    const d = await apiError(
      s.createOrder({ pair: 'BTC/EUR', direction: 'buy', type: 'limit', volume: '0.01' }),
    );
    assert.equal(d.status, 422);
    assert.equal(d.shape, 'D');
    assert.ok(d.body !== undefined && 'errors' in d.body && d.body.errors.price !== undefined);

    const c = await apiError(s.order(999_999));
    assert.equal(c.status, 404);
    assert.equal(c.shape, 'C');
    assert.equal((await apiError(s.trade(999_999))).shape, 'C');

    const forged = new OpenSpotClient({
      baseUrl: `${t.url}/v1`,
      apiKey: seller.apiKey,
      apiSecret: Buffer.from('not the secret').toString('base64'),
    });
    const e = await apiError(forged.spotWallet());
    assert.equal(e.status, 422);
    assert.deepEqual(e.body, { error: 'Invalid Signature' });

    const readOnly = await t.trader({}, ['read']);
    const denied = await apiError(
      clientFor(t, readOnly).createOrder({
        pair: 'BTC/EUR',
        direction: 'buy',
        type: 'market',
        volume: '0.01',
      }),
    );
    assert.equal(denied.status, 403);
    assert.deepEqual(denied.body, { error: 'Access Denied' });
  });

  test('a lost 201 for a nonce-required key: the retry is re-signed with a new nonce and gets the same order', async () => {
    const { userId } = await t.trader();
    const key = (
      await t.admin('POST', `/users/${userId}/api-keys`, { scopes: ['read', 'trade'], nonce_required: true })
    ).body as { api_key: string; api_secret: string };
    const sent: { nonce: string; idempotencyKey: string | null }[] = [];
    // The first answer is lost after the server committed the order (a dropped connection on the
    // way back); later answers arrive.
    const lossy: typeof fetch = async (input, init) => {
      const headers = new Headers(init?.headers);
      sent.push({
        nonce: (JSON.parse(String(init?.body)) as { nonce: string }).nonce,
        idempotencyKey: headers.get('idempotency-key'),
      });
      const response = await fetch(input, init);
      if (sent.length === 1) {
        await response.text();
        throw new TypeError('fetch failed');
      }
      return response;
    };
    const c = new OpenSpotClient({
      baseUrl: `${t.url}/v1`,
      apiKey: key.api_key,
      apiSecret: key.api_secret,
      nonce: true,
      retryDelayMs: 1,
      fetch: lossy,
    });
    const created = await c.createOrder({
      pair: 'BTC/EUR',
      direction: 'buy',
      type: 'limit',
      volume: '0.01',
      price: '1000.0',
    });
    assert.equal(sent.length, 2);
    assert.equal(sent[1]!.idempotencyKey, sent[0]!.idempotencyKey);
    assert.ok(BigInt(sent[1]!.nonce) > BigInt(sent[0]!.nonce), 'the retry carries a fresh nonce');
    assert.equal(created.envelope.code, 201);
    const open = await clientFor(t, { userId, apiKey: key.api_key, apiSecret: key.api_secret }).openOrders();
    assert.deepEqual(
      open.data.map((o) => o.id),
      [created.id],
      'exactly one order, the one the retry names',
    );
  });

  test('broadcastingAuth: own channel granted, other channels and unknown sockets denied', async () => {
    const s = clientFor(t, seller);
    const { log, socketId } = await FrameLog.open(wsUrl(t));
    try {
      const granted = await s.broadcastingAuth(socketId, `private-order-executed.${seller.userId}`);
      assert.match(granted.auth, /^[^:]+:[0-9a-f]{64}$/);
      const denied = await apiError(s.broadcastingAuth(socketId, `private-order-executed.${buyer.userId}`));
      assert.equal(denied.status, 403);
      assert.deepEqual(denied.body, { error: 'Access Denied' });
    } finally {
      log.close();
    }
    const notConnected = await apiError(
      s.broadcastingAuth('123.456', `private-order-executed.${seller.userId}`),
    );
    assert.equal(notConnected.status, 403);
  });

  test('realtime on the real feed: private executions and a checksum-verified local book', async () => {
    const port = Number(new URL(t.url).port);
    const s = clientFor(t, seller);
    const rt = connectRealtime({ wsHost: '127.0.0.1', wsPort: port, appKey: 'openspot-key', client: s });
    try {
      await rt.connected(5000);
      const executions: ExecutionMessage[] = [];
      const books: string[] = [];
      const privateSub = rt.executions(seller.userId, (m) => executions.push(m));
      const bookSub = rt.localBook('ETH/EUR', (_book, result) => books.push(result.status));
      await Promise.all([privateSub.ready, bookSub.ready]);
      await eventually(() => assert.ok(books.length >= 1 && executions.length >= 1));

      const ids: number[] = [];
      for (const [price, volume] of [
        ['2000.00', '0.5'],
        ['2001.50', '0.25'],
        ['1999.99', '1'],
      ] as const) {
        ids.push(
          (await s.createOrder({ pair: 'ETH/EUR', direction: 'sell', type: 'limit', volume, price })).id!,
        );
      }
      await clientFor(t, buyer).createOrder({
        pair: 'ETH/EUR',
        direction: 'buy',
        type: 'market',
        volume: '1.2',
      });
      await s.cancelOrder(ids[1]!);
      // An amend is an `amended` message that says why; the local book follows the new volume.
      await s.amend(ids[0]!, { volume: '0.45' });

      await eventually(() => {
        assert.deepEqual(bookSub.book.asks(), [{ price: '2000.00', qty: '0.25000000' }]);
        assert.ok(
          books.every((status) => status === 'ok'),
          JSON.stringify(books),
        );
      });
      await eventually(() => {
        const events = executions.flatMap((m) => (m.type === 'update' ? [m.data.event] : []));
        assert.deepEqual(events.filter((e) => e === 'accepted').length, 3);
        assert.ok(events.includes('trade'));
        assert.ok(events.includes('closed'));
        assert.ok(events.includes('canceled'));
        const amended = executions.find((m) => m.type === 'update' && m.data.event === 'amended');
        assert.ok(amended?.type === 'update');
        assert.equal(amended.data.reason, 'amended by user');
        assert.equal(amended.data.order.volume.amount, '0.45000000');
      });
    } finally {
      rt.disconnect();
    }
  });
});
