/**
 * Every field of every wire shape, damaged one at a time: a fraction, -0, a string, a value past
 * the safe range, the field missing, a field too many. Each damaged frame must be refused with a
 * WireFormatError naming the damaged path, never read as a value.
 *
 * The fields are not listed here: they are whatever the codec wrote for one sample of every
 * command kind, event type, result and reply form, walked recursively. The samples are typed by
 * mapped types over Command['kind'] and EngineEvent['type'] (the unions the codec's shape tables
 * are checked against), so a kind added to the engine, or a required field added to a shape, fails
 * to compile here until it has a sample, and is then damaged like every other field.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
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
import type { Command, EngineEvent, OrderState, PlaceOrder, Trade } from '../engine/types.js';
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
  WireFormatError,
} from './codec.js';
import { jsonBytes } from './exact-json.js';

// ------------------------------------------------------------------------------------------------
// One sample of everything: every optional field present, no null where a value may stand, so that
// each field carries a value its damage can replace.

const T = 1_700_000_000_000_000 as Micros;

/** What an order's command and its state share. */
const ORDER_REQUEST = {
  userId: 3 as UserId,
  marketId: 2 as MarketId,
  side: 'buy',
  type: 'limit',
  price: 300_000 as Price,
  volume: 5_000 as Volume,
} as const;

const ORDER: OrderState = {
  id: 11 as OrderId,
  ...ORDER_REQUEST,
  executed: 1_000 as Volume,
  status: 'canceled',
  reason: 'canceled by the user',
  openTime: T,
  closeTime: (T + 1) as Micros,
  cost: 30 as Amount,
  fee: 1 as Amount,
  feeExcess: 7,
  reserved: 40 as Amount,
  timeInForce: 'GTD',
  postOnly: true,
  clientOrderId: 'grid-7',
  stp: 'decrement',
  expireTime: (T + 60_000_000) as Micros,
  priority: 15,
  triggerPrice: 290_000 as Price,
  trailingOffset: { unit: 'bps', amount: 250 },
  trailingBest: 296_000 as Price,
  triggered: true,
};

const TRADE: Trade = {
  id: 21 as TradeId,
  marketId: 2 as MarketId,
  price: 300_000 as Price,
  volume: 1_000 as Volume,
  cost: 30 as Amount,
  takerOrderId: 12 as OrderId,
  makerOrderId: 11 as OrderId,
  takerUserId: 4 as UserId,
  makerUserId: 3 as UserId,
  takerSide: 'sell',
  takerType: 'market',
  takerFee: 1 as Amount,
  makerFee: 1 as Amount,
  time: T,
};

const MARKET_PARAMETERS = {
  base: 'BTC' as AssetCode,
  quote: 'EUR' as AssetCode,
  pairDecimals: 1,
  lotDecimals: 8,
  ordermin: 10_000 as Volume,
  makerFee: 100_000 as FeeRate,
  takerFee: 200_000 as FeeRate,
};

const PLACE_ORDER: PlaceOrder = {
  kind: 'placeOrder',
  ...ORDER_REQUEST,
  timeInForce: 'GTD',
  postOnly: true,
  clientOrderId: 'grid-7',
  stp: 'cancel-both',
  expireTime: (T + 60_000_000) as Micros,
  triggerPrice: 290_000 as Price,
  trailingOffset: { unit: 'ticks', amount: 500 },
};

const COMMANDS: { readonly [K in Command['kind']]: Extract<Command, { kind: K }> } = {
  createAsset: { kind: 'createAsset', code: 'BTC', name: 'Bitcoin', type: 'crypto', decimals: 8 },
  createMarket: { kind: 'createMarket', ...MARKET_PARAMETERS },
  deposit: { kind: 'deposit', userId: 3 as UserId, asset: 'EUR' as AssetCode, amount: 500 as Amount },
  withdraw: { kind: 'withdraw', userId: 3 as UserId, asset: 'EUR' as AssetCode, amount: 200 as Amount },
  placeOrder: PLACE_ORDER,
  cancelOrder: { kind: 'cancelOrder', userId: 3 as UserId, orderId: 11 as OrderId },
  cancelClientOrder: { kind: 'cancelClientOrder', userId: 3 as UserId, clientOrderId: 'grid-7' },
  amendOrder: {
    kind: 'amendOrder',
    userId: 3 as UserId,
    orderId: 11 as OrderId,
    price: 310_000 as Price,
    volume: 4_000 as Volume,
    clientOrderId: 'grid-8',
    triggerPrice: 295_000 as Price,
  },
  cancelAllOrders: { kind: 'cancelAllOrders', userId: 3 as UserId, marketId: 2 as MarketId },
  cancelAllAfter: { kind: 'cancelAllAfter', userId: 3 as UserId, timeout: 60_000_000 as Micros },
  placeOrders: { kind: 'placeOrders', orders: [PLACE_ORDER, { ...PLACE_ORDER, side: 'sell' }] },
  tick: { kind: 'tick' },
};

