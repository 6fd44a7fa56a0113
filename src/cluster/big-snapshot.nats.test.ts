/**
 * A venue whose snapshot is well over NATS's max_payload (1 MiB by default): thousands of users
 * with balances, deep books on two markets. An in-process engine (SQLite in memory) serves it
 * over a real NATS server (TEST_NATS_URL; skipped visibly without it):
 *
 * - the engine's first stream message (the `reset` carrying that snapshot) is too large and is
 *   dropped; a gateway starts anyway, from the chunked snapshot, with the engine's view;
 * - one committed batch over max_payload (an order sweeping a deep book) is dropped too: the
 *   gateway sees the gap at the next batch and re-snapshots (in chunks) to the engine's view;
 * - the engine starts again on the same stream: its too-large `reset` is dropped, the gateway
 *   sees the gap at the next batch and reloads from the snapshot, telling its listeners.
 *
 * Prints the snapshot's size, its chunks, and how long a gateway start and a repair took.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { natsConnection, natsSuite } from '../../test/support/nats.js';
import { waitUntil } from '../../test/support/polling.js';
import type { MarketId, UserId } from '../domain/types.js';
import type { Command } from '../engine/types.js';
import type { LocalExchange } from '../sequencer/sequencer.js';
import { serveCluster } from './engine-node.js';
import { encodeSnapshot, fetchSnapshot, SnapshotChunks } from './snapshot.js';
import {
  createEurMarkets,
  deposit,
  limit,
  memoryExchange,
  openGateway,
  silent,
  submitAll,
  TEST_CLUSTER_KEY,
  testStream,
  withoutSequence,
} from './test-support.js';

/** BIG_SNAPSHOT_USERS sets another number, to measure a larger venue (3 balances each). */
const USERS = Number(process.env.BIG_SNAPSHOT_USERS ?? 12_000);
/** Resting orders per book (each at a price of its own, so each a level). */
const DEPTH = 3_000;
const MiB = 1024 * 1024;

const btc = 1 as MarketId;
const eth = 2 as MarketId;

async function bigVenue(
  t: { after(fn: () => Promise<void> | void): void },
  users = USERS,
  depth = DEPTH,
): Promise<LocalExchange> {
  const exchange = await memoryExchange(t);
  await createEurMarkets(exchange, ['BTC', 'ETH']);
  const deposits: Command[] = [];
  for (let u = 1; u <= users; u++)
    deposits.push(
      deposit(u, 'BTC', 1_000_000 + u),
      deposit(u, 'ETH', 2_000_000 + u),
      deposit(u, 'EUR', 50_000_000_000 + u),
    );
  // A few thousand at a time: they share group commits, as under load.
  await submitAll(exchange, deposits, 2_000);
  const orders: Command[] = [];
  for (let i = 0; i < depth; i++) {
    orders.push(limit(i + 1, btc, 'sell', 3_000_000 + i * 7, 100 + (i % 13)));
    orders.push(limit(i + 1, eth, 'buy', 200_000 - i * 3, 500 + (i % 11)));
  }
  await submitAll(exchange, orders, 2_000);
  return exchange;
}

const until = (check: () => boolean, what: string, ms = 60_000) => waitUntil(check, what, ms);

