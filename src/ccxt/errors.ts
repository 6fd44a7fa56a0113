/**
 * How the venue's error answers map to ccxt's error classes (docs/ccxt.md, "Errors"). ccxt's
 * default table (`httpExceptions`) would turn a 422 or a 404 into ExchangeError or
 * ExchangeNotAvailable, errors a bot retries; every non-2xx answer is therefore classified here
 * from its status and text, and the default table is never reached.
 */
import {
  AuthenticationError,
  BadRequest,
  BadSymbol,
  DuplicateOrderId,
  ExchangeError,
  ExchangeNotAvailable,
  InsufficientFunds,
  InvalidNonce,
  InvalidOrder,
  OrderNotFound,
  PermissionDenied,
  RateLimitExceeded,
} from 'ccxt';

type ErrorClass = new (message: string) => Error;

/** Texts the venue answers with (shape E's `error`, shape A/C's `message`), matched exactly. */
export const EXACT_ERRORS: Readonly<Record<string, ErrorClass>> = {
  'Invalid Signature': AuthenticationError,
  'Access Denied': PermissionDenied,
  'Invalid Nonce': InvalidNonce,
  'Order not found': OrderNotFound,
  'Insufficient funds.': InsufficientFunds,
  'Too Many Requests': RateLimitExceeded,
  'Service Unavailable': ExchangeNotAvailable,
  'The Idempotency-Key was already used for a different order.': DuplicateOrderId,
  'Unknown asset pair': BadSymbol,
  'The selected ticker id is invalid.': BadSymbol,
  'Invalid request': BadRequest,
};

/** Texts matched by their beginning: they carry the order's state or amounts. */
export const BROAD_ERRORS: Readonly<Record<string, ErrorClass>> = {
  // Canceling an order that is already closed or canceled: ccxt's convention (as Kraken's
  // "Unknown order") is OrderNotFound, which a bot does not retry.
  'Order is not open': OrderNotFound,
  // A market buy whose funds cannot reach the minimum volume: the account lacks money.
  'Your available funds buy only': InsufficientFunds,
};

/** Every text a venue error body carries, in the order shapes put them (A–E). */
export function errorTexts(body: unknown): string[] {
  if (typeof body !== 'object' || body === null) return [];
  const record = body as Record<string, unknown>;
  const texts: string[] = [];
  if (typeof record.error === 'string') texts.push(record.error); // E
  if (typeof record.message === 'string') texts.push(record.message); // C, D
  const nested = record.error;
  if (typeof nested === 'object' && nested !== null) {
    const { message, validations } = nested as Record<string, unknown>;
    if (typeof message === 'string') texts.push(message); // A, B
    if (Array.isArray(validations)) for (const v of validations) if (typeof v === 'string') texts.push(v);
  }
  const errors = record.errors; // D: every field's messages
  if (typeof errors === 'object' && errors !== null)
    for (const list of Object.values(errors))
      if (Array.isArray(list)) for (const v of list) if (typeof v === 'string') texts.push(v);
  return texts;
}

/**
 * The error for a non-2xx answer: a known text first, then the status. Shape D (Laravel's
 * validation body) only answers order placement, so any other text there is an InvalidOrder.
 */
export function venueError(status: number, body: unknown, prefix: string): Error {
  const texts = errorTexts(body);
  const message = `${prefix} ${status} ${JSON.stringify(body)}`;
  for (const text of texts) {
    const exact = EXACT_ERRORS[text];
    if (exact !== undefined) return new exact(message);
  }
  for (const text of texts)
    for (const [start, broad] of Object.entries(BROAD_ERRORS))
      if (text.startsWith(start)) return new broad(message);
  if (status === 429) return new RateLimitExceeded(message);
  if (status === 503 || status === 502 || status === 504) return new ExchangeNotAvailable(message);
  const isValidation = typeof body === 'object' && body !== null && 'errors' in body;
  if (status === 422 && isValidation) return new InvalidOrder(message);
  if (status === 404) return new BadRequest(message);
  if (status >= 400 && status < 500) return new BadRequest(message);
  return new ExchangeError(message);
}
