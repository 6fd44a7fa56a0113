import assert from 'node:assert/strict';
import type { Socket } from 'node:net';
import { test } from 'node:test';
import { pino } from 'pino';
import { WebSocket } from 'ws';
import { signChannelAuth } from './channel-auth.js';
import { excerpt } from './frames.js';
import { appKeyOfUrl } from './server.js';
import {
  APP_KEY,
  APP_SECRET,
  type Frame,
  fakeProvider,
  type Harness,
  RawClient,
  startHarness,
  userId,
  waitFor,
} from './test-support.js';

const parseData = (frame: Frame): unknown => JSON.parse(String(frame.data));

test('first frame is connection_established with a JSON-string data and a round-trippable socket id', async () => {
  // A pino logger fits the logger option as is.
  const h = await startHarness({ logger: pino({ level: 'silent' }) });
  try {
    const client = await RawClient.connect(h.url);
    const first = await client.next();
    assert.equal(first.event, 'pusher:connection_established');
    assert.equal(typeof first.data, 'string');
    const data = parseData(first) as { socket_id: string; activity_timeout: number };
    assert.deepEqual(Object.keys(data).sort(), ['activity_timeout', 'socket_id']);
    assert.equal(data.activity_timeout, 30);
    assert.match(data.socket_id, /^\d+\.\d+$/);
    assert.equal(String(Number(data.socket_id)), data.socket_id);
    const second = await RawClient.established(h.url);
    assert.notEqual(second.socketId, data.socket_id);
    client.close();
    second.client.close();
  } finally {
    await h.stop();
  }
});

test('unknown app key: pusher:error 4001, then close 4001', async () => {
  const h = await startHarness();
  try {
    const client = await RawClient.connect(`ws://127.0.0.1:${h.port}/app/wrong-key?protocol=7`);
    const error = await client.next();
    assert.equal(error.event, 'pusher:error');
    assert.equal((error.data as { code: number }).code, 4001);
    assert.equal((await client.closed).code, 4001);
    assert.equal(h.realtime.stats().connections, 0);
  } finally {
    await h.stop();
  }
});

test('upgrade on a path other than /app/<key> is answered 404', async () => {
  const h = await startHarness();
  try {
    const socket = new WebSocket(`ws://127.0.0.1:${h.port}/elsewhere`);
    const status = await new Promise<number | undefined>((resolve) => {
      socket.on('unexpected-response', (_req, res) => resolve(res.statusCode));
      socket.on('error', () => resolve(undefined));
    });
    assert.equal(status, 404);
    socket.terminate();
  } finally {
    await h.stop();
  }
});

test('appKeyOfUrl ignores the query and reads only /app/<key>', () => {
  assert.equal(appKeyOfUrl('/app/abc?protocol=7&client=js'), 'abc');
  assert.equal(appKeyOfUrl('/app/abc/'), 'abc');
  assert.equal(appKeyOfUrl('/app/a%20b'), 'a b');
  assert.equal(appKeyOfUrl('/app/%E0'), '%E0');
  assert.equal(appKeyOfUrl('/apps/abc'), undefined);
  assert.equal(appKeyOfUrl('/app/abc/events'), undefined);
  assert.equal(appKeyOfUrl(undefined), undefined);
});

test('subscribe with either prefix: subscription_succeeded, then the snapshot as event "snapshot"', async () => {
  const h = await startHarness();
  try {
    const { client } = await RawClient.established(h.url);
    client.subscribe('ticker-information.BTCEUR', undefined, 'channelservice:');
    const ok = await client.next();
    assert.deepEqual(ok, {
      event: 'pusher_internal:subscription_succeeded',
      channel: 'ticker-information.BTCEUR',
      data: '{}',
    });
    const snapshot = await client.next();
    assert.equal(snapshot.event, 'snapshot');
    assert.equal(snapshot.channel, 'ticker-information.BTCEUR');
    assert.deepEqual(parseData(snapshot), { channel: 'ticker-information.BTCEUR', type: 'snapshot' });

    client.subscribe('trade.BTCEUR');
    assert.equal((await client.next()).event, 'pusher_internal:subscription_succeeded');
    assert.equal(h.realtime.stats().subscriptions, 2);
    // No snapshot for this channel in the fake: the next frame is the published one.
    h.realtime.publish('trade.BTCEUR', 'update', { channel: 'trade', type: 'update', data: [] });
    const update = await client.next();
    assert.deepEqual(update, {
      event: 'update',
      channel: 'trade.BTCEUR',
      data: '{"channel":"trade","type":"update","data":[]}',
    });
    client.close();
  } finally {
    await h.stop();
  }
});

