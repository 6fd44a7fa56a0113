import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { test } from 'node:test';
import { inspect } from 'node:util';
import { computeSignature } from '../auth/signature.js';
import { CredentialVault, generateApiCredentials } from '../auth/vault.js';
import { OpenedSecrets } from './authenticate.js';

test('OpenedSecrets: opens a key once, again when its sealed secret changes; bounded; never printed', () => {
  const vault = new CredentialVault(randomBytes(32));
  let opened = 0;
  const counting = {
    open: (sealed: string) => {
      opened++;
      return vault.open(sealed);
    },
  };
  const secrets = new OpenedSecrets(counting, 2);
  const a = generateApiCredentials();
  const sealedA = vault.seal(a.apiSecret);
  const signed = computeSignature('POST', '{"x":1}', a.apiSecret);
  for (let i = 0; i < 3; i++) assert.ok(secrets.key(a.apiKey, sealedA).verify('POST', '{"x":1}', signed));
  assert.equal(opened, 1);

  // Same API key, another secret (the row changed): the old key is not used.
  const other = generateApiCredentials();
  const resealed = vault.seal(other.apiSecret);
  assert.ok(!secrets.key(a.apiKey, resealed).verify('POST', '{"x":1}', signed));
  assert.equal(opened, 2);

  for (const name of ['b', 'c', 'd']) secrets.key(name, vault.seal(other.apiSecret));
  assert.equal(secrets.size, 2);

  assert.throws(() => secrets.key('e', 'v1.bad.bad.bad'));
  assert.equal(secrets.size, 2);

  const printed = `${inspect(secrets, { depth: 10, showHidden: true })} ${JSON.stringify({ secrets })}`;
  assert.ok(!printed.includes(other.apiSecret) && !printed.includes(a.apiSecret));
  assert.match(printed, /\[OpenedSecrets\]/);
});