describe('a venue whose snapshot is larger than max_payload', natsSuite(), () => {
  test('a gateway starts from the chunked snapshot, and repairs a dropped batch and a dropped reset', async (t) => {
    const started = Date.now();
    const exchange = await bigVenue(t);
    const built = Date.now() - started;
    const nc = await natsConnection(t, 'engine');
    const gatewayNc = await natsConnection(t, 'gateway');
    const maxPayload = nc.info?.max_payload ?? MiB;
    const { stream, names } = testStream(t, 'BIG_SNAPSHOT');
    const dropped: Array<{ sequence: number; reason: string }> = [];
    const logger = {
      info: () => undefined,
      warn: (obj: object) => {
        const { sequence, reason } = obj as { sequence?: number; reason?: string };
        if (sequence !== undefined && reason !== undefined) dropped.push({ sequence, reason });
      },
      error: () => undefined,
    };
    const encodeStart = performance.now();
    const size = encodeSnapshot({ sequence: 1, snapshot: exchange.view.snapshot() }).length;
    const encodeMs = performance.now() - encodeStart;
    assert.ok(size > 2 * maxPayload, `the snapshot (${size} bytes) is well over max_payload (${maxPayload})`);

    const served = await serveCluster(exchange, nc, {
      key: TEST_CLUSTER_KEY,
      stream,
      subjects: names,
      logger,
    });
    let servedClosed = false;
    t.after(() => (servedClosed ? undefined : served.close()));
    const openStart = performance.now();
    const remote = await openGateway(t, gatewayNc, { stream, names }, { logger });
    const openMs = performance.now() - openStart;
    // The first stream message (the reset with this snapshot) could not be published.
    await until(() => dropped.some((d) => d.reason === 'too_large'), 'the dropped reset');
    assert.deepEqual(dropped, [
      { sequence: served.streamSequence(exchange.feed.head()), reason: 'too_large' },
    ]);
    assert.deepEqual(withoutSequence(remote.view.snapshot()), withoutSequence(exchange.view.snapshot()));
    assert.equal(remote.book(btc, 0).asks.length, DEPTH);
    const fetchStart = performance.now();
    const fetched = await fetchSnapshot(gatewayNc, { subject: names.snapshot });
    const fetchMs = performance.now() - fetchStart;
    assert.equal(fetched.bytes, size);
    assert.ok(fetched.chunks >= 3, `${fetched.chunks} chunks`);

    let restored = 0;
    remote.onRestored(() => restored++);
    // One order sweeps the whole BTC book: one committed batch over max_payload, dropped. It is
    // submitted on the engine itself; its command reply (every fill) is over max_payload too, which
    // a gateway now fetches in chunks (big-reply.nats.test.ts).
    const taker = (USERS - 1) as UserId;
    const sweep = await exchange.submit(limit(taker, btc, 'buy', 4_000_000, DEPTH * 200));
    assert.ok(sweep.ok, JSON.stringify(sweep));
    await until(() => dropped.length === 2, 'the dropped sweep');
    assert.equal(dropped[1]?.reason, 'too_large');
    assert.equal(remote.book(btc, 0).asks.length, DEPTH, 'the gateway has not seen the sweep yet');
    // The next batch reveals the gap: the gateway re-snapshots, in chunks, to the engine's view.
    const repairStart = performance.now();
    await exchange.submit(deposit(1, 'EUR', 5));
    await until(() => restored === 1, 'the re-snapshot after the dropped sweep');
    const repairMs = performance.now() - repairStart;
    assert.equal(remote.book(btc, 0).asks.length, 0);
    assert.deepEqual(withoutSequence(remote.view.snapshot()), withoutSequence(exchange.view.snapshot()));

    // The engine starts again on the same stream: its reset (this snapshot) is too large too.
    await served.close();
    servedClosed = true;
    const again = await serveCluster(exchange, nc, {
      key: TEST_CLUSTER_KEY,
      stream,
      subjects: names,
      logger,
    });
    let againClosed = false;
    t.after(() => (againClosed ? undefined : again.close()));
    await until(() => dropped.length === 3, 'the dropped reset of the new start');
    assert.equal(dropped[2]?.reason, 'too_large');
    await until(() => remote.isWritable(), 'the gateway writable again', 10_000);
    await exchange.submit(deposit(2, 'EUR', 7));
    await until(() => restored === 2, 'the reload after the dropped reset');
    assert.deepEqual(withoutSequence(remote.view.snapshot()), withoutSequence(exchange.view.snapshot()));
    // A gateway starting now begins from the new engine's snapshot and follows its batches.
    const second = await openGateway(t, gatewayNc, { stream, names }, { logger });
    await exchange.submit(deposit(3, 'EUR', 9));
    const three = () => exchange.view.balances(3 as UserId).find((b) => b.asset === 'EUR')?.available;
    await until(
      () => second.balances(3 as UserId).find((b) => b.asset === 'EUR')?.available === three(),
      'the deposit on the second gateway',
    );
    assert.deepEqual(withoutSequence(second.view.snapshot()), withoutSequence(exchange.view.snapshot()));

    // Closed here, while its connection is open (the hooks close the connections first).
    await second.close();
    await remote.close();
    await again.close();
    againClosed = true;

    const ms = (x: number) => `${x.toFixed(0)} ms`;
    t.diagnostic(
      `snapshot ${(size / MiB).toFixed(2)} MiB (${USERS} users, ${exchange.view.snapshot().balances.length} balances, ` +
        `2 books of ${DEPTH} levels) in ${fetched.chunks} chunks of max_payload ${maxPayload}; venue built in ${ms(built)}; ` +
        `engine encode ${ms(encodeMs)}; gateway start (RemoteExchange.open) ${ms(openMs)}; ` +
        `fetchSnapshot alone ${ms(fetchMs)}; gap → repaired view ${ms(repairMs)}`,
    );
  });
});

