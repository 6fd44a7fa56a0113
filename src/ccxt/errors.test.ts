/** The error table of the ccxt class, on the venue's own error bodies (shapes A–E). */
import assert from 'node:assert/strict';
import { test } from 'node:test';
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
import { venueError } from './errors.js';

const D = (field: string, message: string) => ({ message, errors: { [field]: [message] } });
const C = (message: string, code: number) => ({ success: false, message, error: { message, code } });

test('each venue answer maps to its ccxt class, whatever the shape carrying it', () => {
  const cases: Array<[number, unknown, new (...args: never[]) => Error]> = [
    [422, { error: 'Invalid Signature' }, AuthenticationError],
    [403, { error: 'Access Denied' }, PermissionDenied],
    [422, { error: 'Invalid Nonce' }, InvalidNonce],
    [404, C('Order not found', 404), OrderNotFound],
    [409, { error: 'Order is not open (status: closed).' }, OrderNotFound],
    [422, D('volume', 'Insufficient funds.'), InsufficientFunds],
    [
      422,
      D(
        'volume',
        'Your available funds buy only 0.00003448 BTC at the current prices, below the minimum order volume (ordermin) of 0.00010000 BTC.',
      ),
      InsufficientFunds,
    ],
    [
      422,
      D('Idempotency-Key', 'The Idempotency-Key was already used for a different order.'),
      DuplicateOrderId,
    ],
    [422, D('volume', 'The volume field must be at least 0.0001.'), InvalidOrder],
    [422, D('pair', 'The selected pair is invalid.'), InvalidOrder],
    [429, { error: 'Too Many Requests' }, RateLimitExceeded],
    [429, { success: false, error: { message: 'Too Many Requests', code: 429 } }, RateLimitExceeded],
    [503, { error: 'Service Unavailable' }, ExchangeNotAvailable],
    [503, undefined, ExchangeNotAvailable],
    [400, { success: false, error: { message: 'Unknown asset pair', code: 400 } }, BadSymbol],
    [
      422,
      {
        success: false,
        error: {
          message: 'The selected ticker id is invalid.',
          validations: ['The selected ticker id is invalid.'],
          code: 422,
        },
      },
      BadSymbol,
    ],
    [400, { error: 'Invalid request' }, BadRequest],
    [404, C('Not Found', 404), BadRequest],
    [500, { error: 'Server Error' }, ExchangeError],
  ];
  for (const [status, body, expected] of cases) {
    const error = venueError(status, body, 'openspot');
    assert.ok(error instanceof expected, `${status} ${JSON.stringify(body)} gave ${error.constructor.name}`);
    assert.equal(error.constructor, expected, `${status} ${JSON.stringify(body)}: exactly ${expected.name}`);
    assert.match(error.message, new RegExp(`^openspot ${status} `));
  }
});
