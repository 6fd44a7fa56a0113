/** The operator's metrics endpoint. */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { startTestServer, type TestServer } from '../support/server-fixture.js';

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
