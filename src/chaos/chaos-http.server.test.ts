/** REST faults against a running venue: errors, latency, timeouts, scopes, metrics, production rule. */
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { after, before, describe, test } from 'node:test';
import { OpenSpotClient } from '../client/client.js';
import { OpenSpotApiError, OpenSpotTransportError } from '../client/errors.js';
import { loadConfig } from '../config/config.js';
import { createLogger } from '../logger.js';
import { startServer } from '../server.js';
import { startTestVenue, type TestVenue, TestVenueError } from '../testing/index.js';

let venue: TestVenue;

before(async () => {
  venue = await startTestVenue({ accounts: 2 });
});
after(async () => {
  await venue.close();
});

const raw = (path: string, init?: RequestInit) => fetch(`${venue.url}${path}`, init);
const adminGet = (path: string) => raw(path, { headers: { authorization: `Bearer ${venue.admin.token}` } });

async function metric(fault: string): Promise<number> {
  const text = await (await adminGet('/metrics')).text();
  const line = text.split('\n').find((l) => l.startsWith(`openspot_chaos_faults_total{fault="${fault}"}`));
  return line === undefined ? 0 : Number(line.split(' ').at(-1));
}

describe('errors', () => {
  test('off by default: nothing is set and requests are answered', async () => {
    const state = await venue.chaos.state();
    assert.deepEqual(state, { allowed: true, everyone: {}, keys: {} });
    assert.equal((await raw('/v1/markets')).status, 200);
  });

  test('a 503 burst: each request of /v1 refused in its route shape with Retry-After, then it ends', async () => {
    const before = await metric('error_503');
    await venue.chaos.set({ errors: { rate: 1, status: 503, retry_after: 1, count: 3 } });
    const markets = await raw('/v1/markets');
    assert.equal(markets.status, 503);
    assert.equal(markets.headers.get('retry-after'), '1');
    // /markets speaks shape A, private endpoints shape E.
    assert.deepEqual(await markets.json(), {
      success: false,
      error: { message: 'Service Unavailable', code: 503 },
    });
    const wallet = venue.client().spotWallet();
    await assert.rejects(wallet, (error: unknown) => {
      assert.ok(error instanceof OpenSpotApiError);
      assert.equal(error.status, 503);
      assert.deepEqual(error.body, { error: 'Service Unavailable' });
      assert.equal(error.retryAfter, 1);
      return true;
    });
    // Never the admin API, the metrics or the health checks.
    assert.equal((await adminGet('/admin/v1/markets')).status, 200);
    assert.equal((await raw('/readyz')).status, 200);
    assert.equal((await raw('/healthz')).status, 200);
    assert.equal((await adminGet('/metrics')).status, 200);
    assert.equal((await raw('/v1/markets')).status, 503);
    // The third was the last: the fault removed itself.
    assert.equal((await raw('/v1/markets')).status, 200);
    assert.deepEqual((await venue.chaos.state()).everyone, {});
    assert.equal((await metric('error_503')) - before, 3);
  });

  test('429 carries Retry-After, and the client sees it', async () => {
    await venue.chaos.set({ errors: { rate: 1, status: 429, retry_after: 7 } }, { replace: true });
    try {
      const answer = await raw('/v1/tickers');
      assert.equal(answer.status, 429);
      assert.equal(answer.headers.get('retry-after'), '7');
      await assert.rejects(venue.client().openOrders(), (error: unknown) => {
        assert.ok(error instanceof OpenSpotApiError);
        assert.equal(error.status, 429);
        assert.equal(error.retryAfter, 7);
        assert.deepEqual(error.body, { error: 'Too Many Requests' });
        return true;
      });
    } finally {
      await venue.chaos.clear();
    }
  });

  test('scoped to one API key: only that key is hit', async () => {
    const [a, b] = venue.accounts;
    await venue.chaos.set({ errors: { rate: 1, status: 503 } }, { apiKey: a!.apiKey });
    try {
      await assert.rejects(venue.client(a).spotWallet(), /503/);
      assert.equal((await venue.client(b).spotWallet()).data.length > 0, true);
      assert.equal((await raw('/v1/markets')).status, 200);
      const state = await venue.chaos.state();
      assert.deepEqual(Object.keys(state.keys), [a!.apiKey]);
      assert.deepEqual(state.everyone, {});
    } finally {
      await venue.chaos.clear(a!.apiKey);
    }
    assert.equal((await venue.client(a).spotWallet()).data.length > 0, true);
  });

  test('narrowed to routes: only order placement fails, reads pass', async () => {
    await venue.chaos.set(
      { errors: { rate: 1, status: 503, routes: ['POST /v1/orders'] } },
      { replace: true },
    );
    try {
      const client = new OpenSpotClient({
        baseUrl: venue.baseUrl,
        apiKey: venue.accounts[0]!.apiKey,
        apiSecret: venue.accounts[0]!.apiSecret,
        orderRetries: 0,
      });
      assert.equal((await client.openOrders()).data.length, 0);
      assert.equal((await raw('/v1/markets')).status, 200);
      await assert.rejects(
        client.createOrder({
          pair: 'BTC/EUR',
          direction: 'buy',
          type: 'limit',
          price: '1000.0',
          volume: '0.01',
        }),
        /503/,
      );
      assert.equal((await client.openOrders()).data.length, 0);
    } finally {
      await venue.chaos.clear();
    }
  });

  test('a rate between 0 and 1 refuses about that share', async () => {
    await venue.chaos.set({ errors: { rate: 0.5, status: 503 } }, { replace: true });
    try {
      let refused = 0;
      for (let i = 0; i < 200; i++) if ((await raw('/v1/markets')).status === 503) refused += 1;
      assert.ok(refused > 60 && refused < 140, `refused ${refused} of 200`);
    } finally {
      await venue.chaos.clear();
    }
  });
});

