/** The operator's metrics endpoint. */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { AdminHealth } from '../../src/admin/schemas.js';
import { startTestServer, type TestServer } from '../support/server-fixture.js';
import { FrameLog } from '../ws/helpers.js';

let t: TestServer;
before(async () => {
  t = await startTestServer();
});
after(async () => {
  await t.close();
});

test('GET /metrics needs the admin token and reports commits, events and HTTP timings', async () => {
  assert.equal((await fetch(`${t.url}/metrics`)).status, 401);
  await t.trader({ EUR: '100' });
  const response = await fetch(`${t.url}/metrics`, {
    headers: { authorization: `Bearer ${t.server.adminToken}` },
  });
  assert.equal(response.status, 200);
  const text = await response.text();
  assert.match(text, /openspot_commit_duration_seconds_count \d+/);
  assert.match(text, /openspot_engine_events_total\{type="deposited"\} 1/);
  assert.match(
    text,
    /openspot_http_request_duration_seconds_count\{method="POST",route="\/admin\/v1\/users",status="201"\} 1/,
  );
  assert.match(text, /openspot_ws_connections 0/);
  assert.match(text, /openspot_process_resident_memory_bytes/);
});

test('GET /admin/v1/health reports readiness, commit latency and open WebSocket connections', async () => {
  await t.trader({ EUR: '5' });
  const health = async () => (await t.admin('GET', '/health')).body as AdminHealth;
  const before = await health();
  assert.equal(before.status, 'ready');
  assert.ok(before.commits.count >= 1, 'the deposit was committed');
  assert.ok(before.commits.p50_ms !== null && before.commits.p50_ms > 0);
  assert.ok(before.commits.mean_ms !== null && before.commits.mean_ms > 0);
  assert.equal(before.commits.buckets.at(-1)?.le_ms, null);
  assert.equal(before.commits.buckets.at(-1)?.count, before.commits.count);
  const { log } = await FrameLog.open(`${t.url.replace('http', 'ws')}/app/openspot-key?protocol=7`);
  try {
    assert.equal((await health()).websocket.connections, before.websocket.connections + 1);
  } finally {
    log.socket.close();
  }
  // The same figure as the Prometheus text.
  const text = await (
    await fetch(`${t.url}/metrics`, { headers: { authorization: `Bearer ${t.server.adminToken}` } })
  ).text();
  const count = Number(/openspot_commit_duration_seconds_count (\d+)/.exec(text)?.[1]);
  assert.ok(count >= before.commits.count);
});

test('public GETs answered from the cache before Fastify are counted under their route like the others', async () => {
  const url = `${t.url}/v1/tickers?ticker_id=BTCEUR`;
  const answers = [];
  for (let i = 0; i < 3; i++) answers.push(await (await fetch(url)).text());
  assert.equal(new Set(answers).size, 1);
  const text = await (
    await fetch(`${t.url}/metrics`, { headers: { authorization: `Bearer ${t.server.adminToken}` } })
  ).text();
  assert.match(
    text,
    /openspot_http_request_duration_seconds_count\{method="GET",route="\/v1\/tickers",status="200"\} 3\n/,
  );
});
