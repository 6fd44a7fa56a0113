/**
 * WebSocket faults on the real Pusher-protocol server (fake channels), with a scripted random
 * source: what a client receives, and what the TypeScript client's LocalBook makes of it.
 */
import assert from 'node:assert/strict';
import { afterEach, test } from 'node:test';
import type { BookUpdateData } from '../client/channels.js';
import { LocalBook } from '../client/local-book.js';
import { ChannelGrants } from '../ws/channel-grants.js';
import { type Frame, type Harness, RawClient, startHarness, waitFor } from '../ws/test-support.js';
import { Chaos, type InjectedEvent } from './controller.js';
import { seededRandom as seeded } from './random.js';
import { WsChaos } from './ws-hook.js';

const BOOK = 'order-book.BTCEUR';

interface Setup {
  readonly harness: Harness;
  readonly chaos: Chaos;
  readonly hook: WsChaos;
  readonly grants: ChannelGrants;
  readonly injected: InjectedEvent[];
}

let current: Setup | undefined;
afterEach(async () => {
  current?.hook.close();
  await current?.harness.stop();
  current = undefined;
});

async function setup(seed = 7): Promise<Setup> {
  const injected: InjectedEvent[] = [];
  const chaos = new Chaos({ random: seeded(seed), onInjected: (e) => injected.push(e) });
  const grants = new ChannelGrants({ isKeyActive: () => true });
  const hook = new WsChaos({ chaos, keysOf: (id) => grants.keysOf(id) });
  const harness = await startHarness({ faults: hook, channelGrants: grants });
  current = { harness, chaos, hook, grants, injected };
  return current;
}

async function bookClient(harness: Harness): Promise<{ client: RawClient; socketId: string }> {
  const connected = await RawClient.established(harness.url);
  connected.client.subscribe(BOOK);
  await connected.client.next((f) => f.event === 'pusher_internal:subscription_succeeded');
  await connected.client.next((f) => f.event === 'snapshot');
  return connected;
}

/** Update k adds the bid level k.0: the book at sequence s holds the levels 1..s. */
const update = (k: number): BookUpdateData => ({
  symbol: 'BTC/EUR',
  bids: { price: `${k}.0`, qty: '1' },
  asks: [],
  sequence: k,
  checksum: undefined as unknown as number,
});
const snapshotAt = (s: number) => ({
  symbol: 'BTC/EUR',
  bids: Array.from({ length: s }, (_, i) => ({ price: `${s - i}.0`, qty: '1' })),
  asks: [],
  sequence: s,
  checksum: undefined as unknown as number,
});

function publishUpdates(harness: Harness, from: number, to: number): void {
  for (let k = from; k <= to; k++) harness.realtime.publish(BOOK, 'update', update(k));
}

async function updatesReceived(client: RawClient, count: number): Promise<BookUpdateData[]> {
  const received: BookUpdateData[] = [];
  for (let i = 0; i < count; i++) {
    const frame: Frame = await client.next((f) => f.event === 'update');
    received.push(JSON.parse(String(frame.data)) as BookUpdateData);
  }
  return received;
}

/** What a client with a LocalBook does: apply; on a gap, resubscribe (here: the snapshot at once). */
function replay(messages: readonly BookUpdateData[]) {
  const book = new LocalBook({ verifyChecksum: false });
  book.applySnapshot(snapshotAt(0));
  const results: string[] = [];
  for (const data of messages) {
    const result = book.applyUpdate(data);
    results.push(result.status);
    if (result.status === 'gap') book.applySnapshot(snapshotAt(data.sequence));
  }
  return { book, results };
}

test('with no fault set, the hook is never asked (one boolean check on the hot path)', async () => {
  const { harness, hook } = await setup();
  let asked = 0;
  const deliver = hook.deliver.bind(hook);
  hook.deliver = (...args) => {
    asked += 1;
    return deliver(...args);
  };
  const { client } = await bookClient(harness);
  publishUpdates(harness, 1, 3);
  assert.deepEqual(
    (await updatesReceived(client, 3)).map((u) => u.sequence),
    [1, 2, 3],
  );
  assert.equal(asked, 0);
});

test('dropped updates: the LocalBook detects every one (one gap per run of drops) and resynchronises', async () => {
  const { harness, chaos, injected } = await setup();
  const { client } = await bookClient(harness);
  chaos.replace(undefined, { book_updates: { drop: 0.2, duplicate: 0, reorder: 0 } });
  publishUpdates(harness, 1, 300);
  chaos.clear();
  publishUpdates(harness, 301, 301);
  const drops = injected.filter((e) => e.fault === 'book_drop').length;
  const received = await updatesReceived(client, 301 - drops);
  const got = new Set(received.map((u) => u.sequence));
  const missing = Array.from({ length: 301 }, (_, i) => i + 1).filter((k) => !got.has(k));
  assert.equal(missing.length, drops);
  assert.ok(drops > 30 && drops < 90, `${drops} drops`);
  const runs = missing.filter((k, i) => missing[i - 1] !== k - 1).length;
  const { book, results } = replay(received);
  assert.equal(results.filter((r) => r === 'gap').length, runs);
  assert.deepEqual(book.bids(), snapshotAt(301).bids);
  assert.equal(book.sequence, 301);
});

test('duplicated updates arrive twice and are ignored as stale: the copy never leaves sync', async () => {
  const { harness, chaos, injected } = await setup(11);
  const { client } = await bookClient(harness);
  chaos.replace(undefined, { book_updates: { drop: 0, duplicate: 0.3, reorder: 0 } });
  publishUpdates(harness, 1, 100);
  const duplicates = injected.filter((e) => e.fault === 'book_duplicate').length;
  assert.ok(duplicates > 10);
  const received = await updatesReceived(client, 100 + duplicates);
  const { book, results } = replay(received);
  assert.equal(results.filter((r) => r === 'stale').length, duplicates);
  assert.equal(results.filter((r) => r === 'gap').length, 0);
  assert.deepEqual(book.bids(), snapshotAt(100).bids);
});