test('ping is answered with pusher:pong, whatever the prefix', async () => {
  const h = await startHarness();
  try {
    const { client } = await RawClient.established(h.url);
    client.send({ event: 'pusher:ping', data: {} });
    assert.equal((await client.next()).event, 'pusher:pong');
    client.send({ event: 'channelservice:ping', data: {} });
    assert.equal((await client.next()).event, 'pusher:pong');
    client.close();
  } finally {
    await h.stop();
  }
});

test('an idle client is pinged; one that never answers is closed with 4201', async () => {
  const h = await startHarness({ keepalive: { idleMs: 80, pongTimeoutMs: 250 } });
  try {
    const { client: silent } = await RawClient.established(h.url);
    const { client: alive } = await RawClient.established(h.url);
    assert.equal((await silent.next((f) => f.event === 'pusher:ping')).data !== undefined, true);
    // The live client answers each ping and survives past several deadlines.
    for (let i = 0; i < 3; i += 1) {
      await alive.next((f) => f.event === 'pusher:ping');
      alive.send({ event: 'pusher:pong', data: {} });
    }
    assert.equal((await silent.closed).code, 4201);
    assert.equal(alive.socket.readyState, WebSocket.OPEN);
    alive.close();
  } finally {
    await h.stop();
  }
});

test('unknown channels and unknown pairs are refused with subscription_error 404', async () => {
  const h = await startHarness();
  try {
    const { client } = await RawClient.established(h.url);
    for (const channel of ['nonsense', 'trade.XXXYYY', 'ohlc.BTCEUR.2', 'trade.BTC/EUR', 'x'.repeat(500)]) {
      client.subscribe(channel);
      const refused = await client.next();
      assert.equal(refused.event, 'pusher:subscription_error');
      assert.equal(refused.channel, channel);
      assert.deepEqual(refused.data, {
        type: 'AuthError',
        error: `Unknown channel: ${excerpt(channel)}`,
        status: 404,
      });
    }
    assert.equal(h.realtime.stats().subscriptions, 0);
    client.close();
  } finally {
    await h.stop();
  }
});

test('private channels: missing auth 401, bad or foreign auth 403, correct auth succeeds', async () => {
  const h = await startHarness();
  try {
    const { client, socketId } = await RawClient.established(h.url);
    const mine = 'private-order-executed.7';
    const theirs = 'private-order-executed.8';

    client.subscribe(mine);
    let refused = await client.next();
    assert.equal(refused.event, 'pusher:subscription_error');
    assert.equal((refused.data as { status: number }).status, 401);

    client.subscribe(mine, `${APP_KEY}:${'0'.repeat(64)}`);
    refused = await client.next();
    assert.equal((refused.data as { status: number }).status, 403);

    // A valid signature for my channel does not open someone else's.
    client.subscribe(theirs, signChannelAuth(APP_KEY, APP_SECRET, socketId, mine));
    refused = await client.next();
    assert.equal(refused.channel, theirs);
    assert.equal((refused.data as { status: number }).status, 403);

    // Nor does a signature made for another connection.
    client.subscribe(mine, signChannelAuth(APP_KEY, APP_SECRET, '1.1', mine));
    assert.equal(((await client.next()).data as { status: number }).status, 403);

    client.subscribe(mine, signChannelAuth(APP_KEY, APP_SECRET, socketId, mine));
    assert.equal((await client.next()).event, 'pusher_internal:subscription_succeeded');
    assert.equal((await client.next()).event, 'snapshot');
    h.realtime.publish(mine, 'update', { hello: 1 });
    assert.deepEqual(parseData(await client.next()), { hello: 1 });
    client.close();
  } finally {
    await h.stop();
  }
});

