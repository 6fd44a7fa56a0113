/**
 * Committed batches over JetStream, against a real NATS server (TEST_NATS_URL; skipped visibly
 * without it). Each test has its own stream and subject, deleted at its end.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { DiscardPolicy, jetstream, jetstreamManager, RetentionPolicy } from '@nats-io/jetstream';
import { headers } from '@nats-io/transport-node';
import { natsConnection, natsSuite } from '../../test/support/nats.js';
import {
  BATCH_SEQUENCE_HEADER,
  type BatchGap,
  BatchPublisher,
  BatchPublishQueue,
  type BatchStreamConfig,
  consumeBatches,
  locateBatch,
  type SetAside,
  StreamForkError,
} from './batch-stream.js';
import { ClusterKey, MAC_HEADER } from './cluster-key.js';
import { type BatchEnvelope, encodeBatch, WireFormatError } from './codec.js';
import type { ExactValue } from './exact-json.js';
import { batchStream, TEST_CLUSTER_KEY } from './test-support.js';

interface Cleanup {
  after(fn: () => Promise<void> | void): void;
}

/** A stream and subject of this test's own, deleted when it ends. */
const testStream = (t: Cleanup, extra: Partial<BatchStreamConfig> = {}) =>
  batchStream(t, 'TEST_BATCHES', extra);

/** Collects what a consumer reports, in order, and lets a test wait for a count of batches. */
function recorder() {
  const log: Array<{ batch: BatchEnvelope } | { gap: BatchGap }> = [];
  let wake: (() => void) | undefined;
  return {
    log,
    onBatch: (batch: BatchEnvelope) => {
      log.push({ batch });
      wake?.();
    },
    onGap: (gap: BatchGap) => {
      log.push({ gap });
      wake?.();
    },
    batches: () => log.flatMap((e) => ('batch' in e ? [e.batch.sequence] : [])),
    async until(count: number, ms = 5_000) {
      const deadline = Date.now() + ms;
      while (log.length < count) {
        if (Date.now() > deadline)
          assert.fail(`only ${log.length} of ${count} reports: ${JSON.stringify(log, replacer)}`);
        await Promise.race([new Promise<void>((resolve) => (wake = resolve)), sleep(50)]);
      }
    },
  };
}
const replacer = (_k: string, v: unknown) =>
  typeof v === 'bigint' ? `${v}n` : v instanceof Map ? [...v] : v;

/**
 * Writes a message on the batch subject as someone without the cluster key would (no MAC, or a
 * MAC under another key), with the batch sequence header it claims.
 */
async function forge(
  nc: Parameters<typeof jetstream>[0],
  subject: string,
  sequence: string,
  body: Uint8Array,
  otherKey?: ClusterKey,
): Promise<void> {
  const h = headers();
  h.set(BATCH_SEQUENCE_HEADER, sequence);
  if (otherKey !== undefined) h.set(MAC_HEADER, otherKey.mac('batch', [subject, sequence], body));
  await jetstream(nc).publish(subject, body, { headers: h });
}

const payload = (n: number): ExactValue => ({
  trades: new Map<ExactValue, ExactValue>([[1, [{ price: n * 100, volume: 3 }]]]),
  notional: 10n ** 30n + BigInt(n),
});

