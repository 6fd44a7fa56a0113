/**
 * Issue 14, "when the primary dies (SIGKILL, machine gone)": the machine-gone half. A primary
 * engine whose machine freezes or vanishes does not close its connections: PostgreSQL ends its
 * session only once its TCP keep-alives fail (≈ 11 s, docs/operations.md), and the NATS server
 * keeps its subscriptions for minutes. Simulated on one machine by SIGSTOP (the process answers
 * nothing; its kernel keeps the sockets open) and, for PostgreSQL's side, ending its writer
 * session the way the keep-alives would. Then:
 * - the standby takes over and every command through the gateway is answered by it (none waits
 *   out a timeout on the frozen engine's subscription);
 * - when the frozen engine wakes up, it cannot write from its stale state: its next commit finds
 *   another engine's lock, and it exits (the writer's term), leaving its NATS subscriptions;
 * - nothing acknowledged is lost and the new primary's state is sound.
 * Real NATS (TEST_NATS_URL) and PostgreSQL (TEST_DATABASE_URL), separate OS processes; skipped,
 * visibly, without them.
 */
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { describe, test } from 'node:test';
import { OpenSpotClient } from '../src/client/client.js';
import { checkLedger, replayCheck } from './crash/committed-state.js';
import { readCommittedPostgres } from './crash/committed-state-postgres.js';
import {
  CLUSTER_TEST_TIMEOUT_MS,
  clusterEnv,
  clusterSkipReason,
  listeningUrl,
  on,
  startEngine,
  startGateway,
  startStandby,
  trader,
  waitUntil,
} from './support/cluster.js';

import { queryDatabase } from './support/postgres.js';

const skip = clusterSkipReason('frozen-engine test');

/** Each order at a price of its own, so the book shows exactly which ones exist. */
let nextPrice = 40_000;
const sell = () =>
  ({ pair: 'BTC/EUR', direction: 'sell', type: 'limit', volume: '0.1', price: `${nextPrice++}.0` }) as const;

describe('a primary engine that freezes (machine gone)', skip === undefined ? {} : { skip }, () => {
  test('the standby answers every command; the frozen engine, woken up, never writes and exits', {
    timeout: CLUSTER_TEST_TIMEOUT_MS,
  }, async (t) => {
    const env = await clusterEnv(t);
    const primary = await startEngine(t, env);
    const standby = await startStandby(t, env);
    const gateway = await startGateway(t, env);
    const maker = await trader(primary.url, env.ADMIN_TOKEN!, { BTC: '10' });
    const client = on(gateway, maker);
    const acknowledged: number[] = [];
    for (let i = 0; i < 5; i++) acknowledged.push((await client.createOrder(sell())).id!);

    // The machine "freezes": the process stops, its sockets stay open. PostgreSQL's keep-alives
    // would end its session after ≈ 11 s; the test ends it now (and measures from there).
    const pid = primary.child.pid!;
    process.kill(pid, 'SIGSTOP');
    t.after(() => {
      if (primary.child.exitCode === null && primary.child.signalCode === null) process.kill(pid, 'SIGCONT');
    });
    await queryDatabase(
      env.DATABASE_URL!,
      `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
       WHERE application_name LIKE 'openspot engine pid=${pid} %' AND datname = current_database()`,
    );
    const cutAt = Date.now();

    // Until the standby answers: 503s. The frozen engine is still subscribed on the NATS server, so
    // a request sent before the standby subscribes is not refused at once: it waits out the
    // gateway's 5 s timeout. So a new attempt every 100 ms, each on its own.
    let firstAccepted: number | undefined;
    const attempts: Promise<void>[] = [];
    while (firstAccepted === undefined) {
      assert.ok(Date.now() - cutAt < 30_000, `no takeover within 30 s:\n${standby.output()}`);
      attempts.push(
        client.createOrder(sell()).then(
          (created) => {
            firstAccepted ??= Date.now();
            acknowledged.push(created.id!);
          },
          (error: unknown) => assert.match(String(error), /503/),
        ),
      );
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    await Promise.all(attempts);
    const takeoverMs = firstAccepted - cutAt;

    // From now on every command is answered by the standby, promptly: none is handed to the
    // frozen engine's subscription to time out (as a queue group would, for minutes).
    const latencies: number[] = [];
    for (let i = 0; i < 20; i++) {
      const started = Date.now();
      acknowledged.push((await client.createOrder(sell())).id!);
      latencies.push(Date.now() - started);
    }
    const slowest = Math.max(...latencies);
    process.stdout.write(
      `# frozen primary: commands accepted again ${takeoverMs} ms after its database session ended; ` +
        `the next 20 answered in ≤ ${slowest} ms each\n`,
    );
    assert.ok(slowest < 4_000, `a command took ${slowest} ms: did it wait on the frozen engine?`);

    // The frozen engine wakes up and receives the next request too: it applies it to its stale
    // engine, its commit finds the standby's lock, and it exits, having written nothing.
    const exited = once(primary.child, 'exit');
    process.kill(pid, 'SIGCONT');
    const woken = Date.now();
    while (primary.child.exitCode === null && Date.now() - woken < 20_000) {
      acknowledged.push((await client.createOrder(sell())).id!);
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    const [code] = await exited;
    assert.equal(code, 1, primary.output());
    assert.match(primary.output(), /superseded as the writer/);

    // Nothing acknowledged is lost, nothing stale was written, and the standby's state is sound.
    const rows = await queryDatabase<{ id: number }>(
      env.DATABASE_URL!,
      `SELECT id::int AS id FROM orders WHERE user_id = ${maker.userId} ORDER BY id`,
    );
    const stored = new Set(rows.map((r) => r.id));
    for (const id of acknowledged) assert.ok(stored.has(id), `acknowledged order ${id} is missing`);
    assert.equal(stored.size, acknowledged.length, 'an order nobody acknowledged was stored');
    // The ledger balances, a replay of the committed state checks out, and the standby's whole
    // engine (balances, reservations, books in time priority, counters) is a restore of it.
    const committed = await readCommittedPostgres(env.DATABASE_URL!);
    assert.deepEqual([...checkLedger(committed), ...replayCheck(committed)], []);
    const standbyUrl = await listeningUrl(standby);
    const response = await fetch(`${standbyUrl}/admin/v1/engine/state`, {
      headers: { authorization: `Bearer ${env.ADMIN_TOKEN}` },
    });
    const state = (await response.json()) as { state_hash?: string; ok?: boolean };
    assert.equal(state.ok, true, JSON.stringify(state));
    assert.equal(state.state_hash, committed.stateHash);
    const pub = new OpenSpotClient({ baseUrl: `${gateway.url}/v1` });
    await waitUntil(
      () => standby.output().includes('publishing committed batches'),
      'the standby publishing',
    );
    let asks = 0;
    for (let i = 0; i < 100 && asks !== acknowledged.length; i++) {
      const [book] = await pub.orderbook({ tickerId: 'BTC/EUR', depth: 0 });
      asks = book?.asks.length ?? 0;
      if (asks !== acknowledged.length) await new Promise((resolve) => setTimeout(resolve, 100));
    }
    assert.equal(asks, acknowledged.length, 'the gateway shows every acknowledged order, and nothing else');
  });
});
