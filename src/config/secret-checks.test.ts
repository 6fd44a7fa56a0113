import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ConfigError, loadConfig } from './config.js';

const KEY = Buffer.alloc(32, 9).toString('base64');
const production = (env: Record<string, string>) => loadConfig({ NODE_ENV: 'production', ...env });

test('production refuses each example secret of deploy/ and docs/, naming the variable, never the value', () => {
  for (const [name, value] of [
    ['ADMIN_TOKEN', 'change-me-to-a-long-random-admin-token'],
    ['WS_APP_SECRET', 'change-me-to-a-long-random-ws-secret'],
    ['SECRETS_KEY', 'change-me-base64-of-32-random-bytes'],
    ['ADMIN_TOKEN', '<32+ random chars>'],
    ['WS_APP_SECRET', '<a long random secret of yours>'],
    ['DATABASE_URL', 'postgres://openspot:change-me@db.internal:5432/openspot'],
    ['REDIS_URL', 'redis://:change-me-too@redis.internal:6379'],
  ] as const) {
    assert.throws(
      () => production({ [name]: value }),
      (error: Error) =>
        error instanceof ConfigError &&
        error.message.startsWith(name) &&
        /example value/.test(error.message) &&
        !error.message.includes(value),
      `${name}=${value}`,
    );
  }
});

test('outside production the examples still start (development, tests), and real secrets start anywhere', () => {
  assert.equal(loadConfig({ ADMIN_TOKEN: 'change-me-to-a-long-random-admin-token' }).adminToken?.length, 38);
  const config = production({
    ADMIN_TOKEN: 'a-token-nobody-documented',
    WS_APP_SECRET: 'another-secret-of-our-own',
    SECRETS_KEY: KEY,
    DATABASE_URL: 'postgres://openspot:s3cret-of-ours@db.internal:5432/openspot',
  });
  assert.equal(config.secretsKey, KEY);
});

test('secrets shorter than their minimum are refused, in production as elsewhere', () => {
  for (const env of [{}, { NODE_ENV: 'production' }]) {
    assert.throws(
      () => loadConfig({ ...env, ADMIN_TOKEN: 'short-token' }),
      /ADMIN_TOKEN must be at least 16/,
    );
    assert.throws(
      () => loadConfig({ ...env, WS_APP_SECRET: 'short-secret' }),
      /WS_APP_SECRET must be at least 16/,
    );
  }
});

test('configuration errors found by loadConfig, before anything is written: SECRETS_KEY, ADMIN_TOKEN for a network bind, CATALOGUE_FILE', () => {
  assert.throws(
    () => loadConfig({ SECRETS_KEY: 'not-base64-of-32-bytes' }),
    (error: Error) =>
      error instanceof ConfigError &&
      /SECRETS_KEY must be the base64 encoding of exactly 32 bytes/.test(error.message),
  );
  assert.throws(() => loadConfig({ SECRETS_KEY: Buffer.alloc(16).toString('base64') }), ConfigError);
  assert.throws(
    () => loadConfig({ HOST: '0.0.0.0' }),
    (error: Error) => error instanceof ConfigError && /ADMIN_TOKEN must be set when HOST/.test(error.message),
  );
  assert.equal(loadConfig({ HOST: '0.0.0.0', ADMIN_TOKEN: 'a-token-nobody-documented' }).host, '0.0.0.0');
  assert.throws(
    () => loadConfig({ CATALOGUE_FILE: '/nonexistent/catalogue.json' }),
    /CATALOGUE_FILE .* cannot be read as JSON \(ENOENT\)/,
  );
  assert.throws(
    () => loadConfig({ CATALOGUE_FILE: 'package.json' }),
    /must be an object with "assets" and "markets" arrays/,
  );
});
