/** The cluster key: SECRETS_KEY's conventions, and MACs that verify only what they were made for. */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { inspect } from 'node:util';
import { ConfigError } from '../config/config.js';
import { CLUSTER_KEY_FILE, ClusterKey } from './cluster-key.js';

const body = new TextEncoder().encode('{"v":2}');

test('a MAC verifies for its purpose, fields and body under its key, and for nothing else', () => {
  const key = ClusterKey.random();
  const mac = key.mac('command', ['subject', 'id', '123'], body);
  assert.equal(key.verify('command', ['subject', 'id', '123'], body, mac), true);
  assert.equal(key.verify('batch', ['subject', 'id', '123'], body, mac), false, 'another purpose');
  assert.equal(key.verify('command', ['subject', 'id', '124'], body, mac), false, 'another field');
  assert.equal(key.verify('command', ['subjecti', 'd', '123'], body, mac), false, 'fields shifted');
  assert.equal(
    key.verify('command', ['subject', 'id', '123'], new Uint8Array([1]), mac),
    false,
    'another body',
  );
  assert.equal(
    ClusterKey.random().verify('command', ['subject', 'id', '123'], body, mac),
    false,
    'another key',
  );
  for (const bad of [undefined, '', 'v1.', `v2.${mac.slice(3)}`, `${mac}x`])
    assert.equal(key.verify('command', ['subject', 'id', '123'], body, bad), false, String(bad));
});

test('CLUSTER_KEY is the base64 of 32 bytes; without it a key is generated into DATA_DIR (0600) and kept', () => {
  const dir = mkdtempSync(join(tmpdir(), 'openspot-cluster-key-'));
  const given = randomBytes(32).toString('base64');
  const fromEnv = ClusterKey.fromEnvOrFile(dir, { CLUSTER_KEY: given }, true);
  assert.equal(
    new ClusterKey(Buffer.from(given, 'base64')).mac('batch', [], body),
    fromEnv.mac('batch', [], body),
  );
  const generated = ClusterKey.fromEnvOrFile(dir, {}, false);
  const file = join(dir, CLUSTER_KEY_FILE);
  assert.equal(statSync(file).mode & 0o777, 0o600);
  assert.equal(Buffer.from(readFileSync(file, 'utf8').trim(), 'base64').length, 32);
  assert.equal(
    ClusterKey.fromEnvOrFile(dir, {}, false).mac('batch', [], body),
    generated.mac('batch', [], body),
  );
  assert.equal(inspect(generated), '[ClusterKey]');
  assert.equal(JSON.stringify({ generated }), '{"generated":"[ClusterKey]"}');
});

test('in production CLUSTER_KEY is required; a value that is not a 32-byte key is refused without being echoed', () => {
  const dir = mkdtempSync(join(tmpdir(), 'openspot-cluster-key-'));
  assert.throws(
    () => ClusterKey.fromEnvOrFile(dir, {}, true),
    (e: unknown) => e instanceof ConfigError && /CLUSTER_KEY is required/.test(e.message),
  );
  assert.throws(
    () => ClusterKey.fromEnvOrFile(dir, { CLUSTER_KEY: 'not-a-key-hunter2' }, false),
    (e: unknown) =>
      e instanceof ConfigError && /CLUSTER_KEY/.test(e.message) && !e.message.includes('hunter2'),
  );
});
