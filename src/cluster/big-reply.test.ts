/**
 * A command reply larger than one NATS message, without a NATS server: the real CommandService
 * and CommandClient on an in-memory connection that enforces max_payload as the NATS client does
 * (a larger message throws). The reply arrives whole and exact in chunks; one that fits goes as
 * one message; and every way its chunks can fail to arrive (damaged, gone, expired, the engine
 * gone, the connection lost) is EngineUnavailableError with outcome `unknown`, after the
 * command was applied — never a wrong answer.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import type { MsgHdrs, NatsConnection, Status } from '@nats-io/transport-node';
import type { Amount, MarketId, Micros, OrderId, Price, TradeId, UserId, Volume } from '../domain/types.js';
import type { Command, EngineEvent, OrderState } from '../engine/types.js';
import type { SubmitResult } from '../sequencer/sequencer.js';
import { ChunkHolder } from './chunked.js';
import { encodeCommandReply } from './codec.js';
import { CommandClient, type CommandSubmitter, EngineUnavailableError } from './command-client.js';
import { CommandService } from './command-service.js';
import { TEST_CLUSTER_KEY } from './test-support.js';

const SUBJECT = 'test.commands';
const MAX_PAYLOAD = 64 * 1024;

interface MemoryMsg {
  readonly subject: string;
  readonly reply: string;
  readonly data: Uint8Array;
  readonly headers: MsgHdrs | undefined;
  respond(data: Uint8Array): boolean;
}
type Callback = (error: Error | null, msg: MemoryMsg) => void;
/** Sees every reply on its way (may change it, or throw to lose it). */
type Meddle = (subject: string, request: Uint8Array, reply: Uint8Array) => Uint8Array;

/**
 * Just what CommandService and CommandClient use of a NatsConnection, in memory: subscribe,
 * request (no responders, timeout, max_payload as the NATS client), status (a disconnect the
 * test triggers), flush, info.
 */
class MemoryNats {
  readonly info = { max_payload: MAX_PAYLOAD };
  readonly requests: Array<{ subject: string; bytes: number }> = [];
  readonly replies: number[] = [];
  meddle: Meddle = (_s, _q, reply) => reply;
  /** Delay before a request on a subject under the command subject (a chunk request) is delivered. */
  chunkDelayMs = 0;
  /** Ends the delays still running when the test ends. */
  readonly closing = new AbortController();
  private readonly subs = new Map<string, Callback>();
  private readonly statusListeners = new Set<(status: Status) => void>();

  subscribe(subject: string, options: { callback: Callback }) {
    this.subs.set(subject, options.callback);
    let closed = false;
    const close = () => {
      closed = true;
      this.subs.delete(subject);
    };
    return { unsubscribe: close, drain: async () => close(), isClosed: () => closed };
  }

  async request(
    subject: string,
    data: Uint8Array,
    options: { timeout: number; headers?: MsgHdrs },
  ): Promise<{ data: Uint8Array }> {
    if (data.length > this.info.max_payload) throw new Error('max_payload size exceeded');
    this.requests.push({ subject, bytes: data.length });
    if (subject !== SUBJECT && this.chunkDelayMs > 0)
      await sleep(this.chunkDelayMs, undefined, { signal: this.closing.signal });
    const callback = this.subs.get(subject);
    if (callback === undefined) throw new Error(`no responders: ${subject}`);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('TIMEOUT')), options.timeout);
      callback(null, {
        subject,
        reply: '_INBOX.test',
        data,
        headers: options.headers,
        respond: (reply) => {
          // What the NATS client does with a message over max_payload.
          if (reply.length > this.info.max_payload) throw new Error('max_payload size exceeded');
          this.replies.push(reply.length);
          clearTimeout(timer);
          try {
            resolve({ data: this.meddle(subject, data, reply) });
          } catch (error) {
            reject(error);
          }
          return true;
        },
      });
    });
  }

  status(): AsyncIterable<Status> {
    const queue: Status[] = [];
    let wake: (() => void) | undefined;
    const listener = (status: Status) => {
      queue.push(status);
      wake?.();
    };
    this.statusListeners.add(listener);
    return {
      [Symbol.asyncIterator]: async function* () {
        for (;;) {
          while (queue.length > 0) yield queue.shift() as Status;
          await new Promise<void>((resolve) => {
            wake = resolve;
          });
        }
      },
    };
  }

  emit(status: Status): void {
    for (const listener of this.statusListeners) listener(status);
  }

  async flush(): Promise<void> {}
  isClosed(): boolean {
    return false;
  }
  isDraining(): boolean {
    return false;
  }
}

function order(id: number, userId: number, side: 'buy' | 'sell', executed: number): OrderState {
  return {
    id: id as OrderId,
    userId: userId as UserId,
    marketId: 1 as MarketId,
    side,
    type: 'limit',
    price: (3_000_000 + id) as Price,
    volume: 100 as Volume,
    executed: executed as Volume,
    status: executed === 100 ? 'closed' : 'open',
    reason: null,
    openTime: 1_700_000_000_000_000 as Micros,
    closeTime: executed === 100 ? (1_700_000_000_000_123 as Micros) : null,
    cost: (executed * 30_000) as Amount,
    fee: 17 as Amount,
    feeExcess: 12_345,
    reserved: 0 as Amount,
  };
}