const EVENTS: { readonly [K in EngineEvent['type']]: Extract<EngineEvent, { type: K }> } = {
  assetCreated: {
    type: 'assetCreated',
    asset: { code: 'BTC' as AssetCode, name: 'Bitcoin', type: 'crypto', decimals: 8 },
  },
  marketCreated: { type: 'marketCreated', market: { id: 2 as MarketId, ...MARKET_PARAMETERS } },
  deposited: {
    type: 'deposited',
    userId: 3 as UserId,
    asset: 'EUR' as AssetCode,
    amount: 500 as Amount,
    time: T,
  },
  withdrawn: {
    type: 'withdrawn',
    userId: 3 as UserId,
    asset: 'EUR' as AssetCode,
    amount: 200 as Amount,
    time: T,
  },
  orderAccepted: { type: 'orderAccepted', order: ORDER },
  trade: { type: 'trade', trade: TRADE },
  orderDone: { type: 'orderDone', order: ORDER },
  orderTriggered: { type: 'orderTriggered', order: ORDER, lastPrice: 289_000 as Price, time: T },
  orderAmended: { type: 'orderAmended', order: ORDER, reason: AmendReason.selfTradeDecrement },
  cancelAllAfterSet: {
    type: 'cancelAllAfterSet',
    userId: 3 as UserId,
    triggerTime: (T + 60_000_000) as Micros,
    time: T,
  },
  cancelAllAfterFired: { type: 'cancelAllAfterFired', userId: 3 as UserId, triggerTime: T },
};

const RECORDED: LedgerEntry = {
  userId: 3 as UserId,
  asset: 'EUR' as AssetCode,
  kind: 'deposit',
  amount: 500 as Amount,
  reference: 'wire-2024-001',
  time: T,
};

const REQUESTS: readonly CommandRequest[] = [
  ...Object.values(COMMANDS).map((command): CommandRequest => ({ op: 'submit', command })),
  { op: 'submit', command: COMMANDS.deposit, ledger: { reference: 'wire-2024-001' } },
  {
    op: 'submitOnce',
    command: COMMANDS.placeOrder,
    idempotency: { key: 'retry-1', fingerprint: 'ab12'.repeat(16) },
  },
];

const EXECUTED = {
  ok: true,
  events: Object.values(EVENTS),
  results: [
    { ok: true, orderId: 11 as OrderId },
    {
      ok: false,
      error: { code: 'order_value_too_small', message: 'The order is too small.', field: 'volume' },
    },
  ],
  duplicate: false,
  recorded: RECORDED,
} as const;

const REPLIES: readonly CommandReply[] = [
  { kind: 'result', result: EXECUTED },
  {
    kind: 'result',
    result: { ok: false, error: { code: 'too_large', message: 'The volume is too large.', field: 'volume' } },
  },
  {
    kind: 'result',
    result: {
      ok: false,
      error: { code: 'order_not_found', message: 'No such open order.' },
      events: [EVENTS.cancelAllAfterFired, EVENTS.orderDone],
    },
  },
  { kind: 'once', once: { kind: 'executed', result: EXECUTED } },
  { kind: 'once', once: { kind: 'replayed', orderId: 11 as OrderId } },
  { kind: 'once', once: { kind: 'mismatch' } },
  { kind: 'error', code: 'unavailable', message: 'The store could not commit.' },
];

// ------------------------------------------------------------------------------------------------
// Damage

type Json = null | boolean | string | Json[] | { [key: string]: Json };

