import assert from 'node:assert/strict';
import { test } from 'node:test';
import { StoreUnavailableError } from '../store/store.js';
import {
  attribute,
  clientErrorResponse,
  errorA,
  errorB,
  errorC,
  errorE,
  FieldErrors,
  HttpError,
  rule,
  schemaIssuesToFieldErrors,
  summarize,
  toHttpError,
  validationError,
  validationFailure,
} from './errors.js';

test('the five shapes, exactly', () => {
  assert.deepEqual(errorA(400, 'Unknown asset pair').body, {
    success: false,
    error: { message: 'Unknown asset pair', code: 400 },
  });
  assert.deepEqual(errorB(422, ['The ticker id field is required.']).body, {
    success: false,
    error: {
      message: 'The ticker id field is required.',
      validations: ['The ticker id field is required.'],
      code: 422,
    },
  });
  assert.deepEqual(errorC(404, 'Order not found').body, {
    success: false,
    message: 'Order not found',
    error: { message: 'Order not found', code: 404 },
  });
  assert.deepEqual(errorE(422, 'Invalid Signature').body, { error: 'Invalid Signature' });
  const d = validationError({ price: [rule.requiredUnless('price', 'order_type', ['market'])] });
  assert.equal(d.status, 422);
  assert.deepEqual(d.body, {
    message: 'The price field is required unless order type is in market.',
    errors: { price: ['The price field is required unless order type is in market.'] },
  });
});

test('Laravel summary: "(and 1 more error)", "(and N more errors)"', () => {
  assert.equal(summarize(['a']), 'a');
  assert.equal(summarize(['a', 'b']), 'a (and 1 more error)');
  assert.equal(summarize(['a', 'b', 'c']), 'a (and 2 more errors)');
  const d = validationError({ order_type: ['x'], pair: ['y', 'z'], volume: [] });
  assert.deepEqual(d.body, {
    message: 'x (and 2 more errors)',
    errors: { order_type: ['x'], pair: ['y', 'z'] },
  });
});

test('Laravel wording with :attribute', () => {
  assert.equal(attribute('order_direction'), 'order direction');
  assert.equal(rule.required('order_direction'), 'The order direction field is required.');
  assert.equal(rule.invalid('pair'), 'The selected pair is invalid.');
  assert.equal(rule.string('volume'), 'The volume field must be a string.');
  assert.equal(rule.min('volume', '0.0001'), 'The volume field must be at least 0.0001.');
  assert.equal(rule.gt('price', '0'), 'The price field must be greater than 0.');
  assert.equal(rule.decimals('price', 1), 'The price field must have 0-1 decimal places.');
  assert.equal(rule.integer('page-size'), 'The page-size field must be an integer.');
});

test('schema issues become field messages', () => {
  const errors = schemaIssuesToFieldErrors([
    { keyword: 'required', instancePath: '', params: { missingProperty: 'ticker_id' } },
    { keyword: 'enum', instancePath: '/interval', params: { allowedValues: ['1'] } },
    { keyword: 'type', instancePath: '/since', params: { type: 'string' } },
    { keyword: 'pattern', instancePath: '/depth', params: { pattern: '^\\d+$' } },
    { keyword: 'maxLength', instancePath: '/ticker_id', params: { limit: 64 } },
    { keyword: 'anyOf', instancePath: '/since', params: {} },
  ]);
  assert.deepEqual(errors.toRecord(), {
    ticker_id: [
      'The ticker id field is required.',
      'The ticker id field must not be greater than 64 characters.',
    ],
    interval: ['The selected interval is invalid.'],
    since: ['The since field must be a string.'],
    depth: ['The depth field format is invalid.'],
  });
});

test('validation failures take the route shape', () => {
  const errors = new FieldErrors().add('ticker_id', rule.required('ticker_id'));
  assert.equal(validationFailure('B', errors).status, 422);
  assert.deepEqual(validationFailure('E', errors).body, { error: 'Invalid request' });
  assert.equal(validationFailure('E', errors).status, 400);
  assert.deepEqual(validationFailure('A', errors).body, {
    success: false,
    error: { message: 'The ticker id field is required.', code: 400 },
  });
  assert.deepEqual(validationFailure('D', errors).body, {
    message: 'The ticker id field is required.',
    errors: { ticker_id: ['The ticker id field is required.'] },
  });
});

test('framework errors map to 4xx, outages to 503, the rest to 500', () => {
  const fastifyError = (code: string, statusCode: number) =>
    Object.assign(new Error(code), { code, statusCode });
  const cases: [unknown, number, boolean][] = [
    [fastifyError('FST_ERR_CTP_BODY_TOO_LARGE', 413), 413, false],
    [fastifyError('FST_ERR_CTP_INVALID_MEDIA_TYPE', 415), 400, false],
    [fastifyError('FST_ERR_CTP_EMPTY_JSON_BODY', 400), 400, false],
    [fastifyError('FST_ERR_SOMETHING', 408), 408, false],
    [new StoreUnavailableError('disk'), 503, false],
    [new Error('boom'), 500, true],
    ['a string', 500, true],
    [errorE(409, 'Order is not open'), 409, false],
  ];
  for (const [error, status, unexpected] of cases) {
    const out = toHttpError(error, 'E');
    assert.equal(out.httpError.status, status, String(error));
    assert.equal(out.unexpected, unexpected);
    assert.ok(out.httpError instanceof HttpError);
  }
  const outage = toHttpError(new StoreUnavailableError('disk'), 'B').httpError;
  assert.deepEqual(outage.body, { success: false, error: { message: 'Service Unavailable', code: 503 } });
  assert.equal(outage.headers['retry-after'], '1');
  const validation = Object.assign(new Error('v'), {
    validation: [{ keyword: 'required', instancePath: '', params: { missingProperty: 'ticker_id' } }],
    statusCode: 400,
  });
  assert.equal(toHttpError(validation, 'B').httpError.status, 422);
});

test('requests refused by Node’s parser get a complete HTTP answer in shape E', () => {
  const parse = (raw: string) => {
    const [head = '', body = ''] = raw.split('\r\n\r\n');
    const length = /\r\nContent-Length: (\d+)\r\n/.exec(head);
    return { statusLine: head.split('\r\n')[0], length: Number(length?.[1]), body };
  };
  for (const [code, statusLine, text] of [
    ['HPE_INVALID_METHOD', 'HTTP/1.1 400 Bad Request', 'Invalid request'],
    [undefined, 'HTTP/1.1 400 Bad Request', 'Invalid request'],
    [
      'HPE_HEADER_OVERFLOW',
      'HTTP/1.1 431 Request Header Fields Too Large',
      'Request Header Fields Too Large',
    ],
    ['ERR_HTTP_REQUEST_TIMEOUT', 'HTTP/1.1 408 Request Timeout', 'Request Timeout'],
  ] as const) {
    const raw = clientErrorResponse(code);
    const answer = parse(raw);
    assert.equal(answer.statusLine, statusLine);
    assert.deepEqual(JSON.parse(answer.body), { error: text });
    assert.equal(answer.length, Buffer.byteLength(answer.body));
    assert.match(raw, /\r\nConnection: close\r\n/);
    assert.match(raw, /\r\nContent-Type: application\/json; charset=utf-8\r\n/);
  }
});
