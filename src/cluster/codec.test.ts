/**
 * The cluster wire format: every command, result and batch comes back from its bytes exactly as it
 * went (amounts and bigints included, no JSON number on the wire), and a malformed message is
 * refused with a WireFormatError naming the bad field — never another exception, never a half-read value.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import {
  AmendReason,
  type Amount,
  type AssetCode,
  type FeeRate,
  type MarketId,
  type Micros,
  type OrderId,
  type Price,
  type TradeId,
  type UserId,
  type Volume,
} from '../domain/types.js';
import type { Command, EngineEvent, OrderState, PlaceResult, Rejection, Trade } from '../engine/types.js';
import type { IdempotencyRequest, OnceResult, PlaceOrder } from '../sequencer/ports.js';
import type { SubmitResult } from '../sequencer/sequencer.js';
import type { LedgerEntry } from '../store/store.js';
import {
  type CommandReply,
  type CommandRequest,
  commandReplyText,
  decodeBatch,
  decodeCommandMessage,
  decodeCommandReplies,
  decodeCommandReply,
  decodeCommandRequest,
  encodeBatch,
  encodeCommandBatch,
  encodeCommandReplies,
  encodeCommandReply,
  encodeCommandRequest,
  encodeRequestPart,
  MAX_BATCH_ENTRIES,
  REJECT_CODES,
  readCommand,
  receiptReplyText,
  receiptText,
  WIRE_VERSION,
  WireFormatError,
} from './codec.js';
import { type ExactValue, fromExactJson, jsonBytes, toExactJson } from './exact-json.js';

// ------------------------------------------------------------------------------------------------
// Arbitraries: the whole range the types allow, not only what the engine would produce.

const safe = fc.maxSafeInteger().map((n) => (Object.is(n, -0) ? 0 : n));
const q = <T extends number>() => safe.map((n) => n as T);
const text = fc.string({ unit: 'binary', maxLength: 12 });
const side = fc.constantFrom('buy' as const, 'sell' as const);
const executionType = fc.constantFrom('limit' as const, 'market' as const);
const orderType = fc.constantFrom(
  'limit' as const,
  'market' as const,
  'stop-loss' as const,
  'take-profit' as const,
  'stop-loss-limit' as const,
  'take-profit-limit' as const,
  'trailing-stop' as const,
);
const trailingOffset = fc.record({ unit: fc.constantFrom('ticks' as const, 'bps' as const), amount: safe });
const assetType = fc.constantFrom('crypto' as const, 'fiat' as const);

const assetCode = text.map((s) => s as AssetCode);
const marketParameters = {
  base: assetCode,
  quote: assetCode,
  pairDecimals: safe,
  lotDecimals: safe,
  ordermin: q<Volume>(),
  makerFee: q<FeeRate>(),
  takerFee: q<FeeRate>(),
};
const timeInForce = fc.constantFrom('GTC' as const, 'IOC' as const, 'FOK' as const, 'GTD' as const);
const stp = fc.constantFrom(
  'cancel-oldest' as const,
  'cancel-newest' as const,
  'cancel-both' as const,
  'decrement' as const,
);
/** The order controls are optional: absent, present, or present as undefined, all kept apart. */
const placeOrderArb: fc.Arbitrary<PlaceOrder> = fc.record(
  {
    kind: fc.constant('placeOrder' as const),
    userId: q<UserId>(),
    marketId: q<MarketId>(),
    side,
    type: orderType,
    price: q<Price>(),
    volume: q<Volume>(),
    timeInForce: fc.option(timeInForce, { nil: undefined }),
    postOnly: fc.option(fc.boolean(), { nil: undefined }),
    clientOrderId: fc.option(fc.option(text, { nil: null }), { nil: undefined }),
    stp: fc.option(stp, { nil: undefined }),
    expireTime: fc.option(q<Micros>(), { nil: undefined }),
    triggerPrice: fc.option(q<Price>(), { nil: undefined }),
    trailingOffset: fc.option(trailingOffset, { nil: undefined }),
  },
  { requiredKeys: ['kind', 'userId', 'marketId', 'side', 'type', 'price', 'volume'] },
);

