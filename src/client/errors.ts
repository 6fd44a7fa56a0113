/**
 * Error bodies of the interface ("Errors", shapes A–E) and the exception the client throws for a
 * non-2xx answer. The shapes overlap (A, B and C all have `success: false` and an `error` object),
 * so `errorShape` tells them apart by the fields that only one of them has.
 */

/** A: 400 on /markets. */
export interface ErrorBodyA {
  readonly success: false;
  readonly error: { readonly message: string; readonly code: number };
}
/** B: 422 on /ohlc, /orderbook, /historical_trades. */
export interface ErrorBodyB {
  readonly success: false;
  readonly error: {
    readonly message: string;
    readonly validations: readonly string[];
    readonly code: number;
  };
}
/** C: 404 for an unknown order or trade. */
export interface ErrorBodyC {
  readonly success: false;
  readonly message: string;
  readonly error: { readonly message: string; readonly code: number };
}
/** D: 422 on POST /orders, one list of messages per field. */
export interface ErrorBodyD {
  readonly message: string;
  readonly errors: Readonly<Record<string, readonly string[]>>;
}
/** E: a bare string, e.g. "Invalid Signature". */
export interface ErrorBodyE {
  readonly error: string;
}
export type ErrorBody = ErrorBodyA | ErrorBodyB | ErrorBodyC | ErrorBodyD | ErrorBodyE;
export type ErrorShape = 'A' | 'B' | 'C' | 'D' | 'E';

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null;

/** Which documented shape a parsed body has, or undefined when it is none of them. */
export function errorShape(body: unknown): ErrorShape | undefined {
  if (!isObject(body)) return undefined;
  if (typeof body.error === 'string') return 'E';
  if (typeof body.message === 'string' && isObject(body.errors)) return 'D';
  if (body.success === false && isObject(body.error)) {
    if (Array.isArray(body.error.validations)) return 'B';
    return typeof body.message === 'string' ? 'C' : 'A';
  }
  return undefined;
}

/** The human text of an error body, whatever its shape. */
export function errorText(body: ErrorBody | undefined, status: number): string {
  if (body === undefined) return `HTTP ${status}`;
  if ('errors' in body) return body.message;
  return typeof body.error === 'string' ? body.error : body.error.message;
}

export class OpenSpotApiError extends Error {
  override readonly name = 'OpenSpotApiError';
  /** The documented shape of `body`, or undefined when the server sent something else. */
  readonly shape: ErrorShape | undefined;

  constructor(
    readonly status: number,
    /** The parsed error body; undefined when it was not JSON of a documented shape (see `raw`). */
    readonly body: ErrorBody | undefined,
    /** The response text as received. */
    readonly raw: string,
    /** Seconds from a Retry-After header (503, 429), when present. */
    readonly retryAfter?: number,
  ) {
    super(`${status}: ${errorText(body, status)}`);
    this.shape = body === undefined ? undefined : errorShape(body);
  }
}

/** The client could not get any HTTP answer (connection refused, timeout, bad JSON on success). */
export class OpenSpotTransportError extends Error {
  override readonly name = 'OpenSpotTransportError';
}
