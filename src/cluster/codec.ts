/**
 * The cluster's wire format: what a gateway sends the engine (a command, with its ledger reference
 * or Idempotency-Key), what the engine answers, and the envelope of one committed batch.
 *
 * Each message is UTF-8 JSON `{"v":3,"t":<type>,"b":<body>}`: the version and type are read
 * first, so a message of another version is refused with a message that says so, and the body is
 * exact JSON (exact-json.ts: no JSON number anywhere, bigints kept, every amount exact).
 * Decoding validates the whole shape — every field, its type, safe-integer quantities, the enums —
 * and throws a WireFormatError naming the first bad field; it never returns a half-valid value.
 */

import {
  AmendReason,
  type Amount,
  type AssetCode,
  type AssetSpec,
  type AssetType,
  type ExecutionType,
  type FeeRate,
  type MarketId,
  type MarketSpec,
  type Micros,
  type OrderId,
  type OrderStatus,
  type OrderType,
  type Price,
  type SelfTradeMode,
  type Side,
  type TimeInForce,
  type TradeId,
  type TrailingOffset,
  type TrailingOffsetUnit,
  type UserId,
  type Volume,
} from '../domain/types.js';
import type {
  Command,
  CommandResult,
  EngineEvent,
  OrderState,
  PlaceResult,
  RejectCode,
  Rejection,
  Trade,
} from '../engine/types.js';
import type { IdempotencyRequest, LedgerRequest, OnceResult, PlaceOrder } from '../sequencer/ports.js';
import type { SubmitResult } from '../sequencer/sequencer.js';
import type { LedgerEntry, LedgerKind } from '../store/store.js';
import {
  type ExactValue,
  fromExactJson,
  jsonBytes,
  parseJsonBytes,
  toExactJson,
  WireFormatError,
} from './exact-json.js';

export { WireFormatError };

/**
 * The one version this code writes and reads. A change of any body's shape is a new version.
 * 3: a gateway sends the commands of one event-loop turn in one `commands` frame, answered by one
 * `replies` frame, and a command receipt keeps its reply in base64 (decisions 272, 273); 2 sent
 * one `command` per message and kept receipts as JSON text. 2: the market snapshot travels in
 * chunks (snapshot.ts), and so does a command reply over max_payload (a `reply-head` in place of
 * the `reply`; chunked.ts); 1 sent each in one message (a reply over max_payload not at all).
 */
export const WIRE_VERSION = 3;

export type FrameType = 'command' | 'reply' | 'batch' | 'commands' | 'replies';

/** A frame's bytes: `{"v":WIRE_VERSION,"t":type,"b":body}`, the body in exact JSON (also chunked.ts's frames). */
export function frame(type: string, body: unknown): Uint8Array {
  return jsonBytes({ v: WIRE_VERSION, t: type, b: toExactJson(body) });
}

/**
 * A frame of this version and one of `types`, with nothing beside v, t and b (WireFormatError
 * otherwise): its type and its body, exact JSON read back. Every frame of the cluster is read here.
 */
export function unframe<T extends string>(
  bytes: Uint8Array,
  types: readonly T[],
): { readonly type: T; readonly body: ExactValue } {
  return unframeJson(parseJsonBytes(bytes), types, '$');
}

/**
 * unframe's checks on a frame already parsed from JSON (`path` names it: `$`, or its place in a
 * `replies` frame); a `replies` frame's `b` is a list of frames, not exact JSON, so it is returned
 * as parsed (readReplies reads it).
 */
function unframeJson<T extends string>(
  json: unknown,
  types: readonly T[],
  path: string,
): { readonly type: T; readonly body: ExactValue } {
  if (typeof json !== 'object' || json === null || Array.isArray(json))
    throw new WireFormatError(path, 'not a message object');
  const { v, t, b } = json as { v?: unknown; t?: unknown; b?: unknown };
  if (v !== WIRE_VERSION)
    throw new WireFormatError(`${path}.v`, `version ${JSON.stringify(v)}, this side speaks ${WIRE_VERSION}`);
  if (typeof t !== 'string' || !(types as readonly string[]).includes(t))
    throw new WireFormatError(
      `${path}.t`,
      `a ${JSON.stringify(t)} message where a ${types.join(' or a ')} was expected`,
    );
  if (Object.keys(json).length !== 3) throw new WireFormatError(path, 'unexpected fields beside v, t and b');
  return { type: t as T, body: t === 'replies' ? (b as ExactValue) : fromExactJson(b, `${path}.b`) };
}

function frameBody(bytes: Uint8Array, type: FrameType): ExactValue {
  return unframe(bytes, [type]).body;
}

// ---------------------------------------------------------------------------------------------
// Validation helpers: each checks one value and returns it typed, or throws naming its path.

type Fields = { readonly [key: string]: ExactValue };