const commandArb: fc.Arbitrary<Command> = fc.oneof(
  fc.record({
    kind: fc.constant('createAsset' as const),
    code: text,
    name: text,
    type: assetType,
    decimals: safe,
  }),
  fc.record({ kind: fc.constant('createMarket' as const), ...marketParameters }),
  fc.record({
    kind: fc.constantFrom('deposit' as const, 'withdraw' as const),
    userId: q<UserId>(),
    asset: assetCode,
    amount: q<Amount>(),
  }),
  placeOrderArb,
  fc.record({ kind: fc.constant('cancelOrder' as const), userId: q<UserId>(), orderId: q<OrderId>() }),
  fc.record({ kind: fc.constant('cancelClientOrder' as const), userId: q<UserId>(), clientOrderId: text }),
  fc.record(
    {
      kind: fc.constant('amendOrder' as const),
      userId: q<UserId>(),
      orderId: q<OrderId>(),
      price: q<Price>(),
      volume: q<Volume>(),
      clientOrderId: fc.option(text, { nil: null }),
      triggerPrice: q<Price>(),
    },
    { requiredKeys: ['kind', 'userId', 'orderId'] },
  ),
  fc.record(
    { kind: fc.constant('cancelAllOrders' as const), userId: q<UserId>(), marketId: q<MarketId>() },
    { requiredKeys: ['kind', 'userId'] },
  ),
  fc.record({ kind: fc.constant('cancelAllAfter' as const), userId: q<UserId>(), timeout: q<Micros>() }),
  fc.record({ kind: fc.constant('placeOrders' as const), orders: fc.array(placeOrderArb, { maxLength: 3 }) }),
  fc.constant({ kind: 'tick' as const }),
);

const orderArb: fc.Arbitrary<OrderState> = fc.record(
  {
    id: q<OrderId>(),
    userId: q<UserId>(),
    marketId: q<MarketId>(),
    side,
    type: orderType,
    price: q<Price>(),
    volume: q<Volume>(),
    executed: q<Volume>(),
    status: fc.constantFrom('open' as const, 'closed' as const, 'canceled' as const),
    reason: fc.option(text, { nil: null }),
    openTime: q<Micros>(),
    closeTime: fc.option(q<Micros>(), { nil: null }),
    cost: q<Amount>(),
    fee: q<Amount>(),
    feeExcess: safe,
    reserved: q<Amount>(),
    timeInForce,
    postOnly: fc.constant(true as const),
    clientOrderId: text,
    stp,
    expireTime: q<Micros>(),
    priority: safe,
    triggerPrice: q<Price>(),
    trailingOffset,
    trailingBest: q<Price>(),
    triggered: fc.constant(true as const),
  },
  {
    requiredKeys: [
      'id',
      'userId',
      'marketId',
      'side',
      'type',
      'price',
      'volume',
      'executed',
      'status',
      'reason',
      'openTime',
      'closeTime',
      'cost',
      'fee',
      'feeExcess',
      'reserved',
    ],
  },
);

const tradeArb: fc.Arbitrary<Trade> = fc.record({
  id: q<TradeId>(),
  marketId: q<MarketId>(),
  price: q<Price>(),
  volume: q<Volume>(),
  cost: q<Amount>(),
  takerOrderId: q<OrderId>(),
  makerOrderId: q<OrderId>(),
  takerUserId: q<UserId>(),
  makerUserId: q<UserId>(),
  takerSide: side,
  takerType: executionType,
  takerFee: q<Amount>(),
  makerFee: q<Amount>(),
  time: q<Micros>(),
});

