import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import Fastify from 'fastify';
import { httpErrorHandler } from './errors.js';
import { enforceKeyRateLimit, httpRateLimit, TokenBuckets } from './rate-limit.js';

/** A settable monotonic clock in ms. */
function clock(start = 1_000) {
  let now = start;
  return {
    now: () => now,
    advance(ms: number) {
      now += ms;
    },
  };
}

describe('TokenBuckets', () => {
  test('a burst, then the sustained rate, with Retry-After in whole seconds', () => {
    const c = clock();
    const buckets = new TokenBuckets({ ratePerSecond: 2, burst: 4, now: c.now });
    for (let i = 0; i < 4; i++) assert.deepEqual(buckets.take('a'), { ok: true });
    assert.deepEqual(buckets.take('a'), { ok: false, retryAfterSeconds: 1 });
    c.advance(499);
    assert.equal(buckets.take('a').ok, false);
    c.advance(1);
    assert.equal(buckets.take('a').ok, true, 'one token after 500 ms at 2/s');
    assert.equal(buckets.take('a').ok, false);
    // Other clients have their own buckets.
    assert.equal(buckets.take('b').ok, true);
    // Long idle: back to the full burst, never more.
    c.advance(60_000);
    for (let i = 0; i < 4; i++) assert.equal(buckets.take('a').ok, true);
    assert.equal(buckets.take('a').ok, false);
  });

  test('Retry-After rounds up and is at least 1 second', () => {
    const c = clock();
    const slow = new TokenBuckets({ ratePerSecond: 0.1, burst: 1, now: c.now });
    assert.equal(slow.take('a').ok, true);
    assert.deepEqual(slow.take('a'), { ok: false, retryAfterSeconds: 10 });
    c.advance(9_500);
    assert.deepEqual(slow.take('a'), { ok: false, retryAfterSeconds: 1 });
    const fast = new TokenBuckets({ ratePerSecond: 1000, burst: 1, now: c.now });
    assert.equal(fast.take('a').ok, true);
    assert.deepEqual(fast.take('a'), { ok: false, retryAfterSeconds: 1 });
  });

  test('a clock going backwards refills nothing', () => {
    const c = clock(10_000);
    const buckets = new TokenBuckets({ ratePerSecond: 1, burst: 1, now: c.now });
    assert.equal(buckets.take('a').ok, true);
    c.advance(-5_000);
    assert.equal(buckets.take('a').ok, false);
  });

  test('memory stays bounded under a flood of distinct clients', () => {
    const c = clock();
    const buckets = new TokenBuckets({ ratePerSecond: 10, burst: 20, maxEntries: 1_000, now: c.now });
    for (let i = 0; i < 100_000; i++) {
      buckets.take(`10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`);
      if (i % 1_000 === 0) c.advance(1);
      assert.ok(buckets.size <= 1_000);
    }
    assert.equal(buckets.size, 1_000);
  });

  test('idle entries (refilled, so equal to no entry) are dropped as new clients arrive', () => {
    const c = clock();
    const buckets = new TokenBuckets({ ratePerSecond: 10, burst: 20, maxEntries: 1_000, now: c.now });
    for (let i = 0; i < 500; i++) buckets.take(`old-${i}`);
    c.advance(2_000); // burst / rate = 2 s: every old bucket is full again
    for (let i = 0; i < 500; i++) buckets.take(`new-${i}`);
    // Each newcomer dropped up to two idle entries: the map shrinks back instead of filling up.
    assert.equal(buckets.size, 500);
  });

  test('when full of active clients, the least recently seen is forgotten, not an active one', () => {
    const c = clock();
    const buckets = new TokenBuckets({ ratePerSecond: 1, burst: 2, maxEntries: 3, now: c.now });
    buckets.take('a');
    buckets.take('b');
    buckets.take('c');
    buckets.take('a'); // a is now the most recent; b the stalest
    assert.equal(buckets.take('a').ok, false, 'a has spent its burst');
    buckets.take('d'); // evicts b
    assert.equal(buckets.size, 3);
    assert.equal(buckets.take('a').ok, false, 'a was kept, still limited');
  });

  test('refuses nonsense settings', () => {
    assert.throws(() => new TokenBuckets({ ratePerSecond: 0, burst: 1 }), RangeError);
    assert.throws(() => new TokenBuckets({ ratePerSecond: 1, burst: 0 }), RangeError);
    assert.throws(() => new TokenBuckets({ ratePerSecond: 1, burst: 1, maxEntries: 0 }), RangeError);
  });
});

