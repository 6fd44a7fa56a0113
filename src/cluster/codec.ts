/**
 * The cluster's wire format: what a gateway sends the engine (a command, with its ledger reference
 * or Idempotency-Key), what the engine answers, and the envelope of one committed batch.
 *
 * Each message is UTF-8 JSON `{"v":2,"t":<type>,"b":<body>}`: the version and type are read
 * first, so a message of another version is refused with a message that says so, and the body is
 * exact JSON (exact-json.ts: no JSON number anywhere, bigints kept, every amount exact).
 * Decoding validates the whole shape — every field, its type, safe-integer quantities, the enums —
 * and throws a WireFormatError naming the first bad field; it never returns a half-valid value.
 */

import type {
  Amount,
  AssetCode,
  AssetSpec,
  AssetType,
  FeeRate,
  MarketId,
  MarketSpec,
  Micros,
  OrderId,
  OrderStatus,
  OrderType,
  Price,
  Side,
  TradeId,
  UserId,
  Volume,
} from '../domain/types.js';
import type { Command, EngineEvent, OrderState, RejectCode, Rejection, Trade } from '../engine/types.js';
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
 * 2: the market snapshot travels in chunks (snapshot.ts); 1 sent it in one message.
 */
export const WIRE_VERSION = 2;

export type FrameType = 'command' | 'reply' | 'batch';

function frame(type: FrameType, body: unknown): Uint8Array {
  return jsonBytes({ v: WIRE_VERSION, t: type, b: toExactJson(body) });
}

function unframe(bytes: Uint8Array, type: FrameType): ExactValue {
  const json = parseJsonBytes(bytes);
  if (typeof json !== 'object' || json === null || Array.isArray(json))
    throw new WireFormatError('$', 'not a message object');
  const { v, t, b } = json as { v?: unknown; t?: unknown; b?: unknown };
  if (v !== WIRE_VERSION)
    throw new WireFormatError('$.v', `version ${JSON.stringify(v)}, this side speaks ${WIRE_VERSION}`);
  if (t !== type)
    throw new WireFormatError('$.t', `a ${JSON.stringify(t)} message where a ${type} was expected`);
  if (Object.keys(json).length !== 3) throw new WireFormatError('$', 'unexpected fields beside v, t and b');
  return fromExactJson(b, '$.b');
}

// ---------------------------------------------------------------------------------------------
// Validation helpers: each checks one value and returns it typed, or throws naming its path.

type Fields = { readonly [key: string]: ExactValue };