/** Exact JSON's spellings (exact-json.ts): `#` a number, `'` a string. */
const VALUE_DAMAGES: ReadonlyArray<readonly [string, Json]> = [
  ['a fraction', '#0.5'],
  ['-0', '#-0'],
  ['a string', "'5"],
  ['past the safe range', '#9007199254740992'],
];

/**
 * Fields whose absence is a valid message of its own: the reply's `duplicate` and `recorded`, a
 * rejection's `field`, a submit's `ledger` and its `reference` (absent and undefined are kept
 * apart), an order state's controls (absent when they hold their defaults).
 */
const OPTIONAL =
  /\.(duplicate|recorded|error\.field|ledger|ledger\.reference|order\.(timeInForce|postOnly|clientOrderId|stp|expireTime|priority|triggerPrice|trailingOffset|trailingBest|triggered))$/;

/** Fields that may be left out of the object holding them, by that object's kind (engine/types.ts). */
const OPTIONAL_IN_KIND: { readonly [kind: string]: readonly string[] } = {
  "'placeOrder": [
    'timeInForce',
    'postOnly',
    'clientOrderId',
    'stp',
    'expireTime',
    'triggerPrice',
    'trailingOffset',
  ],
  "'amendOrder": ['price', 'volume', 'clientOrderId', 'triggerPrice'],
  "'cancelAllOrders": ['marketId'],
};

/** Whether `key` may be missing from `holder`: also a success's `results` and a refusal's `events`. */
const isOptional = (path: string, holder: { [key: string]: Json }, key: string): boolean =>
  OPTIONAL.test(path) ||
  (typeof holder.kind === 'string' && (OPTIONAL_IN_KIND[holder.kind]?.includes(key) ?? false)) ||
  (holder.ok === true && key === 'results') ||
  (holder.ok === false && key === 'events');

/** The batch payload is any plain data (the transport does not read it): only its presence counts. */
const OPAQUE = new Set(['$.b.payload']);

interface Damaged {
  readonly what: string;
  readonly path: string;
  readonly frame: { [key: string]: Json };
  /** True: a valid message all the same (an optional field left out). */
  readonly valid: boolean;
}

/** Every single damage of `frame`'s body: for each object, a field too many; for each field, missing and each wrong value. */
function damages(frame: { [key: string]: Json }): Damaged[] {
  const out: Damaged[] = [];
  /** The damage `change` makes to the node at `steps` (object keys, array indexes), on a fresh copy of the frame. */
  const add = (
    what: string,
    path: string,
    steps: readonly (string | number)[],
    change: (node: { [key: string | number]: Json }) => void,
    valid = false,
  ) => {
    const copy = structuredClone(frame);
    change(steps.reduce<Json>((n, step) => (n as { [key: string | number]: Json })[step]!, copy) as never);
    out.push({ what, path, frame: copy, valid });
  };
  const walk = (node: Json, path: string, steps: readonly (string | number)[]) => {
    if (typeof node !== 'object' || node === null) return;
    const isArray = Array.isArray(node);
    if (!isArray)
      add('a field too many', `${path}.extra`, steps, (n) => {
        n.extra = "'x";
      });
    for (const [key, value] of Object.entries(node)) {
      const at = isArray ? Number(key) : key;
      const fieldPath = isArray ? `${path}[${key}]` : `${path}.${key}`;
      if (!isArray)
        add(
          'missing',
          fieldPath,
          steps,
          (n) => {
            delete n[at];
          },
          isOptional(fieldPath, node as { [key: string]: Json }, key),
        );
      if (OPAQUE.has(fieldPath)) continue;
      for (const [what, damaged] of valueDamages(value))
        add(what, fieldPath, steps, (n) => {
          n[at] = damaged;
        });
      walk(value, fieldPath, [...steps, at]);
    }
  };
  walk(frame.b!, '$.b', ['b']);
  return out;
}

/** A string field takes any string: every other damage applies to it. */
const valueDamages = (value: Json) =>
  typeof value === 'string' && value.startsWith("'")
    ? VALUE_DAMAGES.filter(([, v]) => v !== "'5")
    : VALUE_DAMAGES;

const parse = (bytes: Uint8Array) => JSON.parse(new TextDecoder().decode(bytes)) as { [key: string]: Json };