describe('httpRateLimit plugin', () => {
  async function app(options: { ip: number; key: number }) {
    const c = clock();
    const fastify = Fastify();
    fastify.setErrorHandler(httpErrorHandler);
    // Registered before the plugin, in a child context: the hook must still apply.
    await fastify.register(
      async (v1) => {
        v1.get('/markets', { config: { errorShape: 'A' } }, async () => ({ ok: true }));
        v1.get('/private', async (request) => {
          enforceKeyRateLimit(request, String(request.headers['x-api-key']));
          return { ok: true };
        });
      },
      { prefix: '/v1' },
    );
    await fastify.register(httpRateLimit, {
      ipPerSecond: options.ip,
      ipBurst: options.ip,
      keyPerSecond: options.key,
      keyBurst: options.key,
      now: c.now,
    });
    fastify.get('/healthz', async () => ({ status: 'ok' }));
    fastify.get('/admin/v1/users', async () => ({ data: [] }));
    await fastify.ready();
    return { fastify, clock: c };
  }

  test('per IP: 429 in the route shape with Retry-After; health checks exempt; admin in its shape', async () => {
    const { fastify, clock: c } = await app({ ip: 2, key: 0 });
    const get = (url: string, remoteAddress = '192.0.2.1') => fastify.inject({ url, remoteAddress });
    assert.equal((await get('/v1/private')).statusCode, 200);
    assert.equal((await get('/v1/private')).statusCode, 200);
    const limited = await get('/v1/private');
    assert.equal(limited.statusCode, 429);
    assert.equal(limited.headers['retry-after'], '1');
    assert.deepEqual(limited.json(), { error: 'Too Many Requests' });
    const shapeA = await get('/v1/markets');
    assert.equal(shapeA.statusCode, 429);
    assert.deepEqual(shapeA.json(), { success: false, error: { message: 'Too Many Requests', code: 429 } });
    const admin = await get('/admin/v1/users');
    assert.equal(admin.statusCode, 429);
    assert.equal((admin.json() as { error: { code: string } }).error.code, 'rate_limited');
    assert.equal(admin.headers['retry-after'], '1');
    for (let i = 0; i < 10; i++) assert.equal((await get('/healthz')).statusCode, 200);
    // Another address is not affected; the first recovers with time.
    assert.equal((await get('/v1/private', '192.0.2.2')).statusCode, 200);
    c.advance(1_000);
    assert.equal((await get('/v1/private')).statusCode, 200);
    await fastify.close();
  });

  test('per key: enforceKeyRateLimit throws a 429 with Retry-After, per key', async () => {
    const { fastify } = await app({ ip: 0, key: 1 });
    const get = (key: string) => fastify.inject({ url: '/v1/private', headers: { 'x-api-key': key } });
    assert.equal((await get('k1')).statusCode, 200);
    const limited = await get('k1');
    assert.equal(limited.statusCode, 429);
    assert.equal(limited.headers['retry-after'], '1');
    assert.deepEqual(limited.json(), { error: 'Too Many Requests' });
    assert.equal((await get('k2')).statusCode, 200);
    await fastify.close();
  });

  test('both limits at 0: nothing is limited, and enforceKeyRateLimit is a no-op', async () => {
    const { fastify } = await app({ ip: 0, key: 0 });
    for (let i = 0; i < 50; i++) {
      const r = await fastify.inject({ url: '/v1/private', headers: { 'x-api-key': 'k' } });
      assert.equal(r.statusCode, 200);
    }
    await fastify.close();
  });
});