/** An object with every one of `keys`, and of `optional` any, nothing else (also chunked.ts's frame bodies). */
export function record(
  value: ExactValue,
  path: string,
  keys: readonly string[],
  optional: readonly string[] = [],
): Fields {
  if (typeof value !== 'object' || value === null || Array.isArray(value) || value instanceof Map)
    throw new WireFormatError(path, 'expected an object');
  const fields = value as Fields;
  for (const key of Object.keys(fields)) {
    if (!keys.includes(key) && !optional.includes(key))
      throw new WireFormatError(`${path}.${key}`, 'unknown field');
  }
  for (const key of keys) {
    if (!Object.hasOwn(fields, key)) throw new WireFormatError(`${path}.${key}`, 'missing');
  }
  return fields;
}

function str(value: ExactValue, path: string): string {
  if (typeof value !== 'string') throw new WireFormatError(path, 'expected a string');
  return value;
}

/** A quantity or id: an integer in the safe range (every amount of this code base is one, docs/money.md). */
function int<T extends number>(value: ExactValue, path: string): T {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || Object.is(value, -0))
    throw new WireFormatError(path, 'expected an integer in the safe range');
  return value as T;
}

/** What the store accepts for an Idempotency-Key (src/http/idempotency-key.ts) and its fingerprint. */
const IDEMPOTENCY_KEY = /^[\x20-\x7e]{1,255}$/;
const FINGERPRINT = /^[0-9a-f]{64}$/;

/** A string of the given form: a value the store would refuse fails here, before it reaches a commit. */
function matching(value: ExactValue, path: string, form: RegExp, expected: string): string {
  if (typeof value !== 'string' || !form.test(value)) throw new WireFormatError(path, `expected ${expected}`);
  return value;
}

function oneOf<T extends string>(value: ExactValue, path: string, allowed: readonly T[]): T {
  if (typeof value !== 'string' || !(allowed as readonly string[]).includes(value))
    throw new WireFormatError(path, `expected one of ${allowed.join(', ')}`);
  return value as T;
}

function list<T>(value: ExactValue, path: string, read: (v: ExactValue, p: string) => T): T[] {
  if (!Array.isArray(value)) throw new WireFormatError(path, 'expected an array');
  return (value as readonly ExactValue[]).map((v, i) => read(v, `${path}[${i}]`));
}

// ---------------------------------------------------------------------------------------------
// Shapes: an object's fields, each with its reader, stated once. `shaped` checks the field set
// (record: unknown, then missing) and reads each field in the shape's order at `path.field`, so
// the first bad field is named as a hand-written reader would name it.

type Reader<T> = (value: ExactValue, path: string) => T;
/** Every field of T with the reader that yields it (a field left out fails to compile). */
type Shape<T> = { readonly [K in keyof T]-?: Reader<T[K]> };
type Read<S> = { [K in keyof S]: S[K] extends Reader<infer T> ? T : never };

/**
 * An object holding exactly the fields of `shape` (and the already-read `head` keys, not
 * returned), those named in `optional` only when present: an absent one stays absent and a
 * present `undefined` stays `undefined`, so the value compares equal after the trip.
 */
function shaped<S extends { readonly [key: string]: Reader<unknown> }>(
  value: ExactValue,
  path: string,
  shape: S,
  head: readonly string[] = [],
  optional: readonly string[] = [],
): Read<S> {
  const keys = Object.keys(shape);
  const required = optional.length === 0 ? keys : keys.filter((k) => !optional.includes(k));
  const f = record(value, path, head.length === 0 ? required : [...head, ...required], optional);
  const out: { [key: string]: unknown } = {};
  for (const key of keys) {
    if (!Object.hasOwn(f, key)) continue;
    const v = f[key];
    out[key] = v === undefined && optional.includes(key) ? undefined : shape[key]!(v!, `${path}.${key}`);
  }
  return out as Read<S>;
}

const enumOf =
  <T extends string>(allowed: readonly T[]): Reader<T> =>
  (v, p) =>
    oneOf(v, p, allowed);
const nullOr =
  <T>(read: Reader<T>): Reader<T | null> =>
  (v, p) =>
    v === null ? null : read(v, p);
const assetCode: Reader<AssetCode> = (v, p) => str(v, p) as AssetCode;
/** A flag that is absent when false, so present only as true. */
const onlyTrue = (v: ExactValue, p: string): true => {
  if (v !== true) throw new WireFormatError(p, 'expected true (the field is absent when false)');
  return v;
};
const bool: Reader<boolean> = (v, p) => {
  if (typeof v !== 'boolean') throw new WireFormatError(p, 'expected a boolean');
  return v;
};

/**
 * Every value of the union T, in a list: a value added to T (in the engine or the domain types)
 * and not to the list fails to compile here, where the codec would otherwise refuse it.
 */
const every =
  <T extends string>() =>
  <const L extends readonly T[]>(list: L & ([Exclude<T, L[number]>] extends [never] ? unknown : never)): L =>
    list;