describe('a snapshot transfer that fails over NATS', natsSuite(), () => {
  test('a damaged chunk, then a snapshot gone: the gateway fetches again from the start, never uses part of one', async (t) => {
    const exchange = await bigVenue(t, 1_500, 300);
    const nc = await natsConnection(t, 'engine');
    const gatewayNc = await natsConnection(t, 'gateway');
    const cluster = testStream(t, 'SNAPSHOT_RETRY');
    const { name, stream, names } = cluster;
    const served = await serveCluster(exchange, nc, {
      key: TEST_CLUSTER_KEY,
      stream,
      subjects: names,
      logger: silent,
    });
    let servedClosed = false;
    t.after(() => (servedClosed ? undefined : served.close()));
    // A snapshot service of this test's own on another subject, in small chunks, that damages the
    // first transfer's third chunk and drops the second transfer's snapshot after its head.
    const subject = `test.${name}.chunked`;
    const chunks = new SnapshotChunks(
      () => ({ sequence: served.streamSequence(exchange.view.sequence), snapshot: exchange.view.snapshot() }),
      { chunkSubject: `${subject}.own`, maxPayload: () => 64 * 1024 },
    );
    let heads = 0;
    let chunkReplies = 0;
    const answer = (data: Uint8Array, isHead: boolean): Uint8Array => {
      const reply = chunks.answer(data);
      if (isHead) {
        heads += 1;
        // The second transfer: the engine lets go of its snapshot right after the head.
        if (heads === 2) chunks.clear();
        return reply;
      }
      chunkReplies += 1;
      if (heads === 1 && chunkReplies === 2) {
        const damaged = Uint8Array.from(reply);
        damaged[damaged.length - 1] = (damaged[damaged.length - 1] ?? 0) ^ 0x01;
        return damaged;
      }
      return reply;
    };
    const subs = [
      gatewayNc.subscribe(subject, { callback: (_e, m) => void m.respond(answer(m.data, true)) }),
      gatewayNc.subscribe(`${subject}.own`, { callback: (_e, m) => void m.respond(answer(m.data, false)) }),
    ];
    t.after(() => {
      for (const sub of subs) sub.unsubscribe();
      chunks.clear();
    });
    await gatewayNc.flush();
    const remote = await openGateway(t, gatewayNc, cluster, { snapshotSubject: subject });
    assert.equal(heads, 3, 'a damaged transfer, one whose snapshot was gone, then a whole one');
    assert.ok(chunkReplies > 6, `${chunkReplies} chunk replies`);
    assert.deepEqual(withoutSequence(remote.view.snapshot()), withoutSequence(exchange.view.snapshot()));
    // It follows the engine from there.
    await exchange.submit(deposit(4, 'BTC', 3));
    await until(
      () =>
        remote.balances(4 as UserId).find((b) => b.asset === 'BTC')?.available ===
        exchange.view.balances(4 as UserId).find((b) => b.asset === 'BTC')?.available,
      'the deposit',
    );
    // Closed here, while the connections are open (the hooks close the connections first).
    await remote.close();
    await served.close();
    servedClosed = true;
  });
});
