/**
 * signRequest against vectors computed outside this module: literal values produced with Python's
 * hashlib/hmac, and WebCrypto (a separate implementation) for random inputs.
 */
import assert from 'node:assert/strict';
import { webcrypto } from 'node:crypto';
import { test } from 'node:test';
import { bodyDigest, signRequest } from './sign.js';

// base64 of the bytes 0..63.
const SECRET = 'AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8gISIjJCUmJygpKissLS4vMDEyMzQ1Njc4OTo7PD0+Pw==';
const ORDER =
  '{"order_direction":"buy","order_type":"limit","pair":"BTC/EUR","volume":"0.01","price":"30000"}';

test('literal vectors (Python hashlib + hmac)', () => {
  assert.equal(bodyDigest(''), '44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a');
  assert.equal(bodyDigest('{}'), bodyDigest(''));
  assert.equal(
    signRequest('GET', '', SECRET),
    'DtV7EiWJBuYh26LRSvdDyZllQYeBM9uQLFRAwC+UDobYeIOGMRHof+VBnl6O3ki1rbBR4RyydTDKkPZcK+FBjg==',
  );
  assert.equal(
    signRequest('POST', ORDER, SECRET),
    'vgYTcNuZR66KfH2YFRUL4ySe3rLu5Lce2WlBKhmxWppEldjZ2JOLiYSRFJn+g9ZvXAYEB6yzP9ibH1F54SmZEw==',
  );
  assert.equal(
    signRequest('DELETE', '{}', SECRET),
    '1KGoz05YkZyDkxLyt2mDKAk4vlO5XfKRHXmpCG3kBWR3uoK70gnVaKWmI30J0lpCGuhR2r7jzgBYeEVbY1cKfg==',
  );
});

test('the method is upper-cased and takes part in the signature', () => {
  assert.equal(signRequest('post', ORDER, SECRET), signRequest('POST', ORDER, SECRET));
  assert.notEqual(signRequest('PUT', ORDER, SECRET), signRequest('POST', ORDER, SECRET));
});

test('the exact body string is signed: key order and spacing matter', () => {
  const reordered =
    '{"order_type":"limit","order_direction":"buy","pair":"BTC/EUR","volume":"0.01","price":"30000"}';
  assert.notEqual(signRequest('POST', reordered, SECRET), signRequest('POST', ORDER, SECRET));
  assert.notEqual(signRequest('POST', ORDER.replace(':', ': '), SECRET), signRequest('POST', ORDER, SECRET));
});

test('matches WebCrypto for random secrets and bodies', { timeout: 10_000 }, async () => {
  const subtle = webcrypto.subtle;
  const hex = (bytes: ArrayBuffer) => Buffer.from(bytes).toString('hex');
  for (let i = 0; i < 20; i += 1) {
    const secretBytes = webcrypto.getRandomValues(new Uint8Array(64));
    const secret = Buffer.from(secretBytes).toString('base64');
    const body = i % 4 === 0 ? '' : JSON.stringify({ n: i, text: `é€ ${Math.random()}` });
    const method = ['GET', 'POST', 'DELETE'][i % 3]!;
    const digest = hex(await subtle.digest('SHA-256', new TextEncoder().encode(body === '' ? '{}' : body)));
    const key = await subtle.importKey('raw', secretBytes, { name: 'HMAC', hash: 'SHA-512' }, false, [
      'sign',
    ]);
    const mac = await subtle.sign('HMAC', key, new TextEncoder().encode(method + digest));
    assert.equal(signRequest(method, body, secret), Buffer.from(mac).toString('base64'));
  }
});

test('scripts/sign.mjs (the curl helper) prints the same signature', { timeout: 10_000 }, async () => {
  const { execFile } = await import('node:child_process');
  const { promisify } = await import('node:util');
  const script = new URL('../../scripts/sign.mjs', import.meta.url).pathname;
  const run = (args: string[]) =>
    promisify(execFile)(process.execPath, [script, ...args], {
      env: { OPENSPOT_API_SECRET: SECRET },
      timeout: 10_000,
    });
  assert.equal((await run(['POST', ORDER])).stdout, `${signRequest('POST', ORDER, SECRET)}\n`);
  assert.equal((await run(['get'])).stdout, `${signRequest('GET', '', SECRET)}\n`);
});
