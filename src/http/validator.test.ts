import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Type } from '@fastify/type-provider-typebox';
import type { TSchema } from 'typebox';
import { checkFirstValidatorCompiler } from './validator.js';

const compile = (schema: TSchema, httpPart: string) =>
  checkFirstValidatorCompiler({
    schema,
    httpPart,
    method: 'GET',
    url: '/',
  });

test('a query that matches as it comes is passed through untouched', () => {
  const validate = compile(Type.Object({ pair: Type.Optional(Type.String()) }), 'querystring');
  const query = { pair: 'BTCEUR' };
  // `true` keeps the request's own value: Fastify writes nothing back.
  assert.equal(validate(query), true);
  assert.deepEqual(query, { pair: 'BTCEUR' });
});

test('a query that does not match is converted, as the type provider would', () => {
  const validate = compile(Type.Object({ pair: Type.String(), n: Type.Integer() }), 'querystring');
  assert.deepEqual(validate({ pair: 'BTCEUR', n: '7' }), { value: { pair: 'BTCEUR', n: 7 } });
});

test('what fails even after conversion is refused with Fastify-shaped errors; bodies are never converted', () => {
  const query = compile(Type.Object({ n: Type.Integer() }), 'querystring');
  const refused = query({ n: 'seven' }) as { error?: Array<{ instancePath: string; message?: string }> };
  assert.equal(refused.error?.[0]?.instancePath, '/n');
  assert.equal(typeof refused.error?.[0]?.message, 'string');

  const body = compile(Type.Object({ n: Type.Integer() }), 'body');
  assert.ok((body({ n: '7' }) as { error?: unknown }).error, 'a body is checked as sent');
  assert.equal(body({ n: 7 }), true);
});
