/**
 * Error bodies of the interface. The document shows five shapes (A–E) and says which endpoint
 * uses which; every error this server sends is one of them, chosen by the route's `errorShape`
 * (see ErrorShape below), so a client never sees a Fastify-default body.
 */
import { STATUS_CODES } from 'node:http';
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { StoreUnavailableError } from '../store/store.js';

/** Shape A: 400 on /markets. */
export interface ErrorBodyA {
  readonly success: false;
  readonly error: { readonly message: string; readonly code: number };
}
/** Shape B: 422 on /ohlc, /orderbook, /historical_trades. */
export interface ErrorBodyB {
  readonly success: false;
  readonly error: {
    readonly message: string;
    readonly validations: readonly string[];
    readonly code: number;
  };
}
/** Shape C: 404 for an unknown order or trade id. */
export interface ErrorBodyC {
  readonly success: false;
  readonly message: string;
  readonly error: { readonly message: string; readonly code: number };
}
/** Shape D: Laravel's 422 validation body. */
export interface ErrorBodyD {
  readonly message: string;
  readonly errors: Readonly<Record<string, readonly string[]>>;
}
/** Shape E: a bare string. */
export interface ErrorBodyE {
  readonly error: string;
}
export type ErrorBody = ErrorBodyA | ErrorBodyB | ErrorBodyC | ErrorBodyD | ErrorBodyE;

/**
 * How a route reports errors it did not build itself (validation, parsing, limits, outages):
 * - 'A': everything as shape A (/markets).
 * - 'B': request validation as 422 shape B, anything else as shape A (B without `validations`).
 * - 'D': request validation as 422 shape D, anything else as shape E (POST /orders).
 * - 'E': everything as shape E; a failed request validation is 400 "Invalid request".
 */
export type ErrorShape = 'A' | 'B' | 'D' | 'E';

export class HttpError extends Error {
  override readonly name = 'HttpError';
  constructor(
    readonly status: number,
    readonly body: ErrorBody,
    readonly headers: Readonly<Record<string, string>> = {},
  ) {
    super(`HTTP ${status}`);
  }
}

export const INVALID_REQUEST = 'Invalid request';
export const INVALID_SIGNATURE = 'Invalid Signature';
export const ACCESS_DENIED = 'Access Denied';

export const errorA = (status: number, message: string): HttpError =>
  new HttpError(status, { success: false, error: { message, code: status } });

export const errorB = (status: number, validations: readonly string[]): HttpError =>
  new HttpError(status, {
    success: false,
    error: { message: summarize(validations), validations: [...validations], code: status },
  });

export const errorC = (status: number, message: string): HttpError =>
  new HttpError(status, { success: false, message, error: { message, code: status } });

export const errorE = (status: number, text: string): HttpError => new HttpError(status, { error: text });

/** 422 shape D, Laravel style: the first message, plus how many others there are. */
export function validationError(errors: Readonly<Record<string, readonly string[]>>): HttpError {
  const copy: Record<string, string[]> = {};
  for (const [field, messages] of Object.entries(errors))
    if (messages.length > 0) copy[field] = [...messages];
  return new HttpError(422, { message: summarize(Object.values(copy).flat()), errors: copy });
}

/** Laravel's ValidationException::summarize: "first (and 1 more error)" / "(and N more errors)". */
export function summarize(messages: readonly string[]): string {
  const [first, ...rest] = messages;
  if (first === undefined) return 'The given data was invalid.';
  if (rest.length === 0) return first;
  return `${first} (and ${rest.length} more ${rest.length === 1 ? 'error' : 'errors'})`;
}

/** Laravel's `:attribute`: the field name with underscores shown as spaces. */
export const attribute = (field: string): string => field.replaceAll('_', ' ');

