/**
 * A `--standby` engine is visible while it waits: /healthz 200 and /readyz 503 `standby` on its
 * ENGINE_PORT, and after it takes over, the engine's own probes on that same port. Separate
 * processes, as test/cluster-e2e.test.ts runs them.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { clusterEnv, clusterSkipReason, listeningUrl, startEngine, startStandby } from './support/cluster.js';
import { eventually, waitUntil } from './support/polling.js';

const skip = clusterSkipReason('standby probes');

describe('a standby engine', skip === undefined ? {} : { skip }, () => {
  test('answers /healthz and /readyz (standby) while it waits, then serves as the engine on the same port', async (t) => {
    const env = await clusterEnv(t);
    const primary = await startEngine(t, env);
    const standby = await startStandby(t, env);
    let probes: string | undefined;
    await waitUntil(
      () => {
        probes = /"url":"(http:\/\/[^"]+)","msg":"standby: probes listening/.exec(standby.output())?.[1];
        return probes !== undefined;
      },
      'the standby’s probes',
      10_000,
    );
    const health = await fetch(`${probes}/healthz`);
    assert.equal(health.status, 200);
    assert.deepEqual(await health.json(), { status: 'ok' });
    const ready = await fetch(`${probes}/readyz`);
    assert.equal(ready.status, 503);
    assert.deepEqual(await ready.json(), { status: 'standby', reason: 'waiting for the writer lock' });

    await primary.stop('SIGKILL');
    const url = await listeningUrl(standby);
    assert.equal(url, probes, 'the engine took the port its probes answered on');
    await eventually(async () => assert.equal((await fetch(`${url}/readyz`)).status, 200), 20_000);
  });
});
