/**
 * The transport while NATS is out of reach, then back: a relay in front of the shared test server
 * is cut and restored (test/support/nats.ts), so one side loses NATS as it would in a NATS restart
 * or a network failure, without restarting the server other tests use.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { jetstreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import { natsConnection, natsRelay, natsSuite, uniqueName } from '../../test/support/nats.js';
import type { OrderId, UserId } from '../domain/types.js';
import type { MarketSnapshot } from '../sequencer/market-view.js';
import {
  type BatchGap,
  BatchPublisher,
  BatchPublishQueue,
  type BatchStreamConfig,
  consumeBatches,
  PublishInterruptedError,
} from './batch-stream.js';
import { CommandClient, EngineUnavailableError } from './command-client.js';
import { CommandService } from './command-service.js';
import { fetchSnapshot, pingEngine, servePing, serveSnapshots } from './snapshot.js';
import { batchStream, TEST_CLUSTER_KEY } from './test-support.js';

interface Cleanup {
  after(fn: () => Promise<void> | void): void;
}

/** Resolves at the connection's next status event of that type (listening starts now). */
function nextStatus(nc: NatsConnection, type: 'disconnect' | 'reconnect'): Promise<void> {
  return (async () => {
    for await (const s of nc.status()) if (s.type === type) return;
  })();
}

const testStream = (t: Cleanup): BatchStreamConfig => batchStream(t, 'TEST_OUTAGE');

async function until(check: () => boolean, ms: number, what: string): Promise<void> {
  const deadline = Date.now() + ms;
  while (!check()) {
    if (Date.now() > deadline) assert.fail(`timed out waiting for ${what}`);
    await sleep(20);
  }
}

/** A command gateways send (over NATS the engine takes no other kind). */
const cancel = (orderId: number) =>
  ({ kind: 'cancelOrder', userId: 1 as UserId, orderId: orderId as OrderId }) as const;