/** Laravel's default English validation texts, for the rules this API applies. */
export const rule = {
  required: (f: string) => `The ${attribute(f)} field is required.`,
  /** Not one of Laravel's (PHP's json_decode keeps the last key silently): worded like them. */
  repeated: (f: string) => `The ${attribute(f)} field appears more than once.`,
  requiredUnless: (f: string, other: string, values: readonly string[]) =>
    `The ${attribute(f)} field is required unless ${attribute(other)} is in ${values.join(', ')}.`,
  invalid: (f: string) => `The selected ${attribute(f)} is invalid.`,
  string: (f: string) => `The ${attribute(f)} field must be a string.`,
  number: (f: string) => `The ${attribute(f)} field must be a number.`,
  integer: (f: string) => `The ${attribute(f)} field must be an integer.`,
  array: (f: string) => `The ${attribute(f)} field must be an array.`,
  format: (f: string) => `The ${attribute(f)} field format is invalid.`,
  gt: (f: string, value: string) => `The ${attribute(f)} field must be greater than ${value}.`,
  min: (f: string, min: string) => `The ${attribute(f)} field must be at least ${min}.`,
  max: (f: string, max: string) => `The ${attribute(f)} field must not be greater than ${max}.`,
  between: (f: string, min: number, max: number) =>
    `The ${attribute(f)} field must be between ${min} and ${max}.`,
  maxLength: (f: string, max: number) =>
    `The ${attribute(f)} field must not be greater than ${max} characters.`,
  /** Laravel's `decimal:0,n` message reads "must have 0-n decimal places". */
  decimals: (f: string, max: number) => `The ${attribute(f)} field must have 0-${max} decimal places.`,
} as const;

