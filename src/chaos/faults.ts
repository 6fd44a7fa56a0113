/**
 * The faults an operator can inject, in the admin API's JSON shape (snake_case), and their
 * validation. A fault set holds at most one fault of each kind; every field is checked and an
 * unknown field is refused, so a typo ("lantecy") is a 422 instead of a rehearsal that silently
 * rehearses nothing.
 */

/** Every fault may carry `count`: it applies this many times, then removes itself (a burst). */
interface Counted {
  readonly count?: number;
}

/**
 * REST faults may be narrowed to some routes: `METHOD /v1/template` as the API declares it, e.g.
 * `POST /v1/orders` or `DELETE /v1/orders/:order_id`. Absent: every `/v1` route.
 */
interface Routed {
  readonly routes?: readonly string[];
}

/** REST (`/v1`) requests wait `ms` plus a uniform random 0…`jitter_ms` before being handled. */
export interface LatencyFault extends Counted, Routed {
  readonly ms: number;
  readonly jitter_ms: number;
}

/** A share of `/v1` requests is refused before it is handled: 503, or 429 with Retry-After. */
export interface ErrorFault extends Counted, Routed {
  readonly rate: number;
  readonly status: 503 | 429;
  /** Seconds, sent as Retry-After. */
  readonly retry_after: number;
}

/**
 * Order placements and cancellations are carried out and committed, and their 2xx answer is never
 * sent: the connection is held `hold_ms`, then destroyed without a byte of answer.
 */
export interface TimeoutFault extends Counted {
  readonly rate: number;
  readonly hold_ms: number;
}

/** Every WebSocket frame to a connection waits `ms` plus 0…`jitter_ms` (order kept). */
export interface WsDelayFault extends Counted {
  readonly ms: number;
  readonly jitter_ms: number;
}

/** Shares of `order-book` updates dropped, sent twice, or held back behind the next one. */
export interface BookUpdateFault extends Counted {
  readonly drop: number;
  readonly duplicate: number;
  readonly reorder: number;
}

/** Each second, each connection is closed with `code` with probability `rate`. */
export interface DisconnectFault extends Counted {
  readonly rate: number;
  readonly code: 4200 | 4201;
}

export interface FaultSet {
  readonly latency?: LatencyFault;
  readonly errors?: ErrorFault;
  readonly timeouts?: TimeoutFault;
  readonly ws_delay?: WsDelayFault;
  readonly book_updates?: BookUpdateFault;
  readonly disconnects?: DisconnectFault;
}

type Optional<T, K extends keyof T> = Omit<T, K> & Partial<Pick<T, K>>;

/** What a caller sends: fields with a default may be left out; `null` removes a kind (POST). */
export interface FaultSetInput {
  readonly latency?: Optional<LatencyFault, 'jitter_ms'> | null;
  readonly errors?: Optional<ErrorFault, 'status' | 'retry_after'> | null;
  readonly timeouts?: Optional<TimeoutFault, 'hold_ms'> | null;
  readonly ws_delay?: Optional<WsDelayFault, 'jitter_ms'> | null;
  readonly book_updates?: Partial<BookUpdateFault> | null;
  readonly disconnects?: Optional<DisconnectFault, 'code'> | null;
}

export type FaultKind = keyof FaultSet;
export const FAULT_KINDS: readonly FaultKind[] = [
  'latency',
  'errors',
  'timeouts',
  'ws_delay',
  'book_updates',
  'disconnects',
];
/** The kinds the HTTP hook applies; the others are the WebSocket hook's. */
export const HTTP_KINDS: readonly FaultKind[] = ['latency', 'errors', 'timeouts'];

/** What one injected fault is called in /metrics and the logs. */
export type InjectedFault =
  | 'latency'
  | 'error_503'
  | 'error_429'
  | 'timeout'
  | 'ws_delay'
  | 'book_drop'
  | 'book_duplicate'
  | 'book_reorder'
  | 'disconnect';

/** A refused field: the admin API answers 422 with it. */
export class FaultInputError extends Error {
  override readonly name = 'FaultInputError';
  constructor(
    readonly field: string,
    message: string,
  ) {
    super(message);
  }
}

/** The longest delay or hold accepted: long enough for any client timeout, short enough to end. */
export const MAX_DELAY_MS = 120_000;
export const DEFAULT_HOLD_MS = 10_000;

type Json = Readonly<Record<string, unknown>>;

function object(value: unknown, field: string): Json {
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    throw new FaultInputError(field, `The ${field} field must be an object.`);
  return value as Json;
}

function onlyFields(value: Json, field: string, allowed: readonly string[]): void {
  for (const name of Object.keys(value))
    if (!allowed.includes(name))
      throw new FaultInputError(`${field}.${name}`, `Unknown field ${field}.${name}.`);
}

function numberField(
  value: Json,
  field: string,
  name: string,
  range: { min: number; max: number; integer?: boolean },
  fallback?: number,
): number {
  const raw = value[name];
  const path = `${field}.${name}`;
  if (raw === undefined && fallback !== undefined) return fallback;
  if (typeof raw !== 'number' || !Number.isFinite(raw))
    throw new FaultInputError(path, `The ${path} field must be a number.`);
  if (range.integer === true && !Number.isInteger(raw))
    throw new FaultInputError(path, `The ${path} field must be a whole number.`);
  if (raw < range.min || raw > range.max)
    throw new FaultInputError(path, `The ${path} field must be between ${range.min} and ${range.max}.`);
  return raw;
}