const eventArb: fc.Arbitrary<EngineEvent> = fc.oneof(
  fc.record({
    type: fc.constant('assetCreated' as const),
    asset: fc.record({ code: assetCode, name: text, type: assetType, decimals: safe }),
  }),
  fc.record({
    type: fc.constant('marketCreated' as const),
    market: fc.record({ id: q<MarketId>(), ...marketParameters }),
  }),
  fc.record({
    type: fc.constantFrom('deposited' as const, 'withdrawn' as const),
    userId: q<UserId>(),
    asset: assetCode,
    amount: q<Amount>(),
    time: q<Micros>(),
  }),
  fc.record({ type: fc.constantFrom('orderAccepted' as const, 'orderDone' as const), order: orderArb }),
  fc.record({ type: fc.constant('trade' as const), trade: tradeArb }),
  fc.record({
    type: fc.constant('orderAmended' as const),
    order: orderArb,
    reason: fc.constantFrom(AmendReason.user, AmendReason.selfTradeDecrement),
  }),
  fc.record({
    type: fc.constant('cancelAllAfterSet' as const),
    userId: q<UserId>(),
    triggerTime: q<Micros>(),
    time: q<Micros>(),
  }),
  fc.record({
    type: fc.constant('cancelAllAfterFired' as const),
    userId: q<UserId>(),
    triggerTime: q<Micros>(),
  }),
  fc.record({
    type: fc.constant('orderTriggered' as const),
    order: orderArb,
    lastPrice: q<Price>(),
    time: q<Micros>(),
  }),
);

const rejectionArb: fc.Arbitrary<Rejection> = fc.record(
  { code: fc.constantFrom(...REJECT_CODES), message: text, field: fc.option(text, { nil: undefined }) },
  { requiredKeys: ['code', 'message'] },
);

const ledgerEntryArb: fc.Arbitrary<LedgerEntry> = fc.record({
  userId: q<UserId>(),
  asset: assetCode,
  kind: fc.constantFrom('deposit' as const, 'withdrawal' as const),
  amount: q<Amount>(),
  reference: fc.option(text, { nil: null }),
  time: q<Micros>(),
});

/** One order of a placeOrders batch: its id or its refusal. */
const placeResultArb: fc.Arbitrary<PlaceResult> = fc.oneof(
  fc.record({ ok: fc.constant(true as const), orderId: q<OrderId>() }),
  fc.record({ ok: fc.constant(false as const), error: rejectionArb }),
);

/** What Exchange.submit answers: a CommandResult, with a deposit's ledger entry and duplicate flag. */
const resultArb: fc.Arbitrary<SubmitResult> = fc.oneof(
  fc.record(
    {
      ok: fc.constant(true as const),
      events: fc.array(eventArb, { maxLength: 6 }),
      duplicate: fc.option(fc.boolean(), { nil: undefined }),
      recorded: fc.option(ledgerEntryArb, { nil: undefined }),
      results: fc.array(placeResultArb, { maxLength: 3 }),
    },
    { requiredKeys: ['ok', 'events'] },
  ),
  fc.record(
    { ok: fc.constant(false as const), error: rejectionArb, events: fc.array(eventArb, { maxLength: 3 }) },
    { requiredKeys: ['ok', 'error'] },
  ),
);

/** What the store accepts: a key of printable ASCII, a fingerprint in lowercase hex (anything else is refused). */
const idempotencyArb: fc.Arbitrary<IdempotencyRequest> = fc.record({
  key: fc.string({ minLength: 1, maxLength: 255, unit: fc.constantFrom(...' !"#~Az09-_') }),
  fingerprint: fc.stringMatching(/^[0-9a-f]{64}$/),
});

const requestArb: fc.Arbitrary<CommandRequest> = fc.oneof(
  fc.record(
    {
      op: fc.constant('submit' as const),
      command: commandArb,
      ledger: fc.option(fc.record({ reference: fc.option(text, { nil: undefined }) }, { requiredKeys: [] }), {
        nil: undefined,
      }),
    },
    { requiredKeys: ['op', 'command'] },
  ),
  fc.record({
    op: fc.constant('submitOnce' as const),
    command: placeOrderArb,
    idempotency: idempotencyArb,
  }),
);

const onceArb: fc.Arbitrary<OnceResult> = fc.oneof(
  fc.record({ kind: fc.constant('executed' as const), result: resultArb }),
  fc.record({ kind: fc.constant('replayed' as const), orderId: q<OrderId>() }),
  fc.constant({ kind: 'mismatch' as const }),
);

