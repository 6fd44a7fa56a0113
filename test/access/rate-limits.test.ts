/** Rate limits over real HTTP and WebSocket, with low limits configured through the environment. */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { startTestServer, type TestServer } from '../support/server-fixture.js';
import { FrameLog, waitFor, wsUrl } from '../ws/helpers.js';
import { call, createKey, get, limitOrder, openOrderIds, send, signed, sleep } from './support.js';

const TOO_MANY = { error: 'Too Many Requests' };

describe('per-IP limit', () => {
  let t: TestServer;
  before(async () => {
    t = await startTestServer({
      RATE_LIMIT_IP_PER_SECOND: '5',
      RATE_LIMIT_IP_BURST: '5',
      RATE_LIMIT_KEY_PER_SECOND: '0',
    });
  });
  after(async () => {
    await t.close();
  });

  test('a burst gets 429 with Retry-After in the route shape; health checks are exempt; it recovers', {}, async () => {
    const answers = [];
    for (let i = 0; i < 12; i++) answers.push(await get(`${t.url}/v1/tickers`));
    const passed = answers.filter((a) => a.status === 200).length;
    assert.ok(passed >= 5 && passed <= 6, `${passed} passed`);
    const limited = answers.filter((a) => a.status === 429);
    assert.equal(limited.length, 12 - passed);
    for (const a of limited) {
      assert.deepEqual(a.body, TOO_MANY);
      assert.match(a.retryAfter ?? '', /^[1-9][0-9]*$/);
    }
    // /markets speaks shape A.
    const markets = await get(`${t.url}/v1/markets`);
    assert.equal(markets.status, 429);
    assert.deepEqual(markets.body, { success: false, error: { message: 'Too Many Requests', code: 429 } });
    // The admin API (same address) in its own shape.
    const admin = await t.admin('GET', '/assets');
    assert.equal(admin.status, 429);
    assert.equal((admin.body as { error: { code: string } }).error.code, 'rate_limited');
    // Health checks are never limited.
    for (let i = 0; i < 20; i++) {
      assert.equal((await get(`${t.url}/healthz`)).status, 200);
      assert.equal((await get(`${t.url}/readyz`)).status, 200);
    }
    await sleep(Number(limited[0]!.retryAfter) * 1000 + 100);
    assert.equal((await get(`${t.url}/v1/tickers`)).status, 200);
  });
});

describe('per-key limit', () => {
  let t: TestServer;
  before(async () => {
    t = await startTestServer({
      RATE_LIMIT_IP_PER_SECOND: '0',
      RATE_LIMIT_KEY_PER_SECOND: '2',
      RATE_LIMIT_KEY_BURST: '3',
    });
  });
  after(async () => {
    await t.close();
  });

  test('a key over its limit gets 429 Too Many Requests with Retry-After; other keys are not affected', {}, async () => {
    const a = await t.trader();
    const b = await t.trader();
    const request = signed(a, 'GET', '/v1/spot-wallet');
    for (let i = 0; i < 3; i++) assert.equal((await send(t, request)).status, 200);
    const limited = await send(t, request);
    assert.equal(limited.status, 429);
    assert.deepEqual(limited.body, TOO_MANY);
    assert.equal(limited.retryAfter, '1');
    // POST /orders (shape D for validation) answers the limit in shape E too, and places nothing.
    const before = await openOrderIds(t, b); // b's budget: 1 spent
    const order = await call(t, a, 'POST', '/v1/orders', limitOrder('20000'));
    assert.equal(order.status, 429);
    assert.deepEqual(order.body, TOO_MANY);
    assert.deepEqual(before, []);
    assert.equal((await call(t, b, 'GET', '/v1/spot-wallet')).status, 200);
    await sleep(1100);
    assert.equal((await send(t, request)).status, 200);
  });

  test('requests with a wrong signature do not use up the key’s budget', async () => {
    const a = await t.trader();
    const forged = signed(
      { apiKey: a.apiKey, apiSecret: Buffer.alloc(64).toString('base64') },
      'GET',
      '/v1/spot-wallet',
    );
    for (let i = 0; i < 10; i++) assert.equal((await send(t, forged)).status, 422);
    for (let i = 0; i < 3; i++) assert.equal((await call(t, a, 'GET', '/v1/spot-wallet')).status, 200);
  });

  test('a limited request does not spend its nonce: the same signed request passes after Retry-After', {}, async () => {
    const a = await t.trader();
    const key = await createKey(t, a.userId, { nonce_required: true });
    for (let i = 0; i < 3; i++) assert.equal((await call(t, key, 'GET', '/v1/spot-wallet')).status, 200);
    const order = signed(key, 'POST', '/v1/orders', limitOrder('20000', { nonce: '1' }));
    const limited = await send(t, order);
    assert.equal(limited.status, 429);
    await sleep(Number(limited.retryAfter) * 1000 + 100);
    const placed = await send(t, order);
    assert.equal(placed.status, 201, JSON.stringify(placed.body));
    assert.equal((await openOrderIds(t, a)).length, 1);
  });
});

describe('per-connection WebSocket limit', () => {
  let t: TestServer;
  before(async () => {
    // 2 frames/s; burst = max(2 × 2, WS_MAX_SUBSCRIPTIONS + 10) = 15; closed after 10 refusals.
    t = await startTestServer({ WS_MAX_FRAMES_PER_SECOND: '2', WS_MAX_SUBSCRIPTIONS: '5' });
  });
  after(async () => {
    await t.close();
  });

  test('a client within its burst is served normally', async () => {
    const { log } = await FrameLog.open(wsUrl(t));
    try {
      for (const channel of ['trade.BTCEUR', 'ticker-information.BTCEUR', 'order-book.BTCEUR'])
        log.subscribe(channel);
      log.send({ event: 'pusher:ping', data: {} });
      await log.next((f) => f.event === 'pusher:pong');
      const succeeded = log.frames.filter((f) => f.event === 'pusher_internal:subscription_succeeded');
      assert.equal(succeeded.length, 3);
      assert.ok(!log.frames.some((f) => f.event === 'pusher:error'));
    } finally {
      log.close();
    }
  });

  test('a flood gets pusher:error 4301 for the frames over the limit, then close 4100', {}, async () => {
    const { log } = await FrameLog.open(wsUrl(t));
    let closeCode: number | undefined;
    log.socket.on('close', (code) => {
      closeCode = code;
    });
    try {
      for (let i = 0; i < 60; i++) log.send({ event: 'pusher:ping', data: {} });
      await waitFor(() => log.closed, 'the server to close the connection');
      assert.equal(closeCode, 4100);
      const pongs = log.frames.filter((f) => f.event === 'pusher:pong').length;
      const errors = log.frames
        .filter((f) => f.event === 'pusher:error')
        .map((f) => (f.data as { code: number }).code);
      assert.ok(pongs >= 15 && pongs <= 16, `${pongs} pongs`);
      assert.ok(errors.filter((c) => c === 4301).length >= 9, JSON.stringify(errors));
      assert.equal(errors.at(-1), 4100);
    } finally {
      log.close();
    }
  });
});