describe('latency', () => {
  test('requests of /v1 wait the fixed delay plus jitter; the admin API does not', async () => {
    await venue.chaos.set({ latency: { ms: 500, jitter_ms: 50 } });
    try {
      let start = performance.now();
      assert.equal((await raw('/v1/markets')).status, 200);
      const slow = performance.now() - start;
      assert.ok(slow >= 495 && slow < 2000, `took ${slow} ms`);
      start = performance.now();
      await adminGet('/admin/v1/markets');
      assert.ok(performance.now() - start < 400);
      assert.ok((await metric('latency')) >= 1);
    } finally {
      await venue.chaos.clear();
    }
    const start = performance.now();
    await raw('/v1/markets');
    assert.ok(performance.now() - start < 400);
  });
});

describe('timeouts', () => {
  test('the order is placed and committed, the answer never comes; open orders reconcile it', async () => {
    const account = venue.accounts[1]!;
    await venue.chaos.set({ timeouts: { rate: 1, hold_ms: 300, count: 1 } }, { apiKey: account.apiKey });
    const client = new OpenSpotClient({
      baseUrl: venue.baseUrl,
      apiKey: account.apiKey,
      apiSecret: account.apiSecret,
      orderRetries: 0,
    });
    const start = performance.now();
    await assert.rejects(
      client.createOrder({
        pair: 'BTC/EUR',
        direction: 'buy',
        type: 'limit',
        price: '1000.0',
        volume: '0.01',
      }),
      OpenSpotTransportError,
    );
    // Held, then the connection was destroyed without an answer.
    assert.ok(performance.now() - start >= 290);
    const open = (await client.openOrders()).data;
    assert.equal(open.length, 1);
    assert.equal(open[0]!.price.amount, '1000.0');
    assert.equal(await metric('timeout'), 1);
    // count 1: the next order is answered.
    const created = await client.createOrder({
      pair: 'BTC/EUR',
      direction: 'buy',
      type: 'limit',
      price: '1001.0',
      volume: '0.01',
    });
    assert.ok(created.id !== undefined);
    await client.cancelOrder(created.id);
    await client.cancelOrder(open[0]!.id);
  });

  test('a client retrying under its Idempotency-Key gets the original order, placed once', async () => {
    const account = venue.accounts[1]!;
    await venue.chaos.set({ timeouts: { rate: 1, hold_ms: 100, count: 1 } }, { apiKey: account.apiKey });
    const client = new OpenSpotClient({
      baseUrl: venue.baseUrl,
      apiKey: account.apiKey,
      apiSecret: account.apiSecret,
      retryDelayMs: 20,
    });
    const created = await client.createOrder({
      pair: 'BTC/EUR',
      direction: 'sell',
      type: 'limit',
      price: '900000.0',
      volume: '0.01',
    });
    const open = (await client.openOrders()).data;
    assert.deepEqual(
      open.map((o) => o.id),
      [created.id],
    );
    await client.cancelOrder(created.id!);
  });

  test('a cancellation is carried out and its answer lost the same way', async () => {
    const account = venue.accounts[1]!;
    const client = new OpenSpotClient({
      baseUrl: venue.baseUrl,
      apiKey: account.apiKey,
      apiSecret: account.apiSecret,
      orderRetries: 0,
    });
    const created = await client.createOrder({
      pair: 'BTC/EUR',
      direction: 'buy',
      type: 'limit',
      price: '1002.0',
      volume: '0.01',
    });
    await venue.chaos.set({ timeouts: { rate: 1, hold_ms: 50, count: 1 } }, { apiKey: account.apiKey });
    await assert.rejects(client.cancelOrder(created.id!), OpenSpotTransportError);
    assert.equal((await client.order(created.id!)).data.status, 'canceled');
  });

  test('a refused order is answered: only an accepted change loses its answer', async () => {
    await venue.chaos.set({ timeouts: { rate: 1, hold_ms: 5000 } });
    try {
      const client = venue.client(0);
      await assert.rejects(
        client.createOrder({ pair: 'BTC/EUR', direction: 'buy', type: 'limit', price: '1.0', volume: '0' }),
        /422/,
      );
      // Reads are never held.
      assert.equal((await client.openOrders()).data.length, 0);
    } finally {
      await venue.chaos.clear();
    }
  });

  test('close() does not wait out a long latency', async () => {
    const own = await startTestVenue();
    await own.chaos.set({ latency: { ms: 60_000 } });
    const pending = fetch(`${own.baseUrl}/markets`).then(
      (r) => r.status,
      () => 'failed',
    );
    await new Promise((r) => setTimeout(r, 100));
    const start = performance.now();
    await own.close();
    assert.ok(performance.now() - start < 2000);
    await pending;
  });

  test('close() does not wait for a held answer', async () => {
    const own = await startTestVenue();
    await own.chaos.set({ timeouts: { rate: 1, hold_ms: 60_000 } });
    const client = new OpenSpotClient({
      baseUrl: own.baseUrl,
      apiKey: own.accounts[0]!.apiKey,
      apiSecret: own.accounts[0]!.apiSecret,
      orderRetries: 0,
    });
    const pending = client
      .createOrder({ pair: 'BTC/EUR', direction: 'buy', type: 'limit', price: '1000.0', volume: '0.01' })
      .catch((error: unknown) => error);
    while ((await own.client().openOrders()).data.length === 0) await new Promise((r) => setTimeout(r, 10));
    const start = performance.now();
    await own.close();
    assert.ok(performance.now() - start < 2000);
    assert.ok((await pending) instanceof OpenSpotTransportError);
  });
});