function record(
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

function oneOf<T extends string>(value: ExactValue, path: string, allowed: readonly T[]): T {
  if (typeof value !== 'string' || !(allowed as readonly string[]).includes(value))
    throw new WireFormatError(path, `expected one of ${allowed.join(', ')}`);
  return value as T;
}

function nullable<T>(value: ExactValue, path: string, read: (v: ExactValue, p: string) => T): T | null {
  return value === null ? null : read(value, path);
}

function list<T>(value: ExactValue, path: string, read: (v: ExactValue, p: string) => T): T[] {
  if (!Array.isArray(value)) throw new WireFormatError(path, 'expected an array');
  return (value as readonly ExactValue[]).map((v, i) => read(v, `${path}[${i}]`));
}

const SIDES: readonly Side[] = ['buy', 'sell'];
const ORDER_TYPES: readonly OrderType[] = ['limit', 'market'];
const ORDER_STATUSES: readonly OrderStatus[] = ['open', 'closed', 'canceled'];
const ASSET_TYPES: readonly AssetType[] = ['crypto', 'fiat'];
export const REJECT_CODES = [
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
] as const satisfies readonly RejectCode[];
// A RejectCode added to the engine and not here fails to compile: the codec would refuse it.
const everyRejectCode: [Exclude<RejectCode, (typeof REJECT_CODES)[number]>] extends [never] ? true : false =
  true;
void everyRejectCode;

// ---------------------------------------------------------------------------------------------
// Commands

const COMMAND_FIELDS: { readonly [K in Command['kind']]: readonly string[] } = {
  createAsset: ['kind', 'code', 'name', 'type', 'decimals'],
  createMarket: ['kind', 'base', 'quote', 'pairDecimals', 'lotDecimals', 'ordermin', 'makerFee', 'takerFee'],
  deposit: ['kind', 'userId', 'asset', 'amount'],
  withdraw: ['kind', 'userId', 'asset', 'amount'],
  placeOrder: ['kind', 'userId', 'marketId', 'side', 'type', 'price', 'volume'],
  cancelOrder: ['kind', 'userId', 'orderId'],
};
const COMMAND_KINDS = Object.keys(COMMAND_FIELDS) as Command['kind'][];

export function readCommand(value: ExactValue, path = '$.command'): Command {
  const kind = oneOf(
    record(
      value,
      path,
      ['kind'],
      COMMAND_KINDS.flatMap((k) => COMMAND_FIELDS[k]),
    ).kind ?? null,
    `${path}.kind`,
    COMMAND_KINDS,
  );
  const f = record(value, path, COMMAND_FIELDS[kind]);
  const at = (key: string) => `${path}.${key}`;
  switch (kind) {
    case 'createAsset':
      return {
        kind,
        code: str(f.code!, at('code')),
        name: str(f.name!, at('name')),
        type: oneOf(f.type!, at('type'), ASSET_TYPES),
        decimals: int(f.decimals!, at('decimals')),
      };
    case 'createMarket':
      return {
        kind,
        base: str(f.base!, at('base')) as AssetCode,
        quote: str(f.quote!, at('quote')) as AssetCode,
        pairDecimals: int(f.pairDecimals!, at('pairDecimals')),
        lotDecimals: int(f.lotDecimals!, at('lotDecimals')),
        ordermin: int<Volume>(f.ordermin!, at('ordermin')),
        makerFee: int<FeeRate>(f.makerFee!, at('makerFee')),
        takerFee: int<FeeRate>(f.takerFee!, at('takerFee')),
      };
    case 'deposit':
    case 'withdraw':
      return {
        kind,
        userId: int<UserId>(f.userId!, at('userId')),
        asset: str(f.asset!, at('asset')) as AssetCode,
        amount: int<Amount>(f.amount!, at('amount')),
      };
    case 'placeOrder':
      return {
        kind,
        userId: int<UserId>(f.userId!, at('userId')),
        marketId: int<MarketId>(f.marketId!, at('marketId')),
        side: oneOf(f.side!, at('side'), SIDES),
        type: oneOf(f.type!, at('type'), ORDER_TYPES),
        price: int<Price>(f.price!, at('price')),
        volume: int<Volume>(f.volume!, at('volume')),
      };
    case 'cancelOrder':
      return {
        kind,
        userId: int<UserId>(f.userId!, at('userId')),
        orderId: int<OrderId>(f.orderId!, at('orderId')),
      };
  }
}

// ---------------------------------------------------------------------------------------------
// Results and events

function readAsset(value: ExactValue, path: string): AssetSpec {
  const f = record(value, path, ['code', 'name', 'type', 'decimals']);
  return {
    code: str(f.code!, `${path}.code`) as AssetCode,
    name: str(f.name!, `${path}.name`),
    type: oneOf(f.type!, `${path}.type`, ASSET_TYPES),
    decimals: int(f.decimals!, `${path}.decimals`),
  };
}

function readMarket(value: ExactValue, path: string): MarketSpec {
  const f = record(value, path, COMMAND_FIELDS.createMarket.filter((k) => k !== 'kind').concat('id'));
  const at = (key: string) => `${path}.${key}`;
  return {
    id: int<MarketId>(f.id!, at('id')),
    base: str(f.base!, at('base')) as AssetCode,
    quote: str(f.quote!, at('quote')) as AssetCode,
    pairDecimals: int(f.pairDecimals!, at('pairDecimals')),
    lotDecimals: int(f.lotDecimals!, at('lotDecimals')),
    ordermin: int<Volume>(f.ordermin!, at('ordermin')),
    makerFee: int<FeeRate>(f.makerFee!, at('makerFee')),
    takerFee: int<FeeRate>(f.takerFee!, at('takerFee')),
  };
}

const ORDER_FIELDS = [
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
] as const satisfies readonly (keyof OrderState)[];

function readOrder(value: ExactValue, path: string): OrderState {
  const f = record(value, path, ORDER_FIELDS);
  const at = (key: string) => `${path}.${key}`;
  return {
    id: int<OrderId>(f.id!, at('id')),
    userId: int<UserId>(f.userId!, at('userId')),
    marketId: int<MarketId>(f.marketId!, at('marketId')),
    side: oneOf(f.side!, at('side'), SIDES),
    type: oneOf(f.type!, at('type'), ORDER_TYPES),
    price: int<Price>(f.price!, at('price')),
    volume: int<Volume>(f.volume!, at('volume')),
    executed: int<Volume>(f.executed!, at('executed')),
    status: oneOf(f.status!, at('status'), ORDER_STATUSES),
    reason: nullable(f.reason!, at('reason'), str),
    openTime: int<Micros>(f.openTime!, at('openTime')),
    closeTime: nullable(f.closeTime!, at('closeTime'), int<Micros>),
    cost: int<Amount>(f.cost!, at('cost')),
    fee: int<Amount>(f.fee!, at('fee')),
    feeExcess: int(f.feeExcess!, at('feeExcess')),
    reserved: int<Amount>(f.reserved!, at('reserved')),
  };
}

const TRADE_FIELDS = [
  'id',
  'marketId',
  'price',
  'volume',
  'cost',
  'takerOrderId',
  'makerOrderId',
  'takerUserId',
  'makerUserId',
  'takerSide',
  'takerType',
  'takerFee',
  'makerFee',
  'time',
] as const satisfies readonly (keyof Trade)[];

function readTrade(value: ExactValue, path: string): Trade {
  const f = record(value, path, TRADE_FIELDS);
  const at = (key: string) => `${path}.${key}`;
  return {
    id: int<TradeId>(f.id!, at('id')),
    marketId: int<MarketId>(f.marketId!, at('marketId')),
    price: int<Price>(f.price!, at('price')),
    volume: int<Volume>(f.volume!, at('volume')),
    cost: int<Amount>(f.cost!, at('cost')),
    takerOrderId: int<OrderId>(f.takerOrderId!, at('takerOrderId')),
    makerOrderId: int<OrderId>(f.makerOrderId!, at('makerOrderId')),
    takerUserId: int<UserId>(f.takerUserId!, at('takerUserId')),
    makerUserId: int<UserId>(f.makerUserId!, at('makerUserId')),
    takerSide: oneOf(f.takerSide!, at('takerSide'), SIDES),
    takerType: oneOf(f.takerType!, at('takerType'), ORDER_TYPES),
    takerFee: int<Amount>(f.takerFee!, at('takerFee')),
    makerFee: int<Amount>(f.makerFee!, at('makerFee')),
    time: int<Micros>(f.time!, at('time')),
  };
}

const EVENT_TYPES: readonly EngineEvent['type'][] = [
  'assetCreated',
  'marketCreated',
  'deposited',
  'withdrawn',
  'orderAccepted',
  'trade',
  'orderDone',
];

export function readEvent(value: ExactValue, path: string): EngineEvent {
  const head = record(
    value,
    path,
    ['type'],
    ['asset', 'market', 'userId', 'amount', 'time', 'order', 'trade'],
  );
  const type = oneOf(head.type!, `${path}.type`, EVENT_TYPES);
  const at = (key: string) => `${path}.${key}`;
  switch (type) {
    case 'assetCreated':
      return { type, asset: readAsset(record(value, path, ['type', 'asset']).asset!, at('asset')) };
    case 'marketCreated':
      return { type, market: readMarket(record(value, path, ['type', 'market']).market!, at('market')) };
    case 'deposited':
    case 'withdrawn': {
      const f = record(value, path, ['type', 'userId', 'asset', 'amount', 'time']);
      return {
        type,
        userId: int<UserId>(f.userId!, at('userId')),
        asset: str(f.asset!, at('asset')) as AssetCode,
        amount: int<Amount>(f.amount!, at('amount')),
        time: int<Micros>(f.time!, at('time')),
      };
    }
    case 'orderAccepted':
    case 'orderDone':
      return { type, order: readOrder(record(value, path, ['type', 'order']).order!, at('order')) };
    case 'trade':
      return { type, trade: readTrade(record(value, path, ['type', 'trade']).trade!, at('trade')) };
  }
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

const LEDGER_KINDS: readonly LedgerKind[] = ['deposit', 'withdrawal'];

function readLedgerEntry(value: ExactValue, path: string): LedgerEntry {
  const f = record(value, path, ['userId', 'asset', 'kind', 'amount', 'reference', 'time']);
  const at = (key: string) => `${path}.${key}`;
  return {
    userId: int<UserId>(f.userId!, at('userId')),
    asset: str(f.asset!, at('asset')) as AssetCode,
    kind: oneOf(f.kind!, at('kind'), LEDGER_KINDS),
    amount: int<Amount>(f.amount!, at('amount')),
    reference: nullable(f.reference!, at('reference'), str),
    time: int<Micros>(f.time!, at('time')),
  };
}

/**
 * A command's result as Exchange.submit gives it: the engine's CommandResult, and for a deposit
 * or withdrawal the ledger entry (`recorded`) and whether its reference was already used (`duplicate`).
 */
export function readCommandResult(value: ExactValue, path = '$.result'): SubmitResult {
  const head = record(value, path, ['ok'], ['events', 'error', 'duplicate', 'recorded']);
  if (head.ok === true) {
    const f = record(value, path, ['ok', 'events'], ['duplicate', 'recorded']);
    let result: SubmitResult = { ok: true, events: list(f.events!, `${path}.events`, readEvent) };
    // Present-but-undefined and absent are kept apart, so the result compares equal after the trip.
    if (Object.hasOwn(f, 'duplicate')) {
      const duplicate = f.duplicate;
      if (duplicate !== undefined && typeof duplicate !== 'boolean')
        throw new WireFormatError(`${path}.duplicate`, 'expected a boolean');
      result = { ...result, duplicate };
    }
    if (Object.hasOwn(f, 'recorded')) {
      const recorded = f.recorded === undefined ? undefined : readLedgerEntry(f.recorded, `${path}.recorded`);
      result = { ...result, recorded };
    }
    return result;
  }
  if (head.ok === false) {
    const f = record(value, path, ['ok', 'error']);
    return { ok: false, error: readRejection(f.error!, `${path}.error`) };
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
 * not read the request (another wire version, a bug): nothing was applied.
 */
export type RemoteErrorCode = 'unavailable' | 'failed' | 'bad_request';
const REMOTE_ERROR_CODES: readonly RemoteErrorCode[] = ['unavailable', 'failed', 'bad_request'];

export type CommandReply =
  | { readonly kind: 'result'; readonly result: SubmitResult }
  | { readonly kind: 'once'; readonly once: OnceResult }
  | { readonly kind: 'error'; readonly code: RemoteErrorCode; readonly message: string };

export function encodeCommandRequest(request: CommandRequest): Uint8Array {
  return frame('command', request);
}

export function decodeCommandRequest(bytes: Uint8Array): CommandRequest {
  const body = unframe(bytes, 'command');
  const head = record(body, '$.b', ['op', 'command'], ['ledger', 'idempotency']);
  const op = oneOf(head.op!, '$.b.op', ['submit', 'submitOnce'] as const);
  if (op === 'submit') {
    const f = record(body, '$.b', ['op', 'command'], ['ledger']);
    const command = readCommand(f.command!, '$.b.command');
    if (!Object.hasOwn(f, 'ledger')) return { op, command };
    if (f.ledger === undefined) return { op, command, ledger: undefined };
    const l = record(f.ledger, '$.b.ledger', [], ['reference']);
    if (!Object.hasOwn(l, 'reference')) return { op, command, ledger: {} };
    const reference = l.reference === undefined ? undefined : str(l.reference, '$.b.ledger.reference');
    return { op, command, ledger: { reference } };
  }
  const f = record(body, '$.b', ['op', 'command', 'idempotency']);
  const command = readCommand(f.command!, '$.b.command');
  if (command.kind !== 'placeOrder')
    throw new WireFormatError('$.b.command.kind', 'submitOnce takes placeOrder only');
  const i = record(f.idempotency!, '$.b.idempotency', ['key', 'fingerprint']);
  return {
    op,
    command,
    idempotency: {
      key: str(i.key!, '$.b.idempotency.key'),
      fingerprint: str(i.fingerprint!, '$.b.idempotency.fingerprint'),
    },
  };
}

export function encodeCommandReply(reply: CommandReply): Uint8Array {
  return frame('reply', reply);
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
  const body = unframe(bytes, 'reply');
  const head = record(body, '$.b', ['kind'], ['result', 'once', 'code', 'message']);
  const kind = oneOf(head.kind!, '$.b.kind', ['result', 'once', 'error'] as const);
  switch (kind) {
    case 'result':
      return {
        kind,
        result: readCommandResult(record(body, '$.b', ['kind', 'result']).result!, '$.b.result'),
      };
    case 'once':
      return { kind, once: readOnce(record(body, '$.b', ['kind', 'once']).once!, '$.b.once') };
    case 'error': {
      const f = record(body, '$.b', ['kind', 'code', 'message']);
      return {
        kind,
        code: oneOf(f.code!, '$.b.code', REMOTE_ERROR_CODES),
        message: str(f.message!, '$.b.message'),
      };
    }
  }
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
  const body = unframe(bytes, 'batch');
  const f = record(body, '$.b', ['sequence', 'payload']);
  const sequence = batchSequence(f.sequence, '$.b.sequence');
  const payload = readPayload === undefined ? f.payload! : readPayload(f.payload!, '$.b.payload');
  return { sequence, payload };
}