/** What an order filling `makers` resting orders returns: each fill a trade and a closed maker. */
function sweep(makers: number): SubmitResult {
  const events: EngineEvent[] = [{ type: 'orderAccepted', order: order(1, 9, 'buy', 0) }];
  for (let i = 0; i < makers; i++) {
    events.push({
      type: 'trade',
      trade: {
        id: (i + 1) as TradeId,
        marketId: 1 as MarketId,
        price: (3_000_000 + i) as Price,
        volume: 100 as Volume,
        cost: 3_000_000 as Amount,
        takerOrderId: 1 as OrderId,
        makerOrderId: (i + 2) as OrderId,
        takerUserId: 9 as UserId,
        makerUserId: ((i % 50) + 10) as UserId,
        takerSide: 'buy',
        takerType: 'limit',
        takerFee: 300 as Amount,
        makerFee: 150 as Amount,
        time: (1_700_000_000_000_000 + i) as Micros,
      },
    });
    events.push({ type: 'orderDone', order: order(i + 2, (i % 50) + 10, 'sell', 100) });
  }
  return { ok: true, events };
}

const place: Command = {
  kind: 'placeOrder',
  userId: 9 as UserId,
  marketId: 1 as MarketId,
  side: 'buy',
  type: 'limit',
  price: 4_000_000 as Price,
  volume: 1_000_000 as Volume,
};

/** A CommandService answering `result` for every submit, and a CommandClient, on one MemoryNats. */
async function pair(
  t: { after(fn: () => Promise<void> | void): void },
  result: SubmitResult,
  options: { replyHoldMs?: number } = {},
) {
  const nc = new MemoryNats();
  const connection = nc as unknown as NatsConnection;
  let applied = 0;
  const submitter: CommandSubmitter = {
    submit: async () => {
      applied += 1;
      return result;
    },
    submitOnce: async () => ({ kind: 'executed', result }),
  };
  t.after(() => nc.closing.abort());
  const failed: unknown[] = [];
  const service = await CommandService.start(connection, submitter, {
    key: TEST_CLUSTER_KEY,
    subject: SUBJECT,
    onFailed: (error) => failed.push(error),
    ...options,
  });
  t.after(() => service.stop());
  const client = new CommandClient(connection, { key: TEST_CLUSTER_KEY, subject: SUBJECT, timeoutMs: 2_000 });
  return {
    nc,
    service,
    client,
    failed,
    get applied() {
      return applied;
    },
  };
}

/** The chunk index a reply-chunk-request asks for (undefined for any other request). */
function askedChunk(request: Uint8Array): number | undefined {
  const match = /"t":"reply-chunk-request".*"chunk":"#(\d+)"/.exec(new TextDecoder().decode(request));
  return match === null ? undefined : Number(match[1]);
}

async function rejectsUnknown(promise: Promise<unknown>, cause: RegExp): Promise<void> {
  await assert.rejects(promise, (error: unknown) => {
    assert.ok(error instanceof EngineUnavailableError, String(error));
    assert.equal(error.outcome, 'unknown');
    assert.match(error.message, /could not be fetched|lost before the engine answered/);
    assert.match(String((error.cause as Error | undefined)?.message ?? error.message), cause);
    return true;
  });
}

test('a reply larger than max_payload arrives whole and exact, in chunks that each fit', async (t) => {
  const result = sweep(400);
  const size = encodeCommandReply({ kind: 'result', result }).length;
  assert.ok(size > 3 * MAX_PAYLOAD, `the reply is ${size} bytes`);
  const p = await pair(t, result);
  const got = await p.client.submit(place);
  assert.deepEqual(got, result);
  assert.equal(p.applied, 1);
  const chunkRequests = p.nc.requests.filter((r) => r.subject.startsWith(`${SUBJECT}.`));
  assert.ok(chunkRequests.length >= 3, `${chunkRequests.length} chunk requests`);
  assert.ok(Math.max(...p.nc.replies) <= MAX_PAYLOAD, `largest message ${Math.max(...p.nc.replies)} bytes`);
  // Every chunk was sent once: the engine let go of the reply at once, not at the expiry.
  assert.equal(p.service.heldReplies, 0);
  // submitOnce's reply takes the same path.
  const once = await p.client.submitOnce(place as Extract<Command, { kind: 'placeOrder' }>, {
    key: 'k',
    fingerprint: 'f'.repeat(64),
  });
  assert.deepEqual(once, { kind: 'executed', result });
  assert.deepEqual(p.failed, []);
});

