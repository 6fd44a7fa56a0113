import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { UserId } from '../domain/types.js';
import { ApiKeyCache } from './api-key-cache.js';
import type { ApiKeyRecord } from './store.js';

const record = (key: string): ApiKeyRecord => ({
  key,
  userId: 1 as UserId,
  sealedSecret: 'sealed',
  scopes: ['read'],
  createdAt: 0 as ApiKeyRecord['createdAt'],
  revokedAt: null,
  ipAllowlist: ['10.0.0.1'],
  nonceRequired: false,
});

test('ApiKeyCache: kept for its lifetime, frozen, forgotten on demand', () => {
  let now = 0;
  const cache = new ApiKeyCache(500, () => now);
  const kept = cache.remember(record('a'));
  assert.ok(Object.isFrozen(kept) && Object.isFrozen(kept.scopes) && Object.isFrozen(kept.ipAllowlist));
  assert.equal(cache.get('a'), kept);
  now = 499;
  assert.equal(cache.get('a'), kept);
  now = 500;
  assert.equal(cache.get('a'), undefined, 'expired at its lifetime');
  cache.remember(record('b'));
  cache.forget('b');
  assert.equal(cache.get('b'), undefined);
});

test('ApiKeyCache: lifetime 0 keeps nothing (but freezes); Infinity keeps until forgotten', () => {
  const none = new ApiKeyCache(0, () => 0);
  assert.ok(Object.isFrozen(none.remember(record('a'))));
  assert.equal(none.get('a'), undefined);
  let now = 0;
  const forever = new ApiKeyCache(Number.POSITIVE_INFINITY, () => now);
  const kept = forever.remember(record('a'));
  now = Number.MAX_SAFE_INTEGER;
  assert.equal(forever.get('a'), kept);
});

test('ApiKeyCache: bounded, the oldest remembered is dropped first', () => {
  const cache = new ApiKeyCache(Number.POSITIVE_INFINITY, () => 0, 2);
  cache.remember(record('a'));
  cache.remember(record('b'));
  cache.remember(record('a')); // read again: now the newest
  cache.remember(record('c'));
  assert.equal(cache.get('b'), undefined);
  assert.notEqual(cache.get('a'), undefined);
  assert.notEqual(cache.get('c'), undefined);
});