const replyArb: fc.Arbitrary<CommandReply> = fc.oneof(
  fc.record({ kind: fc.constant('result' as const), result: resultArb }),
  fc.record({ kind: fc.constant('once' as const), once: onceArb }),
  fc.record({
    kind: fc.constant('error' as const),
    code: fc.constantFrom('unavailable' as const, 'failed' as const, 'bad_request' as const),
    message: text,
  }),
);

const exactArb: fc.Arbitrary<ExactValue> = fc.letrec<{ value: ExactValue }>((tie) => ({
  value: fc.oneof(
    { depthSize: 'small' },
    fc.constantFrom(
      null,
      true,
      false,
      undefined,
      -0,
      Number.NaN,
      Number.POSITIVE_INFINITY,
      0.1,
      1e300,
      5e-324,
    ),
    text,
    fc.double(),
    fc.bigInt({ min: -(10n ** 60n), max: 10n ** 60n }),
    fc.array(tie('value'), { maxLength: 4 }),
    fc
      .array(fc.tuple(fc.oneof(text, safe, fc.bigInt()), tie('value')), { maxLength: 4 })
      .map((entries) => new Map<ExactValue, ExactValue>(entries)),
    fc.dictionary(fc.oneof(text, fc.constant('__proto__')), tie('value'), { maxKeys: 4 }),
  ),
})).value;

/** Every JSON number in the parsed frame, apart from the version. */
function jsonNumbers(json: unknown, path = '$'): string[] {
  // A frame's version; a `replies` frame holds whole frames, each with its own.
  if (typeof json === 'number') return /^\$(?:\.b\[\d+\])?\.v$/.test(path) ? [] : [path];
  if (Array.isArray(json)) return json.flatMap((v, i) => jsonNumbers(v, `${path}[${i}]`));
  if (typeof json === 'object' && json !== null)
    return Object.entries(json).flatMap(([k, v]) => jsonNumbers(v, `${path}.${k}`));
  return [];
}

/**
 * The same value with ordinary prototypes: fast-check builds records without one, a decoder
 * builds ordinary objects (structuredClone keeps everything else: Maps, bigints, -0, NaN, undefined).
 */
const plain = <T>(value: T): T => structuredClone(value);

const parse = (bytes: Uint8Array): unknown => JSON.parse(new TextDecoder().decode(bytes));

// ------------------------------------------------------------------------------------------------

test('every command request comes back exactly as it went, with no JSON number on the wire', () => {
  fc.assert(
    fc.property(requestArb, (request) => {
      const bytes = encodeCommandRequest(request);
      assert.deepEqual(jsonNumbers(parse(bytes)), []);
      assert.deepStrictEqual(decodeCommandRequest(bytes), plain(request));
    }),
    { numRuns: 500 },
  );
});

test('every reply (result, idempotent result, error) comes back exactly as it went', () => {
  fc.assert(
    fc.property(replyArb, (reply) => {
      const bytes = encodeCommandReply(reply);
      assert.deepEqual(jsonNumbers(parse(bytes)), []);
      assert.deepStrictEqual(decodeCommandReply(bytes), plain(reply));
    }),
    { numRuns: 500 },
  );
});

test('a batch envelope carries any plain data exactly: bigints, -0, NaN, Maps, undefined, __proto__ keys', () => {
  fc.assert(
    fc.property(fc.integer({ min: 1, max: Number.MAX_SAFE_INTEGER }), exactArb, (sequence, payload) => {
      const bytes = encodeBatch({ sequence, payload });
      assert.deepEqual(jsonNumbers(parse(bytes)), []);
      assert.deepStrictEqual(decodeBatch(bytes), { sequence, payload: plain(payload) });
    }),
    { numRuns: 500 },
  );
  const tricky = JSON.parse('{"__proto__": {"polluted": 1}}') as ExactValue;
  const back = decodeBatch(encodeBatch({ sequence: 1, payload: tricky })).payload as object;
  assert.ok(Object.hasOwn(back, '__proto__'), '__proto__ stays an own key');
  assert.equal(Object.getPrototypeOf(back), Object.prototype);
});