const SIDES = every<Side>()(['buy', 'sell']);
const ORDER_TYPES = every<OrderType>()([
  'limit',
  'market',
  'stop-loss',
  'take-profit',
  'stop-loss-limit',
  'take-profit-limit',
  'trailing-stop',
]);
const EXECUTION_TYPES = every<ExecutionType>()(['limit', 'market']);
const TRAILING_OFFSET_UNITS = every<TrailingOffsetUnit>()(['ticks', 'bps']);
const ORDER_STATUSES = every<OrderStatus>()(['open', 'closed', 'canceled']);
const ASSET_TYPES = every<AssetType>()(['crypto', 'fiat']);
const LEDGER_KINDS = every<LedgerKind>()(['deposit', 'withdrawal']);
const TIMES_IN_FORCE = every<TimeInForce>()(['GTC', 'IOC', 'FOK', 'GTD']);
const SELF_TRADE_MODES = every<SelfTradeMode>()([
  'cancel-oldest',
  'cancel-newest',
  'cancel-both',
  'decrement',
]);
const AMEND_REASONS = every<AmendReason>()([AmendReason.user, AmendReason.selfTradeDecrement]);
export const REJECT_CODES = every<RejectCode>()([
  'asset_exists',
  'unknown_asset',
  'market_exists',
  'unknown_market',
  'invalid_decimals',
  'invalid_amount',
  'invalid_price',
  'invalid_volume',
  'below_ordermin',
  'too_large',
  'insufficient_funds',
  'order_not_found',
  'order_not_open',
  'invalid_time_in_force',
  'invalid_post_only',
  'invalid_expire_time',
  'invalid_client_order_id',
  'duplicate_client_order_id',
  'invalid_stp',
  'too_many_open_orders',
  'order_value_too_small',
  'volume_not_above_executed',
  'post_only_would_take',
  'nothing_to_amend',
  'invalid_timeout',
  'invalid_batch',
  'invalid_trigger_price',
  'trigger_would_fire',
  'price_not_allowed',
  'invalid_trailing_offset',
  'invalid_conditional_controls',
]);

const ASSET = {
  code: assetCode,
  name: str,
  type: enumOf(ASSET_TYPES),
  decimals: int<number>,
} satisfies Shape<AssetSpec>;

/** A market's parameters: a createMarket command's fields, and a MarketSpec's beside its id. */
const MARKET_PARAMETERS = {
  base: assetCode,
  quote: assetCode,
  pairDecimals: int<number>,
  lotDecimals: int<number>,
  ordermin: int<Volume>,
  makerFee: int<FeeRate>,
  takerFee: int<FeeRate>,
} satisfies Shape<Omit<MarketSpec, 'id'>>;

const MARKET = { id: int<MarketId>, ...MARKET_PARAMETERS } satisfies Shape<MarketSpec>;

/** A deposit's or withdrawal's fields (the command's; the event adds its time). */
const LEDGER_MOVE = { userId: int<UserId>, asset: assetCode, amount: int<Amount> };

// ---------------------------------------------------------------------------------------------
// Commands

type CommandOf<K extends Command['kind']> = Omit<Extract<Command, { kind: K }>, 'kind'>;

const read =
  <S extends { readonly [key: string]: Reader<unknown> }>(
    shape: S,
    optional: readonly string[] = [],
  ): Reader<Read<S>> =>
  (v, p) =>
    shaped(v, p, shape, [], optional);

const TRAILING_OFFSET = {
  unit: enumOf(TRAILING_OFFSET_UNITS),
  amount: int<number>,
} satisfies Shape<TrailingOffset>;

/** A placeOrder's order-control and conditional fields: each may be absent (engine/types.ts, PlaceOrder). */
const PLACE_ORDER_OPTIONAL = [
  'timeInForce',
  'postOnly',
  'clientOrderId',
  'stp',
  'expireTime',
  'triggerPrice',
  'trailingOffset',
];
const PLACE_ORDER = {
  userId: int<UserId>,
  marketId: int<MarketId>,
  side: enumOf(SIDES),
  type: enumOf(ORDER_TYPES),
  price: int<Price>,
  volume: int<Volume>,
  timeInForce: enumOf(TIMES_IN_FORCE),
  postOnly: bool,
  clientOrderId: nullOr(str),
  stp: enumOf(SELF_TRADE_MODES),
  expireTime: int<Micros>,
  triggerPrice: int<Price>,
  trailingOffset: read(TRAILING_OFFSET),
};
const AMEND_OPTIONAL = ['price', 'volume', 'clientOrderId', 'triggerPrice'];

/** One order of a placeOrders batch: a placeOrder command. */
function readPlaceOrder(value: ExactValue, path: string): Extract<Command, { kind: 'placeOrder' }> {
  const fields = record(value, path, ['kind'], Object.keys(PLACE_ORDER));
  const kind = oneOf(fields.kind!, `${path}.kind`, ['placeOrder'] as const);
  return { kind, ...shaped(value, path, PLACE_ORDER, ['kind'], PLACE_ORDER_OPTIONAL) };
}