/** Collects field messages in insertion order, at most one message per rule and field. */
export class FieldErrors {
  readonly #errors = new Map<string, string[]>();
  add(field: string, message: string): this {
    const list = this.#errors.get(field);
    if (list === undefined) this.#errors.set(field, [message]);
    else if (!list.includes(message)) list.push(message);
    return this;
  }
  has(field: string): boolean {
    return this.#errors.has(field);
  }
  get size(): number {
    return this.#errors.size;
  }
  messages(): string[] {
    return [...this.#errors.values()].flat();
  }
  toRecord(): Record<string, string[]> {
    return Object.fromEntries(this.#errors);
  }
}

/** The subset of an Ajv error this module reads (Fastify passes Ajv's objects through). */
export interface SchemaIssue {
  readonly keyword: string;
  readonly instancePath: string;
  readonly params: Readonly<Record<string, unknown>>;
}

/** Maps JSON-schema failures to Laravel messages keyed by the field they concern. */
export function schemaIssuesToFieldErrors(issues: readonly SchemaIssue[]): FieldErrors {
  const errors = new FieldErrors();
  for (const issue of issues) {
    const path = issue.instancePath.split('/').slice(1).map(decodePointer);
    if (issue.keyword === 'required') {
      // Ajv names one `missingProperty`; TypeBox lists `requiredProperties`.
      const { missingProperty, requiredProperties } = issue.params;
      const missing = Array.isArray(requiredProperties) ? requiredProperties : [missingProperty];
      for (const name of missing) {
        if (typeof name === 'string') errors.add([...path, name].join('.'), rule.required(name));
      }
      continue;
    }
    const field = path.join('.') || 'body';
    const name = path.at(-1) ?? 'body';
    switch (issue.keyword) {
      case 'type': {
        const type = issue.params.type;
        if (type === 'string') errors.add(field, rule.string(name));
        else if (type === 'integer') errors.add(field, rule.integer(name));
        else if (type === 'number') errors.add(field, rule.number(name));
        else if (type === 'array') errors.add(field, rule.array(name));
        else errors.add(field, rule.invalid(name));
        break;
      }
      case 'enum':
      case 'const':
        errors.add(field, rule.invalid(name));
        break;
      case 'maxLength':
        errors.add(field, rule.maxLength(name, Number(issue.params.limit)));
        break;
      case 'pattern':
        errors.add(field, rule.format(name));
        break;
      case 'anyOf':
      case 'oneOf':
        // The branches already reported what is wrong; the combinator adds nothing readable.
        if (!errors.has(field)) errors.add(field, rule.invalid(name));
        break;
      default:
        errors.add(field, rule.invalid(name));
    }
  }
  return errors;
}

const decodePointer = (segment: string): string => segment.replaceAll('~1', '/').replaceAll('~0', '~');

const STATUS_TEXT: Readonly<Record<number, string>> = {
  400: 'Invalid request',
  404: 'Not Found',
  405: 'Method Not Allowed',
  406: 'Not Acceptable',
  408: 'Request Timeout',
  413: 'Payload Too Large',
  415: 'Unsupported Media Type',
  429: 'Too Many Requests',
  431: 'Request Header Fields Too Large',
  500: 'Server Error',
  503: 'Service Unavailable',
};
export const statusText = (status: number): string =>
  STATUS_TEXT[status] ?? (status < 500 ? 'Invalid request' : 'Server Error');

/** Builds the route's shape for a condition that is not a field validation. */
export function errorForShape(shape: ErrorShape, status: number, message: string): HttpError {
  return shape === 'E' || shape === 'D' ? errorE(status, message) : errorA(status, message);
}

/** Builds the route's shape for failed request validation. */
export function validationFailure(shape: ErrorShape, errors: FieldErrors): HttpError {
  switch (shape) {
    case 'D':
      return validationError(errors.toRecord());
    case 'B':
      return errorB(422, errors.messages());
    case 'A':
      return errorA(400, errors.messages()[0] ?? INVALID_REQUEST);
    case 'E':
      return errorE(400, INVALID_REQUEST);
  }
}

/**
 * Client mistakes that Fastify detects itself (before any handler runs). All are 4xx; a wrong or
 * missing Content-Type is a 400 like any other malformed request (the interface knows no 415).
 */
function frameworkClientError(error: FastifyError): { status: number; message: string } | undefined {
  switch (error.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return { status: 413, message: statusText(413) };
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
    case 'FST_ERR_BAD_URL':
    case 'FST_ERR_ASYNC_CONSTRAINT':
      return { status: 400, message: INVALID_REQUEST };
  }
  // Other 4xx from Fastify or its parsers (e.g. an aborted upload): keep the status, neutral text.
  const status = error.statusCode;
  if (status !== undefined && status >= 400 && status < 500) return { status, message: statusText(status) };
  return undefined;
}

const SHAPES: readonly string[] = ['A', 'B', 'D', 'E'];

/** The error shape a route declares in its config (`errorShape`); E when it declares none. */
export function routeErrorShape(request: FastifyRequest): ErrorShape {
  const config: object | undefined = request.routeOptions?.config;
  const shape = config !== undefined && 'errorShape' in config ? config.errorShape : undefined;
  return typeof shape === 'string' && SHAPES.includes(shape) ? (shape as ErrorShape) : 'E';
}

/** Turns any error into an HttpError of the route's shape; unknown errors become a 500. */
export function toHttpError(
  error: unknown,
  shape: ErrorShape,
): { httpError: HttpError; unexpected: boolean } {
  if (error instanceof HttpError) return { httpError: error, unexpected: false };
  if (error instanceof StoreUnavailableError) {
    const e = errorForShape(shape, 503, statusText(503));
    return { httpError: new HttpError(503, e.body, { 'retry-after': '1' }), unexpected: false };
  }
  if (typeof error === 'object' && error !== null) {
    const fastifyError = error as FastifyError;
    if (Array.isArray(fastifyError.validation)) {
      return {
        httpError: validationFailure(
          shape,
          schemaIssuesToFieldErrors(fastifyError.validation as SchemaIssue[]),
        ),
        unexpected: false,
      };
    }
    const client = frameworkClientError(fastifyError);
    if (client !== undefined) {
      return { httpError: errorForShape(shape, client.status, client.message), unexpected: false };
    }
  }
  return { httpError: errorForShape(shape, 500, statusText(500)), unexpected: true };
}

/** The Fastify error handler: every error leaves as one of the interface's shapes. */
export function httpErrorHandler(error: unknown, request: FastifyRequest, reply: FastifyReply): void {
  const { httpError, unexpected } = toHttpError(error, routeErrorShape(request));
  if (unexpected || httpError.status >= 500) {
    // Only the error and the route template are logged, never headers or body: no X-API-Sign,
    // no key material. An outage (503) is expected and already logged by the exchange: warn.
    const err = error instanceof Error ? error : new Error(String(error));
    const fields = { err, route: request.routeOptions?.url, status: httpError.status };
    if (unexpected) request.log.error(fields, 'request failed');
    else request.log.warn(fields, 'request refused: service unavailable');
  }
  // Sent as text: a route's response schema (written for its success body) must not reshape errors.
  reply
    .code(httpError.status)
    .headers(httpError.headers)
    .type('application/json')
    .send(JSON.stringify(httpError.body));
}

/**
 * The raw HTTP answer to a request Node's parser refuses before Fastify sees it (malformed request
 * line or headers, bytes outside ASCII in the URL, headers over the size limit, a request that
 * took too long): shape E like every other error, instead of Fastify's default
 * `{"error","message","statusCode"}`. The connection is closed after it (the parser's state is
 * lost, so nothing else can be read from it).
 */
export function clientErrorResponse(code: string | undefined): string {
  const status = code === 'HPE_HEADER_OVERFLOW' ? 431 : code === 'ERR_HTTP_REQUEST_TIMEOUT' ? 408 : 400;
  const body = JSON.stringify(errorE(status, statusText(status)).body);
  return (
    `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\n` +
    'Content-Type: application/json; charset=utf-8\r\n' +
    `Content-Length: ${Buffer.byteLength(body)}\r\n` +
    'Connection: close\r\n\r\n' +
    body
  );
}
