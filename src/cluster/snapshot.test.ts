/**
 * The chunked snapshot transfer without NATS: the engine's SnapshotChunks answering the gateway's
 * assembleSnapshot through an in-memory requester, and every way a transfer can fail (a chunk
 * that does not come, a snapshot the engine no longer holds, damaged or misplaced bytes): each
 * rejects the whole fetch, and a new fetch from the start succeeds.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { AssetCode, MarketId, UserId } from '../domain/types.js';
import type { BalanceState } from '../engine/types.js';
import type { MarketSnapshot } from '../sequencer/market-view.js';
import { jsonBytes, WireFormatError } from './exact-json.js';
import {
  assembleSnapshot,
  type EngineSnapshot,
  encodeSnapshot,
  SnapshotChunks,
  SnapshotGoneError,
  type SnapshotRequester,
  SnapshotTransferError,
} from './snapshot.js';

const SUBJECT = 'test.snapshot';

function venue(sequence: number, users: number): EngineSnapshot {
  const balances: BalanceState[] = [];
  for (let u = 1; u <= users; u++)
    balances.push({
      userId: u as UserId,
      asset: 'BTC' as AssetCode,
      available: (u * 1_000) as BalanceState['available'],
      reserved: 0 as BalanceState['reserved'],
    });
  const snapshot = {
    sequence: 0,
    assets: [],
    markets: [],
    books: [{ marketId: 1 as MarketId, sequence: 3, bids: [], asks: [] }],
    lastPrices: [],
    candles: [],
    statsCandles: [],
    recentTrades: [],
    balances,
  } as unknown as MarketSnapshot;
  return { sequence, snapshot };
}

/** An engine (SnapshotChunks) with a movable clock, and the requester a gateway would use. */
function engine(
  options: { maxPayload?: number; holdMs?: number; maxHeld?: number; cheapSequence?: boolean } = {},
) {
  let state = venue(5, 300);
  let now = 1_000_000;
  let takes = 0;
  const chunks = new SnapshotChunks(
    () => {
      takes += 1;
      return state;
    },
    {
      chunkSubject: `${SUBJECT}.abc`,
      maxPayload: () => options.maxPayload ?? 2_000,
      holdMs: options.holdMs ?? 10_000,
      maxHeld: options.maxHeld ?? 8,
      ...(options.cheapSequence === true ? { sequence: () => state.sequence } : {}),
      now: () => now,
    },
  );
  const requests: string[] = [];
  /** Replies pass through `meddle` (the transport), which may change or refuse them. */
  let meddle: (subject: string, request: Uint8Array, reply: Uint8Array) => Uint8Array = (_s, _q, r) => r;
  const request: SnapshotRequester = async (subject, data) => {
    requests.push(subject);
    if (subject !== SUBJECT && subject !== `${SUBJECT}.abc`) throw new Error(`no responders on ${subject}`);
    return meddle(subject, data, chunks.answer(data));
  };
  return {
    chunks,
    request,
    requests,
    set state(value: EngineSnapshot) {
      state = value;
    },
    get takes() {
      return takes;
    },
    advance(ms: number) {
      now += ms;
    },
    meddle(fn: typeof meddle) {
      meddle = fn;
    },
  };
}

/** The chunk index a chunk request asks for (undefined for the first request). */
function askedChunk(request: Uint8Array): number | undefined {
  const text = new TextDecoder().decode(request);
  const match = /"chunk":"#(\d+)"/.exec(text);
  return match === null ? undefined : Number(match[1]);
}

test('a snapshot larger than one message arrives in chunks, checked and equal to what the engine took', async () => {
  const e = engine();
  const expected = encodeSnapshot(venue(5, 300));
  const fetched = await assembleSnapshot(e.request, SUBJECT);
  assert.ok(fetched.chunks > 5, `${fetched.chunks} chunks`);
  assert.equal(fetched.bytes, expected.length);
  assert.deepEqual({ sequence: fetched.sequence, snapshot: fetched.snapshot }, venue(5, 300));
  // Each chunk reply fits the payload limit the engine was given.
  const sizes: number[] = [];
  e.meddle((_s, _q, reply) => {
    sizes.push(reply.length);
    return reply;
  });
  await assembleSnapshot(e.request, SUBJECT);
  assert.ok(Math.max(...sizes) <= 2_000, `largest reply ${Math.max(...sizes)} bytes`);
  // Both fetches found the engine at the same sequence: one encoded snapshot served them.
  assert.equal(e.chunks.size, 1);
  e.state = venue(6, 300);
  const later = await assembleSnapshot(e.request, SUBJECT);
  assert.equal(later.sequence, 6);
  assert.equal(e.chunks.size, 2);
});

