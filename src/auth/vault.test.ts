import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { inspect } from 'node:util';
import { CredentialVault, generateApiCredentials, VaultError } from './vault.js';

const dirs: string[] = [];
const tempDir = (): string => {
  const dir = mkdtempSync(join(tmpdir(), 'openspot-vault-'));
  dirs.push(dir);
  return dir;
};
after(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

test('seal then open gives the secret back; two seals differ', () => {
  const vault = new CredentialVault(randomBytes(32));
  const { apiSecret } = generateApiCredentials();
  const a = vault.seal(apiSecret);
  const b = vault.seal(apiSecret);
  assert.notEqual(a, b);
  assert.ok(!a.includes(apiSecret));
  assert.equal(vault.open(a), apiSecret);
  assert.equal(vault.open(b), apiSecret);
  assert.equal(vault.open(vault.seal('')), '');
  assert.equal(vault.open(vault.seal('ünïcødé €')), 'ünïcødé €');
});

test('open refuses another key, altered data and garbage', () => {
  const vault = new CredentialVault(randomBytes(32));
  const other = new CredentialVault(randomBytes(32));
  const sealed = vault.seal('secret');
  assert.throws(() => other.open(sealed), VaultError);
  const parts = sealed.split('.');
  const ct = Buffer.from(parts[3]!, 'base64url');
  ct[0] = ct[0]! ^ 1;
  assert.throws(
    () => vault.open([parts[0], parts[1], parts[2], ct.toString('base64url')].join('.')),
    VaultError,
  );
  for (const bad of ['', 'v1', 'v2.a.b.c', 'v1.a.b.c', 'v1.!!.??.**', sealed.replace('v1.', 'v0.')]) {
    assert.throws(() => vault.open(bad), VaultError, bad);
  }
});

test('key from SECRETS_KEY wins over the file and is validated', () => {
  const dir = tempDir();
  const key = randomBytes(32).toString('base64');
  const sealed = CredentialVault.fromEnvOrFile(dir, { SECRETS_KEY: key }).seal('x');
  assert.equal(new CredentialVault(Buffer.from(key, 'base64')).open(sealed), 'x');
  assert.throws(() => statSync(join(dir, 'secrets.key')), /ENOENT/);
  assert.throws(
    () => CredentialVault.fromEnvOrFile(dir, { SECRETS_KEY: randomBytes(16).toString('base64') }),
    VaultError,
  );
  assert.throws(() => CredentialVault.fromEnvOrFile(dir, { SECRETS_KEY: 'not base64 at all!' }), VaultError);
  // The error never contains the offending value.
  const leaked = `${'A'.repeat(40)}==`;
  assert.throws(
    () => CredentialVault.fromEnvOrFile(dir, { SECRETS_KEY: leaked }),
    (e: Error) => !e.message.includes(leaked),
  );
});

test('without SECRETS_KEY a 0600 key file is created once and reused', () => {
  const dir = join(tempDir(), 'nested', 'data');
  const first = CredentialVault.fromEnvOrFile(dir, {});
  const path = join(dir, 'secrets.key');
  assert.equal(statSync(path).mode & 0o777, 0o600);
  const content = readFileSync(path, 'utf8');
  assert.equal(Buffer.from(content.trim(), 'base64').length, 32);
  const sealed = first.seal('persisted');
  const second = CredentialVault.fromEnvOrFile(dir, { SECRETS_KEY: '' });
  assert.equal(second.open(sealed), 'persisted');
  assert.equal(readFileSync(path, 'utf8'), content);
});

test('a corrupt key file is an error, not silently replaced', () => {
  const dir = tempDir();
  writeFileSync(join(dir, 'secrets.key'), 'short', { mode: 0o600 });
  assert.throws(() => CredentialVault.fromEnvOrFile(dir, {}), VaultError);
  assert.equal(readFileSync(join(dir, 'secrets.key'), 'utf8'), 'short');
});

test('a vault never shows its key when logged or serialized', () => {
  const key = randomBytes(32);
  const vault = new CredentialVault(key);
  for (const text of [
    inspect(vault, { showHidden: true, depth: 5 }),
    JSON.stringify({ vault }),
    String(vault),
  ]) {
    assert.ok(!text.includes(key.toString('base64')));
    assert.ok(!text.includes(key.toString('hex')));
  }
});

test('generated credentials have the documented shapes and are unique', () => {
  const seen = new Set<string>();
  for (let i = 0; i < 50; i++) {
    const { apiKey, apiSecret } = generateApiCredentials();
    assert.match(apiKey, /^[A-Za-z0-9_-]{43}$/);
    assert.equal(Buffer.from(apiSecret, 'base64').length, 64);
    assert.equal(Buffer.from(apiSecret, 'base64').toString('base64'), apiSecret);
    assert.ok(!seen.has(apiKey));
    seen.add(apiKey);
  }
});
