/**
 * Per-request facts the v1 layer attaches (raw body, parse outcome, authenticated caller). Kept in
 * WeakMaps rather than request decorators so that no global Fastify type is widened for the
 * other adapters sharing the process, and nothing outlives its request.
 */
import type { FastifyRequest } from 'fastify';
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

const rawBodies = new WeakMap<FastifyRequest, Buffer>();
const malformed = new WeakSet<FastifyRequest>();
const callers = new WeakMap<FastifyRequest, Caller>();
const repeatedKeys = new WeakMap<FastifyRequest, string>();

export const setRawBody = (request: FastifyRequest, body: Buffer): void => {
  rawBodies.set(request, body);
};
/** The body bytes exactly as received; empty when the request had none. */
export const rawBody = (request: FastifyRequest): Buffer => rawBodies.get(request) ?? Buffer.alloc(0);

export const markMalformed = (request: FastifyRequest): void => {
  malformed.add(request);
};
export const isMalformed = (request: FastifyRequest): boolean => malformed.has(request);

/** A key the JSON body repeats (src/http/duplicate-keys.ts): refused once the caller is known. */
export const markRepeatedKey = (request: FastifyRequest, field: string): void => {
  repeatedKeys.set(request, field);
};
export const repeatedKey = (request: FastifyRequest): string | undefined => repeatedKeys.get(request);

export const setCaller = (request: FastifyRequest, caller: Caller): void => {
  callers.set(request, caller);
};
/** The authenticated caller; only private routes have one (their preValidation hook sets it). */
export function caller(request: FastifyRequest): Caller {
  const found = callers.get(request);
  if (found === undefined) throw new Error('caller() on a route without authentication');
  return found;
}
