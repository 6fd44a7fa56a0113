/**
 * The order controls through a gateway (issues 21 and 26): over NATS the engine takes only the
 * commands a gateway sends, so each control's command must be one of them. Real NATS and
 * PostgreSQL, an engine and a gateway as separate processes; skipped, visibly, without them.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  CLUSTER_TEST_TIMEOUT_MS,
  clusterEnv,
  clusterSkipReason,
  on,
  startEngine,
  startGateway,
  trader,
} from './support/cluster.js';

const skip = clusterSkipReason('cluster order-controls test');

describe('order controls through a gateway', skip === undefined ? {} : { skip }, () => {
  test("batch, client ids, amend, cancel-all and the dead man's switch are applied by the engine", {
    timeout: CLUSTER_TEST_TIMEOUT_MS,
  }, async (t) => {
    const env = await clusterEnv(t);
    const engine = await startEngine(t, env);
    const gateway = await startGateway(t, env);
    const maker = await trader(engine.url, env.ADMIN_TOKEN!, { EUR: '100000' });
    const client = on(gateway, maker);

    const batch = await client.placeBatch([
      {
        pair: 'BTC/EUR',
        direction: 'buy',
        type: 'limit',
        volume: '0.1',
        price: '20000.0',
        clientOrderId: 'q-1',
      },
      { pair: 'BTC/EUR', direction: 'buy', type: 'limit', volume: '0.1', price: '19000.0', postOnly: true },
    ]);
    assert.deepEqual(
      batch.data.map((r) => r.success),
      [true, true],
      JSON.stringify(batch.data),
    );

    const byClientId = await client.getByClientOrderId('q-1');
    assert.equal(byClientId.data.client_order_id, 'q-1');
    await client.amend(byClientId.data.id, { price: '20500.0' });
    assert.equal((await client.order(byClientId.data.id)).data.price.amount, '20500.0');
    await client.cancelByClientOrderId('q-1');
    assert.equal((await client.order(byClientId.data.id)).data.status, 'canceled');

    const armed = await client.cancelAllAfter(60);
    assert.notEqual(armed.data.trigger_time, '0.0000');
    assert.equal((await client.cancelAllAfter(0)).data.trigger_time, '0.0000');

    const all = await client.cancelAll({ pair: 'BTC/EUR' });
    assert.equal(all.data.canceled, 1);
    assert.equal(engine.child.exitCode, null);
    assert.equal(gateway.child.exitCode, null);
  });
});