const COMMAND_SHAPES = {
  createAsset: { ...ASSET, code: str },
  createMarket: MARKET_PARAMETERS,
  deposit: LEDGER_MOVE,
  withdraw: LEDGER_MOVE,
  placeOrder: PLACE_ORDER,
  cancelOrder: { userId: int<UserId>, orderId: int<OrderId> },
  cancelClientOrder: { userId: int<UserId>, clientOrderId: str },
  amendOrder: {
    userId: int<UserId>,
    orderId: int<OrderId>,
    price: int<Price>,
    volume: int<Volume>,
    clientOrderId: nullOr(str),
    triggerPrice: int<Price>,
  },
  cancelAllOrders: { userId: int<UserId>, marketId: int<MarketId> },
  cancelAllAfter: { userId: int<UserId>, timeout: int<Micros> },
  placeOrders: { orders: (v: ExactValue, p: string) => list(v, p, readPlaceOrder) },
  tick: {},
} satisfies { readonly [K in Command['kind']]: Shape<CommandOf<K>> };
const COMMAND_KINDS = Object.keys(COMMAND_SHAPES) as Command['kind'][];

/**
 * The command kinds a gateway sends, the only ones the engine takes over NATS: a client's own
 * orders. Deposits, withdrawals and catalogue changes are operator commands, taken only through
 * the engine's admin API, so a stolen gateway credential (even with the cluster key) cannot mint
 * money. A new client command is one more entry here.
 */
export const GATEWAY_COMMAND_KINDS: ReadonlySet<Command['kind']> = new Set<Command['kind']>([
  'placeOrder',
  'placeOrders',
  'cancelOrder',
  'cancelClientOrder',
  'amendOrder',
  'cancelAllOrders',
  'cancelAllAfter',
]);
const COMMAND_FIELDS = [...new Set(COMMAND_KINDS.flatMap((k) => Object.keys(COMMAND_SHAPES[k])))];

export function readCommand(value: ExactValue, path = '$.command'): Command {
  const kind = oneOf(
    record(value, path, ['kind'], COMMAND_FIELDS).kind ?? null,
    `${path}.kind`,
    COMMAND_KINDS,
  );
  const head = ['kind'];
  switch (kind) {
    case 'createAsset':
      return { kind, ...shaped(value, path, COMMAND_SHAPES.createAsset, head) };
    case 'createMarket':
      return { kind, ...shaped(value, path, COMMAND_SHAPES.createMarket, head) };
    case 'deposit':
    case 'withdraw':
      return { kind, ...shaped(value, path, LEDGER_MOVE, head) };
    case 'placeOrder':
      return { kind, ...shaped(value, path, PLACE_ORDER, head, PLACE_ORDER_OPTIONAL) };
    case 'cancelOrder':
      return { kind, ...shaped(value, path, COMMAND_SHAPES.cancelOrder, head) };
    case 'cancelClientOrder':
      return { kind, ...shaped(value, path, COMMAND_SHAPES.cancelClientOrder, head) };
    case 'amendOrder':
      return { kind, ...shaped(value, path, COMMAND_SHAPES.amendOrder, head, AMEND_OPTIONAL) };
    case 'cancelAllOrders':
      return { kind, ...shaped(value, path, COMMAND_SHAPES.cancelAllOrders, head, ['marketId']) };
    case 'cancelAllAfter':
      return { kind, ...shaped(value, path, COMMAND_SHAPES.cancelAllAfter, head) };
    case 'placeOrders':
      return { kind, ...shaped(value, path, COMMAND_SHAPES.placeOrders, head) };
    case 'tick':
      return { kind, ...shaped(value, path, COMMAND_SHAPES.tick, head) };
  }
}

// ---------------------------------------------------------------------------------------------
// Results and events

const ORDER = {
  id: int<OrderId>,
  userId: int<UserId>,
  marketId: int<MarketId>,
  side: enumOf(SIDES),
  type: enumOf(ORDER_TYPES),
  price: int<Price>,
  volume: int<Volume>,
  executed: int<Volume>,
  status: enumOf(ORDER_STATUSES),
  reason: nullOr(str),
  openTime: int<Micros>,
  closeTime: nullOr(int<Micros>),
  cost: int<Amount>,
  fee: int<Amount>,
  feeExcess: int<number>,
  reserved: int<Amount>,
  timeInForce: enumOf(TIMES_IN_FORCE),
  postOnly: onlyTrue,
  clientOrderId: str,
  stp: enumOf(SELF_TRADE_MODES),
  expireTime: int<Micros>,
  priority: int<number>,
  triggerPrice: int<Price>,
  trailingOffset: read(TRAILING_OFFSET),
  trailingBest: int<Price>,
  triggered: onlyTrue,
} satisfies Shape<OrderState>;
/** OrderState's order-control and conditional fields, absent when they hold their defaults. */
const ORDER_OPTIONAL = [
  'timeInForce',
  'postOnly',
  'clientOrderId',
  'stp',
  'expireTime',
  'priority',
  'triggerPrice',
  'trailingOffset',
  'trailingBest',
  'triggered',
];

