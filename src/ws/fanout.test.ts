/**
 * Batched fan-out: inside a batch each connection is corked once, its frames are queued in publish
 * order, and everything is uncorked (written) when the batch ends, also when it throws.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { WebSocket } from 'ws';
import { ClientConnection } from './connection.js';
import { Batch } from './fanout.js';
import { RawClient, startHarness } from './test-support.js';

/** A connection over a fake socket and transport that log what happens to them, in order. */
function fakeConnection(log: string[], name: string, transport = true): ClientConnection {
  const socket = {
    readyState: WebSocket.OPEN,
    bufferedAmount: 0,
    send: (frame: Buffer | string) => log.push(`${name} send ${String(frame)}`),
    close: () => log.push(`${name} close`),
    terminate: () => {},
  } as unknown as WebSocket;
  return new ClientConnection(
    name,
    socket,
    { maxBufferedBytes: 1024, closeGraceMs: 10, onClosing: () => {} },
    0,
    transport
      ? { cork: () => log.push(`${name} cork`), uncork: () => log.push(`${name} uncork`) }
      : undefined,
  );
}

test('a batch corks each connection once and uncorks them all when released', () => {
  const log: string[] = [];
  const a = fakeConnection(log, 'a');
  const b = fakeConnection(log, 'b');
  const batch = new Batch();
  for (const [connection, frame] of [
    [a, 'book'],
    [b, 'book'],
    [a, 'trade'],
    [b, 'trade'],
  ] as const) {
    batch.hold(connection);
    connection.send(frame);
  }
  batch.release();
  assert.deepEqual(log, [
    'a cork',
    'a send book',
    'b cork',
    'b send book',
    'a send trade',
    'b send trade',
    'a uncork',
    'b uncork',
  ]);
  // Released: the next batch corks again; a second release does nothing more.
  log.length = 0;
  batch.release();
  batch.hold(a);
  a.send('ticker');
  batch.release();
  assert.deepEqual(log, ['a cork', 'a send ticker', 'a uncork']);
});

test('a batch leaves alone connections without a transport, and closed ones', () => {
  const log: string[] = [];
  const bare = fakeConnection(log, 'bare', false);
  const closed = fakeConnection(log, 'closed');
  closed.close(4100, 'Slow consumer');
  closed.dispose();
  log.length = 0;
  const batch = new Batch();
  batch.hold(bare);
  bare.send('x');
  batch.hold(closed);
  assert.equal(closed.send('y'), false);
  batch.release();
  assert.deepEqual(log, ['bare send x']);
});

test('a connection closed in the middle of a batch is still uncorked', () => {
  const log: string[] = [];
  const c = fakeConnection(log, 'c');
  const batch = new Batch();
  batch.hold(c);
  c.send('book');
  c.close(4100, 'Slow consumer');
  batch.release();
  assert.deepEqual(log, ['c cork', 'c send book', 'c close', 'c uncork']);
  c.dispose();
});

test('realtime.batch: frames of every channel arrive in publish order; nested and throwing batches flush', async () => {
  const h = await startHarness();
  const clients: RawClient[] = [];
  try {
    for (let i = 0; i < 3; i++) {
      const { client } = await RawClient.established(h.url);
      clients.push(client);
      client.subscribe('trade.BTCEUR');
      client.subscribe('order-book.BTCEUR');
      await client.next((f) => f.event === 'snapshot' && f.channel === 'order-book.BTCEUR');
      await client.next(
        (f) => f.event === 'pusher_internal:subscription_succeeded' && f.channel === 'trade.BTCEUR',
      );
    }
    const sent = h.realtime.batch(() => {
      let n = h.realtime.publish('order-book.BTCEUR', 'update', { n: 1 });
      n += h.realtime.publish('trade.BTCEUR', 'update', { n: 2 });
      // A nested batch joins the outer one.
      n += h.realtime.batch(() => h.realtime.publish('order-book.BTCEUR', 'update', { n: 3 }));
      return n;
    });
    assert.equal(sent, 9);
    assert.throws(() =>
      h.realtime.batch(() => {
        h.realtime.publish('trade.BTCEUR', 'update', { n: 4 });
        throw new Error('publisher failed');
      }),
    );
    // Outside any batch, publishing writes at once as before.
    h.realtime.publish('order-book.BTCEUR', 'update', { n: 5 });
    for (const client of clients) {
      const received: unknown[] = [];
      for (let i = 0; i < 5; i++)
        received.push(JSON.parse(String((await client.next((f) => f.event === 'update')).data)));
      assert.deepEqual(received, [{ n: 1 }, { n: 2 }, { n: 3 }, { n: 4 }, { n: 5 }]);
    }
  } finally {
    for (const client of clients) client.close();
    await h.stop();
  }
});
