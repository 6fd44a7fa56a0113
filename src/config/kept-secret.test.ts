import assert from 'node:assert/strict';
import { chmodSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { ConfigError, loadConfig } from './config.js';
import { keptSecret } from './kept-secret.js';

const tempDir = (t: { after(fn: () => void): void }) => {
  const dir = mkdtempSync(join(tmpdir(), 'openspot-secret-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
};

test('an unset secret is generated once, kept 0600 in DATA_DIR, and reused on the next start', (t) => {
  const dir = tempDir(t);
  const first = keptSecret(dir, 'ws-app-secret', undefined);
  assert.equal(first.generated, true);
  assert.equal(first.file, join(dir, 'ws-app-secret'));
  assert.ok(first.value.length >= 43, 'at least 256 random bits');
  assert.equal((statSync(first.file!).mode & 0o777).toString(8), '600');
  const second = keptSecret(dir, 'ws-app-secret', undefined);
  assert.equal(second.generated, false);
  assert.equal(second.value, first.value);
  assert.notEqual(keptSecret(tempDir(t), 'ws-app-secret', undefined).value, first.value);
});

test('a secret from the environment wins and writes no file', (t) => {
  const dir = tempDir(t);
  const kept = keptSecret(dir, 'ws-app-secret', 'from-the-environment');
  assert.deepEqual(kept, { value: 'from-the-environment', file: undefined, generated: false });
  assert.throws(() => readFileSync(join(dir, 'ws-app-secret')));
});

test('a kept file readable by others is narrowed to 0600', (t) => {
  const dir = tempDir(t);
  const { file, value } = keptSecret(dir, 'ws-app-secret', undefined);
  chmodSync(file!, 0o644);
  assert.equal(keptSecret(dir, 'ws-app-secret', undefined).value, value);
  assert.equal((statSync(file!).mode & 0o777).toString(8), '600');
});

test('no configuration yields the old public WebSocket secret, in production or not', () => {
  for (const env of [{ NODE_ENV: 'production' }, {}, { NODE_ENV: 'production', WS_APP_SECRET: '' }]) {
    const config = loadConfig(env);
    assert.equal(config.ws.appSecret, undefined, JSON.stringify(env));
  }
  assert.equal(loadConfig({ WS_APP_SECRET: 'x'.repeat(32) }).ws.appSecret, 'x'.repeat(32));
});

test('a WS_APP_SECRET shorter than 16 characters stops the start, naming the variable', () => {
  assert.throws(
    () => loadConfig({ WS_APP_SECRET: 'openspot-secret' }),
    (error: unknown) => error instanceof ConfigError && error.message.includes('WS_APP_SECRET'),
  );
});
