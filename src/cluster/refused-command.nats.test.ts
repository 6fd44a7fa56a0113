/**
 * A command the engine refuses to take — here because the gateway signs under another
 * CLUSTER_KEY than the engine's, a deployment mistake — reaches the client as a 503 with
 * Retry-After in the route's error shape, like an engine that cannot be reached: nothing the
 * client sent is at fault, and nothing was applied. (It was a 500 before: decision 263.)
 * The real path: the HTTP app, a CommandClient, NATS, a CommandService in front of the exchange.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { natsConnection, natsSuite, uniqueName } from '../../test/support/nats.js';
import { type Harness, startHarness, type Trader } from '../http/testing/harness.js';
import type { Exchange } from '../sequencer/ports.js';
import { ClusterKey } from './cluster-key.js';
import { CommandClient } from './command-client.js';
import { CommandService } from './command-service.js';
import { TEST_CLUSTER_KEY } from './test-support.js';

describe('a command the engine refuses', natsSuite(), () => {
  const cleanups: Array<() => unknown> = [];
  const cleanup = { after: (fn: () => unknown) => cleanups.push(fn) };
  let h: Harness;
  let alice: Trader;
  let service: CommandService | undefined;
  before(async () => {
    const subject = uniqueName('cmd');
    const engineNc = await natsConnection(cleanup, 'engine');
    const gatewayNc = await natsConnection(cleanup, 'gateway');
    // The gateway's writes go over NATS, signed under a key the engine does not hold.
    const wrongKey = new CommandClient(gatewayNc, { key: ClusterKey.random(), subject, timeoutMs: 2_000 });
    const wrap = (exchange: Exchange): Exchange =>
      new Proxy(exchange, {
        get(target, key, receiver) {
          if (key === 'submit') return wrongKey.submit.bind(wrongKey);
          if (key === 'submitOnce') return wrongKey.submitOnce.bind(wrongKey);
          const value = Reflect.get(target, key, receiver);
          return typeof value === 'function' ? value.bind(target) : value;
        },
      });
    h = await startHarness({
      wrap: (exchange) => {
        void CommandService.start(engineNc, exchange, { key: TEST_CLUSTER_KEY, subject }).then(
          (started) => (service = started),
        );
        return wrap(exchange);
      },
    });
    alice = await h.trader();
    while (service === undefined) await new Promise((resolve) => setTimeout(resolve, 10));
  });
  after(async () => {
    await service?.stop();
    await h.close();
    for (const fn of cleanups.reverse()) await fn();
  });

  test('is a 503 with Retry-After in the route’s shape, not a 500, and places nothing', async () => {
    const r = await h.request('POST', '/v1/orders', {
      as: alice,
      body: { order_direction: 'buy', order_type: 'limit', pair: 'BTC/EUR', volume: '0.01', price: '100' },
    });
    assert.deepEqual([r.status, r.json], [503, { error: 'Service Unavailable' }]);
    assert.equal(r.headers['retry-after'], '1');
    const open = await h.request('GET', '/v1/open-orders', { as: alice });
    assert.equal(open.status, 200, JSON.stringify(open.json));
    assert.deepEqual((open.json as { data: unknown[] }).data, [], 'nothing was placed');
  });
});
