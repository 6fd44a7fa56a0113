/**
 * The per-key rate limit shared by gateways through Redis (src/http/shared-rate-limit.ts), against
 * a real Redis: two limiters (two gateways) spend one budget; when Redis is away or stops
 * answering, each gateway limits on its own (the decided behaviour, docs/interface-decisions.md
 * 96), quickly, says so once, and shares again when Redis is back. Skipped, visibly, without
 * TEST_REDIS_URL (test/support/redis.ts).
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { TakeResult } from '../../src/http/rate-limit.js';
import { type SharedRateLimitOptions, SharedTokenBuckets } from '../../src/http/shared-rate-limit.js';
import { RedisProxy, redisSuite, redisUrl, testPrefix } from '../support/redis.js';
import { startTestServer, type TestServer } from '../support/server-fixture.js';
import { send, signed, sleep } from './support.js';

interface Cleanup {
  after(fn: () => unknown): void;
}

/** A gateway's limiter, once connected (or known unreachable: `ready` waits 2 s at most). */
async function limiter(
  t: Cleanup,
  options: Partial<SharedRateLimitOptions> & { url: string },
): Promise<SharedTokenBuckets> {
  const buckets = new SharedTokenBuckets({ ratePerSecond: 0.1, burst: 10, ...options });
  t.after(() => buckets.close());
  await buckets.ready();
  return buckets;
}

const allowedCount = (results: readonly TakeResult[]) => results.filter((r) => r.ok).length;

/** Until `check` holds, polling (the client reconnects in the background). */
async function eventually(check: () => Promise<boolean>, ms = 5000): Promise<void> {
  const deadline = performance.now() + ms;
  while (!(await check())) {
    if (performance.now() > deadline) throw new Error('condition not met in time');
    await sleep(50);
  }
}

