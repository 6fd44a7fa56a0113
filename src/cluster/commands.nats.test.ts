/**
 * Commands over NATS request/reply, against a real NATS server (TEST_NATS_URL; skipped visibly
 * without it): the gateway's promise settles only once the engine's submitter has settled (after
 * the commit), errors arrive typed, an unreachable engine is a quick EngineUnavailableError, and a
 * command is never sent twice by the transport.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { describe, type TestContext, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { headers, type Msg } from '@nats-io/transport-node';
import { natsConnection, natsSuite, uniqueName } from '../../test/support/nats.js';
import { eventually } from '../../test/support/polling.js';
import type { Amount, AssetCode, FeeRate, MarketId, OrderId, UserId, Volume } from '../domain/types.js';
import type { Command, CommandResult } from '../engine/types.js';
import type {
  CommandIdentity,
  IdempotencyRequest,
  LedgerRequest,
  OnceResult,
  PlaceOrder,
} from '../sequencer/ports.js';
import { openExchange } from '../sequencer/sequencer.js';
import { asyncStore } from '../store/async-store.js';
import { SqliteStore } from '../store/sqlite/sqlite-store.js';
import { StoreUnavailableError } from '../store/store.js';
import { ClusterKey, MAC_HEADER } from './cluster-key.js';
import {
  decodeCommandReplies,
  decodeCommandReply,
  encodeCommandRequest,
  WIRE_VERSION,
  WireFormatError,
} from './codec.js';
import {
  COMMAND_ID_HEADER,
  CommandClient,
  type CommandClientOptions,
  type CommandSubmitter,
  commandMacFields,
  DEADLINE_HEADER,
  EngineRefusedError,
  EngineUnavailableError,
  MAX_BATCH_COMMANDS,
  RemoteCommandError,
} from './command-client.js';
import { CommandService, type CommandServiceOptions, type DroppedReason } from './command-service.js';
import { EngineHeartbeats, publishHeartbeats } from './heartbeat.js';
import { limit, TEST_CLUSTER_KEY } from './test-support.js';

/** A limit buy of `volume` lots: a command gateways send (an operator's, like a deposit, is refused over NATS). */
const buy = (volume: number): PlaceOrder => limit(7, 1 as MarketId, 'buy', 100, volume);
const deposit = (amount: number): Command => ({
  kind: 'deposit',
  userId: 7 as UserId,
  asset: 'EUR' as AssetCode,
  amount: amount as Amount,
});
const order = buy(3);

interface Call {
  readonly op: 'submit' | 'submitOnce';
  readonly command: Command;
  readonly meta: LedgerRequest | IdempotencyRequest | undefined;
  readonly identity: CommandIdentity | undefined;
  settle(outcome: CommandResult | OnceResult | Error): void;
}

