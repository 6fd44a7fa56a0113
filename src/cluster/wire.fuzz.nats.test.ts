/**
 * Fuzzing what reaches the engine and the gateways over NATS (TEST_NATS_URL; skipped visibly
 * without it): random bytes and mutated genuine frames — unsigned, under another key, and signed
 * with the cluster key (as if the engine or a gateway had a bug) — on the command subject and on
 * the batch stream. Nothing may crash or wedge either side: after every frame the command service
 * still answers a genuine command, the consumer still delivers the next genuine batch in order,
 * and nothing but a well-formed command of a gateway's kind ever reaches the submitter.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { jetstream } from '@nats-io/jetstream';
import { headers } from '@nats-io/transport-node';
import fc from 'fast-check';
import { natsConnection, natsSuite, uniqueName } from '../../test/support/nats.js';
import type { MarketId } from '../domain/types.js';
import type { Command } from '../engine/types.js';
import { BATCH_SEQUENCE_HEADER, BatchPublisher, consumeBatches } from './batch-stream.js';
import { ClusterKey, MAC_HEADER } from './cluster-key.js';
import { encodeBatch, encodeCommandRequest, GATEWAY_COMMAND_KINDS } from './codec.js';
import {
  COMMAND_ID_HEADER,
  CommandClient,
  type CommandSubmitter,
  commandMacFields,
  DEADLINE_HEADER,
} from './command-client.js';
import { CommandService } from './command-service.js';
import type { ExactValue } from './exact-json.js';
import { batchStream, limit, TEST_CLUSTER_KEY } from './test-support.js';

const order = (volume: number): Command => limit(7, 1 as MarketId, 'sell', 100, volume);

/** A genuine frame damaged: bytes flipped, cut, or spliced with random ones. */
const mutated = (genuine: Uint8Array) =>
  fc.oneof(
    fc.uint8Array({ maxLength: 300 }),
    fc.tuple(fc.nat(), fc.integer({ min: 0, max: 255 })).map(([at, byte]) => {
      const copy = Uint8Array.from(genuine);
      copy[at % copy.length] = byte;
      return copy;
    }),
    fc.nat().map((at) => genuine.slice(0, at % genuine.length)),
    fc.tuple(fc.nat(), fc.uint8Array({ minLength: 1, maxLength: 20 })).map(([at, extra]) => {
      const cut = at % genuine.length;
      return Uint8Array.from([...genuine.slice(0, cut), ...extra, ...genuine.slice(cut)]);
    }),
    fc
      .string({ maxLength: 40 })
      .map((text) =>
        new TextEncoder().encode(new TextDecoder().decode(genuine).replace(/"placeOrder"|1|"sell"/, text)),
      ),
  );

const signing = fc.constantFrom('none', 'other key', 'cluster key');

describe('the cluster wire under random and mutated frames', natsSuite(), () => {
  test('the command service: never crashes or wedges, applies only well-formed gateway commands, still answers the genuine one', async (t) => {
    const nc = await natsConnection(t);
    const subject = uniqueName('fuzz_cmd');
    const applied: Command[] = [];
    const faults: unknown[] = [];
    const submitter: CommandSubmitter = {
      submit: async (command) => {
        applied.push(command);
        return { ok: true, events: [] };
      },
      submitOnce: async (command) => {
        applied.push(command);
        return { kind: 'mismatch' };
      },
    };
    const service = await CommandService.start(nc, submitter, {
      key: TEST_CLUSTER_KEY,
      subject,
      onFailed: (error) => faults.push(error),
    });
    t.after(() => service.stop());
    const client = new CommandClient(nc, { key: TEST_CLUSTER_KEY, subject, timeoutMs: 2_000 });
    const genuine = encodeCommandRequest({ op: 'submit', command: order(1) });
    const other = ClusterKey.random();
    await fc.assert(
      fc.asyncProperty(mutated(genuine), signing, async (body, how) => {
        const h = headers();
        const id = randomBytes(16).toString('base64url');
        const deadline = String(Date.now() + 2_000);
        h.set(COMMAND_ID_HEADER, id);
        h.set(DEADLINE_HEADER, deadline);
        if (how !== 'none')
          h.set(
            MAC_HEADER,
            (how === 'other key' ? other : TEST_CLUSTER_KEY).mac(
              'command',
              commandMacFields(subject, id, deadline),
              body,
            ),
          );
        // Every request is answered (refused, bad_request or a result), never left hanging.
        await nc.request(subject, body, { timeout: 2_000, headers: h });
        assert.deepEqual(await client.submit(order(2)), { ok: true, events: [] });
        assert.deepEqual(applied.at(-1), order(2));
      }),
      { numRuns: 150 },
    );
    for (const command of applied) assert.ok(GATEWAY_COMMAND_KINDS.has(command.kind), command.kind);
    assert.deepEqual(faults, []);
  });

  test('the batch consumer: never crashes or wedges, delivers every genuine batch once and in order, whatever lies between them', async (t) => {
    const nc = await natsConnection(t);
    const config = batchStream(t, 'FUZZ_BATCHES');
    const publisher = await BatchPublisher.open(nc, config, { key: TEST_CLUSTER_KEY });
    const delivered: number[] = [];
    const gaps: number[] = [];
    const subscription = await consumeBatches(nc, {
      key: TEST_CLUSTER_KEY,
      from: 1,
      config,
      onBatch: (batch) => {
        delivered.push(batch.sequence);
      },
      onGap: (gap) => {
        gaps.push(gap.expected);
      },
    });
    t.after(() => subscription.stop());
    const js = jetstream(nc);
    const other = ClusterKey.random();
    let genuine = 0;
    await fc.assert(
      fc.asyncProperty(
        mutated(encodeBatch({ sequence: 1, payload: { kind: 'batch', events: [] } as ExactValue })),
        fc.oneof(fc.constant('2'), fc.constant(String(2 ** 53 - 1)), fc.string({ maxLength: 20 })),
        fc.constantFrom('none', 'other key'),
        async (body, sequenceHeader, how) => {
          // Someone else's message on the batch subject: whatever its header claims, no MAC of ours.
          const h = headers();
          if (/^[\x21-\x7e]+$/.test(sequenceHeader)) h.set(BATCH_SEQUENCE_HEADER, sequenceHeader);
          if (how === 'other key')
            h.set(MAC_HEADER, other.mac('batch', [config.subject, sequenceHeader], body));
          await js.publish(config.subject, body, { headers: h });
          // The engine's next batch goes after it, and arrives.
          genuine += 1;
          await publisher.publish(genuine, { n: genuine });
          const deadline = Date.now() + 5_000;
          while (delivered.length < genuine) {
            if (Date.now() > deadline) assert.fail(`batch ${genuine} not delivered: ${delivered.join(',')}`);
            await sleep(5);
          }
        },
      ),
      { numRuns: 120 },
    );
    assert.deepEqual(
      delivered,
      Array.from({ length: genuine }, (_, i) => i + 1),
    );
    assert.deepEqual(gaps, [], 'nothing of ours went missing: no gap, no re-snapshot');
  });
});
