/**
 * REDIS_URL shares the per-key rate limit through Redis: validated at start, never echoing the
 * URL (it may hold a password); unset, each process limits on its own (no Redis needed).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ConfigError, loadConfig } from './config.js';

test('REDIS_URL: unset means in-process limits; a redis:// or rediss:// URL is taken; anything else is refused', () => {
  assert.equal(loadConfig({}).redisUrl, undefined);
  assert.equal(loadConfig({ REDIS_URL: ' ' }).redisUrl, undefined);
  assert.equal(loadConfig({ REDIS_URL: 'redis://127.0.0.1:6379' }).redisUrl, 'redis://127.0.0.1:6379');
  assert.equal(
    loadConfig({ REDIS_URL: 'rediss://:s3cret@cache:6380/2' }).redisUrl,
    'rediss://:s3cret@cache:6380/2',
  );
  for (const [bad, message] of [
    ['http://:s3cret@cache:6379', /must start with redis:\/\/ or rediss:\/\//],
    ['s3cret cache', /not a URL/],
  ] as const) {
    assert.throws(
      () => loadConfig({ REDIS_URL: bad }),
      (error: unknown) =>
        error instanceof ConfigError && message.test(error.message) && !error.message.includes('s3cret'),
      bad,
    );
  }
});
