import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { Writable } from 'node:stream';
import { after, before, describe, test } from 'node:test';
import { pino } from 'pino';
import type { Exchange } from '../sequencer/ports.js';
import { StoreUnavailableError } from '../store/store.js';
import { PAGE_CSP } from './pages.js';
import { type Harness, startHarness, type Trader } from './testing/harness.js';

const NOT_FOUND = { success: false, message: 'Not Found', error: { message: 'Not Found', code: 404 } };

describe('app: routing, limits, documents', () => {
  let h: Harness;
  let alice: Trader;
  before(async () => {
    h = await startHarness({ bodyLimitBytes: 2048 });
    alice = await h.trader();
  });
  after(() => h.close());

  test('unknown routes and methods are a JSON 404 (shape C)', async () => {
    for (const [method, url] of [
      ['GET', '/v1/nothing'],
      ['GET', '/nothing'],
      ['PUT', '/v1/markets'],
      ['POST', '/v1/tickers'],
      ['GET', '/v2/markets'],
    ] as const) {
      const r = await h.request(method, url, { body: method === 'GET' ? undefined : '{"x":' });
      assert.equal(r.status, 404, `${method} ${url}`);
      assert.deepEqual(r.json, NOT_FOUND);
      assert.match(String(r.headers['content-type']), /^application\/json/);
    }
  });

  test('an unknown route is 404 whatever its body or Content-Type, outside /v1 too', async () => {
    for (const url of ['/nothing', '/healthz', '/v1/nothing', '/admin/v1/nothing']) {
      for (const [type, body] of [
        ['application/json', '{'],
        ['application/json', '\ufeff'],
        ['application/json', ''],
        ['application/json', '{"__proto__":{}}'],
        ['application/json', `{"pad":"${'x'.repeat(20_000)}"}`],
        ['', '{}'],
        ['application/', '{}'],
      ] as const) {
        const r = await h.app.inject({
          method: 'POST',
          url,
          payload: body,
          headers: { 'content-type': type },
        });
        assert.equal(r.statusCode, 404, `${url} ${type} ${JSON.stringify(body).slice(0, 40)}: ${r.body}`);
        assert.deepEqual(r.json(), NOT_FOUND);
      }
    }
  });

  test('an order whose amounts would leave the exact range is a 422 on volume stating the limit', async () => {
    const r = await h.request('POST', '/v1/orders', {
      as: alice,
      body: {
        order_direction: 'buy',
        order_type: 'limit',
        pair: 'BTC/EUR',
        volume: '90000000',
        price: '3000000',
      },
    });
    assert.equal(r.status, 422);
    const body = r.json as { errors: Record<string, string[]> };
    assert.deepEqual(Object.keys(body.errors), ['volume']);
    assert.match(
      body.errors.volume![0]!,
      /^The order value \(price × volume, fees included\) must not be greater than [\d.]+ EUR\.$/,
    );
  });

  test('a body over the limit is 413, in the route’s shape', async () => {
    const big = JSON.stringify({ order_direction: 'buy', pad: 'x'.repeat(4096) });
    const r = await h.request('POST', '/v1/orders', { as: alice, body: big });
    assert.deepEqual([r.status, r.json], [413, { error: 'Payload Too Large' }]);
  });

  test('a body that is not JSON is 400, never 415 or 5xx', async () => {
    for (const type of ['text/plain', 'application/xml', 'multipart/form-data; boundary=x', 'nonsense']) {
      const r = await h.request('POST', '/v1/orders', {
        as: alice,
        body: 'order_direction=buy',
        headers: { 'content-type': type },
      });
      assert.deepEqual([r.status, r.json], [400, { error: 'Invalid request' }], type);
    }
    const noType = await h.app.inject({ method: 'POST', url: '/v1/orders', payload: Buffer.from('{}') });
    assert.equal(noType.statusCode < 500, true);
    // An unsigned, malformed request still only learns "Invalid Signature".
    const unsigned = await h.request('POST', '/v1/orders', { body: '{', headers: {} });
    assert.equal(unsigned.status, 422);
  });

  test('OpenAPI 3.1 document lists every endpoint; /docs serves a page', async () => {
    const r = await h.request('GET', '/v1/openapi.json');
    assert.equal(r.status, 200);
    const doc = r.json as { openapi: string; paths: Record<string, Record<string, unknown>> };
    assert.equal(doc.openapi, '3.1.0');
    const operations = Object.entries(doc.paths).flatMap(([path, ops]) =>
      Object.keys(ops).map((m) => `${m.toUpperCase()} ${path}`),
    );
    for (const op of [
      'GET /v1/markets',
      'GET /v1/tickers',
      'GET /v1/ohlc',
      'GET /v1/orderbook',
      'GET /v1/historical_trades',
      'GET /v1/spot-wallet',
      'GET /v1/trade-wallet',
      'POST /v1/orders',
      'DELETE /v1/orders/{order_id}',
      'GET /v1/orders/{order_id}',
      'GET /v1/open-orders',
      'GET /v1/closed-orders',
      'GET /v1/trades',
      'GET /v1/trades/{trade_id}',
      'POST /v1/broadcasting/auth',
    ]) {
      assert.ok(operations.includes(op), op);
    }
    const tradeWallet = doc.paths['/v1/trade-wallet']?.get as { deprecated?: boolean } | undefined;
    assert.equal(tradeWallet?.deprecated, true);
    // The 201 of POST /v1/orders documents its Location header (the new order's address).
    const created = (
      doc.paths['/v1/orders']!.post as {
        responses: Record<
          string,
          { headers?: Record<string, { schema?: { type?: string }; description?: string }> }
        >;
      }
    ).responses['201'];
    assert.equal(created?.headers?.Location?.schema?.type, 'string');
    assert.match(String(created?.headers?.Location?.description), /\/v1\/orders\/\{order_id\}/);
    // Without PUBLIC_URL the server is relative: the origin that served the document.
    assert.deepEqual((r.json as { servers?: unknown }).servers, [
      { url: '/', description: 'The origin serving this document' },
    ]);
    const create = doc.paths['/v1/orders']?.post as { parameters?: { name: string; in: string }[] };
    assert.ok(create.parameters?.some((p) => p.in === 'header' && p.name === 'idempotency-key'));
    // Conditional orders: the request's types and fields, and the record's order_type.
    const conditional = ['stop-loss', 'take-profit', 'stop-loss-limit', 'take-profit-limit', 'trailing-stop'];
    const text = JSON.stringify(create);
    const body = (
      create as {
        requestBody?: {
          content: Record<string, { schema: { properties: Record<string, { enum?: string[] }> } }>;
        };
      }
    ).requestBody?.content['application/json']?.schema.properties;
    for (const type of conditional) assert.ok(body?.order_type?.enum?.includes(type), type);
    assert.ok(body?.trigger_price !== undefined && body.trailing_offset !== undefined, text.slice(0, 200));
    const one = JSON.stringify(doc.paths['/v1/orders/{order_id}']);
    for (const type of conditional)
      assert.ok(one.includes(`"${type}"`), `GET /v1/orders/{order_id}: ${type}`);
    assert.ok(JSON.stringify(doc.paths['/v1/orders/{order_id}']?.patch).includes('trigger_price'));
    const page = await h.app.inject({ method: 'GET', url: '/docs/' });
    assert.equal(page.statusCode, 200);
    assert.match(page.headers['content-type'] as string, /text\/html/);
  });

  test("/docs is sent with the pages' CSP and may not be framed, page, scripts and document alike", async () => {
    for (const url of ['/docs', '/docs/', '/docs/static/swagger-ui-bundle.js', '/docs/json']) {
      const r = await h.app.inject({ method: 'GET', url });
      assert.ok(r.statusCode < 400, `${url}: ${r.statusCode}`);
      assert.equal(r.headers['content-security-policy'], PAGE_CSP, url);
      assert.equal(r.headers['x-frame-options'], 'DENY', url);
      assert.equal(r.headers['x-content-type-options'], 'nosniff', url);
    }
    // The API itself is answered as before: no page headers.
    const markets = await h.app.inject({ method: 'GET', url: '/v1/markets' });
    assert.equal(markets.headers['content-security-policy'], undefined);
  });
});

