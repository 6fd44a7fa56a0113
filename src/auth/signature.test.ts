import assert from 'node:assert/strict';
import { createRequire, syncBuiltinESMExports } from 'node:module';
import { test } from 'node:test';
import { inspect } from 'node:util';
import fc from 'fast-check';
import { bodyDigest, computeSignature, SignatureKey, verifySignature } from './signature.js';

// Vectors computed independently with Python's hashlib/hmac/base64 (not with this module).
const SECRET = 'AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8gISIjJCUmJygpKissLS4vMDEyMzQ1Njc4OTo7PD0+Pw==';
const ORDER_BODY =
  '{"order_direction":"buy","order_type":"limit","pair":"BTC/EUR","volume":"1.25","price":"30000.0"}';

test('the digest of an empty body is the digest of {}', () => {
  assert.equal(bodyDigest(''), '44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a');
  assert.equal(bodyDigest(Buffer.alloc(0)), bodyDigest('{}'));
});

test('known vectors', () => {
  assert.equal(
    computeSignature('GET', '', SECRET),
    'DtV7EiWJBuYh26LRSvdDyZllQYeBM9uQLFRAwC+UDobYeIOGMRHof+VBnl6O3ki1rbBR4RyydTDKkPZcK+FBjg==',
  );
  assert.equal(
    computeSignature('POST', ORDER_BODY, SECRET),
    'v2YkG/82zoo5KLdblF+vG9PPL8YW5NU89GsSPiox3TqaHs6GJ4oS/H5fAJHGXWfSxUqd7DR58E7TpaBi8PkhiA==',
  );
  assert.equal(
    computeSignature('DELETE', Buffer.alloc(0), 'c2VjcmV0'),
    'e238fSljwyUQ1p9kLLaJ6WG5aXQIllOhYgWqgGaBfBIsDvfzQtaBrcRUPXd2H19XikMre0z4/CWjwfL1cJeN7w==',
  );
});

test('key order matters: the bytes are signed, not the parsed object', () => {
  const a = computeSignature('POST', '{"pair":"BTC/EUR","order_type":"limit"}', SECRET);
  const b = computeSignature('POST', '{"order_type":"limit","pair":"BTC/EUR"}', SECRET);
  assert.equal(a, 'FwYYzJZq2l2SJ0QAxMAmb2ceNOeDGvavnGYrFlyUYjkd8PuX5cWIgMnf9vDKMOqTkxx5Wli0RG1xlEQSIAfxxw==');
  assert.equal(b, 'RyfySMg2rwKqxIWkEA02jWA4832zyh9iWGO/H2qgFq+YkNXEOgip0pquTNBHrBbCxLNtWipEe2vwlZvJtkXq1A==');
});

test('non-ASCII bodies are signed as their UTF-8 bytes, string or buffer alike', () => {
  const text = '{"note":"café €"}';
  const expected = 'gjepPC8Y7djZrFhvSj2pfUkIfc/Te0Ujm19q6/b6bJAUmWWT4/FsqGtr1dfC8kw66viLyAO6gQbKJ2jxAzGkWQ==';
  assert.equal(computeSignature('POST', text, SECRET), expected);
  assert.equal(computeSignature('POST', Buffer.from(text, 'utf8'), SECRET), expected);
});

test('the method is upper-cased before signing', () => {
  assert.equal(computeSignature('post', ORDER_BODY, SECRET), computeSignature('POST', ORDER_BODY, SECRET));
});

test('verify rejects a changed method, body, secret, or signature of another length', () => {
  const sig = computeSignature('POST', ORDER_BODY, SECRET);
  assert.equal(verifySignature('POST', ORDER_BODY, SECRET, sig), true);
  assert.equal(verifySignature('DELETE', ORDER_BODY, SECRET, sig), false);
  assert.equal(verifySignature('POST', `${ORDER_BODY} `, SECRET, sig), false);
  assert.equal(verifySignature('POST', ORDER_BODY, 'c2VjcmV0', sig), false);
  assert.equal(verifySignature('POST', ORDER_BODY, SECRET, ''), false);
  assert.equal(verifySignature('POST', ORDER_BODY, SECRET, sig.slice(0, -2)), false);
  assert.equal(verifySignature('POST', ORDER_BODY, SECRET, `${sig}==`), false);
  assert.equal(verifySignature('POST', ORDER_BODY, SECRET, 'é'.repeat(44)), false);
});

