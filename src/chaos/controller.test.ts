import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Chaos, type InjectedEvent } from './controller.js';
import { FaultInputError, parseFaultSet } from './faults.js';

test('parsing fills defaults and refuses what would rehearse nothing', () => {
  assert.deepEqual(
    parseFaultSet({ errors: { rate: 0.5 }, timeouts: { rate: 1 }, disconnects: { rate: 0.1 } }).set,
    {
      errors: { rate: 0.5, status: 503, retry_after: 1 },
      timeouts: { rate: 1, hold_ms: 10_000 },
      disconnects: { rate: 0.1, code: 4200 },
    },
  );
  assert.deepEqual(parseFaultSet({ latency: null }), { set: {}, removed: ['latency'] });
  for (const bad of [
    [],
    { latency: { ms: 1.5 } },
    { latency: { ms: 200_000 } },
    { latency: { ms: '10' } },
    { errors: { rate: 1, count: 0 } },
    { book_updates: { drop: 1, typo: 1 } },
    { ws_delay: 5 },
  ])
    assert.throws(() => parseFaultSet(bad), FaultInputError, JSON.stringify(bad));
});

test("a key's own fault of a kind wins over everyone's; other kinds still come from everyone", () => {
  const chaos = new Chaos();
  chaos.replace(undefined, {
    latency: { ms: 10, jitter_ms: 0 },
    errors: { rate: 1, status: 503, retry_after: 1 },
  });
  chaos.replace('K', { latency: { ms: 99, jitter_ms: 0 } });
  assert.equal(chaos.pick('latency', 'K')?.fault.ms, 99);
  assert.equal(chaos.pick('latency', 'K')?.scope, 'K');
  assert.equal(chaos.pick('errors', 'K')?.scope, undefined);
  assert.equal(chaos.pick('latency', 'other')?.fault.ms, 10);
  assert.equal(chaos.pick('latency', undefined)?.fault.ms, 10);
  assert.equal(chaos.pick('timeouts', 'K'), undefined);
  // Several keys (a WebSocket connection authorized by two): the first with a fault of the kind.
  chaos.replace('J', { latency: { ms: 5, jitter_ms: 0 } });
  assert.equal(chaos.pick('latency', ['none', 'J', 'K'])?.fault.ms, 5);
});

test('flags tell the hot paths whether anything is set, per side', () => {
  const chaos = new Chaos();
  assert.deepEqual(chaos.flags, { http: false, ws: false, disconnects: false });
  chaos.replace('K', { book_updates: { drop: 0.1, duplicate: 0, reorder: 0 } });
  assert.deepEqual(chaos.flags, { http: false, ws: true, disconnects: false });
  chaos.merge(undefined, { disconnects: { rate: 1, code: 4200 }, latency: { ms: 1, jitter_ms: 0 } });
  assert.deepEqual(chaos.flags, { http: true, ws: true, disconnects: true });
  chaos.clear('K');
  chaos.merge(undefined, {}, ['disconnects']);
  assert.deepEqual(chaos.flags, { http: true, ws: false, disconnects: false });
  chaos.clear();
  assert.deepEqual(chaos.flags, { http: false, ws: false, disconnects: false });
});

test('a counted fault applies that many times, then removes itself; each injection is reported', () => {
  const events: InjectedEvent[] = [];
  const chaos = new Chaos({ onInjected: (e) => events.push(e) });
  chaos.replace('K', { errors: { rate: 1, status: 429, retry_after: 2, count: 2 } });
  for (let i = 0; i < 2; i++) {
    const picked = chaos.pick('errors', 'K');
    assert.ok(picked !== undefined);
    chaos.injected(picked, 'error_429', 'K');
  }
  assert.equal(chaos.pick('errors', 'K'), undefined);
  assert.deepEqual(chaos.state(), { everyone: {}, keys: {} });
  assert.equal(chaos.flags.http, false);
  assert.deepEqual(
    events.map((e) => [e.fault, e.apiKey]),
    [
      ['error_429', 'K'],
      ['error_429', 'K'],
    ],
  );
});

test('chance follows the injected random source', () => {
  const draws = [0.1, 0.5, 0.9];
  const chaos = new Chaos({ random: () => draws.shift()! });
  assert.deepEqual([chaos.chance(0.5), chaos.chance(0.5), chaos.chance(0.5)], [true, false, false]);
  // 1 and 0 decide without drawing.
  assert.equal(chaos.chance(1), true);
  assert.equal(chaos.chance(0), false);
});