test('given the sequence cheaply, the engine takes no new snapshot while it holds one at that sequence', async () => {
  const e = engine({ cheapSequence: true });
  await assembleSnapshot(e.request, SUBJECT);
  await assembleSnapshot(e.request, SUBJECT);
  assert.equal(e.takes, 1);
  e.state = venue(6, 300);
  assert.equal((await assembleSnapshot(e.request, SUBJECT)).sequence, 6);
  assert.equal(e.takes, 2);
  // Without it, each request takes a snapshot (to learn its sequence) but encodes it only once.
  const plain = engine();
  await assembleSnapshot(plain.request, SUBJECT);
  await assembleSnapshot(plain.request, SUBJECT);
  assert.equal(plain.takes, 2);
  assert.equal(plain.chunks.size, 1);
});

test('a small snapshot is one chunk: the head carries all of it', async () => {
  const e = engine({ maxPayload: 1024 * 1024 });
  const fetched = await assembleSnapshot(e.request, SUBJECT);
  assert.equal(fetched.chunks, 1);
  assert.deepEqual(e.requests, [SUBJECT]);
});

test('a damaged chunk fails the SHA-256 check: the fetch rejects, and a new one succeeds', async () => {
  const e = engine();
  e.meddle((_s, request, reply) => {
    if (askedChunk(request) !== 3) return reply;
    const damaged = Uint8Array.from(reply);
    damaged[damaged.length - 1] = (damaged[damaged.length - 1] ?? 0) ^ 0x01;
    return damaged;
  });
  await assert.rejects(assembleSnapshot(e.request, SUBJECT), (error: unknown) => {
    assert.ok(error instanceof SnapshotTransferError);
    assert.match(error.message, /SHA-256 mismatch/);
    return true;
  });
  e.meddle((_s, _q, reply) => reply);
  assert.equal((await assembleSnapshot(e.request, SUBJECT)).sequence, 5);
});

test('a chunk that does not arrive rejects the whole fetch (no partial snapshot), and stops asking', async () => {
  const e = engine();
  const total = (await assembleSnapshot(e.request, SUBJECT)).chunks;
  e.requests.length = 0;
  e.meddle((_s, request, reply) => {
    if (askedChunk(request) === 2) throw new Error('TIMEOUT');
    return reply;
  });
  await assert.rejects(assembleSnapshot(e.request, SUBJECT), /TIMEOUT/);
  // The other workers stop at the failure: far fewer requests than chunks.
  assert.ok(e.requests.length < total, `${e.requests.length} requests for ${total} chunks`);
});

test('an expired snapshot id: the engine answers gone, the fetch rejects, and a fetch from the start succeeds', async () => {
  const e = engine({ holdMs: 10_000 });
  let advanced = false;
  e.meddle((_s, request, reply) => {
    // The gateway stalls after the head, longer than the engine holds the snapshot.
    if (askedChunk(request) === undefined && !advanced) {
      advanced = true;
      e.advance(10_001);
    }
    return reply;
  });
  await assert.rejects(assembleSnapshot(e.request, SUBJECT), SnapshotGoneError);
  assert.equal(e.chunks.size, 0, 'the expired snapshot was dropped');
  const fetched = await assembleSnapshot(e.request, SUBJECT);
  assert.equal(fetched.sequence, 5);
  // Reading renews the hold: a transfer slower in total than the hold, but steady, completes.
  const slow = engine({ holdMs: 10_000 });
  slow.meddle((_s, _q, reply) => {
    slow.advance(6_000);
    return reply;
  });
  assert.ok((await assembleSnapshot(slow.request, SUBJECT)).chunks > 2);
});

test('a snapshot dropped for a newer one (more held than allowed) is gone for its readers', async () => {
  const e = engine({ maxHeld: 1 });
  let once = false;
  e.meddle((_s, request, reply) => {
    if (askedChunk(request) === undefined && !once) {
      // Another gateway's request finds the engine further on, between this head and its chunks.
      once = true;
      e.state = venue(6, 300);
      e.chunks.answer(jsonBytes({ v: 3, t: 'snapshot-request', b: {} }));
    }
    return reply;
  });
  await assert.rejects(assembleSnapshot(e.request, SUBJECT), SnapshotGoneError);
  assert.equal((await assembleSnapshot(e.request, SUBJECT)).sequence, 6);
});

