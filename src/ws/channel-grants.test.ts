import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ChannelGrants } from './channel-grants.js';

test('a grant needs a live connection, names its key, and dies with the connection', () => {
  const revoked = new Set<string>();
  const grants = new ChannelGrants({ isKeyActive: (key) => !revoked.has(key), maxPerConnection: 2 });
  assert.equal(grants.grant('1.1', 'private-order-executed.7', 'k1'), false, 'not connected');
  grants.opened('1.1');
  assert.equal(grants.check('1.1', 'private-order-executed.7'), 'not-issued');
  assert.equal(grants.grant('1.1', 'private-order-executed.7', 'k1'), true);
  assert.equal(grants.check('1.1', 'private-order-executed.7'), 'granted');
  assert.equal(grants.check('2.2', 'private-order-executed.7'), 'not-issued', 'another connection');
  revoked.add('k1');
  assert.equal(grants.check('1.1', 'private-order-executed.7'), 'revoked');
  grants.grant('1.1', 'private-order-executed.7', 'k2');
  assert.equal(grants.check('1.1', 'private-order-executed.7'), 'granted', 'the latest key counts');
  grants.grant('1.1', 'private-order-executed.8', 'k2');
  grants.grant('1.1', 'private-order-executed.9', 'k2');
  assert.equal(grants.check('1.1', 'private-order-executed.7'), 'not-issued', 'the oldest is forgotten');
  assert.equal(grants.check('1.1', 'private-order-executed.9'), 'granted');
  grants.closed('1.1');
  assert.equal(grants.check('1.1', 'private-order-executed.9'), 'not-issued');
  assert.equal(grants.connections, 0);
});