describe('per-key rate limit shared through Redis', redisSuite(), () => {
  test('two gateways spend one budget, one after the other and all at once', async (t) => {
    const prefix = testPrefix();
    const a = await limiter(t, { url: redisUrl(), prefix });
    const b = await limiter(t, { url: redisUrl(), prefix });
    const sequential: TakeResult[] = [];
    for (let i = 0; i < 15; i++) sequential.push(await (i % 2 === 0 ? a : b).take('key-1'));
    assert.equal(allowedCount(sequential), 10);
    for (const r of sequential.slice(10)) assert.deepEqual(r, { ok: false, retryAfterSeconds: 10 });

    // Forty checks in flight together through both: still exactly the burst (the script is atomic).
    const concurrent = await Promise.all(
      Array.from({ length: 40 }, (_, i) => (i % 2 === 0 ? a : b).take('key-2')),
    );
    assert.equal(allowedCount(concurrent), 10);
    // Another key has its own budget.
    assert.deepEqual(await b.take('key-3'), { ok: true });
  });

  test('a bucket refills at its rate, by Redis time', async (t) => {
    const prefix = testPrefix();
    const a = await limiter(t, { url: redisUrl(), prefix, ratePerSecond: 10, burst: 2 });
    const b = await limiter(t, { url: redisUrl(), prefix, ratePerSecond: 10, burst: 2 });
    assert.equal(allowedCount([await a.take('k'), await b.take('k')]), 2);
    assert.deepEqual(await a.take('k'), { ok: false, retryAfterSeconds: 1 });
    await sleep(250);
    assert.deepEqual(await b.take('k'), { ok: true });
  });

  test('Redis unreachable: each gateway limits alone with the same rate, counted, said once; shared again when back', async (t) => {
    const proxy = await RedisProxy.start(redisUrl());
    t.after(() => proxy.down());
    const prefix = testPrefix();
    let fallbacks = 0;
    const changes: { up: boolean; reason?: string }[] = [];
    const gateway = await limiter(t, {
      url: proxy.url,
      prefix,
      burst: 3,
      retryMs: 200,
      onFallback: () => {
        fallbacks += 1;
      },
      onStateChange: (up, error) => changes.push({ up, ...(error ? { reason: error.message } : {}) }),
    });
    const direct = await limiter(t, { url: redisUrl(), prefix, burst: 3 });
    assert.deepEqual(await gateway.take('warm-up'), { ok: true });
    assert.equal(fallbacks, 0);

    await proxy.down();
    const outage: TakeResult[] = [];
    for (let i = 0; i < 6; i++) outage.push(await gateway.take('k'));
    // Fails open to the local bucket: the burst passes, the rest is refused, never unlimited.
    assert.deepEqual(
      outage.map((r) => r.ok),
      [true, true, true, false, false, false],
    );
    assert.equal(fallbacks, 6);
    assert.equal(changes.length, 1);
    assert.equal(changes[0]?.up, false);
    assert.ok((changes[0]?.reason ?? '') !== '');

    // Back: the check is Redis's again (the outage's local spending is not carried over).
    await proxy.up();
    await eventually(async () => {
      await gateway.take('probe');
      return changes.length === 2;
    });
    assert.deepEqual(changes[1], { up: true });
    const shared = [
      await gateway.take('k'),
      await direct.take('k'),
      await gateway.take('k'),
      await direct.take('k'),
    ];
    assert.deepEqual(
      shared.map((r) => r.ok),
      [true, true, true, false],
    );
  });

  test('Redis stalled: a check waits at most the timeout, then the next ones are local at once', async (t) => {
    const proxy = await RedisProxy.start(redisUrl());
    t.after(() => proxy.down());
    let fallbacks = 0;
    const gateway = await limiter(t, {
      url: proxy.url,
      prefix: testPrefix(),
      timeoutMs: 50,
      retryMs: 60_000,
      onFallback: () => {
        fallbacks += 1;
      },
    });
    assert.deepEqual(await gateway.take('warm-up'), { ok: true });
    assert.equal(fallbacks, 0);
    proxy.stall();
    let started = performance.now();
    assert.deepEqual(await gateway.take('k'), { ok: true });
    const first = performance.now() - started;
    assert.ok(first >= 40 && first < 500, `first check took ${first} ms`);
    started = performance.now();
    for (let i = 0; i < 5; i++) await gateway.take('k');
    const next = performance.now() - started;
    assert.ok(next < 50, `five local checks took ${next} ms`);
    assert.equal(fallbacks, 6);
  });

  test('a gateway started while Redis is unreachable starts, and limits locally', async (t) => {
    const proxy = await RedisProxy.start(redisUrl());
    await proxy.down();
    const gateway = await limiter(t, { url: proxy.url, prefix: testPrefix(), burst: 2 });
    const results = [await gateway.take('k'), await gateway.take('k'), await gateway.take('k')];
    assert.deepEqual(
      results.map((r) => r.ok),
      [true, true, false],
    );
  });
});

describe('per-key rate limit of a server with REDIS_URL', redisSuite(), () => {
  let server: TestServer;
  let other: SharedTokenBuckets;
  before(async () => {
    server = await startTestServer({
      REDIS_URL: redisUrl(),
      RATE_LIMIT_IP_PER_SECOND: '0',
      RATE_LIMIT_KEY_PER_SECOND: '1',
      RATE_LIMIT_KEY_BURST: '4',
    });
    // Another gateway of the same venue: the same Redis, the default key prefix.
    other = new SharedTokenBuckets({ url: redisUrl(), ratePerSecond: 1, burst: 4 });
    assert.equal(await other.ready(), true);
  });
  after(async () => {
    await other.close();
    await server?.close();
  });

  test('a key whose budget another gateway spent is refused here with 429 and Retry-After', async () => {
    const a = await server.trader();
    const request = signed(a, 'GET', '/v1/spot-wallet');
    assert.equal((await send(server, request)).status, 200);
    assert.equal((await send(server, request)).status, 200);
    // The other gateway takes the last two tokens of the same key.
    assert.deepEqual([await other.take(a.apiKey), await other.take(a.apiKey)], [{ ok: true }, { ok: true }]);
    const limited = await send(server, request);
    assert.equal(limited.status, 429);
    assert.deepEqual(limited.body, { error: 'Too Many Requests' });
    assert.equal(limited.retryAfter, '1');
    await sleep(1100);
    assert.equal((await send(server, request)).status, 200);
  });
});