test('property: verify(compute(x)) holds and a flipped character fails', () => {
  fc.assert(
    fc.property(
      fc.constantFrom('GET', 'POST', 'DELETE', 'PUT'),
      fc.oneof(fc.string(), fc.json()),
      fc.uint8Array({ minLength: 1, maxLength: 96 }),
      fc.nat(),
      (method, body, secretBytes, position) => {
        const secret = Buffer.from(secretBytes).toString('base64');
        const sig = computeSignature(method, body, secret);
        assert.equal(verifySignature(method, body, secret, sig), true);
        assert.equal(verifySignature(method, Buffer.from(body, 'utf8'), secret, sig), true);
        const i = position % sig.length;
        const flipped = sig.slice(0, i) + (sig[i] === 'A' ? 'B' : 'A') + sig.slice(i + 1);
        assert.equal(verifySignature(method, body, secret, flipped), false);
      },
    ),
  );
});

test('SignatureKey: the same signatures as computeSignature, for keys of any length; never printed', () => {
  fc.assert(
    fc.property(
      fc.constantFrom('GET', 'POST', 'DELETE', 'delete'),
      fc.oneof(fc.string(), fc.json(), fc.constant('')),
      fc.uint8Array({ minLength: 0, maxLength: 300 }),
      (method, body, secretBytes) => {
        const secret = Buffer.from(secretBytes).toString('base64');
        const key = new SignatureKey(secret);
        const expected = computeSignature(method, body, secret);
        assert.equal(key.sign(method, body), expected);
        assert.equal(key.sign(method, Buffer.from(body, 'utf8')), expected);
        assert.equal(key.verify(method, body, expected), true);
        const flipped = (expected[0] === 'A' ? 'B' : 'A') + expected.slice(1);
        assert.equal(key.verify(method, body, flipped), false);
      },
    ),
  );
  assert.equal(
    new SignatureKey(SECRET).sign('POST', ORDER_BODY),
    computeSignature('POST', ORDER_BODY, SECRET),
  );
  const printed = `${inspect(new SignatureKey(SECRET), { showHidden: true })} ${JSON.stringify(new SignatureKey(SECRET))}`;
  assert.equal(printed, '[SignatureKey] "[SignatureKey]"');
});

/**
 * The comparison itself: a plain `===` refuses exactly what timingSafeEqual refuses, so only the
 * route the answer takes tells them apart. crypto.timingSafeEqual is replaced by a recording stand-in
 * whose answer is forced: verify must call it on the expected and the given bytes and answer what
 * it answers, for verifySignature and SignatureKey alike, whatever the length of the given value.
 */
test('signatures are compared by crypto.timingSafeEqual, whose answer is the answer', (t) => {
  const cryptoModule = createRequire(import.meta.url)('node:crypto') as typeof import('node:crypto');
  const calls: { expected: string; given: string }[] = [];
  let forced = false;
  t.mock.method(cryptoModule, 'timingSafeEqual', (a: NodeJS.ArrayBufferView, b: NodeJS.ArrayBufferView) => {
    const text = (v: NodeJS.ArrayBufferView) => Buffer.from(v.buffer, v.byteOffset, v.byteLength).toString();
    calls.push({ given: text(a), expected: text(b) });
    return forced;
  });
  // The module's named import is a live binding of node:crypto's ES module: brought in step here.
  syncBuiltinESMExports();
  t.after(() => {
    t.mock.restoreAll();
    syncBuiltinESMExports();
  });
  const sig = computeSignature('POST', ORDER_BODY, SECRET);
  const other = computeSignature('GET', '', SECRET);
  const key = new SignatureKey(SECRET);
  const verifiers = [
    (given: string) => verifySignature('POST', ORDER_BODY, SECRET, given),
    (given: string) => key.verify('POST', ORDER_BODY, given),
  ];
  for (const verify of verifiers) {
    calls.length = 0;
    forced = false;
    assert.equal(verify(sig), false, 'the right signature, refused because timingSafeEqual said so');
    assert.deepEqual(calls, [{ given: sig, expected: sig }]);
    forced = true;
    calls.length = 0;
    assert.equal(verify(other), true, 'another signature, accepted because timingSafeEqual said so');
    assert.deepEqual(calls, [{ given: other, expected: sig }]);
    // Another length: refused, after comparing as much as for one of the right length.
    calls.length = 0;
    assert.equal(verify(sig.slice(0, -1)), false);
    assert.equal(calls.length, 1);
  }
});
