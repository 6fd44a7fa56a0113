import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { CloseCode, REJECTED_FRAME_CODE } from './frames.js';
import { createFrameGate, type FrameSink, frameBurst } from './rate-limit.js';

function sink() {
  const sent: { code: number; message: string }[] = [];
  const closed: { code: number; reason: string }[] = [];
  const connection: FrameSink = {
    send(frame) {
      const parsed = JSON.parse(frame) as { event: string; data: { code: number; message: string } };
      assert.equal(parsed.event, 'pusher:error');
      sent.push(parsed.data);
      return true;
    },
    close(code, reason) {
      closed.push({ code, reason });
    },
  };
  return { connection, sent, closed };
}

describe('WebSocket frame rate limit', () => {
  test('the default burst covers resubscribing every channel after a reconnect', () => {
    assert.equal(frameBurst(50, 100), 110);
    assert.equal(frameBurst(100, 100), 200);
    assert.equal(frameBurst(1, 5), 15);
  });

  test('a burst passes, the next frame gets pusher:error 4301, the connection stays open', () => {
    const gate = createFrameGate({ framesPerSecond: 10, burst: 20 });
    const { connection, sent, closed } = sink();
    for (let i = 0; i < 20; i++) assert.equal(gate.admit(connection, 0), true);
    assert.equal(gate.admit(connection, 0), false);
    assert.equal(sent.length, 1);
    assert.equal(sent[0]!.code, REJECTED_FRAME_CODE);
    assert.match(sent[0]!.message, /Rate limit exceeded: at most 10 frames per second/);
    assert.deepEqual(closed, []);
    // 100 ms at 10/s: one more frame.
    assert.equal(gate.admit(connection, 100), true);
    assert.equal(gate.admit(connection, 100), false);
  });

  test('a client at the allowed rate is never refused', () => {
    const gate = createFrameGate({ framesPerSecond: 10, burst: 1 });
    const { connection, sent } = sink();
    for (let t = 0; t < 60_000; t += 100) assert.equal(gate.admit(connection, t), true);
    assert.equal(sent.length, 0);
  });

  test('a flood is closed with 4100 once the refusals overflow', () => {
    const gate = createFrameGate({ framesPerSecond: 10, burst: 20, maxRefused: 10 });
    const { connection, sent, closed } = sink();
    let admitted = 0;
    for (let i = 0; i < 100 && closed.length === 0; i++) if (gate.admit(connection, 0)) admitted += 1;
    assert.equal(admitted, 20);
    assert.equal(sent.filter((e) => e.code === REJECTED_FRAME_CODE).length, 10);
    assert.deepEqual(closed, [{ code: CloseCode.overCapacity, reason: 'Rate limit exceeded' }]);
    assert.equal(sent.at(-1)!.code, CloseCode.overCapacity, 'pusher:error 4100 before the close');
  });

  test('sending at under twice the rate is throttled (4301) but not closed', () => {
    const gate = createFrameGate({ framesPerSecond: 10, burst: 10, maxRefused: 10 });
    const { connection, sent, closed } = sink();
    let admitted = 0;
    // 18 frames per second for a minute.
    for (let t = 0; t < 60_000; t += 1000 / 18) if (gate.admit(connection, t)) admitted += 1;
    assert.deepEqual(closed, []);
    assert.ok(sent.length > 0);
    assert.ok(admitted <= 10 + 60 * 10 + 1, `admitted ${admitted}`);
  });

  test('sustained at three times the rate: closed within seconds', () => {
    const gate = createFrameGate({ framesPerSecond: 10, burst: 10, maxRefused: 10 });
    const { connection, closed } = sink();
    let t = 0;
    for (; t < 60_000 && closed.length === 0; t += 1000 / 30) gate.admit(connection, t);
    assert.equal(closed.length, 1);
    assert.ok(t < 3_000, `closed after ${t} ms`);
  });

  test('each connection has its own budget; 0 turns the limit off', () => {
    const gate = createFrameGate({ framesPerSecond: 1, burst: 1 });
    const a = sink();
    const b = sink();
    assert.equal(gate.admit(a.connection, 0), true);
    assert.equal(gate.admit(a.connection, 0), false);
    assert.equal(gate.admit(b.connection, 0), true);
    const off = createFrameGate({ framesPerSecond: 0 });
    for (let i = 0; i < 1_000; i++) assert.equal(off.admit(a.connection, 0), true);
  });
});
