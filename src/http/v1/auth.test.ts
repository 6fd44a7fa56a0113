import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { computeSignature } from '../../auth/signature.js';
import type { Micros } from '../../domain/types.js';
import { type Harness, startHarness, type Trader } from '../testing/harness.js';

const INVALID = { error: 'Invalid Signature' };
const PRIVATE_GETS = [
  '/v1/spot-wallet',
  '/v1/trade-wallet',
  '/v1/orders/1',
  '/v1/open-orders',
  '/v1/closed-orders',
  '/v1/trades',
  '/v1/trades/1',
];

describe('authentication of private endpoints', () => {
  let h: Harness;
  let alice: Trader;
  let reader: Trader;
  before(async () => {
    h = await startHarness();
    alice = await h.trader();
    reader = await h.trader({ EUR: '1000' }, ['read']);
  });
  after(() => h.close());

  test('no headers, unknown key, wrong secret: 422 Invalid Signature everywhere', async () => {
    const stranger: Trader = { ...alice, apiKey: 'unknown-key' };
    const wrongSecret: Trader = { ...alice, apiSecret: Buffer.alloc(64, 7).toString('base64') };
    for (const path of PRIVATE_GETS) {
      for (const as of [undefined, stranger, wrongSecret]) {
        const r = await h.request('GET', path, as === undefined ? {} : { as });
        assert.equal(r.status, 422, path);
        assert.deepEqual(r.json, INVALID, path);
      }
    }
    for (const [method, path] of [
      ['POST', '/v1/orders'],
      ['DELETE', '/v1/orders/1'],
      ['POST', '/v1/broadcasting/auth'],
    ] as const) {
      const r = await h.request(method, path, { body: { a: 1 } });
      assert.equal(r.status, 422, path);
      assert.deepEqual(r.json, INVALID);
    }
  });

  test('the signature covers the raw bytes: any re-serialization breaks it', async () => {
    const body =
      '{"order_direction":"buy",  "order_type":"limit","pair":"BTC/EUR","volume":"0.01","price":"100.0"}';
    const ok = await h.request('POST', '/v1/orders', { as: alice, body });
    assert.equal(ok.status, 201, ok.text);
    const reordered = await h.request('POST', '/v1/orders', {
      as: alice,
      body,
      signBody: JSON.stringify(JSON.parse(body)),
    });
    assert.deepEqual([reordered.status, reordered.json], [422, INVALID]);
    const utf8 =
      '{"order_direction":"buy","order_type":"limit","pair":"BTC/EUR","volume":"0.01","price":"100.0","note":"é€"}';
    assert.equal((await h.request('POST', '/v1/orders', { as: alice, body: utf8 })).status, 201);
  });

  test('an empty body is signed as {}; the method is part of the signature', async () => {
    const sign = computeSignature('GET', '{}', alice.apiSecret);
    const r = await h.request('GET', '/v1/spot-wallet', {
      headers: { 'x-api-key': alice.apiKey, 'x-api-sign': sign },
    });
    assert.equal(r.status, 200);
    const wrongMethod = await h.request('GET', '/v1/spot-wallet', {
      headers: { 'x-api-key': alice.apiKey, 'x-api-sign': computeSignature('POST', '', alice.apiSecret) },
    });
    assert.equal(wrongMethod.status, 422);
  });

  test('a signature truncated, extended or with one bit changed is refused: 422 Invalid Signature', async () => {
    const sign = computeSignature('GET', '', alice.apiSecret);
    const oneBit = (byte: number) => {
      const bytes = Buffer.from(sign, 'base64');
      bytes[byte]! ^= 0x01;
      return bytes.toString('base64');
    };
    const altered: Record<string, string> = {
      'truncated by a character': sign.slice(0, -1),
      'truncated to its first half': sign.slice(0, sign.length / 2),
      'without its base64 padding': sign.replace(/=+$/, ''),
      'extended by a character': `${sign}A`,
      'extended by padding': `${sign}==`,
      'one bit changed in the first byte': oneBit(0),
      'one bit changed in the last byte': oneBit(63),
    };
    const get = (signature: string) =>
      h.request('GET', '/v1/spot-wallet', {
        headers: { 'x-api-key': alice.apiKey, 'x-api-sign': signature },
      });
    assert.equal((await get(sign)).status, 200);
    for (const [change, signature] of Object.entries(altered)) {
      assert.notEqual(signature, sign, change);
      const r = await get(signature);
      assert.deepEqual([r.status, r.json], [422, INVALID], change);
    }
  });

  test('a revoked key is refused', async () => {
    const bob = await h.trader();
    assert.equal((await h.request('GET', '/v1/spot-wallet', { as: bob })).status, 200);
    await h.exchange.store.revokeApiKey(bob.apiKey, h.now() as Micros);
    const r = await h.request('GET', '/v1/spot-wallet', { as: bob });
    assert.deepEqual([r.status, r.json], [422, INVALID]);
  });

  test('a key without the trade scope reads but cannot create or cancel orders', async () => {
    assert.equal((await h.request('GET', '/v1/open-orders', { as: reader })).status, 200);
    const create = await h.request('POST', '/v1/orders', {
      as: reader,
      body: { order_direction: 'buy', order_type: 'limit', pair: 'BTC/EUR', volume: '0.01', price: '100' },
    });
    assert.deepEqual([create.status, create.json], [403, { error: 'Access Denied' }]);
    const cancel = await h.request('DELETE', '/v1/orders/1', { as: reader });
    assert.deepEqual([cancel.status, cancel.json], [403, { error: 'Access Denied' }]);
  });

  test('authentication comes before body checks: malformed JSON is 422 unsigned, 400 signed', async () => {
    const unsigned = await h.request('POST', '/v1/orders', { body: '{"broken":' });
    assert.deepEqual([unsigned.status, unsigned.json], [422, INVALID]);
    const signed = await h.request('POST', '/v1/orders', { as: alice, body: '{"broken":' });
    assert.deepEqual([signed.status, signed.json], [400, { error: 'Invalid request' }]);
    const proto = await h.request('POST', '/v1/orders', { as: alice, body: '{"__proto__":{"x":1}}' });
    assert.deepEqual([proto.status, proto.json], [400, { error: 'Invalid request' }]);
    // Not UTF-8 (a Latin-1 "é"): refused as malformed, after the signature over those bytes passed.
    const latin1 = await h.request('POST', '/v1/orders', {
      as: alice,
      body: Buffer.from('{"a":"\xe9"}', 'latin1'),
    });
    assert.deepEqual([latin1.status, latin1.json], [400, { error: 'Invalid request' }]);
  });

  test('repeated or oversized headers are refused', async () => {
    const sign = computeSignature('GET', '', alice.apiSecret);
    const long = await h.request('GET', '/v1/spot-wallet', {
      headers: { 'x-api-key': 'k'.repeat(300), 'x-api-sign': sign },
    });
    assert.equal(long.status, 422);
  });
});
