/**
 * Real client libraries against the server: pusher-js 8 and laravel-echo 2 in Node. Only
 * 127.0.0.1 is contacted: stats are off and the only transport is plain ws to our port.
 */
import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import Echo from 'laravel-echo';
import { signChannelAuth } from './channel-auth.js';
import {
  APP_KEY,
  APP_SECRET,
  Pusher,
  recordOutgoingConnections,
  startHarness,
  waitFor,
} from './test-support.js';

const outgoing = recordOutgoingConnections();

after(() => {
  assert.deepEqual(outgoing.stop(), ['127.0.0.1']);
});

function pusherClient(port: number): Pusher {
  return new Pusher(APP_KEY, {
    cluster: 'eu',
    wsHost: '127.0.0.1',
    wsPort: port,
    forceTLS: false,
    enabledTransports: ['ws'],
    enableStats: false,
    // As the interface's client settings show; the server advertises 30 s, the smaller one wins.
    activityTimeout: 10_000,
    channelAuthorization: {
      // The interface's /broadcasting/auth takes a signed JSON body; a custom handler stands in for it.
      customHandler: ({ socketId, channelName }, callback) =>
        callback(null, { auth: signChannelAuth(APP_KEY, APP_SECRET, socketId, channelName) }),
    },
  });
}

async function connected(pusher: Pusher): Promise<void> {
  await new Promise<void>((resolve, reject) => {
    pusher.connection.bind('connected', () => resolve());
    pusher.connection.bind('failed', () => reject(new Error('pusher-js failed to connect')));
  });
}

test('pusher-js subscribes to a public and a private channel and receives published messages', async () => {
  const h = await startHarness();
  const pusher = pusherClient(h.port);
  try {
    await connected(pusher);
    const socketId = pusher.connection.socket_id;
    assert.match(socketId, /^\d+\.\d+$/);

    const ticker = pusher.subscribe('ticker-information.BTCEUR');
    const snapshot = new Promise<unknown>((resolve) => ticker.bind('snapshot', resolve));
    await new Promise<void>((resolve) => ticker.bind('pusher:subscription_succeeded', () => resolve()));
    assert.deepEqual(await snapshot, { channel: 'ticker-information.BTCEUR', type: 'snapshot' });

    const privateName = 'private-order-executed.42';
    const executions = pusher.subscribe(privateName);
    await new Promise<void>((resolve) => executions.bind('pusher:subscription_succeeded', () => resolve()));

    const tickerUpdate = new Promise<unknown>((resolve) => ticker.bind('update', resolve));
    const executionUpdate = new Promise<unknown>((resolve) => executions.bind('update', resolve));
    assert.equal(h.realtime.publish('ticker-information.BTCEUR', 'update', { type: 'update', n: 1 }), 1);
    assert.equal(h.realtime.publish(privateName, 'update', { type: 'update', n: 2 }), 1);
    assert.deepEqual(await tickerUpdate, { type: 'update', n: 1 });
    assert.deepEqual(await executionUpdate, { type: 'update', n: 2 });

    // A refused channel reaches the client as pusher:subscription_error.
    const unknown = pusher.subscribe('trade.NOPE');
    const error = await new Promise<unknown>((resolve) => unknown.bind('pusher:subscription_error', resolve));
    assert.equal((error as { status: number }).status, 404);
  } finally {
    pusher.disconnect();
    await h.stop();
  }
});

test('pusher-js answers the server ping, so a quiet connection stays up', async () => {
  const h = await startHarness({ keepalive: { idleMs: 50, pongTimeoutMs: 300 } });
  const pusher = pusherClient(h.port);
  try {
    await connected(pusher);
    const firstId = pusher.connection.socket_id;
    await new Promise((resolve) => setTimeout(resolve, 700));
    assert.equal(pusher.connection.state, 'connected');
    assert.equal(pusher.connection.socket_id, firstId);
  } finally {
    pusher.disconnect();
    await h.stop();
  }
});

test('pusher-js reconnects after a graceful server-side closeAll (4200)', async () => {
  const h = await startHarness();
  const pusher = pusherClient(h.port);
  try {
    await connected(pusher);
    const channel = pusher.subscribe('trade.BTCEUR');
    await new Promise<void>((resolve) => channel.bind('pusher:subscription_succeeded', () => resolve()));
    const firstId = pusher.connection.socket_id;
    h.realtime.closeAll();
    await waitFor(() => pusher.connection.state === 'connected' && pusher.connection.socket_id !== firstId);
    // pusher-js re-subscribes on its own after reconnecting.
    await waitFor(() => h.realtime.subscriberCount('trade.BTCEUR') === 1);
  } finally {
    pusher.disconnect();
    await h.stop();
  }
});

test('laravel-echo listens to raw event names (leading dot) on public and private channels', async () => {
  const h = await startHarness();
  const pusher = pusherClient(h.port);
  const echo = new Echo({ broadcaster: 'pusher', client: pusher });
  try {
    await connected(pusher);
    const snapshot = new Promise<unknown>((resolve) =>
      echo.channel('order-book.BTCEUR').listen('.snapshot', resolve),
    );
    assert.deepEqual(await snapshot, { channel: 'order-book.BTCEUR', type: 'snapshot' });

    const update = new Promise<unknown>((resolve) =>
      echo.channel('order-book.BTCEUR').listen('.update', resolve),
    );
    h.realtime.publish('order-book.BTCEUR', 'update', { channel: 'book', type: 'update' });
    assert.deepEqual(await update, { channel: 'book', type: 'update' });

    // Echo's private() adds the `private-` prefix itself.
    const subscribed = new Promise<void>((resolve) => echo.private('order-executed.42').subscribed(resolve));
    const privateUpdate = new Promise<unknown>((resolve) =>
      echo.private('order-executed.42').listen('.update', resolve),
    );
    await subscribed;
    h.realtime.publish('private-order-executed.42', 'update', { type: 'update' });
    assert.deepEqual(await privateUpdate, { type: 'update' });

    const refused = new Promise<unknown>((resolve) => echo.channel('trade.NOPE').error(resolve));
    assert.equal(((await refused) as { status: number }).status, 404);
  } finally {
    echo.disconnect();
    await h.stop();
  }
});
