/**
 * Commands over NATS request/reply, against a real NATS server (TEST_NATS_URL; skipped visibly
 * without it): the gateway's promise settles only once the engine's submitter has settled (after
 * the commit), errors arrive typed, an unreachable engine is a quick EngineUnavailableError, and a
 * command is never sent twice by the transport.
 */
import assert from 'node:assert/strict';
import { describe, type TestContext, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { headers } from '@nats-io/transport-node';
import { natsConnection, natsSuite, uniqueName } from '../../test/support/nats.js';
import type { Amount, AssetCode, MarketId, OrderId, Price, UserId, Volume } from '../domain/types.js';
import type { Command, CommandResult } from '../engine/types.js';
import type { IdempotencyRequest, LedgerRequest, OnceResult, PlaceOrder } from '../sequencer/ports.js';
import { openExchange } from '../sequencer/sequencer.js';
import { asyncStore } from '../store/async-store.js';
import { SqliteStore } from '../store/sqlite/sqlite-store.js';
import { StoreUnavailableError } from '../store/store.js';
import { decodeCommandReply, encodeCommandRequest, WireFormatError } from './codec.js';
import {
  CommandClient,
  type CommandClientOptions,
  type CommandSubmitter,
  EngineUnavailableError,
  RemoteCommandError,
} from './command-client.js';
import { CommandService, type CommandServiceOptions, type DroppedReason } from './command-service.js';

const deposit = (amount: number): Command => ({
  kind: 'deposit',
  userId: 7 as UserId,
  asset: 'EUR' as AssetCode,
  amount: amount as Amount,
});
const order: PlaceOrder = {
  kind: 'placeOrder',
  userId: 7 as UserId,
  marketId: 1 as MarketId,
  side: 'buy',
  type: 'limit',
  price: 100 as Price,
  volume: 3 as Volume,
};

interface Call {
  readonly op: 'submit' | 'submitOnce';
  readonly command: Command;
  readonly meta: LedgerRequest | IdempotencyRequest | undefined;
  settle(outcome: CommandResult | OnceResult | Error): void;
}

/** A submitter whose every call waits until the test settles it. */
function heldSubmitter(): CommandSubmitter & { calls: Call[]; called: () => Promise<Call> } {
  const calls: Call[] = [];
  let wake: (() => void) | undefined;
  const hold = <T>(op: Call['op'], command: Command, meta: Call['meta']) =>
    new Promise<T>((resolve, reject) => {
      calls.push({
        op,
        command,
        meta,
        settle: (outcome) => (outcome instanceof Error ? reject(outcome) : resolve(outcome as T)),
      });
      wake?.();
    });
  return {
    calls,
    submit: (command, ledger) => hold<CommandResult>('submit', command, ledger),
    submitOnce: (command, request) => hold<OnceResult>('submitOnce', command, request),
    async called() {
      const seen = calls.length;
      while (calls.length === seen) await new Promise<void>((resolve) => (wake = resolve));
      return calls[calls.length - 1]!;
    },
  };
}

const settled = async (promise: Promise<unknown>, ms: number) =>
  Promise.race([
    promise.then(
      () => true,
      () => true,
    ),
    sleep(ms).then(() => false),
  ]);

/** A command service on its own subject, serving `engine` (stopped after the test), and a client of it. */
async function served(
  t: TestContext,
  serviceOptions: Omit<CommandServiceOptions, 'subject'> = {},
  clientOptions: Omit<CommandClientOptions, 'subject'> = {},
) {
  const nc = await natsConnection(t);
  const subject = uniqueName('cmd');
  const engine = heldSubmitter();
  const service = await CommandService.start(nc, engine, { subject, ...serviceOptions });
  t.after(() => service.stop());
  return { nc, subject, engine, service, client: new CommandClient(nc, { subject, ...clientOptions }) };
}

describe('commands over NATS request/reply', natsSuite(), () => {
  test('a submit is answered with the engine’s result only after the submitter resolves, exactly', async (t) => {
    const { engine, client } = await served(t);

    const answer = client.submit(deposit(2 ** 53 - 1), { reference: 'wire-42' });
    const call = await engine.called();
    assert.deepEqual(call.command, deposit(2 ** 53 - 1));
    assert.deepEqual(call.meta, { reference: 'wire-42' });
    assert.equal(await settled(answer, 150), false, 'no answer before the commit');
    const result: CommandResult = {
      ok: true,
      events: [
        {
          type: 'deposited',
          userId: 7 as UserId,
          asset: 'EUR' as AssetCode,
          amount: (2 ** 53 - 1) as Amount,
          time: 1 as never,
        },
      ],
    };
    call.settle(result);
    assert.deepEqual(await answer, result);
  });

  test('requests reach the submitter in order without waiting for each other (group commit stays possible)', async (t) => {
    const { engine, client } = await served(t);
    const answers = [1, 2, 3].map((n) => client.submit(deposit(n)));
    while (engine.calls.length < 3) await engine.called();
    assert.deepEqual(
      engine.calls.map((c) => (c.command as { amount: number }).amount),
      [1, 2, 3],
    );
    // Settled in reverse: each answer goes back to its own request whatever the order.
    for (const c of [...engine.calls].reverse()) c.settle({ ok: true, events: [] });
    assert.deepEqual(
      await Promise.all(answers),
      [1, 2, 3].map(() => ({ ok: true, events: [] })),
    );
  });

  test('submitOnce carries the Idempotency-Key and every kind of answer', async (t) => {
    const { engine, client } = await served(t);
    const key: IdempotencyRequest = { key: 'k-1', fingerprint: 'a'.repeat(64) };
    const answers: OnceResult[] = [
      {
        kind: 'executed',
        result: { ok: false, error: { code: 'insufficient_funds', message: 'no', field: 'volume' } },
      },
      { kind: 'replayed', orderId: 99 as OrderId },
      { kind: 'mismatch' },
    ];
    for (const expected of answers) {
      const answer = client.submitOnce(order, key);
      const call = await engine.called();
      assert.equal(call.op, 'submitOnce');
      assert.deepEqual(call.meta, key);
      call.settle(expected);
      assert.deepEqual(await answer, expected);
    }
  });

  test('engine-side failures arrive typed: a store outage is a StoreUnavailableError (503), a fault a RemoteCommandError (500) without its details', async (t) => {
    const failures: unknown[] = [];
    const { engine, client } = await served(t, { onFailed: (e) => failures.push(e) });

    const outage = client.submit(deposit(1));
    (await engine.called()).settle(new StoreUnavailableError('The store could not commit; retry later.'));
    await assert.rejects(outage, (e: unknown) => {
      assert.ok(e instanceof StoreUnavailableError && !(e instanceof EngineUnavailableError));
      assert.equal(e.message, 'The store could not commit; retry later.');
      return true;
    });

    const fault = client.submit(deposit(2));
    (await engine.called()).settle(new Error('secret internals: password=hunter2'));
    await assert.rejects(fault, (e: unknown) => {
      assert.ok(e instanceof RemoteCommandError);
      assert.equal(e.code, 'failed');
      assert.doesNotMatch(e.message, /hunter2/);
      return true;
    });
    assert.equal(failures.length, 1, 'the engine keeps the cause for its own log');
  });

  test('no engine subscribed: EngineUnavailableError (not delivered) at once, not after the timeout', async (t) => {
    const nc = await natsConnection(t);
    const client = new CommandClient(nc, { subject: uniqueName('cmd'), timeoutMs: 5_000 });
    const started = performance.now();
    await assert.rejects(client.submit(deposit(1)), (e: unknown) => {
      assert.ok(e instanceof EngineUnavailableError, String(e));
      assert.ok(e instanceof StoreUnavailableError, 'mapped to 503 like a store outage');
      assert.equal(e.outcome, 'not_delivered');
      return true;
    });
    assert.ok(performance.now() - started < 1_000, `took ${performance.now() - started} ms`);
  });

  test('a closed NATS connection: EngineUnavailableError (not delivered) at once', async (t) => {
    const nc = await natsConnection(t);
    const client = new CommandClient(nc, { subject: uniqueName('cmd') });
    await nc.close();
    await assert.rejects(client.submit(deposit(1)), (e: unknown) => {
      assert.ok(e instanceof EngineUnavailableError, String(e));
      assert.equal(e.outcome, 'not_delivered');
      return true;
    });
  });

  test('no answer in time: EngineUnavailableError (outcome unknown), and the command is not sent again', async (t) => {
    const { engine, service, client } = await served(t, {}, { timeoutMs: 200 });
    await assert.rejects(client.submit(deposit(5)), (e: unknown) => {
      assert.ok(e instanceof EngineUnavailableError);
      assert.equal(e.outcome, 'unknown');
      return true;
    });
    await sleep(400);
    assert.equal(engine.calls.length, 1, 'delivered once, never retried by the transport');
    engine.calls[0]!.settle({ ok: true, events: [] });
    await service.stop();
  });

  test('a request reaching the engine after its deadline is dropped unapplied; one without a reply subject too', async (t) => {
    const dropped: DroppedReason[] = [];
    const { nc, subject, engine } = await served(t, {
      lateToleranceMs: 1_000,
      onDropped: (reason) => dropped.push(reason),
    });
    // A gateway whose clock says the request expired long ago (as a request delivered late would be).
    const late = new CommandClient(nc, { subject, timeoutMs: 200, now: () => Date.now() - 60_000 });
    await assert.rejects(late.submit(deposit(1)), EngineUnavailableError);
    nc.publish(subject, new Uint8Array([1, 2, 3]));
    await nc.flush();
    await sleep(50);
    assert.deepEqual(dropped.sort(), ['expired', 'no_reply_subject']);
    assert.equal(engine.calls.length, 0);
  });

  test('garbage on the command subject is answered bad_request and the engine keeps serving', async (t) => {
    const { nc, subject, engine, client } = await served(t);
    for (const junk of [
      '',
      '{"v":1,"t":"command","b":{"op":"\'submit","command":{"kind":"\'deposit"}}}',
      '\u0000\u00ff',
    ]) {
      const reply = decodeCommandReply((await nc.request(subject, junk, { timeout: 2_000 })).data);
      assert.equal(reply.kind, 'error');
      assert.equal(reply.kind === 'error' && reply.code, 'bad_request');
    }
    const answer = client.submit(deposit(3));
    (await engine.called()).settle({ ok: true, events: [] });
    assert.deepEqual(await answer, { ok: true, events: [] });
    assert.equal(engine.calls.length, 1);
    // A well-formed request from a client that sets other headers but no deadline is served.
    const h = headers();
    h.set('Other', 'x');
    const [reply] = await Promise.all([
      nc.request(subject, encodeCommandRequest({ op: 'submit', command: deposit(4) }), {
        timeout: 2_000,
        headers: h,
      }),
      engine.called().then((call) => call.settle({ ok: true, events: [] })),
    ]);
    assert.deepEqual(decodeCommandReply(reply.data), { kind: 'result', result: { ok: true, events: [] } });
  });

  test('a reply this gateway cannot read is a RemoteCommandError, not a crash', async (t) => {
    const nc = await natsConnection(t);
    const subject = uniqueName('cmd');
    const sub = nc.subscribe(subject, {
      callback: (_e, m) => void m.respond('{"v":2,"t":"reply","b":null}'),
    });
    t.after(() => sub.unsubscribe());
    await nc.flush();
    await assert.rejects(new CommandClient(nc, { subject }).submit(deposit(1)), (e: unknown) => {
      assert.ok(e instanceof RemoteCommandError);
      assert.equal(e.code, 'bad_reply');
      assert.ok(e.cause instanceof WireFormatError);
      return true;
    });
  });

  test('stop() lets the requests already taken finish and be answered', async (t) => {
    const { engine, service, client } = await served(t, {}, { timeoutMs: 500 });
    const answer = client.submit(deposit(1));
    const call = await engine.called();
    const stopped = service.stop();
    assert.equal(await settled(stopped, 50), false, 'stop waits for the answer in flight');
    call.settle({ ok: true, events: [] });
    await stopped;
    assert.deepEqual(await answer, { ok: true, events: [] });
    await assert.rejects(
      client.submit(deposit(2)),
      (e: unknown) => e instanceof EngineUnavailableError && e.outcome === 'not_delivered',
    );
  });

  test('an engine frozen while still connected to NATS takes no request from the live one: every request is answered', async (t) => {
    // The old primary after its machine froze, or was cut off, while NATS still has its
    // connection: it receives requests and never answers. The standby took over meanwhile.
    const frozen: CommandSubmitter = {
      submit: () => new Promise(() => undefined),
      submitOnce: () => new Promise(() => undefined),
    };
    const subject = uniqueName('cmd');
    const zombie = await CommandService.start(await natsConnection(t, 'frozen'), frozen, { subject });
    t.after(() => void zombie.stop());
    let applied = 0;
    const live: CommandSubmitter = {
      submit: async () => {
        applied += 1;
        return { ok: true, events: [] };
      },
      submitOnce: async () => ({ kind: 'mismatch' }),
    };
    const nc = await natsConnection(t);
    const service = await CommandService.start(nc, live, { subject });
    t.after(() => service.stop());
    const client = new CommandClient(nc, { subject, timeoutMs: 2_000 });
    const answered = await Promise.allSettled(
      Array.from({ length: 20 }, (_, i) => client.submit(deposit(i + 1))),
    );
    assert.deepEqual(
      answered.map((a) => a.status),
      Array(20).fill('fulfilled'),
      'a queue group would have sent about half of them to the frozen engine, to time out',
    );
    assert.equal(applied, 20);
  });

  test('with a real exchange behind it: a deposit, its duplicate reference and a refusal are answered as in one process', async (t) => {
    const nc = await natsConnection(t);
    const subject = uniqueName('cmd');
    const exchange = await openExchange({ store: asyncStore(SqliteStore.open({ path: ':memory:' })) });
    t.after(() => exchange.close());
    const service = await CommandService.start(nc, exchange, { subject });
    t.after(() => service.stop());
    const gateway = new CommandClient(nc, { subject });
    const asset = await gateway.submit({
      kind: 'createAsset',
      code: 'EUR',
      name: 'Euro',
      type: 'fiat',
      decimals: 2,
    });
    assert.equal(asset.ok, true);
    const first = await gateway.submit(deposit(123_456), { reference: 'ref-1' });
    assert.equal(first.ok, true);
    assert.equal(first.recorded?.amount, 123_456);
    const again = await gateway.submit(deposit(123_456), { reference: 'ref-1' });
    assert.equal(again.duplicate, true, 'the reference was already used: nothing new');
    assert.deepEqual(again.recorded, first.recorded);
    const [balance] = await exchange.readCommitted(() => exchange.balances(7 as UserId));
    assert.equal(balance?.available, 123_456);
    const refused = await gateway.submit({
      kind: 'withdraw',
      userId: 7 as UserId,
      asset: 'EUR' as AssetCode,
      amount: (10 ** 9) as Amount,
    });
    assert.equal(refused.ok, false);
    assert.equal(!refused.ok && refused.error.code, 'insufficient_funds');
  });
});