export const RATE = { min: 0, max: 1 };
export const MILLIS = { min: 0, max: MAX_DELAY_MS, integer: true };

export const COUNT = { min: 1, max: 1_000_000_000, integer: true };
export const RETRY_AFTER = { min: 1, max: 3600, integer: true };
export const MAX_ROUTES = 32;

function count(value: Json, field: string): Counted {
  if (value.count === undefined) return {};
  return { count: numberField(value, field, 'count', COUNT) };
}

/** A route a REST fault may be narrowed to (`routes`): `METHOD /v1/template`. */
export const ROUTE = /^(GET|POST|DELETE) \/v1\/[A-Za-z0-9_\-/:.]*$/;

function routes(value: Json, field: string): Routed {
  const raw = value.routes;
  if (raw === undefined) return {};
  const path = `${field}.routes`;
  if (
    !Array.isArray(raw) ||
    raw.length === 0 ||
    raw.length > MAX_ROUTES ||
    !raw.every((r) => typeof r === 'string' && ROUTE.test(r))
  )
    throw new FaultInputError(
      path,
      `The ${path} field must be a list of 1 to 32 routes such as "POST /v1/orders" or "DELETE /v1/orders/:order_id".`,
    );
  return { routes: [...new Set(raw as string[])] };
}

/** Whether a REST fault applies to a request of this method and route template. */
export const appliesTo = (fault: Routed, method: string, route: string): boolean =>
  fault.routes === undefined || fault.routes.includes(`${method} ${route}`);

function choice<T extends number>(
  value: Json,
  field: string,
  name: string,
  allowed: readonly T[],
  fallback: T,
): T {
  const raw = value[name];
  if (raw === undefined) return fallback;
  if (!allowed.includes(raw as T))
    throw new FaultInputError(
      `${field}.${name}`,
      `The ${field}.${name} field must be one of ${allowed.join(', ')}.`,
    );
  return raw as T;
}

const parsers: { readonly [K in FaultKind]-?: (value: Json, field: K) => NonNullable<FaultSet[K]> } = {
  latency: (v, f) => {
    onlyFields(v, f, ['ms', 'jitter_ms', 'count', 'routes']);
    return {
      ms: numberField(v, f, 'ms', MILLIS),
      jitter_ms: numberField(v, f, 'jitter_ms', MILLIS, 0),
      ...routes(v, f),
      ...count(v, f),
    };
  },
  errors: (v, f) => {
    onlyFields(v, f, ['rate', 'status', 'retry_after', 'count', 'routes']);
    return {
      rate: numberField(v, f, 'rate', RATE),
      status: choice(v, f, 'status', [503, 429] as const, 503),
      retry_after: numberField(v, f, 'retry_after', RETRY_AFTER, 1),
      ...routes(v, f),
      ...count(v, f),
    };
  },
  timeouts: (v, f) => {
    onlyFields(v, f, ['rate', 'hold_ms', 'count']);
    return {
      rate: numberField(v, f, 'rate', RATE),
      hold_ms: numberField(v, f, 'hold_ms', MILLIS, DEFAULT_HOLD_MS),
      ...count(v, f),
    };
  },
  ws_delay: (v, f) => {
    onlyFields(v, f, ['ms', 'jitter_ms', 'count']);
    return {
      ms: numberField(v, f, 'ms', MILLIS),
      jitter_ms: numberField(v, f, 'jitter_ms', MILLIS, 0),
      ...count(v, f),
    };
  },
  book_updates: (v, f) => {
    onlyFields(v, f, ['drop', 'duplicate', 'reorder', 'count']);
    const fault = {
      drop: numberField(v, f, 'drop', RATE, 0),
      duplicate: numberField(v, f, 'duplicate', RATE, 0),
      reorder: numberField(v, f, 'reorder', RATE, 0),
      ...count(v, f),
    };
    // One draw decides each update's fate, so the three shares partition [0, 1).
    if (fault.drop + fault.duplicate + fault.reorder > 1)
      throw new FaultInputError(f, `The ${f} drop, duplicate and reorder rates must add up to at most 1.`);
    return fault;
  },
  disconnects: (v, f) => {
    onlyFields(v, f, ['rate', 'code', 'count']);
    return {
      rate: numberField(v, f, 'rate', RATE),
      code: choice(v, f, 'code', [4200, 4201] as const, 4200),
      ...count(v, f),
    };
  },
};

/** Validates a fault set as the admin API receives it (`null` for a kind removes it in a merge). */
export function parseFaultSet(value: unknown, field = 'faults'): { set: FaultSet; removed: FaultKind[] } {
  const input = object(value ?? {}, field);
  onlyFields(input, field, FAULT_KINDS);
  const set: Record<string, unknown> = {};
  const removed: FaultKind[] = [];
  for (const kind of FAULT_KINDS) {
    const raw = input[kind];
    if (raw === undefined) continue;
    if (raw === null) {
      removed.push(kind);
      continue;
    }
    const parse = parsers[kind] as (v: Json, f: string) => unknown;
    set[kind] = parse(object(raw, `${field}.${kind}`), `${field}.${kind}`);
  }
  return { set: set as FaultSet, removed };
}

export const isEmpty = (set: FaultSet): boolean => FAULT_KINDS.every((kind) => set[kind] === undefined);