test('misplaced, short or foreign chunks and bad frames are refused', async () => {
  const replace = (reply: Uint8Array, from: string, to: string) => {
    const cut = reply.indexOf(0x0a);
    const line = new TextDecoder().decode(reply.subarray(0, cut)).replace(from, to);
    const head = new TextEncoder().encode(line);
    const out = new Uint8Array(head.length + reply.length - cut);
    out.set(head);
    out.set(reply.subarray(cut), head.length);
    return out;
  };
  const cases: Array<[string, (request: Uint8Array, reply: Uint8Array) => Uint8Array, RegExp]> = [
    [
      'another chunk than asked',
      (q, r) => (askedChunk(q) === 2 ? replace(r, '"chunk":"#2"', '"chunk":"#3"') : r),
      /asked for chunk 2, got 3/,
    ],
    [
      'a short chunk',
      (q, r) => (askedChunk(q) === 2 ? r.subarray(0, r.length - 1) : r),
      /chunk 2 .* bytes, expected/,
    ],
    [
      'another snapshot id',
      (q, r) => (askedChunk(q) === 1 ? replace(r, '"id":"\'', '"id":"\'00') : r),
      /asked for snapshot/,
    ],
    [
      'a size that the chunks cannot make',
      (q, r) => (askedChunk(q) === undefined ? replace(r, '"size":"#', '"size":"#9') : r),
      /cannot make/,
    ],
    [
      'a chunk subject outside the snapshot subject',
      (q, r) => (askedChunk(q) === undefined ? replace(r, `${SUBJECT}.abc`, 'elsewhere.abc') : r),
      /expected a subject under test\.snapshot\./,
    ],
    ['another version', (_q, r) => replace(r, '"v":3', '"v":2'), /version 2, this side speaks 3/],
    ['an unknown field', (_q, r) => replace(r, '"b":{', '"b":{"x":null,'), /\$\.b\.x: unknown field/],
  ];
  for (const [what, meddle, message] of cases) {
    const e = engine();
    e.meddle((_s, q, r) => meddle(q, r));
    await assert.rejects(
      assembleSnapshot(e.request, SUBJECT),
      (error: unknown) =>
        (error instanceof SnapshotTransferError || error instanceof WireFormatError) &&
        message.test(error.message),
      what,
    );
  }
});

test('the engine refuses requests it cannot read (saying why), and answers gone for a chunk it does not have', async () => {
  const e = engine();
  const answer = (value: unknown) => new TextDecoder().decode(e.chunks.answer(jsonBytes(value)));
  const reason = (reply: string) => (JSON.parse(reply) as { t: string; b: { reason: string } }).b.reason;
  // What a version 1 gateway sends (an empty request), and frames of the wrong version or type.
  assert.match(
    new TextDecoder().decode(e.chunks.answer(new Uint8Array(0))),
    /"t":"snapshot-refused".*not JSON/,
  );
  assert.match(reason(answer({ v: 1, t: 'snapshot-request', b: {} })), /version 1, this side speaks 3/);
  assert.match(reason(answer({ v: 2, t: 'snapshot-request', b: {} })), /version 2, this side speaks 3/);
  assert.match(
    reason(answer({ v: 3, t: 'snapshot-head', b: {} })),
    /where a snapshot-request or a snapshot-chunk-request was expected/,
  );
  assert.match(
    reason(answer({ v: 3, t: 'snapshot-chunk-request', b: { id: "'x", chunk: '#1' } })),
    /\$\.b\.id/,
  );
  assert.equal(
    answer({ v: 3, t: 'snapshot-chunk-request', b: { id: "'0123456789abcdef", chunk: '#1' } }),
    '{"v":3,"t":"snapshot-gone","b":{"id":"\'0123456789abcdef"}}',
  );
  assert.equal(e.takes, 0);
  // The gateway side of a refusal: the fetch fails at once, with the engine's reason.
  e.meddle(() =>
    jsonBytes({ v: 3, t: 'snapshot-refused', b: { reason: "'malformed message at $.v: version 4" } }),
  );
  await assert.rejects(
    assembleSnapshot(e.request, SUBJECT),
    /the engine refused the request \(malformed message at \$\.v: version 4\)/,
  );
  // A version 1 engine's answer (one `snapshot` frame) is refused by version.
  e.meddle(() => jsonBytes({ v: 1, t: 'snapshot', b: {} }));
  await assert.rejects(assembleSnapshot(e.request, SUBJECT), /version 1, this side speaks 3/);
});