describe('committed batches over JetStream', natsSuite(), () => {
  test('the stream is created when missing, with limits retention by age and bytes, dedup window and direct get', async (t) => {
    const nc = await natsConnection(t);
    const config = testStream(t, { storage: 'file' });
    const publisher = await BatchPublisher.open(nc, config, { key: TEST_CLUSTER_KEY });
    assert.equal(publisher.lastPublished, undefined);
    const info = await (await jetstreamManager(nc)).streams.info(config.stream);
    assert.deepEqual(info.config.subjects, [config.subject]);
    assert.equal(info.config.retention, RetentionPolicy.Limits);
    assert.equal(info.config.discard, DiscardPolicy.Old);
    assert.equal(info.config.max_age, 24 * 3600 * 1e9);
    assert.equal(info.config.max_bytes, 1024 ** 3);
    assert.equal(info.config.duplicate_window, 120 * 1e9);
    assert.equal(info.config.allow_direct, true);
    // Opening again finds it as it is.
    assert.equal((await BatchPublisher.open(nc, config, { key: TEST_CLUSTER_KEY })).lastPublished, undefined);
  });

  test('batches arrive in order and exactly as published (bigints, Maps), with nothing reported missing', async (t) => {
    const nc = await natsConnection(t);
    const config = testStream(t);
    const publisher = await BatchPublisher.open(nc, config, { key: TEST_CLUSTER_KEY });
    for (let n = 1; n <= 5; n += 1) assert.equal((await publisher.publish(n, payload(n))).duplicate, false);
    const seen = recorder();
    const sub = await consumeBatches(await natsConnection(t, 'gateway'), {
      key: TEST_CLUSTER_KEY,
      from: 1,
      config,
      ...seen,
    });
    t.after(() => sub.stop());
    await seen.until(5);
    assert.deepEqual(
      seen.log,
      [1, 2, 3, 4, 5].map((n) => ({ batch: { sequence: n, payload: structuredClone(payload(n)) } })),
    );
    assert.equal(sub.position, 6);
  });

  test('a republished batch is stored once: by the same publisher, and by a restarted one whose ack was lost', async (t) => {
    const nc = await natsConnection(t);
    const config = testStream(t);
    const jsm = await jetstreamManager(nc);
    const first = await BatchPublisher.open(nc, config, { key: TEST_CLUSTER_KEY });
    await first.publish(1, payload(1));
    // A second publisher opened now (an engine restarting) sees batch 1 as the last one.
    const restarted = await BatchPublisher.open(nc, config, { key: TEST_CLUSTER_KEY });
    const stored = await first.publish(2, payload(2));
    assert.deepEqual(await first.publish(2, payload(2)), {
      streamSequence: stored.streamSequence,
      duplicate: true,
    });
    // The restarted one publishes batch 2 again (it did not see the first's ack): the server drops it.
    assert.deepEqual(await restarted.publish(2, payload(2)), {
      streamSequence: stored.streamSequence,
      duplicate: true,
    });
    assert.equal((await jsm.streams.info(config.stream)).state.messages, 2);
    assert.equal(restarted.lastPublished, 2);
    assert.equal((await restarted.publish(3, payload(3))).duplicate, false);
  });

  test('a second engine cannot fork the stream: the same batch sequence with other contents is a StreamForkError', async (t) => {
    const nc = await natsConnection(t);
    const config = testStream(t, { duplicateWindowMs: 300 });
    const jsm = await jetstreamManager(nc);
    const primary = await BatchPublisher.open(nc, config, { key: TEST_CLUSTER_KEY });
    await primary.publish(1, payload(1));
    const standby = await BatchPublisher.open(nc, config, { key: TEST_CLUSTER_KEY });
    await primary.publish(2, payload(2));
    await primary.publish(3, payload(3));
    // Within the dedup window: the server calls it a duplicate; the contents differ.
    await assert.rejects(standby.publish(2, { other: 'history' }), StreamForkError);
    // Past the window the server no longer knows batch 4's id: the expected-last-sequence check
    // catches the stale view, the publisher re-reads the stream and finds batch 4 there: still a fork.
    const late = await BatchPublisher.open(nc, config, { key: TEST_CLUSTER_KEY });
    await primary.publish(4, payload(4));
    await sleep(400);
    await assert.rejects(late.publish(4, { other: 'history' }), StreamForkError);
    const sameAgain = await BatchPublisher.open(nc, config, { key: TEST_CLUSTER_KEY });
    await primary.publish(5, payload(5));
    await sleep(400);
    assert.equal(
      (await sameAgain.publish(5, payload(5))).duplicate,
      true,
      'the identical batch is not a fork',
    );
    // A standby continuing the sequence (6 after the primary's 5) publishes normally.
    assert.equal((await standby.publish(6, payload(6))).duplicate, false);
    const info = await jsm.streams.info(config.stream);
    assert.equal(info.state.messages, 6, 'one message per batch, nothing forked');
  });

  test('a new engine’s first message goes after a batch the old one published late, instead of being taken for a fork', async (t) => {
    const nc = await natsConnection(t);
    const config = testStream(t, { duplicateWindowMs: 300 });
    const primary = await BatchPublisher.open(nc, config, { key: TEST_CLUSTER_KEY });
    await primary.publish(1, payload(1));
    // The standby reads the stream's end (batch 1); the dead primary's last batch lands after that.
    const standby = await BatchPublisher.open(nc, config, { key: TEST_CLUSTER_KEY });
    await primary.publish(2, payload(2));
    // Past the dedup window too: then the expected-last-sequence check is what notices.
    const late = await BatchPublisher.open(nc, config, { key: TEST_CLUSTER_KEY });
    await primary.publish(3, payload(3));
    assert.equal(await standby.publishAtEnd({ reset: 'standby' }), 3 + 1);
    await sleep(400);
    await primary.publish(5, payload(5));
    assert.equal(await late.publishAtEnd({ reset: 'late' }), 6);
    const seen = recorder();
    const sub = await consumeBatches(nc, { key: TEST_CLUSTER_KEY, from: 1, config, ...seen });
    t.after(() => sub.stop());
    await seen.until(6);
    assert.deepEqual(
      seen.log.map((e) => ('batch' in e ? e.batch.sequence : 'gap')),
      [1, 2, 3, 4, 5, 6],
      'one message per batch, in order, no gap',
    );
    // A batch after the reset still forks when its number is taken with other contents.
    await assert.rejects(standby.publish(5, { other: 'history' }), StreamForkError);
  });

  test('a gap at the source is reported before the batch after it is delivered', async (t) => {
    const nc = await natsConnection(t);
    const config = testStream(t);
    const publisher = await BatchPublisher.open(nc, config, { key: TEST_CLUSTER_KEY });
    for (const n of [1, 2, 5, 6]) await publisher.publish(n, payload(n));
    const seen = recorder();
    const sub = await consumeBatches(nc, { key: TEST_CLUSTER_KEY, from: 1, config, ...seen });
    t.after(() => sub.stop());
    await seen.until(5);
    assert.deepEqual(
      seen.log.map((e) => ('gap' in e ? e.gap : e.batch.sequence)),
      [1, 2, { expected: 3, next: 5, reason: 'missing' }, 5, 6],
    );
  });

  test('a reader resumes from a given batch, then follows live batches; from past the end, it waits', async (t) => {
    const nc = await natsConnection(t);
    const config = testStream(t);
    const publisher = await BatchPublisher.open(nc, config, { key: TEST_CLUSTER_KEY });
    for (let n = 1; n <= 10; n += 1) await publisher.publish(n, payload(n));
    const resumed = recorder();
    const sub = await consumeBatches(nc, { key: TEST_CLUSTER_KEY, from: 7, config, ...resumed });
    t.after(() => sub.stop());
    const ahead = recorder();
    const waiting = await consumeBatches(nc, { key: TEST_CLUSTER_KEY, from: 12, config, ...ahead });
    t.after(() => waiting.stop());
    await resumed.until(4);
    assert.deepEqual(resumed.batches(), [7, 8, 9, 10]);
    await publisher.publish(11, payload(11));
    await publisher.publish(12, payload(12));
    await resumed.until(6);
    assert.deepEqual(resumed.batches(), [7, 8, 9, 10, 11, 12]);
    await ahead.until(1);
    assert.deepEqual(ahead.log, [{ batch: { sequence: 12, payload: structuredClone(payload(12)) } }]);
  });

  test('batches aged out of the stream are reported as a gap to a reader that wanted them', async (t) => {
    const nc = await natsConnection(t);
    const config = testStream(t);
    const publisher = await BatchPublisher.open(nc, config, { key: TEST_CLUSTER_KEY });
    for (let n = 1; n <= 8; n += 1) await publisher.publish(n, payload(n));
    await (await jetstreamManager(nc)).streams.purge(config.stream, { keep: 3 });
    const seen = recorder();
    const sub = await consumeBatches(nc, { key: TEST_CLUSTER_KEY, from: 2, config, ...seen });
    t.after(() => sub.stop());
    await seen.until(4);
    assert.deepEqual(
      seen.log.map((e) => ('gap' in e ? e.gap : e.batch.sequence)),
      [{ expected: 2, next: 6, reason: 'missing' }, 6, 7, 8],
    );
  });

  test('a message that is not ours (no valid MAC) is set aside unseen; a genuine batch that cannot be read is a gap', async (t) => {
    const nc = await natsConnection(t);
    const config = testStream(t);
    const publisher = await BatchPublisher.open(nc, config, { key: TEST_CLUSTER_KEY });
    await publisher.publish(1, payload(1));
    // Garbage, and a well-formed batch under another key, each claiming a number in the header.
    await forge(nc, config.subject, '2', new TextEncoder().encode('{"v":1,"t":"batch","b":{"sequence":2}}'));
    await forge(
      nc,
      config.subject,
      String(2 ** 53 - 1),
      encodeBatch({ sequence: 2 ** 53 - 1, payload: 0 }),
      ClusterKey.random(),
    );
    // Batch 2, ours, whose body this reader cannot read (another wire version, say).
    const later = await BatchPublisher.open(nc, config, { key: TEST_CLUSTER_KEY });
    await later.publishEncoded(2, new TextEncoder().encode('{"v":1,"t":"batch","b":{"sequence":2}}'));
    await later.publish(3, payload(3));
    const seen = recorder();
    const setAside: SetAside[] = [];
    const sub = await consumeBatches(nc, {
      key: TEST_CLUSTER_KEY,
      from: 1,
      config,
      ...seen,
      onSetAside: (s) => setAside.push(s),
    });
    t.after(() => sub.stop());
    await seen.until(3);
    const [one, gap, three] = seen.log;
    assert.deepEqual(one, { batch: { sequence: 1, payload: structuredClone(payload(1)) } });
    assert.ok(gap !== undefined && 'gap' in gap);
    assert.equal(gap.gap.reason, 'malformed');
    assert.equal(gap.gap.expected, 2);
    assert.match(String(gap.gap.error?.message), /malformed message/);
    assert.ok(three !== undefined && 'batch' in three && three.batch.sequence === 3);
    // Both forged messages (stream positions 2 and 3) set aside (when located, and when consumed).
    assert.deepEqual([...new Set(setAside.map((s) => `${s.streamSequence} ${s.reason}`))].sort(), [
      '2 unverified',
      '3 unverified',
    ]);
    assert.equal(sub.position, 4);
  });

  test('forged messages on the stream stop no publisher: a new one starts after them, and a forged copy of the next batch is no fork', async (t) => {
    const nc = await natsConnection(t);
    const config = testStream(t);
    const publisher = await BatchPublisher.open(nc, config, { key: TEST_CLUSTER_KEY });
    await publisher.publish(1, payload(1));
    // Someone slips in "batch 2" (a 5,000-BTC bid, say) and garbage after it.
    await forge(nc, config.subject, '2', encodeBatch({ sequence: 2, payload: payload(99) }));
    await forge(nc, config.subject, 'x', new Uint8Array([0xff, 0x00]));
    // The running engine publishes its real batch 2: no StreamForkError.
    await publisher.publish(2, payload(2));
    // An engine starting now reads past the garbage to its last batch, and goes on from it.
    const setAside: SetAside[] = [];
    await forge(nc, config.subject, '3', new Uint8Array([1, 2, 3]));
    const restarted = await BatchPublisher.open(nc, config, {
      key: TEST_CLUSTER_KEY,
      onSetAside: (s) => setAside.push(s),
    });
    assert.equal(restarted.lastPublished, 2);
    assert.ok(setAside.length >= 1);
    assert.equal(await restarted.publishAtEnd(payload(3)), 3);
    const seen = recorder();
    const sub = await consumeBatches(nc, { key: TEST_CLUSTER_KEY, from: 1, config, ...seen });
    t.after(() => sub.stop());
    await seen.until(3);
    assert.deepEqual(
      seen.log,
      [1, 2, 3].map((n) => ({ batch: { sequence: n, payload: structuredClone(payload(n)) } })),
    );
  });

  test('a reader’s payload check refuses a batch it cannot use: reported as malformed, delivery goes on', async (t) => {
    const nc = await natsConnection(t);
    const config = testStream(t);
    const publisher = await BatchPublisher.open(nc, config, { key: TEST_CLUSTER_KEY });
    await publisher.publish(1, { trades: 'not a map' });
    await publisher.publish(2, { trades: new Map() });
    const seen = recorder();
    const readPayload = (value: ExactValue, path: string) => {
      const trades = (value as { trades?: ExactValue }).trades;
      if (!(trades instanceof Map)) throw new WireFormatError(`${path}.trades`, 'expected a map');
      return trades;
    };
    const sub = await consumeBatches(nc, { key: TEST_CLUSTER_KEY, from: 1, config, readPayload, ...seen });
    t.after(() => sub.stop());
    await seen.until(2);
    const [gap, two] = seen.log;
    assert.ok(gap !== undefined && 'gap' in gap && gap.gap.reason === 'malformed' && gap.gap.expected === 1);
    assert.match(String(gap.gap.error?.message), /\$\.b\.payload\.trades: expected a map/);
    assert.deepEqual(two, { batch: { sequence: 2, payload: new Map() } });
  });

  test('a reader that throws ends its subscription (done rejects) instead of losing the batch or crashing', async (t) => {
    const nc = await natsConnection(t);
    const config = testStream(t);
    const publisher = await BatchPublisher.open(nc, config, { key: TEST_CLUSTER_KEY });
    await publisher.publish(1, 1);
    await publisher.publish(2, 2);
    const delivered: number[] = [];
    const sub = await consumeBatches(nc, {
      key: TEST_CLUSTER_KEY,
      from: 1,
      config,
      onBatch: (b) => {
        delivered.push(b.sequence);
        throw new Error('read model bug');
      },
      onGap: () => undefined,
    });
    await assert.rejects(sub.done, /read model bug/);
    assert.deepEqual(delivered, [1]);
    assert.equal(sub.position, 1, 'the batch that failed is still the next one expected');
    await sub.stop();
  });

  test('locating a batch by sequence works across source gaps and deleted messages', async (t) => {
    const nc = await natsConnection(t);
    const config = testStream(t);
    const jsm = await jetstreamManager(nc);
    const publisher = await BatchPublisher.open(nc, config, { key: TEST_CLUSTER_KEY });
    const published = [1, 2, 3, 7, 8, 9, 10, 15, 16, 20, 21, 22, 23, 30];
    const streamSeq = new Map<number, number>();
    for (const n of published) streamSeq.set(n, (await publisher.publish(n, n))!.streamSequence!);
    await jsm.streams.deleteMessage(config.stream, streamSeq.get(9)!);
    await jsm.streams.deleteMessage(config.stream, streamSeq.get(16)!);
    const present = published.filter((n) => n !== 9 && n !== 16);
    for (let target = 1; target <= 31; target += 1) {
      const { found } = await locateBatch({ jsm, config, key: TEST_CLUSTER_KEY }, target);
      const expected = present.find((n) => n >= target);
      assert.equal(found?.batch, expected, `batch ${target}`);
      if (expected !== undefined) assert.equal(found?.streamSequence, streamSeq.get(expected));
    }
  });

  test('the publish queue publishes in order without blocking; a batch too large for NATS is dropped and seen as a gap', async (t) => {
    const nc = await natsConnection(t);
    const config = testStream(t);
    const publisher = await BatchPublisher.open(nc, config, { key: TEST_CLUSTER_KEY });
    const dropped: Array<[number, string]> = [];
    const queue = new BatchPublishQueue(publisher, { onDropped: (n, reason) => dropped.push([n, reason]) });
    t.after(() => queue.close());
    const huge = 'x'.repeat((nc.info?.max_payload ?? 1024 * 1024) + 1);
    for (let n = 1; n <= 50; n += 1) queue.enqueue(n, n === 20 ? huge : payload(n));
    assert.ok(queue.backlog > 0, 'enqueue returned before publishing');
    await queue.flushed();
    assert.equal(queue.backlog, 0);
    assert.deepEqual(dropped, [[20, 'too_large']]);
    const seen = recorder();
    const sub = await consumeBatches(nc, { key: TEST_CLUSTER_KEY, from: 1, config, ...seen });
    t.after(() => sub.stop());
    await seen.until(50);
    const gaps = seen.log.flatMap((e) => ('gap' in e ? [e.gap] : []));
    assert.deepEqual(gaps, [{ expected: 20, next: 21, reason: 'missing' }]);
    assert.equal(seen.batches().length, 49);
  });

  test('the publish queue keeps only the newest batches past its bound, and says which it dropped', async (t) => {
    const nc = await natsConnection(t);
    const config = testStream(t);
    const publisher = await BatchPublisher.open(nc, config, { key: TEST_CLUSTER_KEY });
    const dropped: number[] = [];
    const queue = new BatchPublishQueue(publisher, { maxQueued: 5, onDropped: (n) => dropped.push(n) });
    t.after(() => queue.close());
    for (let n = 1; n <= 20; n += 1) queue.enqueue(n, n);
    await queue.flushed();
    // The first one was already on its way when the rest arrived; 2..15 did not fit.
    assert.deepEqual(
      dropped,
      Array.from({ length: 14 }, (_, i) => i + 2),
    );
    const info = await (await jetstreamManager(nc)).streams.info(config.stream);
    assert.equal(info.state.messages, 6);
    assert.equal(publisher.lastPublished, 20);
  });
});