test('a money amount at the edge of the exact range survives, one past it is refused by name', () => {
  const big = { kind: 'deposit', userId: 1, asset: 'BTC', amount: Number.MAX_SAFE_INTEGER } as Command;
  assert.deepStrictEqual(readCommand(fromExactJson(toExactJson(big))), big);
  const bytes = encodeCommandRequest({ op: 'submit', command: big });
  const tampered = new TextEncoder().encode(
    new TextDecoder().decode(bytes).replace('#9007199254740991', '#9007199254740992'),
  );
  assert.throws(
    () => decodeCommandRequest(tampered),
    (e: unknown) =>
      e instanceof WireFormatError && e.path === '$.b.command.amount' && /safe range/.test(e.message),
  );
});

test('malformed messages are refused with a WireFormatError that says what is wrong', () => {
  const good = parse(
    encodeCommandRequest({
      op: 'submit',
      command: { kind: 'cancelOrder', userId: 3 as UserId, orderId: 4 as OrderId },
    }),
  ) as {
    v: number;
    t: string;
    b: Record<string, unknown>;
  };
  const cases: Array<[unknown, RegExp]> = [
    [
      { ...good, v: WIRE_VERSION + 1 },
      new RegExp(`version ${WIRE_VERSION + 1}, this side speaks ${WIRE_VERSION}`),
    ],
    [{ ...good, v: WIRE_VERSION - 1 }, new RegExp(`this side speaks ${WIRE_VERSION}`)],
    [{ ...good, t: 'batch' }, /"batch" message where a command was expected/],
    [{ ...good, extra: 1 }, /unexpected fields/],
    [
      { ...good, b: { ...good.b, command: { kind: "'cancelOrder", userId: 3, orderId: '#4' } } },
      /\$\.b\.command\.userId: unexpected number/,
    ],
    [
      { ...good, b: { ...good.b, command: { kind: "'cancelOrder", userId: '#3' } } },
      /\$\.b\.command\.orderId: missing/,
    ],
    [
      { ...good, b: { ...good.b, command: { kind: "'cancelOrder", userId: '#3', orderId: '#4', x: 'u' } } },
      /\$\.b\.command\.x: unknown field/,
    ],
    [
      { ...good, b: { ...good.b, command: { kind: "'nuke", userId: '#3' } } },
      /\$\.b\.command\.kind: expected one of/,
    ],
    [
      { ...good, b: { ...good.b, command: { kind: "'cancelOrder", userId: '#3.5', orderId: '#4' } } },
      /safe range/,
    ],
    [
      { ...good, b: { ...good.b, command: { kind: "'cancelOrder", userId: '#03', orderId: '#4' } } },
      /not a number/,
    ],
    [{ ...good, b: { ...good.b, op: "'submitOnce" } }, /idempotency: missing/],
    ['just a string', /not a message object/],
  ];
  for (const [json, message] of cases) {
    assert.throws(
      () => decodeCommandRequest(jsonBytes(json)),
      (e: unknown) => e instanceof WireFormatError && message.test(e.message),
      `${JSON.stringify(json)} → ${message}`,
    );
  }
  assert.throws(() => decodeCommandRequest(new Uint8Array([0xff, 0xfe])), /not UTF-8 text/);
  assert.throws(() => decodeCommandRequest(new TextEncoder().encode('{"v":1,')), /not JSON/);
  const deep = `{"v":1,"t":"batch","b":${'['.repeat(100_000)}${']'.repeat(100_000)}}`;
  assert.throws(() => decodeBatch(new TextEncoder().encode(deep)), WireFormatError);
  assert.throws(
    () => decodeBatch(jsonBytes({ v: WIRE_VERSION, t: 'batch', b: { sequence: '#0', payload: null } })),
    /batch sequence number/,
  );
});