test('revoking a user ends their private subscriptions with a 403, public ones continue', async () => {
  const h = await startHarness();
  try {
    const { client, socketId } = await RawClient.established(h.url);
    const mine = 'private-order-executed.7';
    client.subscribe(mine, signChannelAuth(APP_KEY, APP_SECRET, socketId, mine));
    client.subscribe('trade.BTCEUR');
    await client.next(
      (f) => f.event === 'pusher_internal:subscription_succeeded' && f.channel === 'trade.BTCEUR',
    );
    assert.equal(h.realtime.disconnectUserPrivateChannels(userId(8)), 0);
    assert.equal(h.realtime.disconnectUserPrivateChannels(userId(7)), 1);
    const revoked = await client.next((f) => f.event === 'pusher:subscription_error');
    assert.equal(revoked.channel, mine);
    assert.equal((revoked.data as { status: number }).status, 403);
    assert.equal(h.realtime.publish(mine, 'update', {}), 0);
    assert.equal(h.realtime.publish('trade.BTCEUR', 'update', {}), 1);
    client.close();
  } finally {
    await h.stop();
  }
});

test('unsubscribe stops delivery; a second subscribe is answered again', async () => {
  const h = await startHarness();
  try {
    const { client } = await RawClient.established(h.url);
    client.subscribe('trade.BTCEUR');
    client.subscribe('trade.BTCEUR');
    await client.next((f) => f.event === 'pusher_internal:subscription_succeeded');
    await client.next((f) => f.event === 'pusher_internal:subscription_succeeded');
    assert.equal(h.realtime.stats().subscriptions, 1);
    client.send({ event: 'pusher:unsubscribe', data: { channel: 'trade.BTCEUR' } });
    await waitFor(() => h.realtime.stats().subscriptions === 0);
    assert.equal(h.realtime.publish('trade.BTCEUR', 'update', {}), 0);
    assert.equal(h.realtime.stats().channels, 0);
    client.close();
  } finally {
    await h.stop();
  }
});

test('fan-out: every subscriber gets every message of a channel in publish order', async () => {
  const h = await startHarness();
  try {
    const clients = await Promise.all([1, 2, 3].map(() => RawClient.established(h.url)));
    for (const { client } of clients) client.subscribe('trade.BTCEUR');
    await waitFor(() => h.realtime.subscriberCount('trade.BTCEUR') === 3);
    for (let i = 0; i < 200; i += 1) assert.equal(h.realtime.publish('trade.BTCEUR', 'update', { i }), 3);
    for (const { client } of clients) {
      await client.next((f) => f.event === 'pusher_internal:subscription_succeeded');
      for (let i = 0; i < 200; i += 1) assert.deepEqual(parseData(await client.next()), { i });
      client.close();
    }
  } finally {
    await h.stop();
  }
});

test('a slow consumer is cut off with 4100 instead of buffering without bound', async () => {
  const h = await startHarness({ limits: { maxBufferedBytes: 256 * 1024 }, closeGraceMs: 5000 });
  try {
    const { client } = await RawClient.established(h.url);
    const { client: fast } = await RawClient.established(h.url);
    client.subscribe('trade.BTCEUR');
    fast.subscribe('trade.BTCEUR');
    await waitFor(() => h.realtime.subscriberCount('trade.BTCEUR') === 2);
    // Stop reading: the kernel buffers fill, then the server-side write buffer grows.
    const raw = (client.socket as unknown as { _socket: Socket })._socket;
    raw.pause();
    const blob = 'x'.repeat(64 * 1024);
    let published = 0;
    while (h.realtime.subscriberCount('trade.BTCEUR') === 2 && published < 5000) {
      h.realtime.publish('trade.BTCEUR', 'update', { blob, n: published });
      published += 1;
      // Let the event loop flush to the kernel, as a real server would between batches.
      if (published % 16 === 0) await new Promise((resolve) => setImmediate(resolve));
    }
    assert.equal(h.realtime.subscriberCount('trade.BTCEUR'), 1, `still subscribed after ${published}`);
    raw.resume();
    const closed = await client.closed;
    assert.equal(closed.code, 4100);
    assert.equal(closed.reason, 'Slow consumer');
    assert.equal(fast.socket.readyState, WebSocket.OPEN);
    fast.close();
  } finally {
    await h.stop();
  }
});