const TRADE = {
  id: int<TradeId>,
  marketId: int<MarketId>,
  price: int<Price>,
  volume: int<Volume>,
  cost: int<Amount>,
  takerOrderId: int<OrderId>,
  makerOrderId: int<OrderId>,
  takerUserId: int<UserId>,
  makerUserId: int<UserId>,
  takerSide: enumOf(SIDES),
  takerType: enumOf(EXECUTION_TYPES),
  takerFee: int<Amount>,
  makerFee: int<Amount>,
  time: int<Micros>,
} satisfies Shape<Trade>;

type EventOf<T extends EngineEvent['type']> = Omit<Extract<EngineEvent, { type: T }>, 'type'>;

const LEDGER_EVENT = { ...LEDGER_MOVE, time: int<Micros> };
const ORDER_EVENT = { order: read(ORDER, ORDER_OPTIONAL) };
const EVENT_SHAPES = {
  assetCreated: { asset: read(ASSET) },
  marketCreated: { market: read(MARKET) },
  deposited: LEDGER_EVENT,
  withdrawn: LEDGER_EVENT,
  orderAccepted: ORDER_EVENT,
  trade: { trade: read(TRADE) },
  orderDone: ORDER_EVENT,
  orderAmended: { ...ORDER_EVENT, reason: enumOf(AMEND_REASONS) },
  cancelAllAfterSet: { userId: int<UserId>, triggerTime: int<Micros>, time: int<Micros> },
  cancelAllAfterFired: { userId: int<UserId>, triggerTime: int<Micros> },
  orderTriggered: { ...ORDER_EVENT, lastPrice: int<Price>, time: int<Micros> },
} satisfies { readonly [T in EngineEvent['type']]: Shape<EventOf<T>> };
const EVENT_TYPES = Object.keys(EVENT_SHAPES) as EngineEvent['type'][];
const EVENT_FIELDS = [...new Set(EVENT_TYPES.flatMap((t) => Object.keys(EVENT_SHAPES[t])))];

export function readEvent(value: ExactValue, path: string): EngineEvent {
  const type = oneOf(record(value, path, ['type'], EVENT_FIELDS).type!, `${path}.type`, EVENT_TYPES);
  const head = ['type'];
  switch (type) {
    case 'assetCreated':
      return { type, ...shaped(value, path, EVENT_SHAPES.assetCreated, head) };
    case 'marketCreated':
      return { type, ...shaped(value, path, EVENT_SHAPES.marketCreated, head) };
    case 'deposited':
    case 'withdrawn':
      return { type, ...shaped(value, path, LEDGER_EVENT, head) };
    case 'orderAccepted':
    case 'orderDone':
      return { type, ...shaped(value, path, ORDER_EVENT, head) };
    case 'trade':
      return { type, ...shaped(value, path, EVENT_SHAPES.trade, head) };
    case 'orderAmended':
      return { type, ...shaped(value, path, EVENT_SHAPES.orderAmended, head) };
    case 'cancelAllAfterSet':
      return { type, ...shaped(value, path, EVENT_SHAPES.cancelAllAfterSet, head) };
    case 'cancelAllAfterFired':
      return { type, ...shaped(value, path, EVENT_SHAPES.cancelAllAfterFired, head) };
    case 'orderTriggered':
      return { type, ...shaped(value, path, EVENT_SHAPES.orderTriggered, head) };
  }
}

/** One item of a placeOrders result: the order's id, or its rejection. */
function readPlaceResult(value: ExactValue, path: string): PlaceResult {
  const head = record(value, path, ['ok'], ['orderId', 'error']);
  if (head.ok === true) {
    const f = record(value, path, ['ok', 'orderId']);
    return { ok: true, orderId: int<OrderId>(f.orderId!, `${path}.orderId`) };
  }
  if (head.ok === false) {
    const f = record(value, path, ['ok', 'error']);
    return { ok: false, error: readRejection(f.error!, `${path}.error`) };
  }
  throw new WireFormatError(`${path}.ok`, 'expected true or false');
}

function readRejection(value: ExactValue, path: string): Rejection {
  const f = record(value, path, ['code', 'message'], ['field']);
  const rejection: Rejection = {
    code: oneOf(f.code!, `${path}.code`, REJECT_CODES),
    message: str(f.message!, `${path}.message`),
  };
  // `field` absent and `field: undefined` are kept apart, so the result compares equal after the trip.
  if (!Object.hasOwn(f, 'field')) return rejection;
  const field = f.field === undefined ? undefined : str(f.field, `${path}.field`);
  return { ...rejection, field };
}

