/** What a refused or set-aside cluster message leaves behind: a log line, a counter, a /readyz alarm. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import Fastify from 'fastify';
import { mountProbes } from '../http/probes.js';
import { Metrics } from '../metrics.js';
import { ALARM_HOLD_MS, RefusalAlarm } from './refusal-alarm.js';

test('every refusal is counted, logged at most once a second, and named by /readyz for a while; the process stays ready', async () => {
  let now = 1_000_000;
  const logged: object[] = [];
  const metrics = new Metrics();
  const alarm = new RefusalAlarm({ warn: (obj) => logged.push(obj) }, metrics, () => now);
  const app = Fastify();
  mountProbes(app, {
    isShuttingDown: () => false,
    isWritable: () => true,
    storeName: 'postgresql',
    unavailableReason: () => 'engine unreachable',
    alarm: () => alarm.current(),
  });
  assert.deepEqual((await app.inject('/readyz')).json(), { status: 'ready' });

  alarm.refused('command', 'unverified');
  alarm.refused('command', 'unverified');
  now += 500;
  alarm.refused('batch', 'unverified', { streamSequence: 7 });
  now += 1_000;
  alarm.refused('command', 'operator_command');
  assert.equal(logged.length, 2, 'one line a second');
  assert.deepEqual(logged[1], { message: 'command', reason: 'operator_command', alsoRefused: 2 });
  const counted = await metrics.registry.getSingleMetricAsString('openspot_cluster_messages_refused_total');
  assert.match(counted, /message="command",reason="unverified"} 2/);
  assert.match(counted, /message="batch",reason="unverified"} 1/);

  const ready = await app.inject('/readyz');
  assert.equal(ready.statusCode, 200);
  assert.deepEqual(ready.json(), {
    status: 'ready',
    alarm: 'a command was refused (operator_command) 0 s ago',
  });
  now += ALARM_HOLD_MS + 1;
  assert.deepEqual((await app.inject('/readyz')).json(), { status: 'ready' });
});

test('a process without alarms (openspot serve) answers /readyz exactly as before', async () => {
  const app = Fastify();
  mountProbes(app, {
    isShuttingDown: () => false,
    isWritable: () => true,
    storeName: 'sqlite',
    unavailableReason: () => 'x',
  });
  assert.equal((await app.inject('/readyz')).body, '{"status":"ready"}');
});