test('a frame over maxFrameBytes closes with 4009; one over twice that is closed by ws with 1009', async () => {
  const h = await startHarness({ limits: { maxFrameBytes: 1024 } });
  try {
    const { client } = await RawClient.established(h.url);
    client.send({ event: 'pusher:subscribe', data: { channel: 'trade.BTCEUR', auth: 'x'.repeat(1500) } });
    const error = await client.next();
    assert.equal(error.event, 'pusher:error');
    assert.equal((error.data as { code: number }).code, 4009);
    assert.equal((await client.closed).code, 4009);

    const { client: huge } = await RawClient.established(h.url);
    huge.send('x'.repeat(4096));
    assert.equal((await huge.closed).code, 1009);
  } finally {
    await h.stop();
  }
});

test('invalid JSON, odd shapes, unknown and client events get pusher:error 4301 and the connection lives', async () => {
  const h = await startHarness();
  try {
    const { client } = await RawClient.established(h.url);
    const bad: unknown[] = [
      '{not json',
      '42',
      'null',
      '[]',
      { data: {} },
      { event: 7 },
      { event: 'pusher:subscribe' },
      { event: 'pusher:subscribe', data: { channel: 5 } },
      { event: 'pusher:subscribe', data: 'not json either' },
      { event: 'pusher:unsubscribe', data: {} },
      { event: 'pusher:signin', data: {} },
      { event: 'client-typing', channel: 'private-order-executed.7', data: {} },
    ];
    for (const frame of bad) {
      client.send(frame);
      const error = await client.next();
      assert.equal(error.event, 'pusher:error', JSON.stringify(frame));
      assert.equal((error.data as { code: number }).code, 4301);
    }
    client.socket.send(Buffer.from([1, 2, 3]), { binary: true });
    assert.equal(((await client.next()).data as { code: number }).code, 4301);
    // data sent as a JSON string (some clients do) is accepted.
    client.send({ event: 'pusher:subscribe', data: JSON.stringify({ channel: 'trade.BTCEUR' }) });
    assert.equal((await client.next()).event, 'pusher_internal:subscription_succeeded');
    client.send({ event: 'pusher:ping', data: {} });
    assert.equal((await client.next()).event, 'pusher:pong');
    client.close();
  } finally {
    await h.stop();
  }
});

test('subscription limit: refused with 429, and a client that keeps trying is closed with 4100', async () => {
  const h = await startHarness({ limits: { maxSubscriptionsPerConnection: 2 } });
  try {
    const { client } = await RawClient.established(h.url);
    client.subscribe('trade.BTCEUR');
    client.subscribe('order-book.BTCEUR');
    client.subscribe('ticker-information.BTCEUR');
    const refused = await client.next((f) => f.event === 'pusher:subscription_error');
    assert.equal(refused.channel, 'ticker-information.BTCEUR');
    assert.deepEqual(refused.data, {
      type: 'LimitReached',
      error: 'At most 2 subscriptions per connection',
      status: 429,
    });
    assert.equal(h.realtime.stats().subscriptions, 2);
    for (let i = 0; i < 5; i += 1) client.subscribe(`ohlc.BTCEUR.${[1, 5, 15, 30, 60][i]}`);
    const error = await client.next((f) => f.event === 'pusher:error');
    assert.equal((error.data as { code: number }).code, 4100);
    assert.equal((await client.closed).code, 4100);
  } finally {
    await h.stop();
  }
});