test('reordered updates are swapped with their successor: a gap, then the late one is stale', async () => {
  const { harness, chaos, injected } = await setup(3);
  const { client } = await bookClient(harness);
  chaos.replace(undefined, { book_updates: { drop: 0, duplicate: 0, reorder: 0.2 } });
  publishUpdates(harness, 1, 200);
  chaos.clear();
  publishUpdates(harness, 201, 201);
  const reordered = injected.filter((e) => e.fault === 'book_reorder').length;
  assert.ok(reordered > 10);
  const received = await updatesReceived(client, 201);
  const sequences = received.map((u) => u.sequence);
  assert.deepEqual(
    [...sequences].sort((a, b) => a - b),
    Array.from({ length: 201 }, (_, i) => i + 1),
  );
  const swaps = sequences.filter((s, i) => i > 0 && s < sequences[i - 1]!).length;
  assert.equal(swaps, reordered);
  const { book, results } = replay(received);
  assert.equal(results.filter((r) => r === 'gap').length, reordered);
  assert.deepEqual(book.bids(), snapshotAt(201).bids);
});

test('a held-back update with no successor is sent after the reorder window', async () => {
  const { harness, chaos } = await setup();
  const { client } = await bookClient(harness);
  chaos.replace(undefined, { book_updates: { drop: 0, duplicate: 0, reorder: 1, count: 1 } });
  const start = performance.now();
  publishUpdates(harness, 1, 1);
  const [late] = await updatesReceived(client, 1);
  assert.equal(late?.sequence, 1);
  assert.ok(performance.now() - start >= 900);
});

test('faults scoped to a key reach only connections that key authorized', async () => {
  const { harness, chaos, grants } = await setup();
  const keyed = await bookClient(harness);
  const anonymous = await bookClient(harness);
  assert.equal(grants.grant(keyed.socketId, 'private-order-executed.1', 'KEY-A'), true);
  chaos.replace('KEY-A', { book_updates: { drop: 1, duplicate: 0, reorder: 0 } });
  publishUpdates(harness, 1, 5);
  assert.deepEqual(
    (await updatesReceived(anonymous.client, 5)).map((u) => u.sequence),
    [1, 2, 3, 4, 5],
  );
  await assert.rejects(keyed.client.next((f) => f.event === 'update', 200));
});

test('only order-book updates are dropped: snapshots and other channels pass', async () => {
  const { harness, chaos } = await setup();
  const connected = await RawClient.established(harness.url);
  chaos.replace(undefined, { book_updates: { drop: 1, duplicate: 0, reorder: 0 } });
  connected.client.subscribe(BOOK);
  connected.client.subscribe('trade.BTCEUR');
  await connected.client.next((f) => f.event === 'snapshot' && f.channel === BOOK);
  harness.realtime.publish('trade.BTCEUR', 'update', { n: 1 });
  await connected.client.next((f) => f.event === 'update' && f.channel === 'trade.BTCEUR');
});

test('delay: every frame waits, in order, jitter or not', async () => {
  const { harness, chaos, injected } = await setup();
  const { client } = await bookClient(harness);
  chaos.replace(undefined, { ws_delay: { ms: 500, jitter_ms: 100 } });
  const start = performance.now();
  publishUpdates(harness, 1, 20);
  const received = await updatesReceived(client, 20);
  assert.ok(performance.now() - start >= 495);
  assert.deepEqual(
    received.map((u) => u.sequence),
    Array.from({ length: 20 }, (_, i) => i + 1),
  );
  assert.equal(injected.filter((e) => e.fault === 'ws_delay').length, 20);
  // Pongs too: the connection is slow, not just the feed.
  const pingAt = performance.now();
  client.send({ event: 'pusher:ping', data: {} });
  await client.next((f) => f.event === 'pusher:pong');
  assert.ok(performance.now() - pingAt >= 495);
  // Cleared: frames flow at once again (after the ones still queued).
  chaos.clear();
  await new Promise((r) => setTimeout(r, 700));
  const fast = performance.now();
  publishUpdates(harness, 21, 21);
  await updatesReceived(client, 1);
  assert.ok(performance.now() - fast < 400);
});

test('disconnects close the connection with the chosen code; others stay', async () => {
  const { harness, chaos, grants, hook, injected } = await setup();
  const keyed = await bookClient(harness);
  const other = await bookClient(harness);
  grants.grant(keyed.socketId, 'private-order-executed.1', 'KEY-A');
  chaos.replace('KEY-A', { disconnects: { rate: 1, code: 4201 } });
  hook.sweep();
  assert.deepEqual((await keyed.client.closed).code, 4201);
  assert.deepEqual(
    injected.map((e) => [e.fault, e.apiKey]),
    [['disconnect', 'KEY-A']],
  );
  await waitFor(() => harness.realtime.stats().connections === 1);
  other.client.send({ event: 'pusher:ping', data: {} });
  await other.client.next((f) => f.event === 'pusher:pong');
});

test('the disconnect sweep runs by itself each second while the fault is set', async () => {
  const { harness, chaos } = await setup();
  const { client } = await bookClient(harness);
  chaos.replace(undefined, { disconnects: { rate: 1, code: 4200, count: 1 } });
  const { code } = await client.closed;
  assert.equal(code, 4200);
  assert.equal(chaos.flags.disconnects, false);
});