test('a reply that fits goes as one message: no chunk request, nothing held', async (t) => {
  // Just under the limit, and one just over: the boundary is max_payload itself.
  let makers = 1;
  while (encodeCommandReply({ kind: 'result', result: sweep(makers + 1) }).length <= MAX_PAYLOAD) makers++;
  const fits = sweep(makers);
  assert.ok(encodeCommandReply({ kind: 'result', result: fits }).length <= MAX_PAYLOAD);
  const p = await pair(t, fits);
  assert.deepEqual(await p.client.submit(place), fits);
  assert.deepEqual(
    p.nc.requests.map((r) => r.subject),
    [SUBJECT],
  );
  assert.equal(p.service.heldReplies, 0);
  const over = sweep(makers + 1);
  const q = await pair(t, over);
  assert.deepEqual(await q.client.submit(place), over);
  assert.deepEqual(
    q.nc.requests.map((r) => r.subject.split('.').length),
    [2, 3],
    'the command, then one chunk request',
  );
});

test('a damaged chunk: EngineUnavailableError (unknown), never a wrong answer', async (t) => {
  const p = await pair(t, sweep(400));
  p.nc.meddle = (_s, request, reply) => {
    if (askedChunk(request) !== 2) return reply;
    const damaged = Uint8Array.from(reply);
    // A digit of an amount near the end: still a readable reply, but not the one committed.
    const at = damaged.lastIndexOf(0x37);
    damaged[at] = 0x38;
    return damaged;
  };
  await rejectsUnknown(p.client.submit(place), /SHA-256 mismatch/);
  assert.equal(p.applied, 1, 'the command was applied: its fate is unknown to the gateway');
});

test('the engine gone after its head, or its reply no longer held: EngineUnavailableError (unknown)', async (t) => {
  // The engine stops answering chunk requests (it died after the commit): no responders.
  const gone = await pair(t, sweep(400));
  gone.nc.meddle = (subject, request, reply) => {
    if (subject === SUBJECT) return reply;
    if (askedChunk(request) === 1) throw new Error('no responders: the engine is gone');
    return reply;
  };
  await rejectsUnknown(gone.client.submit(place), /no responders/);
  // The reply expired between the head and the chunk requests (a stalled gateway).
  const expired = await pair(t, sweep(400), { replyHoldMs: 5 });
  expired.nc.chunkDelayMs = 30;
  await rejectsUnknown(expired.client.submit(place), /no longer holds reply/);
  assert.equal(expired.service.heldReplies, 0);
});

test('the connection lost while fetching chunks fails at once (unknown), not after the timeout', async (t) => {
  // The service's stop waits for a held reply up to its hold time: short here.
  const p = await pair(t, sweep(400), { replyHoldMs: 300 });
  p.nc.chunkDelayMs = 60_000; // a chunk request that is never answered
  const started = performance.now();
  const submitted = p.client.submit(place);
  await sleep(50);
  p.nc.emit({ type: 'disconnect', server: 'memory' });
  await rejectsUnknown(submitted, /lost before the engine answered/);
  const ms = performance.now() - started;
  assert.ok(ms < 1_500, `failed after ${ms.toFixed(0)} ms (request timeout 2,000 ms)`);
  // While disconnected, a command is refused at once, not delivered.
  await assert.rejects(
    p.client.submit(place),
    (error: unknown) => error instanceof EngineUnavailableError && error.outcome === 'not_delivered',
  );
  assert.equal(p.applied, 1);
  p.nc.emit({ type: 'reconnect', server: 'memory' });
});

test('the holder lets go of a reply once every chunk was sent, and keeps the bytes it holds under its cap', () => {
  const holder = new ChunkHolder({
    kind: 'reply',
    chunkSubject: 'x.y',
    maxPayload: () => 8_192,
    holdMs: 10_000,
    maxHeld: 10,
    maxBytes: 25_000,
    dropWhenSent: true,
  });
  const bytes = (n: number) => new Uint8Array(n).fill(0x61);
  const first = holder.hold(bytes(10_000), undefined);
  const second = holder.hold(bytes(10_000), undefined);
  assert.equal(holder.size, 2);
  // A third would take 30,000 bytes: the least recently used goes.
  const third = holder.hold(bytes(10_000), undefined);
  assert.equal(holder.size, 2);
  assert.equal(holder.bytes, 20_000);
  assert.match(
    new TextDecoder().decode(
      holder.answer(
        new TextEncoder().encode(`{"v":3,"t":"reply-chunk-request","b":{"id":"'${first.id}","chunk":"#1"}}`),
      ),
    ),
    /"t":"reply-gone"/,
  );
  // One larger than the cap alone is still held (the newest always is).
  holder.hold(bytes(30_000), undefined);
  assert.equal(holder.size, 1);
  void second;
  void third;
  // Sent in full (head and every chunk), a reply is dropped.
  holder.clear();
  const small = holder.hold(bytes(10_000), undefined);
  assert.equal(small.chunks, 3);
  holder.head(small);
  for (const chunk of [2, 1]) {
    assert.equal(holder.size, 1);
    holder.answer(
      new TextEncoder().encode(
        `{"v":3,"t":"reply-chunk-request","b":{"id":"'${small.id}","chunk":"#${chunk}"}}`,
      ),
    );
  }
  assert.equal(holder.size, 0);
});