test('random bytes and damaged frames either decode to a valid value or throw a WireFormatError, nothing else', () => {
  const decoders = [decodeCommandRequest, decodeCommandReply, decodeBatch];
  const tryAll = (bytes: Uint8Array) => {
    for (const decode of decoders) {
      try {
        decode(bytes);
      } catch (error) {
        if (!(error instanceof WireFormatError)) throw error;
      }
    }
  };
  fc.assert(fc.property(fc.uint8Array({ maxLength: 200 }), tryAll), { numRuns: 300 });
  fc.assert(
    fc.property(requestArb, fc.nat(), fc.integer({ min: 0, max: 255 }), (request, at, byte) => {
      const bytes = encodeCommandRequest(request);
      const damaged = Uint8Array.from(bytes);
      damaged[at % damaged.length] = byte;
      tryAll(damaged);
      tryAll(bytes.subarray(0, at % bytes.length));
    }),
    { numRuns: 300 },
  );
});

test('encoding refuses what is not plain data instead of sending something else', () => {
  assert.throws(
    () => encodeBatch({ sequence: 1, payload: new Date(0) as unknown as ExactValue }),
    /not plain data \(Date\)/,
  );
  assert.throws(
    () => encodeBatch({ sequence: 1, payload: { f: () => 1 } as unknown as ExactValue }),
    /\$\.payload\.f: a function/,
  );
  assert.throws(() => encodeBatch({ sequence: 0, payload: null }), /batch sequence number/);
});

test('a bad field deep in a reply is named by its whole path (every reader of the shape tables)', () => {
  const order = fc.sample(orderArb, { numRuns: 1, seed: 7 })[0]!;
  const trade = fc.sample(tradeArb, { numRuns: 1, seed: 7 })[0]!;
  const reply: CommandReply = {
    kind: 'result',
    result: {
      ok: true,
      events: [
        { type: 'orderAccepted', order },
        { type: 'trade', trade },
      ],
    },
  };
  const good = parse(encodeCommandReply(reply)) as { b: { result: { events: Record<string, unknown>[] } } };
  const tamper = (at: number, key: 'order' | 'trade', change: Record<string, unknown>, drop?: string) => {
    const copy = structuredClone(good);
    const event = copy.b.result.events[at]!;
    const inner = { ...(event[key] as Record<string, unknown>), ...change };
    if (drop !== undefined) delete inner[drop];
    event[key] = inner;
    return jsonBytes(copy);
  };
  const cases: Array<[Uint8Array, string, RegExp]> = [
    [tamper(0, 'order', { closeTime: "'x" }), '$.b.result.events[0].order.closeTime', /safe range/],
    [tamper(0, 'order', { side: "'up" }), '$.b.result.events[0].order.side', /one of buy, sell/],
    [tamper(0, 'order', {}, 'reserved'), '$.b.result.events[0].order.reserved', /missing/],
    [tamper(1, 'trade', { extra: null }), '$.b.result.events[1].trade.extra', /unknown field/],
    [tamper(1, 'trade', { takerType: null }), '$.b.result.events[1].trade.takerType', /one of limit, market/],
  ];
  for (const [bytes, path, message] of cases) {
    assert.throws(
      () => decodeCommandReply(bytes),
      (e: unknown) => e instanceof WireFormatError && e.path === path && message.test(e.message),
      `${path} → ${message}`,
    );
  }
});

