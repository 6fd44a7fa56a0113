/**
 * A command whose reply is larger than NATS's max_payload, over a real NATS server
 * (TEST_NATS_URL; skipped visibly without it): a real exchange (SQLite in memory) behind
 * CommandService, a gateway's CommandClient on a connection of its own. One order fills enough
 * resting orders that its result, encoded, is over max_payload; the gateway must get exactly the
 * result the exchange returned (before the chunked reply, it got no answer and a 503 after 5 s).
 * The same through submitOnce (an order under an Idempotency-Key).
 *
 * Prints the reply's size and the time of the large command end to end, beside a small one.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { natsConnection, natsSuite, uniqueName } from '../../test/support/nats.js';
import type { MarketId } from '../domain/types.js';
import type { Command } from '../engine/types.js';
import type { OnceResult } from '../sequencer/ports.js';
import type { SubmitResult } from '../sequencer/sequencer.js';
import { decodeCommandReply, encodeCommandReply } from './codec.js';
import { CommandClient, type CommandSubmitter } from './command-client.js';
import { CommandService } from './command-service.js';
import {
  createEurMarkets,
  deposit,
  limit,
  memoryExchange,
  submitAll,
  TEST_CLUSTER_KEY,
} from './test-support.js';

const MiB = 1024 * 1024;
/** Bytes of the reply per filled maker (a trade event and the maker's closed order), about. */
const BYTES_PER_FILL = 600;
const MAKER_USERS = 40;
const TAKER = 1_000;
const btc = 1 as MarketId;

/** The volume of maker `i` (a few lots: each fill its own size). */
const makerVolume = (i: number) => 1 + (i % 7);

/** `makers` resting sell orders, at prices from `from` up, spread over MAKER_USERS users. */
function makersAt(makers: number, from: number): Command[] {
  return Array.from({ length: makers }, (_, i) =>
    limit((i % MAKER_USERS) + 1, btc, 'sell', from + i, makerVolume(i)),
  );
}

describe('a command reply larger than max_payload', natsSuite(), () => {
  test('reaches the gateway whole and exact, through submit and submitOnce', async (t) => {
    const engineNc = await natsConnection(t, 'engine');
    const gatewayNc = await natsConnection(t, 'gateway');
    const maxPayload = engineNc.info?.max_payload ?? MiB;
    const makers = Math.ceil((1.5 * maxPayload) / BYTES_PER_FILL);
    // Exactly what the makers offer: the sweeping order leaves nothing resting.
    let offered = 0;
    for (let i = 0; i < makers; i++) offered += makerVolume(i);

    const exchange = await memoryExchange(t);
    await createEurMarkets(exchange, ['BTC'], { makerFee: 16, takerFee: 26 });
    const deposits: Command[] = [];
    for (let u = 1; u <= MAKER_USERS; u++) deposits.push(deposit(u, 'BTC', 10 ** 9));
    deposits.push(deposit(TAKER, 'EUR', 10 ** 15));
    // A thousand at a time: they share group commits.
    await submitAll(exchange, deposits, 1_000);
    await submitAll(exchange, makersAt(makers, 3_000_000), 1_000);

    // The engine: the exchange behind CommandService, each result it returned kept for comparison.
    const returned: Array<SubmitResult | OnceResult> = [];
    let engineMs = 0;
    const engine: CommandSubmitter = {
      async submit(command, ledger) {
        const started = performance.now();
        const result = await exchange.submit(command, ledger);
        engineMs = performance.now() - started;
        returned.push(result);
        return result;
      },
      async submitOnce(command, idempotency) {
        const result = await exchange.submitOnce(command, idempotency);
        returned.push(result);
        return result;
      },
    };
    const subject = uniqueName('cmd');
    const service = await CommandService.start(engineNc, engine, { key: TEST_CLUSTER_KEY, subject });
    t.after(() => service.stop());
    const gateway = new CommandClient(gatewayNc, { key: TEST_CLUSTER_KEY, subject });

    // A small command first, for comparison (and to warm the path up).
    const smallStart = performance.now();
    const small = await gateway.submit(limit(TAKER, btc, 'buy', 1_000, 1));
    const smallMs = performance.now() - smallStart;
    assert.deepEqual(small, returned.at(-1));

    // One order sweeping every maker.
    const sweepStart = performance.now();
    const sweep = await gateway.submit(limit(TAKER, btc, 'buy', 4_000_000, offered));
    const sweepMs = performance.now() - sweepStart;
    const committed = returned.at(-1) as SubmitResult;
    const size = encodeCommandReply({ kind: 'result', result: committed }).length;
    assert.ok(size > maxPayload, `the reply is ${size} bytes, max_payload ${maxPayload}`);
    assert.ok(committed.ok && committed.events.filter((e) => e.type === 'trade').length === makers);
    assert.deepEqual(sweep, committed, 'the gateway got exactly what the exchange returned');
    assert.equal(service.heldReplies, 0, 'the engine let go of the reply once it was read');

    // The same under an Idempotency-Key (submitOnce), on a fresh set of makers.
    await submitAll(exchange, makersAt(makers, 3_500_000), 1_000);
    const onceStart = performance.now();
    const once = await gateway.submitOnce(limit(TAKER, btc, 'buy', 4_000_000, offered), {
      key: 'sweep-2',
      fingerprint: 'f'.repeat(64),
    });
    const onceMs = performance.now() - onceStart;
    const onceCommitted = returned.at(-1) as OnceResult;
    assert.equal(onceCommitted.kind, 'executed');
    assert.ok(encodeCommandReply({ kind: 'once', once: onceCommitted }).length > maxPayload);
    assert.deepEqual(once, onceCommitted);
    // Its retry through the key is answered `replayed` (a small reply), as in one process.
    const replay = await gateway.submitOnce(limit(TAKER, btc, 'buy', 4_000_000, offered), {
      key: 'sweep-2',
      fingerprint: 'f'.repeat(64),
    });
    assert.equal(replay.kind, 'replayed');

    // What the reply costs without any transport (one encoding, one decoding with its checks).
    const codecStart = performance.now();
    decodeCommandReply(encodeCommandReply({ kind: 'result', result: committed }));
    const codecMs = performance.now() - codecStart;

    const ms = (x: number) => `${x.toFixed(1)} ms`;
    t.diagnostic(
      `reply ${(size / MiB).toFixed(2)} MiB (${makers} makers filled, max_payload ${maxPayload}): ` +
        `submit end to end ${ms(sweepMs)} (the exchange's own submit ${ms(engineMs)}), ` +
        `encode + decode alone ${ms(codecMs)}; submitOnce end to end ${ms(onceMs)}; a small command ${ms(smallMs)}`,
    );
  });
});
