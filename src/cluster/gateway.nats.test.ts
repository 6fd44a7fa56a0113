/**
 * A gateway's RemoteExchange against an engine in this process (SQLite in memory, no PostgreSQL
 * needed) over a real NATS server (TEST_NATS_URL; skipped visibly without it): it follows the
 * engine's batches, repairs a gap with a new snapshot (telling its restore listeners), goes on
 * without a reload when the engine starts again on the same stream and the state it already
 * shows, reloads when that state differs, and reports the engine's absence.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { jetstreamManager } from '@nats-io/jetstream';
import { natsConnection, natsSuite } from '../../test/support/nats.js';
import { waitUntil } from '../../test/support/polling.js';
import type { MarketId, UserId } from '../domain/types.js';
import type { FeedEntry } from '../sequencer/committed-feed.js';
import { type LocalExchange, openExchange } from '../sequencer/sequencer.js';
import { asyncStore } from '../store/async-store.js';
import { SqliteStore } from '../store/sqlite/sqlite-store.js';
import { BatchPublisher } from './batch-stream.js';
import { EngineUnavailableError } from './command-client.js';
import { serveCluster } from './engine-node.js';
import type { ExactValue } from './exact-json.js';
import { LAGGING } from './remote-exchange.js';
import { type EngineSnapshot, serveSnapshots } from './snapshot.js';
import {
  asset,
  createEurMarkets,
  deposit,
  eurMarket,
  limit,
  memoryExchange,
  openGateway,
  silent,
  TEST_CLUSTER_KEY,
  testStream,
  withoutSequence,
} from './test-support.js';

async function engine(t: { after(fn: () => Promise<void> | void): void }): Promise<LocalExchange> {
  const exchange = await memoryExchange(t);
  await createEurMarkets(exchange, ['BTC']);
  return exchange;
}

const market = 1 as MarketId;
const sell = (userId: number, price: number, volume: number) => limit(userId, market, 'sell', price, volume);
const until = (check: () => boolean, what: string) => waitUntil(check, what, 5_000);

describe('a gateway on a remote engine', natsSuite(), () => {
  test('readiness tells the truth: a feed that stands still while the engine commits takes the gateway out after the lag, and back once it catches up', async (t) => {
    const nc = await natsConnection(t, 'engine');
    const gatewayNc = await natsConnection(t, 'gateway');
    const cluster = testStream(t, 'GW_LAG');
    const exchange = await engine(t);
    await exchange.submit(deposit(7, 'BTC', 1_000));
    const served = await serveCluster(exchange, nc, {
      key: TEST_CLUSTER_KEY,
      stream: cluster.stream,
      subjects: cluster.names,
      logger: silent,
    });
    t.after(() => served.close());
    const remote = await openGateway(t, gatewayNc, cluster, { pingIntervalMs: 100, maxLagMs: 600 });
    assert.ok((await remote.submit(sell(7, 30_000, 1))).ok);
    await until(() => remote.book(market, 1).asks.length === 1, 'the first order in the view');
    assert.equal(remote.notReadyReason(), undefined);

    // The stream stops taking the engine's batches (as garbage or a full disk would stop it):
    // commands are still committed and answered, the gateway's book stands still.
    const jsm = await jetstreamManager(nc);
    await jsm.streams.update(cluster.stream.stream, { max_msg_size: 16 });
    const stalledAt = Date.now();
    assert.ok((await remote.submit(sell(7, 31_000, 1))).ok, 'the engine still commits');
    await until(() => remote.notReadyReason() === LAGGING, 'not ready: behind the engine');
    const after = Date.now() - stalledAt;
    assert.ok(after >= 600, `not ready only after the lag allowed (${after} ms)`);
    assert.equal(remote.isWritable(), false, '/readyz answers 503');
    assert.equal(remote.book(market, 2).asks.length, 1, 'the book did stand still');

    // The stream takes batches again: the view catches up and the gateway is ready again.
    await jsm.streams.update(cluster.stream.stream, { max_msg_size: -1 });
    await until(() => remote.book(market, 2).asks.length === 2, 'the view caught up');
    await until(() => remote.notReadyReason() === undefined, 'ready again');
  });

  test('commands go to the engine; the view follows its batches; an engine gone makes it unwritable', async (t) => {
    const nc = await natsConnection(t, 'engine');
    const gatewayNc = await natsConnection(t, 'gateway');
    const cluster = testStream(t, 'GW_BATCHES');
    const { stream, names } = cluster;
    const exchange = await engine(t);
    const served = await serveCluster(exchange, nc, {
      key: TEST_CLUSTER_KEY,
      stream,
      subjects: names,
      logger: silent,
    });
    const remote = await openGateway(t, gatewayNc, cluster, { pingIntervalMs: 100 });
    assert.equal(remote.catalogue.markets().length, 1);
    // What an adapter keeps at start (routes take the catalogue at registration).
    const kept = remote.catalogue;
    let reloads = 0;
    remote.onRestored(() => reloads++);
    await exchange.submit(deposit(7, 'BTC', 500));
    await exchange.submit(deposit(9, 'EUR', 10_000_000));
    const placed = await remote.submit(sell(7, 30_000, 200));
    assert.ok(placed.ok);
    // A buyer takes part of it: a trade, candles, balances of both sides in one batch.
    await remote.submit({ ...sell(9, 30_000, 50), side: 'buy' });
    await until(() => remote.view.lastPrice(market) === 30_000, 'the trade in the view');
    assert.equal(reloads, 0, 'every batch was taken as it came (none refused as malformed)');
    assert.equal(remote.book(market, 0).asks.length, 1);
    assert.deepEqual(remote.book(market, 0), exchange.view.book(market, 0));
    assert.deepEqual(withoutSequence(remote.view.snapshot()), withoutSequence(exchange.view.snapshot()));
    assert.equal(remote.isWritable(), true);

    // The engine stops: commands are refused at once as not delivered, and readiness follows.
    await served.close();
    await assert.rejects(remote.submit(sell(7, 30_000, 1)), (error: unknown) => {
      assert.ok(error instanceof EngineUnavailableError);
      assert.equal(error.outcome, 'not_delivered');
      return true;
    });
    await until(() => !remote.isWritable(), 'isWritable() false');

    // An engine starts again on the same stream, on the state the gateway already shows: its
    // reset changes nothing, so the gateway goes on without a reload (decision 101).
    let restored = 0;
    remote.onRestored(() => restored++);
    const again = await serveCluster(exchange, nc, {
      key: TEST_CLUSTER_KEY,
      stream,
      subjects: names,
      logger: silent,
    });
    t.after(() => again.close());
    await until(() => remote.isWritable(), 'isWritable() true again');
    // A market created after the reload is seen through the catalogue kept from before it.
    await exchange.submit(asset('ETH'));
    await exchange.submit(eurMarket('ETH'));
    await until(() => kept.marketByName('ETH/EUR') !== undefined, 'the new market in the kept catalogue');
    await exchange.submit(deposit(8, 'EUR', 1_000));
    await until(() => remote.balances(8 as UserId).some((b) => b.available === 1_000), 'the new batch');
    assert.deepEqual(withoutSequence(remote.view.snapshot()), withoutSequence(exchange.view.snapshot()));
    assert.equal(restored, 0, 'the reset (before these batches in the stream) reloaded nothing');
  });

  test('an engine restarted on the same store and stream: clients continue when nothing was lost, re-snapshot when the state differs', async (t) => {
    const dir = mkdtempSync(join(tmpdir(), 'openspot-gw-restart-'));
    t.after(() => rmSync(dir, { recursive: true, force: true }));
    const path = join(dir, 'openspot.db');
    const nc = await natsConnection(t, 'engine');
    const gatewayNc = await natsConnection(t, 'gateway');
    const cluster = testStream(t, 'GW_RESTART');
    const { stream, names } = cluster;
    /**
     * An engine process on the database file: its store, its exchange, its side of NATS; `stop`
     * ends it once (also when the test fails half-way: a publish queue left running would retry
     * for ever on the closed connection).
     */
    const start = async () => {
      const store = asyncStore(SqliteStore.open({ path }));
      const exchange = await openExchange({ store });
      const served = await serveCluster(exchange, nc, {
        key: TEST_CLUSTER_KEY,
        stream,
        subjects: names,
        logger: silent,
      });
      let stopping: Promise<void> | undefined;
      const stop = () => {
        stopping ??= (async () => {
          await served.close();
          await exchange.close();
          await store.close();
        })();
        return stopping;
      };
      t.after(stop);
      return { store, exchange, served, stop };
    };

    const first = await start();
    await createEurMarkets(first.exchange, ['BTC']);
    const remote = await openGateway(t, gatewayNc, cluster, { pingIntervalMs: 100 });
    let restored = 0;
    remote.onRestored(() => restored++);
    /** The book sequences of the order-book updates the gateway passes on, in order. */
    const updates: number[] = [];
    remote.onCommitted((batch) => {
      for (const book of batch.books)
        if (book.marketId === market) for (const change of book.changes) updates.push(change.sequence);
    });
    await first.exchange.submit(deposit(7, 'BTC', 1_000));
    await first.exchange.submit(deposit(9, 'EUR', 10_000_000));
    await remote.submit(sell(7, 30_000, 200));
    await remote.submit(sell(7, 31_000, 100));
    // A trade too: last price, candles, statistics and recent trades must compare equal as well.
    await remote.submit({ ...sell(9, 30_000, 50), side: 'buy' });
    await until(() => remote.view.lastPrice(market) === 30_000, 'the trade in the view');
    const last = remote.book(market, 0).sequence;
    assert.deepEqual(updates, [1, 2, 3]);

    // A clean restart: every committed batch was published before the engine stopped.
    await first.stop();
    const second = await start();
    await until(() => remote.isWritable(), 'the restarted engine answering');
    assert.ok((await remote.submit(sell(7, 32_000, 100))).ok);
    await until(() => remote.book(market, 0).asks.length === 3, 'the order placed after the restart');
    assert.equal(restored, 0, 'nothing lost: the gateway continued, no client is re-snapshotted');
    assert.deepEqual(updates, [1, 2, 3, last + 1], 'the book sequence went on from the last one');
    assert.deepEqual(remote.book(market, 0), second.exchange.view.book(market, 0));
    assert.deepEqual(withoutSequence(remote.view.snapshot()).books, second.exchange.view.snapshot().books);

    // The engine commits a batch it never publishes (its stream side stopped first), then restarts:
    // the new engine's state differs from the gateway's, which reloads and re-snapshots its clients.
    await second.served.close();
    await second.exchange.submit(sell(7, 33_000, 100));
    await second.stop();
    const third = await start();
    await until(() => restored === 1, 'the reload after the lost batch');
    assert.deepEqual(remote.book(market, 0), third.exchange.view.book(market, 0));
    assert.equal(remote.book(market, 0).asks.length, 4);
    assert.equal(remote.book(market, 0).sequence, last + 2, 'never back: the unpublished update counted');
    assert.ok((await remote.submit(sell(7, 34_000, 100))).ok);
    await until(() => remote.book(market, 0).asks.length === 5, 'the order placed after the reload');
    assert.deepEqual(updates.slice(-1), [last + 3]);
  });

  test('a batch missing from the stream: the gateway re-snapshots and tells its listeners, never skips it', async (t) => {
    const nc = await natsConnection(t, 'engine');
    const gatewayNc = await natsConnection(t, 'gateway');
    const cluster = testStream(t, 'GW_GAP');
    const { stream, names } = cluster;
    const exchange = await engine(t);
    // This test is the engine's publishing side, so that it can leave one batch out.
    const entries = new Map<number, FeedEntry>();
    exchange.feed.subscribe(exchange.feed.head() + 1, (m) => {
      if (m.kind !== 'gap') entries.set(m.sequence, m);
    });
    let current: EngineSnapshot = { sequence: exchange.view.sequence, snapshot: exchange.view.snapshot() };
    let served = 0;
    const answering = serveSnapshots(
      nc,
      () => {
        served += 1;
        return current;
      },
      names.snapshot,
    );
    t.after(() => answering.unsubscribe());
    const publisher = await BatchPublisher.open(nc, stream, { key: TEST_CLUSTER_KEY });
    const publish = (sequence: number) =>
      publisher.publish(sequence, entries.get(sequence) as unknown as ExactValue);

    // No engine answers commands or pings here: the gateway only follows the stream and snapshots.
    const remote = await openGateway(t, gatewayNc, cluster, {
      commandSubject: undefined,
      pingSubject: undefined,
    });
    let restored = 0;
    remote.onRestored(() => restored++);
    const batches: number[] = [];
    remote.onCommitted((batch) => batches.push(batch.sequence));

    await exchange.submit(deposit(7, 'BTC', 500));
    await publish(exchange.feed.head());
    await until(() => remote.balances(7 as UserId).some((b) => b.available === 500), 'the deposit');
    await exchange.submit(sell(7, 30_000, 100));
    const lost = exchange.feed.head(); // never published
    await exchange.submit(sell(7, 31_000, 100));
    current = { sequence: exchange.view.sequence, snapshot: exchange.view.snapshot() };
    await publish(exchange.feed.head());

    await until(() => restored === 1, 'the re-snapshot');
    assert.ok(lost > 0);
    // The view is the engine's, both orders included; the batch after the hole was not applied twice.
    assert.deepEqual(remote.book(market, 0), exchange.view.book(market, 0));
    assert.equal(remote.book(market, 0).asks.length, 2);
    assert.deepEqual(withoutSequence(remote.view.snapshot()), withoutSequence(exchange.view.snapshot()));
    assert.equal(batches.length, 1, 'only the deposit reached the batch listeners');

    // A batch the gateway cannot read (an unknown event): reported as a gap, repaired the same way,
    // by a snapshot. The engine's state did not change (this batch is not the engine's): the
    // snapshot shows what the view shows, so the gateway continues without a reload.
    const servedBefore = served;
    const next = exchange.feed.head() + 1;
    await publisher.publish(next, {
      kind: 'batch',
      sequence: next,
      events: [{ type: 'bogus' }],
      books: [],
      candles: [],
      trades: [],
      balances: [],
    });
    await until(() => served > servedBefore, 'the re-snapshot after an unreadable batch');
    await new Promise((resolve) => setTimeout(resolve, 200));
    assert.equal(restored, 1, 'nothing a reader sees was missing: no reload');
    assert.equal(batches.length, 1);
    assert.deepEqual(withoutSequence(remote.view.snapshot()), withoutSequence(exchange.view.snapshot()));
  });
});