test('OpenAPI document: with PUBLIC_URL, that origin is the server', async () => {
  const h = await startHarness({ publicUrl: 'https://api.example.com' });
  try {
    const r = await h.request('GET', '/v1/openapi.json');
    assert.deepEqual((r.json as { servers?: unknown }).servers, [
      { url: 'https://api.example.com', description: 'Public origin (PUBLIC_URL)' },
    ]);
  } finally {
    await h.close();
  }
});

describe('app: failures', () => {
  const lines: string[] = [];
  const sink = new Writable({
    write(chunk, _encoding, done) {
      lines.push(String(chunk));
      done();
    },
  });
  let h: Harness;
  let alice: Trader;
  before(async () => {
    const wrap = (exchange: Exchange): Exchange =>
      new Proxy(exchange, {
        get(target, key, receiver) {
          if (key === 'submit') return () => Promise.reject(new StoreUnavailableError('disk full'));
          if (key === 'balances') {
            return () => {
              throw new Error('balances exploded');
            };
          }
          const value = Reflect.get(target, key, receiver);
          return typeof value === 'function' ? value.bind(target) : value;
        },
      });
    h = await startHarness({ logger: pino({ level: 'info' }, sink), wrap });
    alice = await h.trader();
  });
  after(() => h.close());

  test('a store outage is a 503 with Retry-After, in the route’s shape', async () => {
    const r = await h.request('POST', '/v1/orders', {
      as: alice,
      body: { order_direction: 'buy', order_type: 'limit', pair: 'BTC/EUR', volume: '0.01', price: '100' },
    });
    assert.deepEqual([r.status, r.json], [503, { error: 'Service Unavailable' }]);
    assert.equal(r.headers['retry-after'], '1');
  });

  test('an unexpected error is a 500 that is logged without credentials', async () => {
    lines.length = 0;
    const r = await h.request('GET', '/v1/spot-wallet', { as: alice });
    assert.deepEqual([r.status, r.json], [500, { error: 'Server Error' }]);
    const log = lines.join('');
    assert.match(log, /balances exploded/);
    assert.ok(!log.includes(alice.apiSecret));
    assert.ok(!log.toLowerCase().includes('x-api-sign'));
  });
});

