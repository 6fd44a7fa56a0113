/**
 * OpenSpotClient against a tiny local HTTP server that records what it receives: paths, exact
 * query names, headers, signatures over the exact bytes sent, and error typing for every shape.
 */
import assert from 'node:assert/strict';
import { createHash, createHmac } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, test } from 'node:test';
import { OpenSpotClient } from './client.js';
import { OpenSpotApiError, OpenSpotTransportError } from './errors.js';

interface Received {
  method: string;
  url: string;
  headers: IncomingMessage['headers'];
  body: string;
}

const SECRET = Buffer.from('fake-secret-bytes-for-the-tests!').toString('base64');
const received: Received[] = [];
let reply: (req: Received, res: ServerResponse) => void = (_req, res) => json(res, 200, {});
let baseUrl = '';

function json(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) {
  res.writeHead(status, { 'content-type': 'application/json', ...headers });
  res.end(JSON.stringify(body));
}

const server = createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    const r = {
      method: req.method ?? '',
      url: req.url ?? '',
      headers: req.headers,
      body: Buffer.concat(chunks).toString('utf8'),
    };
    received.push(r);
    reply(r, res);
  });
});

before(async () => {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
});
after(async () => {
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

const client = () => new OpenSpotClient({ baseUrl, apiKey: 'key-1', apiSecret: SECRET, timeoutMs: 5000 });
const last = () => received[received.length - 1]!;

/** The server-side check, written independently of sign.ts. */
function verify(r: Received): boolean {
  const digest = createHash('sha256')
    .update(r.body === '' ? '{}' : r.body)
    .digest('hex');
  const expected = createHmac('sha512', Buffer.from(SECRET, 'base64'))
    .update(r.method + digest)
    .digest('base64');
  return r.headers['x-api-sign'] === expected && r.headers['x-api-key'] === 'key-1';
}

test('public endpoints: paths, exact query names, no auth headers', { timeout: 10_000 }, async () => {
  reply = (_r, res) => json(res, 200, []);
  const c = client();
  await c.markets('BTC/EUR');
  assert.equal(last().url, '/v1/markets?pair=BTC%2FEUR');
  assert.equal(last().headers['x-api-key'], undefined);
  assert.equal(last().headers.accept, 'application/json');
  await c.tickers();
  assert.equal(last().url, '/v1/tickers');
  await c.ohlc({ tickerId: 'BTC/EUR', interval: 5, since: 1700000000 });
  assert.equal(last().url, '/v1/ohlc?ticker_id=BTC%2FEUR&interval=5&since=1700000000');
  await c.orderbook({ tickerId: 'ETH/EUR', depth: 10 });
  assert.equal(last().url, '/v1/orderbook?ticker_id=ETH%2FEUR&depth=10');
  await c.historicalTrades({ tickerId: 'BTC/EUR', type: 'sell', limit: 3, startTime: 1 });
  assert.equal(last().url, '/v1/historical_trades?ticker_id=BTC%2FEUR&type=sell&limit=3&start_time=1');
});

test('private GET and DELETE are signed over {} and send no body', { timeout: 10_000 }, async () => {
  reply = (_r, res) => json(res, 200, { success: true, message: 'ok', data: [], code: 200 });
  const c = client();
  for (const call of [
    () => c.spotWallet(),
    () => c.tradeWallet(),
    () => c.order(7),
    () => c.openOrders({ pair: 'BTC/EUR', pageSize: 2, page: 3 }),
    () => c.closedOrders(),
    () => c.trades({ pairs: ['BTC/EUR', 'ETH/EUR'], pageSize: 5 }),
    () => c.trade(9),
    () => c.cancelOrder(7),
  ]) {
    await call();
    assert.equal(last().body, '');
    assert.equal(last().headers['content-type'], undefined);
    assert.ok(verify(last()), `${last().method} ${last().url} is signed`);
  }
  const urls = received.slice(-8).map((r) => `${r.method} ${r.url}`);
  assert.deepEqual(urls, [
    'GET /v1/spot-wallet',
    'GET /v1/trade-wallet',
    'GET /v1/orders/7',
    'GET /v1/open-orders?pair=BTC%2FEUR&page-size=2&page=3',
    'GET /v1/closed-orders',
    'GET /v1/trades?pairs[]=BTC%2FEUR&pairs[]=ETH%2FEUR&page-size=5',
    'GET /v1/trades/9',
    'DELETE /v1/orders/7',
  ]);
});

test('with nonces on: DELETE signs a body naming the nonce and the order; POST bodies carry the nonce', {
  timeout: 10_000,
}, async () => {
  reply = (_r, res) => json(res, 200, { success: true, message: 'ok', code: 200, auth: 'k:s' });
  let next = 41n;
  const c = new OpenSpotClient({ baseUrl, apiKey: 'key-1', apiSecret: SECRET, nonce: () => String(++next) });
  await c.cancelOrder(7);
  assert.equal(last().method, 'DELETE');
  assert.equal(last().url, '/v1/orders/7');
  assert.equal(last().body, '{"nonce":"42","order_id":7}');
  assert.equal(last().headers['content-type'], 'application/json');
  assert.ok(verify(last()), 'the body is what was signed');
  await c.createOrder({ pair: 'BTC/EUR', direction: 'buy', type: 'market', volume: '1' });
  assert.equal(JSON.parse(last().body).nonce, '43');
  assert.ok(verify(last()));
  await c.broadcastingAuth('123.456', 'private-order-executed.1');
  assert.equal(last().body, '{"socket_id":123.456,"channel_name":"private-order-executed.1","nonce":"44"}');
  assert.ok(verify(last()));
  await c.spotWallet();
  assert.equal(last().body, '', 'GET requests carry no body, hence no nonce');
});

test('nonce: true uses increasing microsecond timestamps, even when called within one microsecond', {
  timeout: 10_000,
}, async () => {
  reply = (_r, res) => json(res, 200, { success: true, message: 'ok', code: 200 });
  const c = new OpenSpotClient({ baseUrl, apiKey: 'key-1', apiSecret: SECRET, nonce: true });
  const nonces: bigint[] = [];
  for (const id of [1, 2, 3]) {
    await c.cancelOrder(id);
    nonces.push(BigInt(JSON.parse(last().body).nonce));
  }
  assert.ok(nonces[0]! >= BigInt(Date.now() - 60_000) * 1000n, 'a microsecond timestamp');
  assert.ok(nonces[0]! < nonces[1]! && nonces[1]! < nonces[2]!);
});

test('createOrder sends the signed string byte for byte and reads the id from Location', {
  timeout: 10_000,
}, async () => {
  reply = (_r, res) =>
    json(res, 201, { success: true, message: 'Order created', code: 201 }, { location: '/v1/orders/42' });
  const created = await client().createOrder({
    pair: 'BTC/EUR',
    direction: 'buy',
    type: 'limit',
    volume: '0.01',
    price: '30000.5',
  });
  assert.equal(created.id, 42);
  assert.deepEqual(created.envelope, { success: true, message: 'Order created', code: 201 });
  const r = last();
  assert.equal(r.method, 'POST');
  assert.equal(r.headers['content-type'], 'application/json');
  assert.equal(
    r.body,
    '{"order_direction":"buy","order_type":"limit","pair":"BTC/EUR","volume":"0.01","price":"30000.5"}',
  );
  assert.ok(verify(r));

  reply = (_r, res) => json(res, 201, { success: true, message: 'Order created', code: 201 });
  const market = await client().createOrder({
    pair: 'BTC/EUR',
    direction: 'sell',
    type: 'market',
    volume: '1',
  });
  assert.equal(market.id, undefined);
  assert.equal(last().body, '{"order_direction":"sell","order_type":"market","pair":"BTC/EUR","volume":"1"}');
});

test('broadcastingAuth writes socket_id as a number from its own digits', { timeout: 10_000 }, async () => {
  reply = (_r, res) => json(res, 200, { auth: 'k:abc' });
  assert.deepEqual(await client().broadcastingAuth('12.34560', 'private-order-executed.3'), {
    auth: 'k:abc',
  });
  assert.equal(last().body, '{"socket_id":12.34560,"channel_name":"private-order-executed.3"}');
  assert.ok(verify(last()));
  await assert.rejects(client().broadcastingAuth('1e3', 'x'), TypeError);
});

test('errors carry the status and the body typed by shape', { timeout: 10_000 }, async () => {
  const cases: Array<[number, unknown, string | undefined, string]> = [
    [400, { success: false, error: { message: 'Invalid pair', code: 400 } }, 'A', 'Invalid pair'],
    [
      422,
      {
        success: false,
        error: { message: 'The ticker id field is required.', validations: ['x'], code: 422 },
      },
      'B',
      'The ticker id field is required.',
    ],
    [
      404,
      { success: false, message: 'Order not found', error: { message: 'Order not found', code: 404 } },
      'C',
      'Order not found',
    ],
    [
      422,
      { message: 'The price field is required.', errors: { price: ['The price field is required.'] } },
      'D',
      'The price field is required.',
    ],
    [422, { error: 'Invalid Signature' }, 'E', 'Invalid Signature'],
    [502, '<html>bad gateway</html>', undefined, 'HTTP 502'],
  ];
  for (const [status, body, shape, text] of cases) {
    reply = (_r, res) => {
      res.writeHead(status, { 'content-type': 'application/json', 'retry-after': '2' });
      res.end(typeof body === 'string' ? body : JSON.stringify(body));
    };
    const error = await client()
      .spotWallet()
      .then(
        () => assert.fail('expected an error'),
        (e: unknown) => e,
      );
    assert.ok(error instanceof OpenSpotApiError);
    assert.equal(error.status, status);
    assert.equal(error.shape, shape);
    assert.equal(error.retryAfter, 2);
    assert.equal(error.message, `${status}: ${text}`);
    if (shape === 'D' && error.body !== undefined && 'errors' in error.body)
      assert.deepEqual(error.body.errors.price, ['The price field is required.']);
    if (shape === undefined) assert.equal(error.raw, body);
  }
});

test('transport failures and missing credentials', { timeout: 10_000 }, async () => {
  // A port that was just free: the connection is refused.
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const freePort = (probe.address() as AddressInfo).port;
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  const dead = new OpenSpotClient({ baseUrl: `http://127.0.0.1:${freePort}/v1`, timeoutMs: 2000 });
  await assert.rejects(
    dead.tickers(),
    (e: unknown) => e instanceof OpenSpotTransportError && /ECONNREFUSED/.test(e.message),
  );
  await assert.rejects(new OpenSpotClient({ baseUrl }).spotWallet(), /needs an API key/);
  await assert.rejects(client().order(0), TypeError);
  const slow = new OpenSpotClient({ baseUrl, timeoutMs: 50 });
  reply = (_r, res) => setTimeout(() => json(res, 200, []), 500);
  await assert.rejects(slow.tickers(), OpenSpotTransportError);
});

test('an injected fetch replaces the global one', { timeout: 10_000 }, async () => {
  const calls: string[] = [];
  const fake: typeof fetch = async (input) => {
    calls.push(String(input));
    return new Response('[]', { status: 200 });
  };
  const c = new OpenSpotClient({ baseUrl: 'http://example.invalid/v1/', fetch: fake });
  assert.deepEqual(await c.tickers('BTC/EUR'), []);
  assert.deepEqual(calls, ['http://example.invalid/v1/tickers?ticker_id=BTC%2FEUR']);
});

test('createOrder sends an Idempotency-Key and retries lost answers with the same key and body', {
  timeout: 10_000,
}, async () => {
  const params = { pair: 'BTC/EUR', direction: 'buy', type: 'limit', volume: '0.01', price: '100' } as const;
  const quick = new OpenSpotClient({ baseUrl, apiKey: 'key-1', apiSecret: SECRET, retryDelayMs: 1 });
  // A fresh key per logical order.
  reply = (_r, res) => json(res, 201, { success: true }, { location: '/v1/orders/7' });
  await quick.createOrder(params);
  const firstKey = last().headers['idempotency-key'];
  await quick.createOrder(params);
  assert.match(String(firstKey), /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  assert.notEqual(last().headers['idempotency-key'], firstKey);

  // The answer is lost twice (a dropped connection, then a 503): the retries carry the same key
  // and the same signed body, and the third answer is the order's.
  const start = received.length;
  let calls = 0;
  reply = (_r, res) => {
    calls++;
    if (calls === 1) res.socket?.destroy();
    else if (calls === 2) json(res, 503, { error: 'Service Unavailable' });
    else json(res, 201, { success: true }, { location: '/v1/orders/42' });
  };
  const created = await quick.createOrder({ ...params, idempotencyKey: 'mine-1' });
  assert.equal(created.id, 42);
  const attempts = received.slice(start);
  assert.equal(attempts.length, 3);
  for (const r of attempts) {
    assert.equal(r.headers['idempotency-key'], 'mine-1');
    assert.equal(r.body, attempts[0]!.body);
    assert.ok(verify(r));
  }

  // A refusal is an answer: not retried.
  const before = received.length;
  reply = (_r, res) => json(res, 422, { message: 'x', errors: { volume: ['x'] } });
  await assert.rejects(quick.createOrder(params), OpenSpotApiError);
  assert.equal(received.length, before + 1);

  // Retries can be turned off; the last failure is what the caller sees.
  const once = new OpenSpotClient({ baseUrl, apiKey: 'key-1', apiSecret: SECRET, orderRetries: 0 });
  reply = (_r, res) => json(res, 503, { error: 'Service Unavailable' });
  const n = received.length;
  await assert.rejects(
    once.createOrder(params),
    (e: unknown) => e instanceof OpenSpotApiError && e.status === 503,
  );
  assert.equal(received.length, n + 1);
});

test('order controls travel under the interface names, after the fields an order always has', {
  timeout: 10_000,
}, async () => {
  reply = (_r, res) => json(res, 201, { success: true }, { location: '/v1/orders/5' });
  await client().createOrder({
    pair: 'BTC/EUR',
    direction: 'sell',
    type: 'limit',
    volume: '0.5',
    price: '31000.0',
    timeInForce: 'GTD',
    expireTime: 1_900_000_000,
    postOnly: true,
    clientOrderId: 'quote-1_a',
    stp: 'decrement',
  });
  assert.equal(
    last().body,
    '{"order_direction":"sell","order_type":"limit","pair":"BTC/EUR","volume":"0.5","price":"31000.0",' +
      '"time_in_force":"GTD","expire_time":1900000000,"post_only":true,"client_order_id":"quote-1_a","stp":"decrement"}',
  );
  assert.ok(verify(last()));
  // `false` is a value the caller chose, so it is sent; only absent fields stay out.
  await client().createOrder({
    pair: 'BTC/EUR',
    direction: 'buy',
    type: 'market',
    volume: '1',
    timeInForce: 'IOC',
    postOnly: false,
    expireTime: '1900000000.5',
  });
  assert.equal(
    last().body,
    '{"order_direction":"buy","order_type":"market","pair":"BTC/EUR","volume":"1","time_in_force":"IOC","expire_time":"1900000000.5","post_only":false}',
  );
});

test('cancel-all, the switch, batches, amend and client ids: paths, bodies and signatures', {
  timeout: 10_000,
}, async () => {
  reply = (_r, res) => json(res, 200, { success: true, message: 'ok', code: 200, data: { canceled: 2 } });
  const c = client();
  assert.deepEqual((await c.cancelAll()).data, { canceled: 2 });
  assert.equal(`${last().method} ${last().url} ${last().body}`, 'DELETE /v1/orders ');
  assert.ok(verify(last()));
  await c.cancelAll({ pair: 'BTC/EUR' });
  assert.equal(`${last().method} ${last().url} ${last().body}`, 'DELETE /v1/orders?pair=BTC%2FEUR ');

  await c.cancelAllAfter(60);
  assert.equal(
    `${last().method} ${last().url} ${last().body}`,
    'POST /v1/orders/cancel-all-after {"timeout":60}',
  );
  assert.ok(verify(last()));

  await c.placeBatch([
    { pair: 'BTC/EUR', direction: 'buy', type: 'limit', volume: '0.1', price: '29000.0', postOnly: true },
    { pair: 'ETH/EUR', direction: 'sell', type: 'market', volume: '1', clientOrderId: 'x' },
  ]);
  assert.equal(last().url, '/v1/orders/batch');
  assert.equal(
    last().body,
    '{"orders":[{"order_direction":"buy","order_type":"limit","pair":"BTC/EUR","volume":"0.1","price":"29000.0","post_only":true},' +
      '{"order_direction":"sell","order_type":"market","pair":"ETH/EUR","volume":"1","client_order_id":"x"}]}',
  );
  assert.equal(last().headers['idempotency-key'], undefined, 'a batch is not deduplicated');
  assert.ok(verify(last()));

  await c.amend(7, { volume: '0.3' });
  assert.equal(`${last().method} ${last().url} ${last().body}`, 'PATCH /v1/orders/7 {"volume":"0.3"}');
  assert.ok(verify(last()));
  await c.amend(7, { price: '30000.5', volume: '0.4', clientOrderId: 'renamed' });
  assert.equal(last().body, '{"price":"30000.5","volume":"0.4","client_order_id":"renamed"}');

  await c.getByClientOrderId('bot-42_A');
  assert.equal(`${last().method} ${last().url} ${last().body}`, 'GET /v1/orders/client/bot-42_A ');
  await c.cancelByClientOrderId('bot-42_A');
  assert.equal(`${last().method} ${last().url} ${last().body}`, 'DELETE /v1/orders/client/bot-42_A ');
  assert.ok(verify(last()));

  // An id the server could never have stored is refused before anything is sent.
  const sent = received.length;
  await assert.rejects(c.getByClientOrderId('../orders/7'), TypeError);
  await assert.rejects(c.cancelByClientOrderId('x'.repeat(37)), TypeError);
  await assert.rejects(c.amend(0, { volume: '1' }), TypeError);
  assert.equal(received.length, sent);
});

test('with nonces on, every new state change signs a body that carries the nonce', {
  timeout: 10_000,
}, async () => {
  reply = (_r, res) => json(res, 200, { success: true, message: 'ok', code: 200 });
  let next = 0n;
  const c = new OpenSpotClient({ baseUrl, apiKey: 'key-1', apiSecret: SECRET, nonce: () => String(++next) });
  await c.cancelAll();
  assert.equal(last().body, '{"nonce":"1"}');
  assert.ok(verify(last()));
  await c.cancelAll({ pair: 'ETH/EUR' });
  assert.equal(`${last().url} ${last().body}`, '/v1/orders?pair=ETH%2FEUR {"nonce":"2","pair":"ETH/EUR"}');
  await c.cancelByClientOrderId('q1');
  assert.equal(last().body, '{"nonce":"3","client_order_id":"q1"}');
  await c.cancelAllAfter(0);
  assert.equal(last().body, '{"timeout":0,"nonce":"4"}');
  await c.amend(3, { price: '1.5', clientOrderId: null });
  assert.equal(last().body, '{"price":"1.5","client_order_id":null,"nonce":"5","order_id":3}');
  await c.placeBatch([{ pair: 'BTC/EUR', direction: 'buy', type: 'market', volume: '1' }]);
  assert.equal(
    last().body,
    '{"orders":[{"order_direction":"buy","order_type":"market","pair":"BTC/EUR","volume":"1"}],"nonce":"6"}',
  );
  assert.ok(verify(last()));
});

test('conditional orders: trigger_price and trailing_offset in the body, trigger_price on an amend', {
  timeout: 10_000,
}, async () => {
  reply = (_r, res) =>
    json(res, 201, { success: true, message: 'Order created', code: 201 }, { location: '/v1/orders/12' });
  const c = client();
  const created = await c.createOrder({
    pair: 'BTC/EUR',
    direction: 'sell',
    type: 'stop-loss-limit',
    volume: '0.01',
    price: '57900.0',
    triggerPrice: '58000.0',
    clientOrderId: 'guard-1',
  });
  assert.equal(created.id, 12);
  assert.equal(
    last().body,
    '{"order_direction":"sell","order_type":"stop-loss-limit","pair":"BTC/EUR","volume":"0.01",' +
      '"price":"57900.0","trigger_price":"58000.0","client_order_id":"guard-1"}',
  );
  assert.ok(verify(last()));
  await c.placeBatch([
    { pair: 'BTC/EUR', direction: 'sell', type: 'trailing-stop', volume: '0.01', trailingOffset: '2.5%' },
    { pair: 'BTC/EUR', direction: 'buy', type: 'take-profit', volume: '0.01', triggerPrice: '50000' },
  ]);
  assert.equal(
    last().body,
    '{"orders":[{"order_direction":"sell","order_type":"trailing-stop","pair":"BTC/EUR","volume":"0.01","trailing_offset":"2.5%"},' +
      '{"order_direction":"buy","order_type":"take-profit","pair":"BTC/EUR","volume":"0.01","trigger_price":"50000"}]}',
  );
  reply = (_r, res) => json(res, 200, { success: true, message: 'ok', code: 200 });
  await c.amend(12, { triggerPrice: '57500.0' });
  assert.equal(
    `${last().method} ${last().url} ${last().body}`,
    'PATCH /v1/orders/12 {"trigger_price":"57500.0"}',
  );
  assert.ok(verify(last()));
});
