/**
 * Per-request facts the v1 layer attaches (raw body, parse outcome, authenticated caller), in
 * request slots the v1 plugin declares with `decorateRequest` (declareRequestState). Declared,
 * every request object of the plugin's routes is built with the slots already in place, so
 * setting and reading one is a plain property access on an object of one shape; a WeakMap per
 * fact cost a hash lookup per read and write on every signed request. The slots are symbols and
 * their type stays in this module: no global Fastify type is widened for the other adapters
 * sharing the process, and nothing outlives its request.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { UserId } from '../domain/types.js';
import type { ApiKeyScope } from '../store/store.js';

export interface Caller {
  readonly userId: UserId;
  /** The API key that signed the request. */
  readonly apiKey: string;
  readonly scopes: readonly ApiKeyScope[];
  /** The key requires a nonce in every signed body (and, on DELETE, the order id: orders.ts). */
  readonly nonceRequired: boolean;
}

const RAW_BODY = Symbol('openspot.rawBody');
const MALFORMED = Symbol('openspot.malformed');
const CALLER = Symbol('openspot.caller');
const REPEATED_KEY = Symbol('openspot.repeatedKey');

interface StateSlots {
  [RAW_BODY]: Buffer | undefined;
  [MALFORMED]: boolean | undefined;
  [CALLER]: Caller | undefined;
  [REPEATED_KEY]: string | undefined;
}

const slots = (request: FastifyRequest): StateSlots => request as FastifyRequest & StateSlots;

const EMPTY = Buffer.alloc(0);

/**
 * Declares the slots on `app`'s requests (the v1 plugin's context). The functions below also work
 * on a request of a context without them (the slot is then added to that object), only slower.
 */
export function declareRequestState(app: FastifyInstance): void {
  for (const slot of [RAW_BODY, MALFORMED, CALLER, REPEATED_KEY]) {
    if (!app.hasRequestDecorator(slot)) app.decorateRequest(slot, undefined);
  }
}

export const setRawBody = (request: FastifyRequest, body: Buffer): void => {
  slots(request)[RAW_BODY] = body;
};
/** The body bytes exactly as received; empty when the request had none. */
export const rawBody = (request: FastifyRequest): Buffer => slots(request)[RAW_BODY] ?? EMPTY;

export const markMalformed = (request: FastifyRequest): void => {
  slots(request)[MALFORMED] = true;
};
export const isMalformed = (request: FastifyRequest): boolean => slots(request)[MALFORMED] === true;

/** A key the JSON body repeats (src/http/duplicate-keys.ts): refused once the caller is known. */
export const markRepeatedKey = (request: FastifyRequest, field: string): void => {
  slots(request)[REPEATED_KEY] = field;
};
export const repeatedKey = (request: FastifyRequest): string | undefined => slots(request)[REPEATED_KEY];

export const setCaller = (request: FastifyRequest, caller: Caller): void => {
  slots(request)[CALLER] = caller;
};
/** The authenticated caller; only private routes have one (their preValidation hook sets it). */
export function caller(request: FastifyRequest): Caller {
  const found = slots(request)[CALLER];
  if (found === undefined) throw new Error('caller() on a route without authentication');
  return found;
}
