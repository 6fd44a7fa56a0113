/** SecretsKeyCheck: a gateway learns whether its SECRETS_KEY opens what the engine sealed. */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { test } from 'node:test';
import { CredentialVault } from '../auth/vault.js';
import { SECRETS_KEY_MISMATCH, SecretsKeyCheck } from './secrets-check.js';

test('the engine’s key passes; another key fails with the reason /readyz gives; no key stored yet passes', async () => {
  const engine = new CredentialVault(randomBytes(32));
  let newest: string | undefined;
  const ours = new SecretsKeyCheck(engine, async () => newest);
  const other = new SecretsKeyCheck(new CredentialVault(randomBytes(32)), async () => newest);
  assert.equal(await other.check(), true, 'nothing sealed yet: nothing to disagree about');
  newest = engine.seal('a secret');
  assert.equal(await ours.check(), true);
  assert.equal(ours.notReadyReason(), undefined);
  assert.equal(await other.check(), false);
  assert.equal(other.notReadyReason(), SECRETS_KEY_MISMATCH);
});

test('a database read that fails changes nothing (the store probes report it)', async () => {
  const check = new SecretsKeyCheck(new CredentialVault(randomBytes(32)), async () => {
    throw new Error('connection refused');
  });
  assert.equal(await check.check(), true);
  assert.equal(check.notReadyReason(), undefined);
});
