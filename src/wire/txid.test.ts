import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { orderTransactionId, parseTransactionId, tradeTransactionId } from './txid.js';

test('Kraken-like form, stable values', () => {
  const id = orderTransactionId(1);
  assert.match(id, /^O[0-9A-Z]{5}-[0-9A-Z]{5}-[0-9A-Z]{6}$/);
  assert.match(tradeTransactionId(1), /^T[0-9A-Z]{5}-[0-9A-Z]{5}-[0-9A-Z]{6}$/);
  assert.equal(id, orderTransactionId(1));
  // Pinned: the mapping is part of the wire contract once ids are published.
  assert.equal(orderTransactionId(1), 'O2T591-WTV43-HZCFM4');
  assert.equal(tradeTransactionId(1), 'T3CSW8-76W5N-DA5M83');
});

test('consecutive ids do not give similar texts; order and trade texts differ', () => {
  const a = orderTransactionId(1000);
  const b = orderTransactionId(1001);
  const same = [...a].filter((c, i) => b[i] === c).length;
  assert.ok(same < 8, `${a} vs ${b}`);
  assert.notEqual(orderTransactionId(5).slice(1), tradeTransactionId(5).slice(1));
});

test('parse refuses foreign texts', () => {
  for (const bad of [
    '',
    'O2T591-WTV43-HZCFM',
    'X2T591-WTV43-HZCFM4',
    'o2t591-wtv43-hzcfm4',
    'OIIIII-IIIII-IIIIII',
  ]) {
    assert.equal(parseTransactionId(bad), undefined, bad);
  }
});

test('property: round trip and injectivity', () => {
  const seen = new Map<string, number>();
  fc.assert(
    fc.property(fc.maxSafeNat(), (id) => {
      const o = orderTransactionId(id);
      const t = tradeTransactionId(id);
      assert.deepEqual(parseTransactionId(o), { kind: 'order', id });
      assert.deepEqual(parseTransactionId(t), { kind: 'trade', id });
      const prior = seen.get(o);
      assert.ok(prior === undefined || prior === id);
      seen.set(o, id);
    }),
  );
  for (let id = 0; id < 5000; id++) {
    const o = orderTransactionId(id);
    assert.ok(!seen.has(o) || seen.get(o) === id);
    seen.set(o, id);
  }
});