test('connection limit: the connection over it gets pusher:error 4100 and close 4100', async () => {
  const h = await startHarness({ limits: { maxConnections: 2 } });
  try {
    const a = await RawClient.established(h.url);
    const b = await RawClient.established(h.url);
    const c = await RawClient.connect(h.url);
    const error = await c.next();
    assert.equal(error.event, 'pusher:error');
    assert.equal((error.data as { code: number }).code, 4100);
    assert.equal((await c.closed).code, 4100);
    assert.equal(h.realtime.stats().connections, 2);
    a.client.close();
    await waitFor(() => h.realtime.stats().connections === 1);
    const d = await RawClient.established(h.url);
    assert.match(d.socketId, /^\d+\.\d+$/);
    b.client.close();
    d.client.close();
  } finally {
    await h.stop();
  }
});

test('close() closes every client with 4200 and stops accepting', async () => {
  const h = await startHarness();
  const { client } = await RawClient.established(h.url);
  client.subscribe('trade.BTCEUR');
  await client.next((f) => f.event === 'pusher_internal:subscription_succeeded');
  const stopping = h.stop();
  // A second close() while the first is under way settles with it.
  const again = h.realtime.close();
  assert.equal((await client.closed).code, 4200);
  await Promise.all([stopping, again]);
  await h.realtime.close();
  assert.deepEqual(h.realtime.stats(), { connections: 0, subscriptions: 0, channels: 0 });
});

test('a subscription first lets the provider catch up: what was due goes to the earlier subscribers only', async () => {
  let due: unknown;
  let realtime: Harness['realtime'] | undefined;
  const h = await startHarness({
    provider: {
      ...fakeProvider,
      catchUp() {
        if (due === undefined) return;
        realtime?.publish('order-book.BTCEUR', 'update', due);
        due = undefined;
      },
    },
  });
  realtime = h.realtime;
  try {
    const early = (await RawClient.established(h.url)).client;
    early.subscribe('order-book.BTCEUR');
    assert.equal((await early.next()).event, 'pusher_internal:subscription_succeeded');
    assert.equal((await early.next()).event, 'snapshot');

    due = { type: 'update', sequence: 7 };
    const late = (await RawClient.established(h.url)).client;
    late.subscribe('order-book.BTCEUR');
    assert.deepEqual(
      [(await late.next()).event, (await late.next()).event],
      ['pusher_internal:subscription_succeeded', 'snapshot'],
    );
    assert.deepEqual(parseData(await early.next()), { type: 'update', sequence: 7 });
    h.realtime.publish('order-book.BTCEUR', 'update', { type: 'update', sequence: 8 });
    assert.deepEqual(parseData(await late.next()), { type: 'update', sequence: 8 });
    early.close();
    late.close();
  } finally {
    await h.stop();
  }
});

test('a snapshot read from the store is read again when a commit came in meanwhile, and sent before any update', async () => {
  let mark = 0;
  let reads = 0;
  let release: (() => void) | undefined;
  const h = await startHarness({
    provider: {
      ...fakeProvider,
      commitMark: () => mark,
      snapshot(_channel, resolved) {
        if (resolved.kind !== 'book') return undefined;
        reads += 1;
        const read = reads;
        // The first read is slow, and a commit lands while it is under way.
        if (read === 1)
          return new Promise((resolve) => {
            release = () => resolve({ type: 'snapshot', read });
          });
        return Promise.resolve({ type: 'snapshot', read });
      },
    },
  });
  try {
    const { client } = await RawClient.established(h.url);
    client.subscribe('order-book.BTCEUR');
    while (release === undefined) await new Promise((resolve) => setImmediate(resolve));
    mark += 1;
    // Not registered yet: an update published now is not for it (its snapshot will include it).
    h.realtime.publish('order-book.BTCEUR', 'update', { type: 'update', sequence: 1 });
    release();
    assert.equal((await client.next()).event, 'pusher_internal:subscription_succeeded');
    assert.deepEqual(parseData(await client.next()), { type: 'snapshot', read: 2 });
    assert.equal(reads, 2, 'the snapshot read across a commit was sent as it was');
    h.realtime.publish('order-book.BTCEUR', 'update', { type: 'update', sequence: 2 });
    assert.deepEqual(parseData(await client.next()), { type: 'update', sequence: 2 });
    client.close();
  } finally {
    await h.stop();
  }
});