describe('logs', () => {
  test('each injected fault is logged with the public key it hit, never a secret', async () => {
    const lines: string[] = [];
    const sink = new Writable({
      write(chunk, _encoding, done) {
        lines.push(
          ...String(chunk)
            .split('\n')
            .filter((l) => l !== ''),
        );
        done();
      },
    });
    const env = {
      HOST: '127.0.0.1',
      PORT: '0',
      LOG_LEVEL: 'info',
      SIMULATOR: 'off',
      DEMO: 'off',
      ADMIN_TOKEN: 'a-test-admin-token-0123456789',
      SECRETS_KEY: Buffer.alloc(32, 7).toString('base64'),
      RATE_LIMIT_IP_PER_SECOND: '0',
      RATE_LIMIT_KEY_PER_SECOND: '0',
    };
    const config = loadConfig(env);
    const server = await startServer(config, createLogger('info', sink), env, { inMemory: true });
    try {
      const admin = (method: string, path: string, body?: unknown) =>
        server.app.inject({
          method: method as 'POST',
          url: `/admin/v1${path}`,
          headers: { authorization: `Bearer ${env.ADMIN_TOKEN}` },
          ...(body === undefined ? {} : { payload: body as object }),
        });
      const user = (await admin('POST', '/users', {})).json() as { id: number };
      const key = (await admin('POST', `/users/${user.id}/api-keys`, {})).json() as {
        api_key: string;
        api_secret: string;
      };
      await admin('PUT', '/chaos', { api_key: key.api_key, faults: { errors: { rate: 1, status: 429 } } });
      const client = new OpenSpotClient({
        baseUrl: `${server.url}/v1`,
        apiKey: key.api_key,
        apiSecret: key.api_secret,
      });
      await assert.rejects(client.spotWallet(), /429/);
      const injected = lines
        .map((l) => JSON.parse(l) as Record<string, unknown>)
        .filter((l) => l.msg === 'chaos: fault injected');
      assert.equal(injected.length, 1);
      assert.equal(injected[0]!.fault, 'error_429');
      assert.equal(injected[0]!.api_key, key.api_key);
      assert.equal(injected[0]!.route, '/v1/spot-wallet');
      assert.equal(
        lines.some((l) => l.includes(key.api_secret)),
        false,
      );
    } finally {
      await server.close();
    }
  });
});

