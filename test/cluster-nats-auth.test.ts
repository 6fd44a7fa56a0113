/**
 * NATS locked down as docs/cluster.md ("Locking NATS down") configures it: a real nats-server of
 * the test's own, started with exactly the configuration block of that document (the passwords in
 * its environment), an engine and a gateway (in this process) each connected as its own user
 * through credentials in NATS_URL. The venue works; a gateway's credentials can neither publish a
 * batch, nor answer commands, nor delete the stream; a user the server does not know cannot
 * connect. Needs /usr/sbin/nats-server (or TEST_NATS_SERVER_BIN); runs where the NATS suites run.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import { DEFAULT_BATCH_STREAM } from '../src/cluster/batch-stream.js';
import { encodeBatch } from '../src/cluster/codec.js';
import { serveCluster } from '../src/cluster/engine-node.js';
import { connectNats, natsSettings, subjects } from '../src/cluster/settings.js';
import {
  createEurMarkets,
  deposit,
  limit,
  memoryExchange,
  openGateway,
  silent,
  TEST_CLUSTER_KEY,
} from '../src/cluster/test-support.js';
import type { MarketId } from '../src/domain/types.js';
import { natsSuite } from './support/nats.js';
import { privateNatsServer } from './support/nats-server.js';

/** The nats-server configuration docs/cluster.md gives, as written there. */
function documentedConfiguration(): string {
  const doc = readFileSync(new URL('../docs/cluster.md', import.meta.url), 'utf8');
  const block = /<!-- nats-server\.conf: begin -->\n```\n([\s\S]*?)```\n<!-- nats-server\.conf: end -->/.exec(
    doc,
  );
  assert.ok(block !== null, 'docs/cluster.md has its nats-server.conf block');
  return block[1]!;
}

async function until(condition: () => boolean, what: string, ms = 10_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!condition()) {
    if (Date.now() > deadline) assert.fail(`timed out waiting for ${what}`);
    await sleep(20);
  }
}

describe('NATS locked down as docs/cluster.md configures it', natsSuite(), () => {
  test('engine and gateway work as their own users; a gateway’s credentials cannot publish a batch, answer commands or delete the stream; an unknown user cannot connect', async (t) => {
    const dir = mkdtempSync(join(tmpdir(), 'openspot-nats-auth-'));
    t.after(() => rmSync(dir, { recursive: true, force: true }));
    const configFile = join(dir, 'nats-server.conf');
    // The store directory and port are the test's own (command-line flags override the file).
    writeFileSync(configFile, documentedConfiguration().replace('/var/lib/nats', join(dir, 'js')));
    // Letters first: nats-server parses a variable's value as a configuration value.
    const passwords = {
      engine: `pw${randomBytes(16).toString('hex')}`,
      gateway: `pw${randomBytes(16).toString('hex')}`,
    };
    const nats = await privateNatsServer(t, {
      configFile,
      env: {
        OPENSPOT_ENGINE_NATS_PASSWORD: passwords.engine,
        OPENSPOT_GATEWAY_NATS_PASSWORD: passwords.gateway,
      },
    });
    const as = async (user: string, password: string): Promise<NatsConnection> => {
      const nc = await connectNats(
        natsSettings({ NATS_URL: `nats://${user}:${password}@127.0.0.1:${nats.port}` }),
        user,
      );
      t.after(() => (nc.isClosed() ? undefined : nc.close()));
      return nc;
    };

    // The default names, as in the document: this server is the test's alone.
    const names = subjects('openspot.engine');
    const exchange = await memoryExchange(t);
    await createEurMarkets(exchange, ['BTC']);
    await exchange.submit(deposit(7, 'BTC', 500));
    const engineNc = await as('openspot-engine', passwords.engine);
    const served = await serveCluster(exchange, engineNc, {
      key: TEST_CLUSTER_KEY,
      stream: { storage: 'memory' },
      subjects: names,
      logger: silent,
    });
    t.after(() => served.close());
    const gatewayNc = await as('openspot-gateway', passwords.gateway);
    const gateway = await openGateway(
      t,
      gatewayNc,
      { stream: { ...DEFAULT_BATCH_STREAM, storage: 'memory' }, names },
      {},
    );

    // The venue works through the permissions: a command, its batch in the gateway's view.
    const placed = await gateway.submit(limit(7, 1 as MarketId, 'sell', 30_000, 200));
    assert.ok(placed.ok, JSON.stringify(placed));
    await until(() => gateway.book(1 as MarketId, 1).asks.length === 1, 'the order in the gateway’s book');

    const jsm = await jetstreamManager(engineNc);
    const before = (await jsm.streams.info(DEFAULT_BATCH_STREAM.stream)).state.last_seq;

    // A gateway's credentials cannot publish a batch (core NATS or JetStream)...
    const forged = encodeBatch({ sequence: 999, payload: 0 });
    await assert.rejects(
      jetstream(gatewayNc).publish(DEFAULT_BATCH_STREAM.subject, forged, { timeout: 2_000 }),
      /permission|timeout/i,
    );
    gatewayNc.publish(DEFAULT_BATCH_STREAM.subject, forged);
    await gatewayNc.flush();
    // ...nor delete or purge the stream...
    const gatewayJsm = await jetstreamManager(gatewayNc);
    await assert.rejects(gatewayJsm.streams.purge(DEFAULT_BATCH_STREAM.stream), /permission|timeout/i);
    await assert.rejects(gatewayJsm.streams.delete(DEFAULT_BATCH_STREAM.stream), /permission|timeout/i);
    assert.equal(
      (await jsm.streams.info(DEFAULT_BATCH_STREAM.stream)).state.last_seq,
      before,
      'the stream is untouched',
    );
    // ...nor take the engine's place on the command subject.
    const impostor = gatewayNc.subscribe(names.commands);
    await assert.rejects(
      (async () => {
        for await (const _ of impostor) assert.fail('the gateway user received a command');
      })(),
      /permission/i,
    );

    // A user the server does not know, a wrong password, or none: no connection at all.
    for (const url of [
      `nats://intruder:whatever@127.0.0.1:${nats.port}`,
      `nats://openspot-engine:${passwords.gateway}@127.0.0.1:${nats.port}`,
      `nats://127.0.0.1:${nats.port}`,
    ])
      await assert.rejects(
        connectNats(natsSettings({ NATS_URL: url }), 'intruder').then((nc) => nc.close()),
        /authorization/i,
        url.replace(/:[^:@/]*@/, ':***@'),
      );

    // The engine and the gateway still work after all that.
    assert.ok((await gateway.submit(limit(7, 1 as MarketId, 'sell', 31_000, 100))).ok);
    await until(() => gateway.book(1 as MarketId, 2).asks.length === 2, 'the second order');
  });
});