const LEDGER_ENTRY = {
  userId: int<UserId>,
  asset: assetCode,
  kind: enumOf(LEDGER_KINDS),
  amount: int<Amount>,
  reference: nullOr(str),
  time: int<Micros>,
} satisfies Shape<LedgerEntry>;

/**
 * A command's result as Exchange.submit gives it: the engine's CommandResult, and for a deposit
 * or withdrawal the ledger entry (`recorded`) and whether its reference was already used (`duplicate`).
 */
export function readCommandResult(value: ExactValue, path = '$.result'): SubmitResult {
  const head = record(value, path, ['ok'], ['events', 'error', 'duplicate', 'recorded', 'results']);
  if (head.ok === true) {
    const f = record(value, path, ['ok', 'events'], ['duplicate', 'recorded', 'results']);
    let result: SubmitResult = { ok: true, events: list(f.events!, `${path}.events`, readEvent) };
    if (Object.hasOwn(f, 'results'))
      result = { ...result, results: list(f.results!, `${path}.results`, readPlaceResult) };
    // Present-but-undefined and absent are kept apart, so the result compares equal after the trip.
    if (Object.hasOwn(f, 'duplicate')) {
      const duplicate = f.duplicate;
      if (duplicate !== undefined && typeof duplicate !== 'boolean')
        throw new WireFormatError(`${path}.duplicate`, 'expected a boolean');
      result = { ...result, duplicate };
    }
    if (Object.hasOwn(f, 'recorded')) {
      const recorded =
        f.recorded === undefined ? undefined : shaped(f.recorded, `${path}.recorded`, LEDGER_ENTRY);
      result = { ...result, recorded };
    }
    return result;
  }
  if (head.ok === false) {
    // `events`: deadlines that fired before the command was refused (CommandResult).
    const f = record(value, path, ['ok', 'error'], ['events']);
    const refused: CommandResult = { ok: false, error: readRejection(f.error!, `${path}.error`) };
    if (!Object.hasOwn(f, 'events')) return refused;
    return { ...refused, events: list(f.events!, `${path}.events`, readEvent) };
  }
  throw new WireFormatError(`${path}.ok`, 'expected true or false');
}

// ---------------------------------------------------------------------------------------------
// Command request and reply frames

/** What a gateway asks of the engine: one Exchange.submit or Exchange.submitOnce call. */
export type CommandRequest =
  | { readonly op: 'submit'; readonly command: Command; readonly ledger?: LedgerRequest }
  | { readonly op: 'submitOnce'; readonly command: PlaceOrder; readonly idempotency: IdempotencyRequest };

/**
 * Why the engine did not produce a result: `unavailable` — the store could not commit
 * (StoreUnavailableError; the command changed nothing, or its fate is what a local commit failure's
 * is); `failed` — a fault in the engine process (a 500 today too); `bad_request` — the engine could
 * not read the request (another wire version, a bug): nothing was applied; `refused` — the request
 * is not one the engine takes over NATS (no valid MAC under the cluster key, an operator command,
 * a deadline too far ahead): nothing was applied.
 */
export type RemoteErrorCode = 'unavailable' | 'failed' | 'bad_request' | 'refused';
const REMOTE_ERROR_CODES: readonly RemoteErrorCode[] = ['unavailable', 'failed', 'bad_request', 'refused'];

export type CommandReply =
  | { readonly kind: 'result'; readonly result: SubmitResult }
  | { readonly kind: 'once'; readonly once: OnceResult }
  | { readonly kind: 'error'; readonly code: RemoteErrorCode; readonly message: string };

export function encodeCommandRequest(request: CommandRequest): Uint8Array {
  return frame('command', request);
}

export function decodeCommandRequest(bytes: Uint8Array): CommandRequest {
  return readCommandRequest(frameBody(bytes, 'command'), '$.b');
}

function readCommandRequest(body: ExactValue, path: string): CommandRequest {
  const head = record(body, path, ['op', 'command'], ['ledger', 'idempotency']);
  const op = oneOf(head.op!, `${path}.op`, ['submit', 'submitOnce'] as const);
  if (op === 'submit') {
    const f = record(body, path, ['op', 'command'], ['ledger']);
    const command = readCommand(f.command!, `${path}.command`);
    if (!Object.hasOwn(f, 'ledger')) return { op, command };
    if (f.ledger === undefined) return { op, command, ledger: undefined };
    const l = record(f.ledger, `${path}.ledger`, [], ['reference']);
    if (!Object.hasOwn(l, 'reference')) return { op, command, ledger: {} };
    const reference = l.reference === undefined ? undefined : str(l.reference, `${path}.ledger.reference`);
    return { op, command, ledger: { reference } };
  }
  const f = record(body, path, ['op', 'command', 'idempotency']);
  const command = readCommand(f.command!, `${path}.command`);
  if (command.kind !== 'placeOrder')
    throw new WireFormatError(`${path}.command.kind`, 'submitOnce takes placeOrder only');
  const i = record(f.idempotency!, `${path}.idempotency`, ['key', 'fingerprint']);
  return {
    op,
    command,
    idempotency: {
      key: matching(
        i.key!,
        `${path}.idempotency.key`,
        IDEMPOTENCY_KEY,
        '1 to 255 printable ASCII characters',
      ),
      fingerprint: matching(
        i.fingerprint!,
        `${path}.idempotency.fingerprint`,
        FINGERPRINT,
        'a SHA-256 in lowercase hex',
      ),
    },
  };
}