/** What went wrong with each damage, as readable lines (an empty list when every damage was refused by path). */
function check(
  frames: readonly Uint8Array[],
  decode: (bytes: Uint8Array) => unknown,
): { count: number; wrong: string[] } {
  const wrong: string[] = [];
  let count = 0;
  for (const bytes of frames) {
    const frame = parse(bytes);
    decode(bytes); // the undamaged sample is valid
    for (const { what, path, frame: damaged, valid } of damages(frame)) {
      count += 1;
      const body = frame.b as { [key: string]: Json };
      const label = `${path} ${what} (${String(body.op ?? body.kind ?? frame.t).replace(/^'/, '')})`;
      try {
        decode(jsonBytes(damaged));
        if (!valid) wrong.push(`${label}: read as a valid message`);
      } catch (error) {
        if (valid) wrong.push(`${label}: refused (${String(error)}) although the field is optional`);
        else if (!(error instanceof WireFormatError))
          wrong.push(`${label}: ${String(error)}, not a WireFormatError`);
        else if (error.path !== path) wrong.push(`${label}: refused at ${error.path} (${error.message})`);
      }
    }
  }
  return { count, wrong };
}

test('every field of every command request, damaged in each way, is refused by its path', (t) => {
  const { count, wrong } = check(REQUESTS.map(encodeCommandRequest), decodeCommandRequest);
  t.diagnostic(`${count} damaged requests`);
  assert.deepEqual(wrong, []);
  assert.ok(count > 200, `only ${count} damages`);
});

test('every field of every reply (results, events, trades, orders, ledger entries), damaged in each way, is refused by its path', (t) => {
  const { count, wrong } = check(REPLIES.map(encodeCommandReply), decodeCommandReply);
  t.diagnostic(`${count} damaged replies`);
  assert.deepEqual(wrong, []);
  assert.ok(count > 800, `only ${count} damages`);
});

test('every field of every command of a batch, and each id, damaged in each way, is refused by its path', (t) => {
  const ids = REQUESTS.map((_, i) => Buffer.alloc(16, i + 1).toString('base64url'));
  const batch = encodeCommandBatch(REQUESTS.map((r, i) => ({ id: ids[i]!, request: encodeRequestPart(r) })));
  const { count, wrong } = check([batch], decodeCommandMessage);
  t.diagnostic(`${count} damaged batches`);
  assert.deepEqual(wrong, []);
  // Each request's own damages, plus the entries' and each id's.
  assert.ok(
    count > check(REQUESTS.map(encodeCommandRequest), decodeCommandRequest).count,
    `only ${count} damages`,
  );
});

test('every field of every reply in a batch’s replies, damaged in each way, is refused by its path', (t) => {
  // A `replies` frame holds whole `reply` frames (not exact JSON): each one's body is damaged
  // under its own path, `$.b[i].b…`, and must be refused there.
  const bytes = encodeCommandReplies(REPLIES.map(commandReplyText));
  const frames = (parse(bytes).b as { [key: string]: Json }[]).map((f) => structuredClone(f));
  const wrong: string[] = [];
  let count = 0;
  for (const [i, frame] of frames.entries()) {
    for (const { what, path, frame: damaged, valid } of damages(frame)) {
      count += 1;
      const copy = structuredClone(frames);
      copy[i] = damaged;
      const at = path.replace(/^\$\.b/, `$.b[${i}].b`);
      try {
        decodeCommandReplies(jsonBytes({ ...parse(bytes), b: copy }), REPLIES.length);
        if (!valid) wrong.push(`${at} ${what}: read as a valid message`);
      } catch (error) {
        if (valid) wrong.push(`${at} ${what}: refused although the field is optional`);
        else if (!(error instanceof WireFormatError) || error.path !== at)
          wrong.push(`${at} ${what}: refused as ${String(error)}`);
      }
    }
  }
  t.diagnostic(`${count} damaged replies in batches`);
  assert.deepEqual(wrong, []);
  assert.ok(count > 800, `only ${count} damages`);
});

test('a batch envelope: its sequence damaged in each way, its payload missing, a field too many', () => {
  const { count, wrong } = check([encodeBatch({ sequence: 5, payload: { any: ['data', 1n] } })], (bytes) =>
    decodeBatch(bytes),
  );
  assert.deepEqual(wrong, []);
  assert.equal(count, 1 + 2 + VALUE_DAMAGES.length);
});
