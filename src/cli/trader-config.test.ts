/** Where trader commands connect: flag > --profile > environment > default profile > default. */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { resolveTrader, v1Url } from './trader-config.js';

const dir = mkdtempSync(join(tmpdir(), 'openspot-profile-'));
after(() => rmSync(dir, { recursive: true, force: true }));
const file = (name: string, value: unknown) => {
  const path = join(dir, name);
  writeFileSync(path, typeof value === 'string' ? value : JSON.stringify(value));
  return path;
};
const none = join(dir, 'missing.json');

test('v1Url accepts the server root or the /v1 base', () => {
  assert.equal(v1Url('http://h:1'), 'http://h:1/v1');
  assert.equal(v1Url('http://h:1/'), 'http://h:1/v1');
  assert.equal(v1Url('http://h:1/v1/'), 'http://h:1/v1');
});

test('defaults: local server, no credentials, development app key', () => {
  assert.deepEqual(resolveTrader({}, {}, none), {
    baseUrl: 'http://127.0.0.1:8080/v1',
    apiKey: undefined,
    apiSecret: undefined,
    wsAppKey: 'openspot-key',
    nonce: false,
    profileFile: undefined,
  });
  assert.equal(resolveTrader({}, { PORT: '9000' }, none).baseUrl, 'http://127.0.0.1:9000/v1');
});

test('precedence: flag > --profile > environment > default profile', () => {
  const fallback = file('default.json', {
    url: 'http://default',
    api_key: 'dk',
    api_secret: 'ds',
    ws_app_key: 'dw',
  });
  const explicit = file('explicit.json', { url: 'http://explicit', api_key: 'ek', api_secret: 'es' });
  const env = { OPENSPOT_URL: 'http://env', OPENSPOT_API_KEY: 'vk', OPENSPOT_API_SECRET: 'vs' };

  const fromDefault = resolveTrader({}, {}, fallback);
  assert.deepEqual(
    [fromDefault.baseUrl, fromDefault.apiKey, fromDefault.wsAppKey, fromDefault.profileFile],
    ['http://default/v1', 'dk', 'dw', fallback],
  );
  const fromEnv = resolveTrader({}, env, fallback);
  assert.deepEqual([fromEnv.baseUrl, fromEnv.apiKey, fromEnv.apiSecret], ['http://env/v1', 'vk', 'vs']);
  // The environment fills in what the default profile would, but a field only the profile has stays.
  assert.equal(fromEnv.wsAppKey, 'dw');
  const fromExplicit = resolveTrader({ profile: explicit }, env, fallback);
  assert.deepEqual(
    [fromExplicit.baseUrl, fromExplicit.apiKey, fromExplicit.wsAppKey],
    ['http://explicit/v1', 'ek', 'openspot-key'],
  );
  assert.equal(
    resolveTrader({ profile: explicit, url: 'http://flag/v1' }, env, fallback).baseUrl,
    'http://flag/v1',
  );
  assert.equal(
    resolveTrader({ appKey: 'flagkey' }, { OPENSPOT_WS_APP_KEY: 'envkey' }, none).wsAppKey,
    'flagkey',
  );
  assert.equal(resolveTrader({}, { OPENSPOT_WS_APP_KEY: 'envkey' }, none).wsAppKey, 'envkey');
});

test('a bad profile is an error naming the file', () => {
  assert.throws(() => resolveTrader({ profile: none }, {}, none), /cannot read profile/);
  assert.throws(() => resolveTrader({ profile: file('bad.json', '{oops') }, {}, none), /cannot read profile/);
  assert.throws(() => resolveTrader({ profile: file('arr.json', []) }, {}, none), /JSON object/);
  assert.throws(
    () => resolveTrader({ profile: file('num.json', { api_key: 5 }) }, {}, none),
    /"api_key" must be a string/,
  );
});

test('nonces: profile `nonce_required` (as the key view shows it) or OPENSPOT_NONCE', () => {
  const withNonce = file('nonce.json', { api_key: 'k', api_secret: 's', nonce_required: true });
  assert.equal(resolveTrader({ profile: withNonce }, {}, none).nonce, true);
  assert.equal(resolveTrader({ profile: withNonce }, { OPENSPOT_NONCE: 'false' }, none).nonce, true);
  assert.equal(resolveTrader({}, { OPENSPOT_NONCE: 'true' }, none).nonce, true);
  assert.equal(resolveTrader({}, { OPENSPOT_NONCE: '1' }, none).nonce, true);
  assert.equal(resolveTrader({}, { OPENSPOT_NONCE: '0' }, withNonce).nonce, false);
  assert.equal(resolveTrader({}, {}, withNonce).nonce, true);
  assert.throws(() => resolveTrader({}, { OPENSPOT_NONCE: 'maybe' }, none), /OPENSPOT_NONCE/);
  const bad = file('bad-nonce.json', { nonce_required: 'yes' });
  assert.throws(() => resolveTrader({ profile: bad }, {}, none), /nonce_required/);
});