export function encodeCommandReply(reply: CommandReply): Uint8Array {
  return frame('reply', reply);
}

/** A `reply` frame as text: what a `replies` frame holds as it is (and a command receipt, in base64). */
export function commandReplyText(reply: CommandReply): string {
  return JSON.stringify({ v: WIRE_VERSION, t: 'reply', b: toExactJson(reply) });
}

/**
 * A command receipt's text (what the store keeps of an applied command's answer): the base64 of
 * its `reply` frame (decision 273). Base64 has no character a PostgreSQL array literal must
 * escape, where the JSON text has hundreds of quotes, each escaped in the group commit.
 */
export function receiptText(replyText: string): string {
  return Buffer.from(replyText, 'utf8').toString('base64');
}

/**
 * A receipt's `reply` frame, as text (what receiptText kept). A receipt of version 2 (JSON text)
 * does not come back as a frame of this version: its command came from a gateway of version 2,
 * whose resends this engine refuses by version anyway, applying nothing.
 */
export function receiptReplyText(receipt: string): string {
  return Buffer.from(receipt, 'base64').toString('utf8');
}

function readOnce(value: ExactValue, path: string): OnceResult {
  const head = record(value, path, ['kind'], ['result', 'orderId']);
  const kind = oneOf(head.kind!, `${path}.kind`, ['executed', 'replayed', 'mismatch'] as const);
  switch (kind) {
    case 'executed':
      return {
        kind,
        result: readCommandResult(record(value, path, ['kind', 'result']).result!, `${path}.result`),
      };
    case 'replayed':
      return {
        kind,
        orderId: int<OrderId>(record(value, path, ['kind', 'orderId']).orderId!, `${path}.orderId`),
      };
    case 'mismatch':
      record(value, path, ['kind']);
      return { kind };
  }
}

export function decodeCommandReply(bytes: Uint8Array): CommandReply {
  return readCommandReply(frameBody(bytes, 'reply'), '$.b');
}