describe('CHAOS_SEED', () => {
  test('the same seed makes the same decisions for the same requests', async () => {
    const pattern = async () => {
      const seeded = await startTestVenue({ env: { CHAOS_SEED: '42' } });
      try {
        await seeded.chaos.set({ errors: { rate: 0.5, status: 503 } });
        const statuses: number[] = [];
        for (let i = 0; i < 24; i++) statuses.push((await fetch(`${seeded.baseUrl}/markets`)).status);
        return statuses.join(',');
      } finally {
        await seeded.close();
      }
    };
    const first = await pattern();
    assert.match(first, /503/);
    assert.match(first, /200/);
    assert.equal(await pattern(), first);
  });
});

describe('the admin API', () => {
  const put = (body: unknown, method = 'PUT') =>
    raw('/admin/v1/chaos', {
      method,
      headers: { authorization: `Bearer ${venue.admin.token}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });

  test('refuses unknown fields, bad values and unknown keys with 422 naming the field', async () => {
    for (const [body, field] of [
      [{ faults: { lantecy: { ms: 10 } } }, 'faults.lantecy'],
      [{ faults: { latency: { ms: -1 } } }, 'faults.latency.ms'],
      [{ faults: { errors: { rate: 2 } } }, 'faults.errors.rate'],
      [{ faults: { errors: { rate: 1, status: 500 } } }, 'faults.errors.status'],
      [{ faults: { disconnects: { rate: 1, code: 4100 } } }, 'faults.disconnects.code'],
      [{ faults: { errors: { rate: 1, routes: ['/v1/orders'] } } }, 'faults.errors.routes'],
      [{ faults: { book_updates: { drop: 0.6, reorder: 0.6 } } }, 'faults.book_updates'],
      [{ faults: {}, api_key: 'no-such-key' }, 'api_key'],
      [{ faults: {}, scope: 'all' }, 'scope'],
    ] as const) {
      const answer = await put(body);
      assert.equal(answer.status, 422, JSON.stringify(body));
      assert.equal(((await answer.json()) as { error: { field: string } }).error.field, field);
    }
    assert.deepEqual((await venue.chaos.state()).everyone, {});
  });

  test('POST adds to a scope, PUT replaces it, null removes one kind, DELETE clears', async () => {
    await put({ faults: { latency: { ms: 1 } } }, 'POST');
    await put({ faults: { errors: { rate: 0 } } }, 'POST');
    assert.deepEqual(Object.keys((await venue.chaos.state()).everyone).sort(), ['errors', 'latency']);
    await put({ faults: { latency: null } }, 'POST');
    assert.deepEqual(Object.keys((await venue.chaos.state()).everyone), ['errors']);
    await put({ faults: { ws_delay: { ms: 0 } } });
    assert.deepEqual((await venue.chaos.state()).everyone, { ws_delay: { ms: 0, jitter_ms: 0 } });
    const cleared = await raw('/admin/v1/chaos', {
      method: 'DELETE',
      headers: { authorization: `Bearer ${venue.admin.token}` },
    });
    assert.deepEqual(await cleared.json(), { allowed: true, everyone: {}, keys: {} });
    assert.equal((await raw('/admin/v1/chaos')).status, 401);
  });
});

describe('production', () => {
  test('setting faults is refused unless CHAOS=on; the hooks are not even installed', async () => {
    const production = await startTestVenue({ env: { NODE_ENV: 'production' } });
    try {
      assert.equal((await production.chaos.state()).allowed, false);
      await assert.rejects(production.chaos.set({ errors: { rate: 1, status: 503 } }), (error: unknown) => {
        assert.ok(error instanceof TestVenueError);
        assert.equal(error.status, 403);
        return true;
      });
      assert.equal((await fetch(`${production.baseUrl}/markets`)).status, 200);
    } finally {
      await production.close();
    }
    const allowed = await startTestVenue({ env: { NODE_ENV: 'production', CHAOS: 'on' } });
    try {
      await allowed.chaos.set({ errors: { rate: 1, status: 503 } });
      assert.equal((await fetch(`${allowed.baseUrl}/markets`)).status, 503);
    } finally {
      await allowed.close();
    }
  });

  test('CHAOS=off refuses it outside production too', async () => {
    const off = await startTestVenue({ env: { CHAOS: 'off' } });
    try {
      await assert.rejects(off.chaos.set({ latency: { ms: 1 } }), /403/);
    } finally {
      await off.close();
    }
  });
});
