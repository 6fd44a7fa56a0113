// The browser's signer (web/shared/sign.ts, WebCrypto) must produce exactly the signature the
// server checks and the Node client computes (src/client/sign.ts): a page whose signature differs
// by one byte could read nothing and trade nothing.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { test } from 'node:test';
import { signRequest as nodeSign } from '../../src/client/sign.js';
import { bodyDigest, createSigner, signRequest } from '../../web/shared/sign.js';

test('the WebCrypto signature equals the Node client signature for bodies, empty bodies and methods', async () => {
  const secret = randomBytes(64).toString('base64');
  const bodies = [
    '',
    '{}',
    '{"order_direction":"buy","order_type":"limit","pair":"BTC/EUR","volume":"0.001","price":"30000"}',
    '{"socket_id":"123.456","channel_name":"private-order-executed.7"}',
    '{"note":"ünïcødé €"}',
  ];
  for (const method of ['GET', 'post', 'DELETE']) {
    for (const body of bodies) {
      assert.equal(
        await signRequest(method, body, secret),
        nodeSign(method, body, secret),
        `${method} ${body}`,
      );
    }
  }
  const signer = await createSigner(secret);
  assert.equal(await signer('GET', ''), nodeSign('GET', '', secret));
});

test('an empty body is hashed as {}', async () => {
  assert.equal(await bodyDigest(''), await bodyDigest('{}'));
  assert.equal(await bodyDigest('{}'), '44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a');
});