/** Raw bytes on a fresh connection; resolves with everything the server sent before closing. */
function rawExchange(port: number, text: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    const chunks: Buffer[] = [];
    const timer = setTimeout(() => socket.destroy(new Error('no close within 5 s')), 5000);
    socket.on('data', (chunk: Buffer) => chunks.push(chunk));
    socket.on('error', reject);
    socket.on('close', () => {
      clearTimeout(timer);
      resolve(Buffer.concat(chunks).toString('latin1'));
    });
    socket.end(text, 'latin1');
  });
}

describe('app: requests refused below Fastify', () => {
  let h: Harness;
  let alice: Trader;
  let port: number;
  before(async () => {
    h = await startHarness();
    alice = await h.trader();
    await h.app.listen({ port: 0, host: '127.0.0.1' });
    const address = h.app.server.address();
    port = typeof address === 'object' && address !== null ? address.port : 0;
  });
  after(() => h.close());

  const answer = (raw: string) => {
    const [head = '', body = ''] = raw.split('\r\n\r\n', 2);
    return { statusLine: head.split('\r\n', 1)[0], json: JSON.parse(body) as unknown };
  };

  test('what Node’s parser refuses is answered in shape E, not Fastify’s default body', async () => {
    const garbage = answer(await rawExchange(port, '\u0004\u0007\r\nHost: x\r\n\r\n'));
    assert.deepEqual(garbage, { statusLine: 'HTTP/1.1 400 Bad Request', json: { error: 'Invalid request' } });
    const latin1 = answer(await rawExchange(port, 'GET /v1/markets?pair=\u00e9 HTTP/1.1\r\nHost: x\r\n\r\n'));
    assert.deepEqual(latin1, { statusLine: 'HTTP/1.1 400 Bad Request', json: { error: 'Invalid request' } });
    const huge = answer(
      await rawExchange(port, `GET /v1/markets HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`),
    );
    assert.deepEqual(huge, {
      statusLine: 'HTTP/1.1 431 Request Header Fields Too Large',
      json: { error: 'Request Header Fields Too Large' },
    });
  });

  test('an HTTP/1.1 request without Host is a 400 in shape E; HTTP/1.0 needs none', async () => {
    const missing = answer(await rawExchange(port, 'GET /v1/markets HTTP/1.1\r\nConnection: close\r\n\r\n'));
    assert.deepEqual(missing, { statusLine: 'HTTP/1.1 400 Bad Request', json: { error: 'Invalid request' } });
    const old = await rawExchange(port, 'GET /v1/markets HTTP/1.0\r\n\r\n');
    assert.match(old, /^HTTP\/1\.1 200 OK/);
  });

  test('an id longer than 100 characters is answered by the route like any unknown id', async () => {
    const long = '9'.repeat(500);
    const get = await h.request('GET', `/v1/orders/${long}`, { as: alice });
    assert.deepEqual(
      [get.status, get.json],
      [404, { success: false, message: 'Order not found', error: { message: 'Order not found', code: 404 } }],
    );
    const trade = await h.request('GET', `/v1/trades/${long}`, { as: alice });
    assert.equal(trade.status, 404);
    const cancel = await h.request('DELETE', `/v1/orders/${long}`, { as: alice });
    assert.deepEqual([cancel.status, cancel.json], [400, { error: 'Invalid request' }]);
  });
});