/** A submitter whose every call waits until the test settles it. */
function heldSubmitter(): CommandSubmitter & {
  calls: Call[];
  called: () => Promise<Call>;
  callAt: (index: number) => Promise<Call>;
} {
  const calls: Call[] = [];
  let wake: (() => void) | undefined;
  const hold = <T>(op: Call['op'], command: Command, meta: Call['meta'], identity?: CommandIdentity) =>
    new Promise<T>((resolve, reject) => {
      calls.push({
        op,
        command,
        meta,
        identity,
        settle: (outcome) => (outcome instanceof Error ? reject(outcome) : resolve(outcome as T)),
      });
      wake?.();
    });
  return {
    calls,
    submit: (command, ledger, identity) => hold<CommandResult>('submit', command, ledger, identity),
    submitOnce: (command, request, identity) => hold<OnceResult>('submitOnce', command, request, identity),
    async called() {
      const seen = calls.length;
      while (calls.length === seen) await new Promise<void>((resolve) => (wake = resolve));
      return calls[calls.length - 1]!;
    },
    /** The call at `index`, once it came (maybe already). */
    async callAt(index) {
      while (calls.length <= index) await new Promise<void>((resolve) => (wake = resolve));
      return calls[index]!;
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
  serviceOptions: Partial<Omit<CommandServiceOptions, 'subject'>> = {},
  clientOptions: Partial<Omit<CommandClientOptions, 'subject'>> = {},
) {
  const nc = await natsConnection(t);
  const subject = uniqueName('cmd');
  const engine = heldSubmitter();
  const service = await CommandService.start(nc, engine, {
    key: TEST_CLUSTER_KEY,
    subject,
    ...serviceOptions,
  });
  t.after(() => service.stop());
  return {
    nc,
    subject,
    engine,
    service,
    client: new CommandClient(nc, { key: TEST_CLUSTER_KEY, subject, ...clientOptions }),
  };
}

describe('commands over NATS request/reply', natsSuite(), () => {
  test('a submit is answered with the engine’s result only after the submitter resolves, exactly', async (t) => {
    const { engine, client } = await served(t);

    const answer = client.submit(buy(2 ** 53 - 1));
    const call = await engine.called();
    assert.deepEqual(call.command, buy(2 ** 53 - 1));
    assert.equal(call.meta, undefined);
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
    const answers = [1, 2, 3].map((n) => client.submit(buy(n)));
    while (engine.calls.length < 3) await engine.called();
    assert.deepEqual(
      engine.calls.map((c) => (c.command as { volume: number }).volume),
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

    const outage = client.submit(buy(1));
    (await engine.called()).settle(new StoreUnavailableError('The store could not commit; retry later.'));
    await assert.rejects(outage, (e: unknown) => {
      assert.ok(e instanceof StoreUnavailableError && !(e instanceof EngineUnavailableError));
      assert.equal(e.message, 'The store could not commit; retry later.');
      return true;
    });

    const fault = client.submit(buy(2));
    (await engine.called()).settle(new Error('secret internals: password=hunter2'));
    await assert.rejects(fault, (e: unknown) => {
      assert.ok(e instanceof RemoteCommandError);
      assert.equal(e.code, 'failed');
      assert.doesNotMatch(e.message, /hunter2/);
      return true;
    });
    assert.equal(failures.length, 1, 'the engine keeps the cause for its own log');
  });

  test('no engine subscribed: resent until the deadline, then EngineUnavailableError (not delivered)', async (t) => {
    const nc = await natsConnection(t);
    const client = new CommandClient(nc, {
      key: TEST_CLUSTER_KEY,
      subject: uniqueName('cmd'),
      timeoutMs: 400,
    });
    const started = performance.now();
    await assert.rejects(client.submit(buy(1)), (e: unknown) => {
      assert.ok(e instanceof EngineUnavailableError, String(e));
      assert.ok(e instanceof StoreUnavailableError, 'mapped to 503 like a store outage');
      assert.equal(e.outcome, 'not_delivered');
      return true;
    });
    const took = performance.now() - started;
    assert.ok(took >= 300 && took < 1_500, `took ${took} ms`);
  });

  test('an engine lost with a request in flight: the request goes again at once, under its id, to the engine that takes over', async (t) => {
    const subject = uniqueName('cmd');
    const engineNc = await natsConnection(t, 'doomed');
    const doomed = heldSubmitter();
    await CommandService.start(engineNc, doomed, { key: TEST_CLUSTER_KEY, subject });
    const nc = await natsConnection(t);
    const client = new CommandClient(nc, { key: TEST_CLUSTER_KEY, subject, timeoutMs: 5_000 });
    const answer = client.submit(buy(1));
    await doomed.called();
    await engineNc.close(); // its process died: the request it took will never be answered
    const live = heldSubmitter();
    const service = await CommandService.start(await natsConnection(t, 'standby'), live, {
      key: TEST_CLUSTER_KEY,
      subject,
    });
    t.after(() => service.stop());
    const started = performance.now();
    client.engineLost(Date.now()); // what a gateway does when its ping finds no engine
    const call = await live.called();
    assert.ok(performance.now() - started < 300, 'sent again at once, not after the deadline');
    assert.equal(call.identity?.id, doomed.calls[0]!.identity?.id, 'under the same id');
    call.settle({ ok: true, events: [] });
    assert.deepEqual(await answer, { ok: true, events: [] });
  });

  test('with heartbeats: a request the silent engine took goes again within half a second, to the engine that beats next', async (t) => {
    const subject = uniqueName('cmd');
    const heartbeatSubject = uniqueName('heartbeat');
    const engineNc = await natsConnection(t, 'doomed');
    const doomed = heldSubmitter();
    await CommandService.start(engineNc, doomed, { key: TEST_CLUSTER_KEY, subject });
    const doomedBeats = publishHeartbeats(engineNc, { subject: heartbeatSubject, key: TEST_CLUSTER_KEY });
    const nc = await natsConnection(t);
    const heartbeats = await EngineHeartbeats.watch(nc, { subject: heartbeatSubject, key: TEST_CLUSTER_KEY });
    t.after(() => heartbeats.close());
    await eventually(() => assert.equal(heartbeats.engine, doomedBeats.engine));
    const client = new CommandClient(nc, { key: TEST_CLUSTER_KEY, subject, heartbeats });
    const answer = client.submit(buy(1));
    await doomed.called();
    doomedBeats.stop();
    await engineNc.close();
    const killedAt = performance.now();
    // The standby subscribes 200 ms later and beats.
    await sleep(200);
    const standbyNc = await natsConnection(t, 'standby');
    const live = heldSubmitter();
    const service = await CommandService.start(standbyNc, live, { key: TEST_CLUSTER_KEY, subject });
    t.after(() => service.stop());
    const beats = publishHeartbeats(standbyNc, { subject: heartbeatSubject, key: TEST_CLUSTER_KEY });
    t.after(() => beats.stop());
    const call = await live.called();
    const took = performance.now() - killedAt;
    assert.ok(took < 600, `sent again ${took} ms after the engine died`);
    call.settle({ ok: true, events: [] });
    assert.deepEqual(await answer, { ok: true, events: [] });
    assert.equal(live.calls.length, 1, 'applied once by the new engine');
  });

  test('a heartbeat that is not under the cluster key is ignored', async (t) => {
    const subject = uniqueName('heartbeat');
    const nc = await natsConnection(t);
    const heartbeats = await EngineHeartbeats.watch(nc, { subject, key: TEST_CLUSTER_KEY });
    t.after(() => heartbeats.close());
    const forged = publishHeartbeats(nc, { subject, key: ClusterKey.random() });
    nc.publish(subject, new TextEncoder().encode(`${'a'.repeat(32)} 1`));
    await sleep(300);
    forged.stop();
    assert.equal(heartbeats.engine, undefined);
  });

  test('a failover: a command sent while no engine is subscribed is answered once the next one subscribes, applied once', async (t) => {
    const nc = await natsConnection(t);
    const subject = uniqueName('cmd');
    const client = new CommandClient(nc, { key: TEST_CLUSTER_KEY, subject, timeoutMs: 5_000 });
    const engine = heldSubmitter();
    const dropped: DroppedReason[] = [];
    const started = performance.now();
    const answer = client.submit(buy(9));
    // The standby takes over 400 ms later (as after a SIGKILL of the primary: about 0.3-0.8 s).
    await sleep(400);
    const standby = await CommandService.start(await natsConnection(t, 'standby'), engine, {
      key: TEST_CLUSTER_KEY,
      subject,
      onDropped: (reason) => dropped.push(reason),
    });
    t.after(() => standby.stop());
    (await engine.callAt(0)).settle({ ok: true, events: [] });
    assert.deepEqual(await answer, { ok: true, events: [] }, 'the normal answer, no 503');
    const took = performance.now() - started;
    assert.ok(took < 1_400, `answered ${took} ms after it was sent: within a second of the takeover`);
    await sleep(100);
    assert.equal(engine.calls.length, 1, 'applied once');
    assert.deepEqual(dropped, []);
  });

  test('a closed NATS connection: EngineUnavailableError (not delivered) at once', async (t) => {
    const nc = await natsConnection(t);
    const client = new CommandClient(nc, { key: TEST_CLUSTER_KEY, subject: uniqueName('cmd') });
    await nc.close();
    await assert.rejects(client.submit(buy(1)), (e: unknown) => {
      assert.ok(e instanceof EngineUnavailableError, String(e));
      assert.equal(e.outcome, 'not_delivered');
      return true;
    });
  });

  test('no answer in time: EngineUnavailableError (outcome unknown), and the command is not sent again', async (t) => {
    const { engine, service, client } = await served(t, {}, { timeoutMs: 200 });
    await assert.rejects(client.submit(buy(5)), (e: unknown) => {
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
    const late = new CommandClient(nc, {
      key: TEST_CLUSTER_KEY,
      subject,
      timeoutMs: 200,
      now: () => Date.now() - 60_000,
    });
    await assert.rejects(late.submit(buy(1)), EngineUnavailableError);
    nc.publish(subject, new Uint8Array([1, 2, 3]));
    await nc.flush();
    await sleep(50);
    assert.deepEqual(dropped.sort(), ['expired', 'no_reply_subject']);
    assert.equal(engine.calls.length, 0);
  });

  test('garbage under a valid MAC is answered bad_request and the engine keeps serving', async (t) => {
    const { nc, subject, engine, client } = await served(t);
    for (const junk of [
      '',
      '{"v":1,"t":"command","b":{"op":"\'submit","command":{"kind":"\'deposit"}}}',
      '\u0000\u00ff',
    ]) {
      const body = new TextEncoder().encode(junk);
      const reply = decodeCommandReply(
        (await nc.request(subject, body, { timeout: 2_000, headers: signed(subject, body) })).data,
      );
      assert.equal(reply.kind, 'error');
      assert.equal(reply.kind === 'error' && reply.code, 'bad_request');
    }
    const answer = client.submit(buy(3));
    (await engine.called()).settle({ ok: true, events: [] });
    assert.deepEqual(await answer, { ok: true, events: [] });
    assert.equal(engine.calls.length, 1);
  });

  test('a reply this gateway cannot read is a RemoteCommandError, not a crash', async (t) => {
    const nc = await natsConnection(t);
    const subject = uniqueName('cmd');
    const sub = nc.subscribe(subject, {
      callback: (_e, m) => void m.respond('{"v":3,"t":"replies","b":null}'),
    });
    t.after(() => sub.unsubscribe());
    await nc.flush();
    await assert.rejects(
      new CommandClient(nc, { key: TEST_CLUSTER_KEY, subject }).submit(buy(1)),
      (e: unknown) => {
        assert.ok(e instanceof RemoteCommandError);
        assert.equal(e.code, 'bad_reply');
        assert.ok(e.cause instanceof WireFormatError);
        return true;
      },
    );
  });

  test('stop() lets the requests already taken finish and be answered', async (t) => {
    const { engine, service, client } = await served(t, {}, { timeoutMs: 500 });
    const answer = client.submit(buy(1));
    const call = await engine.called();
    const stopped = service.stop();
    assert.equal(await settled(stopped, 50), false, 'stop waits for the answer in flight');
    call.settle({ ok: true, events: [] });
    await stopped;
    assert.deepEqual(await answer, { ok: true, events: [] });
    await assert.rejects(
      client.submit(buy(2)),
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
    const zombie = await CommandService.start(await natsConnection(t, 'frozen'), frozen, {
      key: TEST_CLUSTER_KEY,
      subject,
    });
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
    const service = await CommandService.start(nc, live, { key: TEST_CLUSTER_KEY, subject });
    t.after(() => service.stop());
    const client = new CommandClient(nc, { key: TEST_CLUSTER_KEY, subject, timeoutMs: 2_000 });
    const answered = await Promise.allSettled(
      Array.from({ length: 20 }, (_, i) => client.submit(buy(i + 1))),
    );
    assert.deepEqual(
      answered.map((a) => a.status),
      Array(20).fill('fulfilled'),
      'a queue group would have sent about half of them to the frozen engine, to time out',
    );
    assert.equal(applied, 20);
  });

  test('with a real exchange behind it: an order is answered as in one process; deposits, withdrawals and catalogue changes are refused and change nothing', async (t) => {
    const nc = await natsConnection(t);
    const subject = uniqueName('cmd');
    const exchange = await openExchange({ store: asyncStore(SqliteStore.open({ path: ':memory:' })) });
    t.after(() => exchange.close());
    await exchange.submit({ kind: 'createAsset', code: 'EUR', name: 'Euro', type: 'fiat', decimals: 2 });
    await exchange.submit(deposit(123_456));
    const dropped: DroppedReason[] = [];
    const service = await CommandService.start(nc, exchange, {
      key: TEST_CLUSTER_KEY,
      subject,
      onDropped: (reason) => dropped.push(reason),
    });
    t.after(() => service.stop());
    const gateway = new CommandClient(nc, { key: TEST_CLUSTER_KEY, subject });
    const refusedOrder = await gateway.submit(buy(1));
    assert.equal(
      !refusedOrder.ok && refusedOrder.error.code,
      'unknown_market',
      'a gateway’s order is applied',
    );
    const operatorCommands: Command[] = [
      deposit(5_000_000),
      { kind: 'withdraw', userId: 7 as UserId, asset: 'EUR' as AssetCode, amount: 1 as Amount },
      { kind: 'createAsset', code: 'XXX', name: 'x', type: 'crypto', decimals: 8 },
    ];
    for (const command of operatorCommands)
      await assert.rejects(gateway.submit(command, { reference: 'forged' }), (e: unknown) => {
        // Not a fault (500): the gateway's client is refused a service, 503 in its route's shape.
        assert.ok(e instanceof EngineRefusedError, String(e));
        assert.ok(e instanceof StoreUnavailableError);
        assert.equal(e.code, 'refused');
        assert.match(e.message, /admin API/);
        return true;
      });
    assert.deepEqual(dropped, ['operator_command', 'operator_command', 'operator_command']);
    const balances = await exchange.readCommitted(() => exchange.balances(7 as UserId));
    assert.deepEqual(
      balances.map((b) => [b.asset, b.available]),
      [['EUR', 123_456]],
      'no money minted, none taken',
    );
    assert.equal(
      exchange.catalogue.assets().some((a) => a.code === 'XXX'),
      false,
    );
  });

  test('the commands of one turn go in one message, each answered with its own result; an operator command among them is refused alone', async (t) => {
    const dropped: DroppedReason[] = [];
    const { nc, subject, engine, client } = await served(t, { onDropped: (reason) => dropped.push(reason) });
    const captured: Msg[] = [];
    const spy = await natsConnection(t, 'spy');
    spy.subscribe(subject, { callback: (_e, m) => void captured.push(m) });
    await spy.flush();
    // Submitted in one turn of the event loop, as a gateway does for requests that arrive together.
    const answers = [
      client.submit(buy(1)),
      client.submit(deposit(5_000_000)),
      client.submit(buy(2)),
      client.submitOnce(buy(3), { key: 'k-1', fingerprint: 'a'.repeat(64) }),
    ];
    const [first, second, third] = [await engine.callAt(0), await engine.callAt(1), await engine.callAt(2)];
    assert.deepEqual(
      [first.command, second.command, third.command, third.op],
      [buy(1), buy(2), buy(3), 'submitOnce'],
      'handed over in the batch’s order; the deposit never reaches the submitter',
    );
    const ids = [first, second, third].map((c) => c.identity?.id);
    assert.equal(new Set(ids).size, 3, 'each command under its own id (its receipt’s)');
    // Settled out of order: each answer still goes to its own command.
    third.settle({ kind: 'replayed', orderId: 9 as OrderId });
    first.settle({ ok: true, events: [] });
    second.settle({ ok: false, error: { code: 'insufficient_funds', message: 'no' } });
    const settledAnswers = await Promise.allSettled(answers);
    assert.deepEqual(settledAnswers[0], { status: 'fulfilled', value: { ok: true, events: [] } });
    assert.ok(
      settledAnswers[1]!.status === 'rejected' && settledAnswers[1]!.reason instanceof EngineRefusedError,
    );
    assert.match(String((settledAnswers[1] as PromiseRejectedResult).reason), /admin API/);
    assert.deepEqual(settledAnswers[2], {
      status: 'fulfilled',
      value: { ok: false, error: { code: 'insufficient_funds', message: 'no' } },
    });
    assert.deepEqual(settledAnswers[3], { status: 'fulfilled', value: { kind: 'replayed', orderId: 9 } });
    await waitFor(() => captured.length >= 1);
    await sleep(50);
    assert.equal(captured.length, 1, 'one message for the four commands');
    assert.deepEqual(dropped, ['operator_command']);
    // The batch sent again, byte for byte (a resend, or a capture replayed): nothing applied again,
    // every command gets its first answer; the operator command is refused again.
    const again = await nc.request(subject, captured[0]!.data, {
      timeout: 2_000,
      headers: captured[0]!.headers!,
    });
    const replies = decodeCommandReplies(again.data, 4);
    assert.deepEqual(replies[0], { kind: 'result', result: { ok: true, events: [] } });
    assert.equal(replies[1]!.kind === 'error' && replies[1]!.code, 'refused');
    assert.deepEqual(replies[3], { kind: 'once', once: { kind: 'replayed', orderId: 9 } });
    assert.equal(engine.calls.length, 3, 'applied once each');
    assert.deepEqual(dropped, ['operator_command', 'replay', 'operator_command', 'replay', 'replay']);
  });

  test('more commands in one turn than one message carries go in several, each answered', async (t) => {
    const { engine, client } = await served(t);
    const count = MAX_BATCH_COMMANDS + 3;
    const answers = Array.from({ length: count }, (_, i) => client.submit(buy(i + 1)));
    for (let i = 0; i < count; i++) (await engine.callAt(i)).settle({ ok: true, events: [] });
    assert.equal((await Promise.all(answers)).length, count);
    assert.deepEqual(
      engine.calls.map((c) => (c.command as PlaceOrder).volume),
      Array.from({ length: count }, (_, i) => i + 1),
      'in the order submitted',
    );
  });

  test('engine and gateway of different wire versions refuse each other clearly, and nothing is applied', async (t) => {
    const dropped: [DroppedReason, unknown][] = [];
    const { nc, subject, engine } = await served(t, {
      onDropped: (reason, error) => dropped.push([reason, error]),
    });
    // A gateway of version 2: one `command` frame per request.
    const v2 = new TextEncoder().encode(
      new TextDecoder()
        .decode(encodeCommandRequest({ op: 'submit', command: buy(1) }))
        .replace(`{"v":${WIRE_VERSION},`, '{"v":2,'),
    );
    const answer = await nc.request(subject, v2, { timeout: 2_000, headers: signed(subject, v2) });
    const reply = decodeCommandReply(answer.data);
    assert.equal(reply.kind === 'error' && reply.code, 'bad_request');
    assert.match(reply.kind === 'error' ? reply.message : '', /version 2, this side speaks 3/);
    assert.equal(dropped[0]?.[0], 'bad_request');
    assert.match(String(dropped[0]?.[1]), /version 2, this side speaks 3/, 'the engine’s log says why');
    assert.equal(engine.calls.length, 0);
    // An engine of version 2 answers this gateway's batch with its own refusal: a 503 that says so.
    const old = uniqueName('cmd');
    const sub = nc.subscribe(old, {
      callback: (_e, m) =>
        void m.respond(
          `{"v":2,"t":"reply","b":{"kind":"'error","code":"'bad_request","message":"'malformed message at $.v: version 3, this side speaks 2"}}`,
        ),
    });
    t.after(() => sub.unsubscribe());
    await nc.flush();
    await assert.rejects(
      new CommandClient(nc, { key: TEST_CLUSTER_KEY, subject: old }).submit(buy(1)),
      (e: unknown) => {
        assert.ok(e instanceof EngineRefusedError, String(e));
        assert.ok(e instanceof StoreUnavailableError, '503 with Retry-After, like a refusal');
        assert.match(e.message, /another wire version .*version 2, this side speaks 3/);
        return true;
      },
    );
  });

  test('a request without a valid MAC under the cluster key is refused and applies nothing', async (t) => {
    const dropped: DroppedReason[] = [];
    const { nc, subject, engine, client } = await served(t, { onDropped: (reason) => dropped.push(reason) });
    const body = encodeCommandRequest({ op: 'submit', command: buy(1) });
    const other = ClusterKey.random();
    const deadline = String(Date.now() + 5_000);
    const tampered = encodeCommandRequest({ op: 'submit', command: buy(2) });
    const attempts: Array<[string, Uint8Array, ReturnType<typeof headers> | undefined]> = [
      ['no headers at all', body, undefined],
      ['signed under another key', body, signed(subject, body, { key: other })],
      [
        'another body under a genuine MAC',
        tampered,
        signed(subject, body, { deadline, into: signed(subject, tampered, { deadline }) }),
      ],
      [
        'a later deadline under a genuine MAC',
        body,
        withHeader(
          signed(subject, body, { deadline }),
          'OpenSpot-Deadline',
          String(Number(deadline) + 60_000),
        ),
      ],
      ['signed for another subject', body, signed(`${subject}.other`, body)],
      ['a deadline too far ahead', body, signed(subject, body, { deadline: String(Date.now() + 3_600_000) })],
    ];
    for (const [what, data, h] of attempts) {
      const reply = decodeCommandReply(
        (await nc.request(subject, data, { timeout: 2_000, ...(h === undefined ? {} : { headers: h }) }))
          .data,
      );
      assert.equal(reply.kind === 'error' && reply.code, 'refused', what);
    }
    assert.deepEqual(dropped, Array(attempts.length).fill('unverified'));
    assert.equal(engine.calls.length, 0, 'nothing reached the engine');
    // The genuine client still gets through.
    const answer = client.submit(buy(3));
    (await engine.called()).settle({ ok: true, events: [] });
    assert.deepEqual(await answer, { ok: true, events: [] });
  });

  test('a genuine request captured and replayed byte for byte applies nothing the second time: it gets the first answer', async (t) => {
    const dropped: DroppedReason[] = [];
    const { nc, subject, engine, client } = await served(t, { onDropped: (reason) => dropped.push(reason) });
    // Someone who can read the command subject records what a gateway sends.
    const captured: Msg[] = [];
    const spyConnection = await natsConnection(t, 'spy');
    spyConnection.subscribe(subject, {
      callback: (_e, m) => {
        captured.push(m);
      },
    });
    await spyConnection.flush();
    const answer = client.submit(buy(4));
    const call = await engine.called();
    const result: CommandResult = { ok: false, error: { code: 'insufficient_funds', message: 'no' } };
    call.settle(result);
    assert.deepEqual(await answer, result);
    await waitFor(() => captured.length === 1);
    const genuine = captured[0]!;
    const replayed = await nc.request(subject, genuine.data, { timeout: 2_000, headers: genuine.headers! });
    // A gateway sends its commands in batches (here of one): the replay gets the batch's replies.
    assert.deepEqual(decodeCommandReplies(replayed.data, 1), [{ kind: 'result', result }]);
    assert.equal(engine.calls.length, 1, 'applied once');
    assert.deepEqual(dropped, ['replay']);
  });

  test('a failover: a command the dead engine committed, sent again to the engine that took over its store, is answered from its receipt and not applied twice', async (t) => {
    const path = join(mkdtempSync(join(tmpdir(), 'openspot-receipts-')), 'venue.sqlite');
    t.after(() => rmSync(dirname(path), { recursive: true, force: true }));
    const subject = uniqueName('cmd');
    const open = async () => {
      const exchange = await openExchange({ store: asyncStore(SqliteStore.open({ path })) });
      const engineNc = await natsConnection(t, 'engine');
      const service = await CommandService.start(engineNc, exchange, {
        key: TEST_CLUSTER_KEY,
        subject,
        loadReceipts: (notBefore) => exchange.store.loadCommandReceipts(notBefore),
      });
      return { exchange, engineNc, service };
    };
    const first = await open();
    await first.exchange.submit({
      kind: 'createAsset',
      code: 'EUR',
      name: 'Euro',
      type: 'fiat',
      decimals: 2,
    });
    await first.exchange.submit({
      kind: 'createAsset',
      code: 'BTC',
      name: 'Bitcoin',
      type: 'crypto',
      decimals: 8,
    });
    const market = await first.exchange.submit({
      kind: 'createMarket',
      base: 'BTC' as AssetCode,
      quote: 'EUR' as AssetCode,
      pairDecimals: 1,
      lotDecimals: 8,
      ordermin: 1 as Volume,
      makerFee: 0 as FeeRate,
      takerFee: 0 as FeeRate,
    });
    assert.ok(market.ok);
    await first.exchange.submit(deposit(1_000_000));
    const marketId = first.exchange.catalogue.markets()[0]!.id;
    const captured: Msg[] = [];
    const spy = await natsConnection(t, 'spy');
    spy.subscribe(subject, { callback: (_e, m) => void captured.push(m) });
    await spy.flush();
    const nc = await natsConnection(t);
    const gateway = new CommandClient(nc, { key: TEST_CLUSTER_KEY, subject });
    const placed = await gateway.submit(limit(7, marketId, 'buy', 100, 100_000_000));
    assert.ok(placed.ok, JSON.stringify(placed));
    await waitFor(() => captured.length === 1);
    const balances = (exchange: typeof first.exchange) =>
      exchange.readCommitted(() =>
        exchange.balances(7 as UserId).map((b) => [b.asset, b.available, b.reserved]),
      );
    const committed = await balances(first.exchange);
    // The engine dies after its commit, before its answer arrived (as the gateway saw it).
    await first.service.stop();
    await first.engineNc.close();
    await first.exchange.close();

    const second = await open();
    t.after(() => second.exchange.close());
    t.after(() => second.service.stop());
    assert.equal(second.service.remembered, 1, 'the receipt is loaded before it subscribes');
    const resent = await nc.request(subject, captured[0]!.data, {
      timeout: 2_000,
      headers: captured[0]!.headers!,
    });
    assert.deepEqual(
      decodeCommandReplies(resent.data, 1),
      [{ kind: 'result', result: placed }],
      'the first answer',
    );
    const open_ = await second.exchange.readCommitted(() => second.exchange.book(marketId, 0));
    assert.equal(open_.bids.length, 1);
    assert.deepEqual(await balances(second.exchange), committed, 'reserved once');
  });
});

/** Headers of a request signed as a CommandClient signs them (or with the given key, id, deadline). */
function signed(
  subject: string,
  body: Uint8Array,
  options: {
    readonly key?: ClusterKey;
    readonly deadline?: string;
    readonly id?: string;
    readonly into?: ReturnType<typeof headers>;
  } = {},
) {
  const id = options.id ?? randomBytes(16).toString('base64url');
  const deadline = options.deadline ?? String(Date.now() + 5_000);
  const h = options.into ?? headers();
  h.set(COMMAND_ID_HEADER, id);
  h.set(DEADLINE_HEADER, deadline);
  h.set(
    MAC_HEADER,
    (options.key ?? TEST_CLUSTER_KEY).mac('command', commandMacFields(subject, id, deadline), body),
  );
  return h;
}

function withHeader(h: ReturnType<typeof headers>, name: string, value: string) {
  h.set(name, value);
  return h;
}

async function waitFor(condition: () => boolean, ms = 2_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('timed out waiting');
    await sleep(10);
  }
}