function readCommandReply(body: ExactValue, path: string): CommandReply {
  const head = record(body, path, ['kind'], ['result', 'once', 'code', 'message']);
  const kind = oneOf(head.kind!, `${path}.kind`, ['result', 'once', 'error'] as const);
  switch (kind) {
    case 'result':
      return {
        kind,
        result: readCommandResult(record(body, path, ['kind', 'result']).result!, `${path}.result`),
      };
    case 'once':
      return { kind, once: readOnce(record(body, path, ['kind', 'once']).once!, `${path}.once`) };
    case 'error': {
      const f = record(body, path, ['kind', 'code', 'message']);
      return {
        kind,
        code: oneOf(f.code!, `${path}.code`, REMOTE_ERROR_CODES),
        message: str(f.message!, `${path}.message`),
      };
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Command batches: the commands a gateway sent in one event-loop turn, in one message (decision 272)

/** A command request as exact-JSON text, made when the command is submitted (a bad one throws there). */
export interface EncodedRequest {
  readonly text: string;
}

/** The exact-JSON text of a request (TypeError for a command that is not plain data: the caller's bug). */
export function encodeRequestPart(request: CommandRequest): EncodedRequest {
  return { text: JSON.stringify(toExactJson(request)) };
}

/** One command of a `commands` frame: its id (what the engine answers at most once) and the request. */
export interface BatchEntry<R = CommandRequest> {
  readonly id: string;
  readonly request: R;
}

/**
 * A `commands` frame: `{"v":3,"t":"commands","b":{"entries":[{"id":…,"request":…},…]}}`, the body
 * in exact JSON like a `command` frame's, each entry's request what a `command` frame's body is.
 */
export function encodeCommandBatch(entries: readonly BatchEntry<EncodedRequest>[]): Uint8Array {
  let text = `{"v":${WIRE_VERSION},"t":"commands","b":{"entries":[`;
  for (const [i, { id, request }] of entries.entries())
    text += `${i > 0 ? ',' : ''}{"id":${JSON.stringify(toExactJson(id))},"request":${request.text}}`;
  return Buffer.from(`${text}]}}`, 'utf8');
}

/** A command id: 16 random bytes, base64url (what a command receipt's id is). */
const ENTRY_ID = /^[A-Za-z0-9_-]{22}$/;
/** The most commands one `commands` frame may hold (a gateway sends at most MAX_BATCH_COMMANDS). */
export const MAX_BATCH_ENTRIES = 1024;

/**
 * What arrived on the command subject: one command (`command`, as gateways before command batches
 * send it) or a batch (`commands`). WireFormatError for anything else, for a batch that is empty,
 * too long, or names an id twice.
 */
export type CommandMessage =
  | { readonly kind: 'command'; readonly request: CommandRequest }
  | { readonly kind: 'commands'; readonly entries: readonly BatchEntry[] };

export function decodeCommandMessage(bytes: Uint8Array): CommandMessage {
  const { type, body } = unframe(bytes, ['command', 'commands'] as const);
  if (type === 'command') return { kind: 'command', request: readCommandRequest(body, '$.b') };
  const f = record(body, '$.b', ['entries']);
  if (!Array.isArray(f.entries)) throw new WireFormatError('$.b.entries', 'expected an array');
  const raw = f.entries as readonly ExactValue[];
  if (raw.length === 0 || raw.length > MAX_BATCH_ENTRIES)
    throw new WireFormatError('$.b.entries', `expected 1 to ${MAX_BATCH_ENTRIES} commands`);
  const ids = new Set<string>();
  const entries = raw.map((value, i) => {
    const path = `$.b.entries[${i}]`;
    const e = record(value, path, ['id', 'request']);
    const id = matching(e.id!, `${path}.id`, ENTRY_ID, 'a command id (22 base64url characters)');
    if (ids.has(id)) throw new WireFormatError(`${path}.id`, 'an id named twice in one batch');
    ids.add(id);
    return { id, request: readCommandRequest(e.request!, `${path}.request`) };
  });
  return { kind: 'commands', entries };
}

/**
 * A `replies` frame: the answers to a `commands` frame, in its order, each a whole `reply` frame
 * as commandReplyText wrote it (so a committed receipt's text goes as it is):
 * `{"v":3,"t":"replies","b":[{"v":3,"t":"reply","b":…},…]}`.
 */
export function encodeCommandReplies(texts: readonly string[]): Uint8Array {
  return Buffer.from(`{"v":${WIRE_VERSION},"t":"replies","b":[${texts.join(',')}]}`, 'utf8');
}

/**
 * The answer to a `commands` frame of `count` commands: a `replies` frame with one reply each, or a
 * single `reply` frame (always an error: the batch as a whole was refused or could not be read),
 * which answers every one of them. WireFormatError for anything else, or another count of replies.
 */
export function decodeCommandReplies(bytes: Uint8Array, count: number): readonly CommandReply[] {
  const { type, body } = unframe(bytes, ['replies', 'reply'] as const);
  if (type === 'reply') {
    const reply = readCommandReply(body, '$.b');
    if (reply.kind !== 'error')
      throw new WireFormatError('$.b.kind', 'a single reply to a batch must be an error');
    return Array.from({ length: count }, () => reply);
  }
  if (!Array.isArray(body)) throw new WireFormatError('$.b', 'expected an array of reply frames');
  const frames = body as readonly unknown[];
  if (frames.length !== count)
    throw new WireFormatError('$.b', `${frames.length} replies to a batch of ${count} commands`);
  return frames.map((json, i) =>
    readCommandReply(unframeJson(json, ['reply'] as const, `$.b[${i}]`).body, `$.b[${i}].b`),
  );
}

// ---------------------------------------------------------------------------------------------
// Committed batches

/**
 * One committed batch as it travels: its global batch sequence number (1, 2, 3, … one per commit,
 * no gaps at the source) and its payload, any plain data (exact-json.ts): the transport does not
 * depend on what a batch holds. A reader validates the payload's shape with its own reader.
 */
export interface BatchEnvelope<P = ExactValue> {
  readonly sequence: number;
  readonly payload: P;
}

export function encodeBatch<P>(envelope: BatchEnvelope<P>): Uint8Array {
  batchSequence(envelope.sequence, '$.b.sequence');
  return frame('batch', { sequence: envelope.sequence, payload: envelope.payload });
}

/** A batch sequence number: a positive safe integer. */
export function batchSequence(value: unknown, path: string): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 1)
    throw new WireFormatError(path, 'expected a batch sequence number (a positive safe integer)');
  return value;
}

export function decodeBatch(bytes: Uint8Array): BatchEnvelope;
export function decodeBatch<P>(
  bytes: Uint8Array,
  readPayload: (value: ExactValue, path: string) => P,
): BatchEnvelope<P>;
export function decodeBatch<P>(
  bytes: Uint8Array,
  readPayload?: (value: ExactValue, path: string) => P,
): BatchEnvelope<P | ExactValue> {
  const body = frameBody(bytes, 'batch');
  const f = record(body, '$.b', ['sequence', 'payload']);
  const sequence = batchSequence(f.sequence, '$.b.sequence');
  const payload = readPayload === undefined ? f.payload! : readPayload(f.payload!, '$.b.payload');
  return { sequence, payload };
}
