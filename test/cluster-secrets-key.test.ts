/**
 * A gateway whose SECRETS_KEY is not the engine's (issue: it reported ready and answered every
 * signed request `Invalid Signature`, the reason only in its log): it refuses to start, a
 * configuration error that says why. Separate processes, as test/cluster-e2e.test.ts runs them.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { describe, test } from 'node:test';
import { clusterEnv, clusterSkipReason, startEngine, startGateway, trader } from './support/cluster.js';

const skip = clusterSkipReason('SECRETS_KEY check of a gateway');

describe('a gateway with another SECRETS_KEY than the engine', skip === undefined ? {} : { skip }, () => {
  test('refuses to start, saying SECRETS_KEY cannot open the stored API secrets; with the engine’s key it starts', async (t) => {
    const env = await clusterEnv(t);
    const engine = await startEngine(t, env);
    await trader(engine.url, env.ADMIN_TOKEN!, {});
    await assert.rejects(
      startGateway(t, env, { SECRETS_KEY: randomBytes(32).toString('base64') }),
      (error: unknown) => {
        assert.match(String(error), /Configuration error: SECRETS_KEY cannot open the stored API secrets/);
        return true;
      },
    );
    const gateway = await startGateway(t, env);
    const ready = await fetch(`${gateway.url}/readyz`);
    assert.equal(ready.status, 200, await ready.text());
  });
});