test('a conditional order crosses the wire with its trigger, trailing offset and state; bad values are refused by path', () => {
  const stop: Command = {
    kind: 'placeOrder',
    userId: 2 as UserId,
    marketId: 1 as MarketId,
    side: 'sell',
    type: 'trailing-stop',
    price: 0 as Price,
    volume: 5 as Volume,
    trailingOffset: { unit: 'bps', amount: 250 },
  };
  assert.deepStrictEqual(readCommand(fromExactJson(toExactJson(stop))), stop);
  const request = (command: unknown) =>
    jsonBytes({
      ...(parse(encodeCommandRequest({ op: 'submit', command: stop })) as object),
      b: { op: "'submit", command },
    });
  const wire = toExactJson(stop) as Record<string, unknown>;
  assert.throws(
    () => decodeCommandRequest(request({ ...wire, trailingOffset: { unit: "'percent", amount: '#250' } })),
    (e: unknown) => e instanceof WireFormatError && e.path === '$.b.command.trailingOffset.unit',
  );
  assert.throws(
    () => decodeCommandRequest(request({ ...wire, type: "'stop-market" })),
    (e: unknown) => e instanceof WireFormatError && e.path === '$.b.command.type',
  );
  const triggered: SubmitResult = {
    ok: true,
    events: [
      {
        type: 'orderTriggered',
        order: {
          id: 7 as OrderId,
          userId: 2 as UserId,
          marketId: 1 as MarketId,
          side: 'sell',
          type: 'stop-loss-limit',
          price: 57_900 as Price,
          volume: 5 as Volume,
          executed: 0 as Volume,
          status: 'open',
          reason: null,
          openTime: 1 as Micros,
          closeTime: null,
          cost: 0 as Amount,
          fee: 0 as Amount,
          feeExcess: 0,
          reserved: 5 as Amount,
          triggerPrice: 58_000 as Price,
          triggered: true,
        },
        lastPrice: 57_990 as Price,
        time: 9 as Micros,
      },
    ],
  };
  const reply: CommandReply = { kind: 'result', result: triggered };
  assert.deepStrictEqual(decodeCommandReply(encodeCommandReply(reply)), reply);
});

// ------------------------------------------------------------------------------------------------
// Command batches (decision 272) and receipts (273).

const commandId = fc
  .uint8Array({ minLength: 16, maxLength: 16 })
  .map((bytes) => Buffer.from(bytes).toString('base64url'));

test('a batch of commands comes back exactly as it went, each under its id, with no JSON number on the wire', () => {
  fc.assert(
    fc.property(
      fc.uniqueArray(fc.record({ id: commandId, request: requestArb }), {
        minLength: 1,
        maxLength: 8,
        selector: (e) => e.id,
      }),
      (entries) => {
        const bytes = encodeCommandBatch(
          entries.map((e) => ({ id: e.id, request: encodeRequestPart(e.request) })),
        );
        assert.deepEqual(jsonNumbers(parse(bytes)), []);
        assert.deepStrictEqual(decodeCommandMessage(bytes), { kind: 'commands', entries: plain(entries) });
      },
    ),
    { numRuns: 300 },
  );
  // A single command, as gateways before command batches send it, is read too.
  const one: CommandRequest = {
    op: 'submit',
    command: { kind: 'cancelOrder', userId: 1 as UserId, orderId: 2 as OrderId },
  };
  assert.deepStrictEqual(decodeCommandMessage(encodeCommandRequest(one)), { kind: 'command', request: one });
});

test('a batch that is empty, too long, names an id twice or carries a bad id or command is refused by its path', () => {
  const request = encodeRequestPart({
    op: 'submit',
    command: { kind: 'cancelOrder', userId: 1 as UserId, orderId: 2 as OrderId },
  });
  const id = (n: number) => `${'a'.repeat(21)}${'ABCDEFGHIJ'[n % 10]}`;
  const batch = (n: number) =>
    encodeCommandBatch(Array.from({ length: n }, (_, i) => ({ id: id(i), request })));
  const refused = (bytes: Uint8Array, message: RegExp) =>
    assert.throws(
      () => decodeCommandMessage(bytes),
      (e: unknown) => e instanceof WireFormatError && message.test(e.message),
      String(message),
    );
  refused(batch(0), /\$\.b\.entries: expected 1 to 1024 commands/);
  assert.equal(MAX_BATCH_ENTRIES, 1024);
  const tooMany = encodeCommandBatch(
    Array.from({ length: MAX_BATCH_ENTRIES + 1 }, (_, i) => ({
      id: Buffer.alloc(16, 0)
        .fill(i % 256, 0, 1)
        .fill(Math.floor(i / 256), 1, 2)
        .toString('base64url'),
      request,
    })),
  );
  refused(tooMany, /expected 1 to 1024 commands/);
  refused(
    encodeCommandBatch([
      { id: id(0), request },
      { id: id(0), request },
    ]),
    /\$\.b\.entries\[1\]\.id: an id named twice/,
  );
  refused(encodeCommandBatch([{ id: 'short', request }]), /\$\.b\.entries\[0\]\.id: expected a command id/);
  const good = parse(batch(2)) as { b: { entries: { id: string; request: Record<string, unknown> }[] } };
  const damaged = structuredClone(good);
  damaged.b.entries[1]!.request = { ...damaged.b.entries[1]!.request, op: "'nuke" };
  refused(jsonBytes(damaged), /\$\.b\.entries\[1\]\.request\.op: expected one of submit, submitOnce/);
  refused(jsonBytes({ ...good, v: WIRE_VERSION + 1 }), /version \d+, this side speaks/);
  refused(jsonBytes({ ...good, t: 'reply' }), /a "reply" message where a command or a commands was expected/);
});

