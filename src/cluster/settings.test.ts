/**
 * NATS settings from the environment: credentials and TLS reach the client's options the way NATS
 * users write them, secrets never reach the log line, and a contradiction is a ConfigError.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { ConfigError } from '../config/config.js';
import { clusterSettings, describeNats, natsConnectOptions, natsSettings } from './settings.js';

const dir = mkdtempSync(join(tmpdir(), 'openspot-nats-settings-'));
const file = (name: string) => {
  const path = join(dir, name);
  writeFileSync(path, 'x');
  return path;
};

test('without settings: the local server, no authentication, no TLS', () => {
  assert.deepEqual(natsSettings({}), { servers: ['127.0.0.1:4222'] });
  assert.equal(clusterSettings({}).subjectPrefix, 'openspot.engine');
});

test('a user and password in NATS_URL are the client’s user and pass (percent-decoded), and leave the server address', () => {
  const settings = natsSettings({ NATS_URL: 'nats://gateway:p%40ss%3Aword@nats.internal:4223' });
  assert.deepEqual(settings, { servers: ['nats.internal:4223'], user: 'gateway', pass: 'p@ss:word' });
  const options = natsConnectOptions(settings, 'gw');
  assert.equal(options.user, 'gateway');
  assert.equal(options.pass, 'p@ss:word');
  assert.deepEqual(options.servers, ['nats.internal:4223']);
  assert.doesNotMatch(JSON.stringify(describeNats(settings)), /p@ss/);
});

test('a user without a password in NATS_URL is a token, as NATS clients read it; NATS_TOKEN too', () => {
  assert.equal(natsSettings({ NATS_URL: 'nats://s3cret@nats:4222' }).token, 's3cret');
  assert.equal(natsConnectOptions(natsSettings({ NATS_TOKEN: 'tok' }), 'x').token, 'tok');
});

test('tls:// or any NATS_TLS_* file requires TLS, with the files given; a list of servers shares its credentials', () => {
  assert.deepEqual(natsSettings({ NATS_URL: 'tls://a:4222,tls://b:4222' }), {
    servers: ['a:4222', 'b:4222'],
    tls: {},
  });
  const ca = file('ca.pem');
  const cert = file('cert.pem');
  const key = file('key.pem');
  const settings = natsSettings({ NATS_TLS_CA: ca, NATS_TLS_CERT: cert, NATS_TLS_KEY: key });
  assert.deepEqual(natsConnectOptions(settings, 'x').tls, { caFile: ca, certFile: cert, keyFile: key });
});

test('a creds file becomes an authenticator that reads it at each connection', () => {
  const creds = file('gateway.creds');
  const options = natsConnectOptions(natsSettings({ NATS_CREDS: creds }), 'x');
  assert.equal(typeof options.authenticator, 'function');
  assert.equal(describeNats(natsSettings({ NATS_CREDS: creds })).auth, 'creds');
});

test('contradictions and unusable values are ConfigErrors that name the setting, never echoing a password', () => {
  const cases: Array<[NodeJS.ProcessEnv, RegExp]> = [
    [{ NATS_URL: 'nats://u:p@a:4222', NATS_TOKEN: 't' }, /one way of authenticating/],
    [{ NATS_TOKEN: 't', NATS_CREDS: file('c.creds') }, /one way of authenticating/],
    [{ NATS_URL: 'nats://u:p@a:4222,nats://b:4222' }, /same credentials/],
    [{ NATS_URL: 'http://a:4222' }, /nats:\/\/ or tls:\/\//],
    [{ NATS_CREDS: join(dir, 'missing.creds') }, /NATS_CREDS/],
    [{ NATS_TLS_CERT: file('only-cert.pem') }, /go together/],
    [{ NATS_URL: 'nats://user:hunter2@[bad' }, /NATS_URL/],
  ];
  for (const [env, message] of cases)
    assert.throws(
      () => natsSettings(env),
      (e: unknown) => e instanceof ConfigError && message.test(e.message) && !e.message.includes('hunter2'),
      JSON.stringify(env),
    );
});