describe('the transport through a NATS outage', natsSuite(), () => {
  test('a command in flight when the gateway loses NATS fails at once as of unknown fate, not after the timeout', async (t) => {
    const relay = await natsRelay(t);
    const gateway = await natsConnection(t, 'gateway', relay.url);
    const engine = await natsConnection(t, 'engine');
    const subject = uniqueName('cmd');
    let taken = 0;
    let commit: () => void = () => undefined;
    // An engine that takes the command and has not answered yet (its commit in flight).
    const service = await CommandService.start(
      engine,
      {
        submit: () => {
          taken += 1;
          return new Promise((resolve) => {
            commit = () => resolve({ ok: true, events: [] });
          });
        },
        submitOnce: async () => ({ kind: 'mismatch' }),
      },
      { key: TEST_CLUSTER_KEY, subject },
    );
    t.after(async () => {
      commit();
      await service.stop();
    });
    const client = new CommandClient(gateway, { key: TEST_CLUSTER_KEY, subject, timeoutMs: 10_000 });
    const answer = client.submit(cancel(1));
    answer.catch(() => undefined);
    await until(() => taken === 1, 2_000, 'the engine to take the command');
    const cutAt = Date.now();
    await relay.cut();
    await assert.rejects(answer, (error: unknown) => {
      assert.ok(error instanceof EngineUnavailableError);
      assert.equal(error.outcome, 'unknown');
      return true;
    });
    assert.ok(Date.now() - cutAt < 2_000, `failed ${Date.now() - cutAt} ms after the cut (timeout 10 s)`);
  });

  test('a gateway cut off from NATS answers EngineUnavailableError (not delivered) at once, and works again once reconnected', async (t) => {
    const relay = await natsRelay(t);
    const gateway = await natsConnection(t, 'gateway', relay.url);
    const engine = await natsConnection(t, 'engine');
    const subject = uniqueName('cmd');
    let applied = 0;
    const service = await CommandService.start(
      engine,
      {
        submit: async () => {
          applied += 1;
          return { ok: true, events: [] };
        },
        submitOnce: async () => ({ kind: 'mismatch' }),
      },
      { key: TEST_CLUSTER_KEY, subject },
    );
    t.after(() => service.stop());
    const client = new CommandClient(gateway, { key: TEST_CLUSTER_KEY, subject, timeoutMs: 2_000 });
    assert.deepEqual(await client.submit(cancel(1)), { ok: true, events: [] });

    const disconnected = nextStatus(gateway, 'disconnect');
    await relay.cut();
    await disconnected;
    await sleep(0);
    const started = performance.now();
    await assert.rejects(client.submit(cancel(2)), (e: unknown) => {
      assert.ok(e instanceof EngineUnavailableError, String(e));
      assert.equal(e.outcome, 'not_delivered');
      return true;
    });
    assert.ok(performance.now() - started < 500, 'refused at once, not after the timeout');

    const reconnected = nextStatus(gateway, 'reconnect');
    await relay.restore();
    await reconnected;
    await sleep(0);
    assert.deepEqual(await client.submit(cancel(3)), { ok: true, events: [] });
    assert.equal(applied, 2, 'the refused command was never applied, not even after the reconnect');
  });

  test('the readiness ping and the snapshot fetch fail at once while cut off, and as soon as the connection drops under them', async (t) => {
    const relay = await natsRelay(t);
    const gateway = await natsConnection(t, 'gateway', relay.url);
    const engine = await natsConnection(t, 'engine');
    const prefix = uniqueName('outage');
    const snapshot = { books: [] } as unknown as MarketSnapshot;
    const snapshots = serveSnapshots(engine, () => ({ sequence: 0, snapshot }), `${prefix}.snapshot`);
    const ping = servePing(engine, () => true, `${prefix}.ping`);
    // Subjects where the engine takes the request and never answers (a stalled engine).
    const stalled = [
      engine.subscribe(`${prefix}.stalled-ping`),
      engine.subscribe(`${prefix}.stalled-snapshot`),
    ];
    t.after(() => {
      snapshots.unsubscribe();
      ping.unsubscribe();
      for (const sub of stalled) sub.unsubscribe();
    });
    await engine.flush();
    const long = { timeoutMs: 10_000 };
    assert.equal(await pingEngine(gateway, { subject: `${prefix}.ping`, ...long }), true);
    assert.equal((await fetchSnapshot(gateway, { subject: `${prefix}.snapshot`, ...long })).sequence, 0);

    // In flight when the connection drops: answered at the disconnect, not after 10 s.
    const pinging = pingEngine(gateway, { subject: `${prefix}.stalled-ping`, ...long });
    const fetching = fetchSnapshot(gateway, { subject: `${prefix}.stalled-snapshot`, ...long });
    fetching.catch(() => undefined);
    await sleep(100);
    const disconnected = nextStatus(gateway, 'disconnect');
    const cutAt = performance.now();
    await relay.cut();
    assert.equal(await pinging, false);
    await assert.rejects(fetching, /lost before the answer came/);
    const inFlightMs = performance.now() - cutAt;
    assert.ok(inFlightMs < 2_000, `failed ${inFlightMs.toFixed(0)} ms after the cut (timeout 10 s)`);

    // Made while cut off: refused at once.
    await disconnected;
    await sleep(0);
    const refusedAt = performance.now();
    assert.equal(await pingEngine(gateway, { subject: `${prefix}.ping`, ...long }), false);
    await assert.rejects(
      fetchSnapshot(gateway, { subject: `${prefix}.snapshot`, ...long }),
      /nothing was sent/,
    );
    const refusedMs = performance.now() - refusedAt;
    assert.ok(refusedMs < 500, `refused after ${refusedMs.toFixed(0)} ms (timeout 10 s)`);

    const reconnected = nextStatus(gateway, 'reconnect');
    await relay.restore();
    await reconnected;
    await sleep(0);
    assert.equal(await pingEngine(gateway, { subject: `${prefix}.ping`, ...long }), true);
    assert.equal((await fetchSnapshot(gateway, { subject: `${prefix}.snapshot`, ...long })).sequence, 0);
    t.diagnostic(
      `in flight at the cut: failed after ${inFlightMs.toFixed(0)} ms; made while cut off: ${refusedMs.toFixed(1)} ms (timeouts 10 s)`,
    );
  });

  test('batches committed while the engine has no NATS are published in order once it is back: no gap, no duplicate', async (t) => {
    const relay = await natsRelay(t);
    const engine = await natsConnection(t, 'engine', relay.url);
    const gateway = await natsConnection(t, 'gateway');
    const config = testStream(t);
    const publisher = await BatchPublisher.open(engine, config, { key: TEST_CLUSTER_KEY, timeoutMs: 300 });
    let retries = 0;
    const queue = new BatchPublishQueue(publisher, { retryDelayMs: 50, onRetry: () => (retries += 1) });
    t.after(() => queue.close());
    const delivered: number[] = [];
    const gaps: BatchGap[] = [];
    const sub = await consumeBatches(gateway, {
      key: TEST_CLUSTER_KEY,
      from: 1,
      config,
      onBatch: (b) => void delivered.push(b.sequence),
      onGap: (g) => void gaps.push(g),
    });
    t.after(() => sub.stop());

    for (let n = 1; n <= 3; n += 1) queue.enqueue(n, { n });
    await queue.flushed();
    const disconnected = nextStatus(engine, 'disconnect');
    await relay.cut();
    await disconnected;
    for (let n = 4; n <= 8; n += 1) queue.enqueue(n, { n });
    await until(() => retries > 0, 5_000, 'a failed publish');
    assert.ok(queue.backlog > 0, 'batches wait while NATS is away');
    await relay.restore();
    await queue.flushed();
    assert.equal(queue.backlog, 0);
    await until(() => delivered.length === 8, 5_000, 'all 8 batches at the gateway');
    assert.deepEqual(delivered, [1, 2, 3, 4, 5, 6, 7, 8]);
    assert.deepEqual(gaps, []);
    const info = await (await jetstreamManager(gateway)).streams.info(config.stream);
    assert.equal(info.state.messages, 8, 'each batch stored once, retries included');
  });

  test('a publish in flight when the engine loses NATS, or made while it has none, fails at once, not after its timeout; its retry stores the batch once', async (t) => {
    const relay = await natsRelay(t);
    const engine = await natsConnection(t, 'engine', relay.url);
    const reader = await natsConnection(t, 'reader');
    const config = testStream(t);
    const publisher = await BatchPublisher.open(engine, config, { key: TEST_CLUSTER_KEY, timeoutMs: 10_000 });
    await publisher.publish(1, 1);
    // Its ack can only come back on the connection cut right after it was sent (the NATS restart
    // case: the request went to the server that stopped). It used to wait the whole 10 s.
    const inFlight = publisher.publish(2, 2);
    inFlight.catch(() => undefined);
    const cutAt = Date.now();
    await relay.cut();
    await assert.rejects(inFlight, PublishInterruptedError);
    assert.ok(Date.now() - cutAt < 2_000, `failed ${Date.now() - cutAt} ms after the cut (timeout 10 s)`);
    // While disconnected a publish is not sent (the client never gets an answer to a request made
    // then, even after the reconnect): refused at once.
    const refusedAt = Date.now();
    await assert.rejects(publisher.publish(2, 2), PublishInterruptedError);
    assert.ok(Date.now() - refusedAt < 500, `refused after ${Date.now() - refusedAt} ms`);
    const reconnected = nextStatus(engine, 'reconnect');
    await relay.restore();
    await reconnected;
    // Whether the server stored it or not, the retry leaves batch 2 in the stream once.
    await publisher.publish(2, 2);
    await publisher.publish(3, 3);
    const info = await (await jetstreamManager(reader)).streams.info(config.stream);
    assert.equal(info.state.messages, 3);
  });

  test('a gateway cut off from NATS resumes its batches where it stopped once reconnected', async (t) => {
    const relay = await natsRelay(t);
    const gateway = await natsConnection(t, 'gateway', relay.url);
    const engine = await natsConnection(t, 'engine');
    const config = testStream(t);
    const publisher = await BatchPublisher.open(engine, config, { key: TEST_CLUSTER_KEY });
    const delivered: number[] = [];
    const gaps: BatchGap[] = [];
    const sub = await consumeBatches(gateway, {
      key: TEST_CLUSTER_KEY,
      from: 1,
      config,
      onBatch: (b) => void delivered.push(b.sequence),
      onGap: (g) => void gaps.push(g),
    });
    t.after(() => sub.stop());
    for (let n = 1; n <= 3; n += 1) await publisher.publish(n, n);
    await until(() => delivered.length === 3, 5_000, 'the first batches');
    const disconnected = nextStatus(gateway, 'disconnect');
    await relay.cut();
    await disconnected;
    for (let n = 4; n <= 6; n += 1) await publisher.publish(n, n);
    await relay.restore();
    // Promptly: the subscription reopens its consumer on the reconnect instead of waiting for heartbeats.
    await until(() => delivered.length === 6, 3_000, 'the batches published during the outage');
    assert.deepEqual(delivered, [1, 2, 3, 4, 5, 6]);
    assert.deepEqual(gaps, []);
  });
});