test('the replies to a batch come back in its order; a single error answers every command; any other shape is refused', () => {
  fc.assert(
    fc.property(fc.array(replyArb, { minLength: 1, maxLength: 6 }), (replies) => {
      const bytes = encodeCommandReplies(replies.map(commandReplyText));
      assert.deepEqual(jsonNumbers(parse(bytes)), []);
      assert.deepStrictEqual(decodeCommandReplies(bytes, replies.length), plain(replies));
    }),
    { numRuns: 300 },
  );
  const refusal: CommandReply = { kind: 'error', code: 'bad_request', message: 'unreadable' };
  assert.deepStrictEqual(decodeCommandReplies(encodeCommandReply(refusal), 3), [refusal, refusal, refusal]);
  const result: CommandReply = { kind: 'result', result: { ok: true, events: [] } };
  const refused = (bytes: Uint8Array, count: number, message: RegExp) =>
    assert.throws(
      () => decodeCommandReplies(bytes, count),
      (e: unknown) => e instanceof WireFormatError && message.test(e.message),
      String(message),
    );
  refused(encodeCommandReply(result), 1, /\$\.b\.kind: a single reply to a batch must be an error/);
  const two = encodeCommandReplies([commandReplyText(result), commandReplyText(refusal)]);
  refused(two, 3, /2 replies to a batch of 3 commands/);
  const text = (value: unknown) => new TextEncoder().encode(JSON.stringify(value));
  const frames = (parse(two) as { b: unknown[] }).b;
  refused(
    text({ v: WIRE_VERSION, t: 'replies', b: [frames[0], { ...(frames[1] as object), v: 1 }] }),
    2,
    /\$\.b\[1\]\.v: version 1/,
  );
  refused(
    text({ v: WIRE_VERSION, t: 'replies', b: [frames[0], { ...(frames[1] as object), t: 'batch' }] }),
    2,
    /\$\.b\[1\]\.t/,
  );
  refused(text({ v: WIRE_VERSION, t: 'replies', b: {} }), 1, /\$\.b: expected an array of reply frames/);
  refused(
    text({ v: WIRE_VERSION, t: 'replies', b: [{ v: WIRE_VERSION, t: 'reply', b: { kind: "'result" } }] }),
    1,
    /\$\.b\[0\]\.b\.result: missing/,
  );
});

test('a command receipt keeps the reply frame in base64; a version 2 receipt (JSON text) does not decode', () => {
  fc.assert(
    fc.property(replyArb, (reply) => {
      const text = commandReplyText(reply);
      const receipt = receiptText(text);
      assert.doesNotMatch(receipt, /["\\]/, 'nothing a PostgreSQL array literal must escape');
      assert.equal(receiptReplyText(receipt), text);
      const v2 = text.replace(`{"v":${WIRE_VERSION},`, '{"v":2,');
      assert.throws(
        () => decodeCommandReply(new TextEncoder().encode(receiptReplyText(v2))),
        WireFormatError,
      );
      assert.deepStrictEqual(
        decodeCommandReply(new TextEncoder().encode(receiptReplyText(receipt))),
        plain(reply),
      );
    }),
    { numRuns: 200 },
  );
});
