/**
 * A standby engine's store (`waitForLock`): it waits while another engine holds the writer lock,
 * names the holder once, takes over when the holder's session ends (terminated by the server, or
 * its process SIGKILLed), only then reads the snapshot, and can be told to stop waiting. The
 * takeover times are printed as test diagnostics. Skipped, visibly, without TEST_DATABASE_URL.
 */
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import type { OrderId } from '../../src/domain/types.js';
import { PostgresStore } from '../../src/store/postgres/postgres-store.js';
import { ALICE, balance, batch, CATALOGUE, EUR, order } from '../../src/store/sqlite/test-fixtures.js';
import { StoreUnavailableError } from '../../src/store/store.js';
import { freshDatabase, postgresSuite, queryDatabase, terminateSessions } from '../support/postgres.js';

interface Cleanup {
  after(fn: () => unknown): void;
}

const POLL_MS = 100;
/** Takeover after the holder's session ended: one poll, a connection's worth of slack on a busy CI machine. */
const TAKEOVER_BOUND_MS = 2000;

const HOLDER = fileURLToPath(new URL('./fixtures/writer-lock-holder.ts', import.meta.url));

function openStandby(
  url: string,
  applicationName: string,
  signal?: AbortSignal,
): { readonly opened: Promise<PostgresStore>; readonly waits: string[] } {
  const waits: string[] = [];
  const opened = PostgresStore.open({
    url,
    applicationName,
    waitForLock: true,
    lockPollMs: POLL_MS,
    onLockWait: (holder) => waits.push(holder),
    ...(signal === undefined ? {} : { signal }),
  });
  return { opened, waits };
}

/** Whether the promise is still pending after `ms`. */
async function pendingAfter(promise: Promise<unknown>, ms: number): Promise<boolean> {
  const pending = Symbol('pending');
  const winner = await Promise.race([
    promise.then(
      () => undefined,
      () => undefined,
    ),
    new Promise((resolve) => setTimeout(resolve, ms, pending)),
  ]);
  return winner === pending;
}

const sessionsNamed = async (url: string, applicationName: string): Promise<number> =>
  (
    await queryDatabase<{ n: number }>(
      url,
      'SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = $1 AND datname = current_database()',
      [applicationName],
    )
  )[0]?.n ?? 0;

function startHolder(t: Cleanup, url: string, applicationName: string): Promise<ChildProcess> {
  const child = spawn(process.execPath, ['--import', 'tsx', HOLDER, url, applicationName], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  t.after(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  });
  return new Promise((resolve, reject) => {
    child.once('exit', (code) =>
      reject(new Error(`the lock holder exited (${code}) before it took the lock`)),
    );
    child.stdout?.on('data', (chunk: Buffer) => {
      if (chunk.toString().includes('locked')) resolve(child);
    });
  });
}

describe('PostgreSQL store: a standby waits for the writer lock', postgresSuite(), () => {
  test('waits while the primary holds the lock, naming it once, and takes over when its session is terminated', async (t) => {
    const url = await freshDatabase(t);
    const primary = await PostgresStore.open({ url, applicationName: 'openspot test primary' });
    t.after(() => primary.close());
    await primary.commit(batch({ ...CATALOGUE, orders: [order(1)], balances: [balance(ALICE, EUR, 7)] }));

    const standby = openStandby(url, 'openspot test standby');
    t.after(async () => (await standby.opened.catch(() => undefined))?.close());
    // Several polls go by: still waiting, and the holder was named once, not at every poll.
    assert.equal(await pendingAfter(standby.opened, POLL_MS * 6), true);
    assert.equal(standby.waits.length, 1);
    assert.match(standby.waits[0] ?? '', /openspot test primary \(server process \d+/);

    // The primary keeps committing while the standby waits.
    await primary.commit(batch({ orders: [order(2)], balances: [balance(ALICE, EUR, 9)] }));
    const ended = performance.now();
    await terminateSessions(url, 'openspot test primary');
    const store = await standby.opened;
    const takeoverMs = performance.now() - ended;
    t.diagnostic(`takeover after pg_terminate_backend: ${takeoverMs.toFixed(0)} ms (poll ${POLL_MS} ms)`);
    assert.ok(takeoverMs < TAKEOVER_BOUND_MS, `took ${takeoverMs} ms`);

    // Taken first, read after: the snapshot holds the primary's last commit.
    const snapshot = await store.loadSnapshot();
    assert.deepEqual(
      snapshot.openOrders.map((o) => o.id),
      [1, 2],
    );
    assert.deepEqual(snapshot.balances, [balance(ALICE, EUR, 9)]);
    await store.commit(batch({ orders: [order(3)] }));
    assert.equal((await store.getOrder(3 as OrderId))?.id, 3);

    // The old primary cannot write any more: its reconnect finds the lock taken, by the standby.
    const refused = await primary.commit(batch({ orders: [order(4)] })).then(
      () => undefined,
      (error: unknown) => error,
    );
    assert.ok(refused instanceof StoreUnavailableError, String(refused));
    assert.match(refused.message, /openspot test standby/);
    assert.equal(refused.reason, 'another engine took over');
    assert.equal(await store.getOrder(4 as OrderId), undefined);
  });

  test('a primary that lost its connection never writes again once another engine took over, even after that one is gone', async (t) => {
    const url = await freshDatabase(t);
    const superseded: string[] = [];
    const primary = await PostgresStore.open({
      url,
      applicationName: 'openspot test primary',
      onSuperseded: (message) => superseded.push(message),
    });
    t.after(() => primary.close());
    await primary.commit(batch({ ...CATALOGUE, orders: [order(1)], balances: [balance(ALICE, EUR, 7)] }));

    // A connection that dropped and came back with nobody else in between: the same writer goes on.
    await terminateSessions(url, 'openspot test primary');
    await primary.commit(batch({ orders: [order(2)] }));
    assert.equal((await primary.getOrder(2 as OrderId))?.id, 2);
    assert.deepEqual(superseded, []);

    // The primary's connection drops; a standby takes over, writes, and stops (or dies).
    const standby = openStandby(url, 'openspot test standby');
    await terminateSessions(url, 'openspot test primary');
    const store = await standby.opened;
    assert.notEqual(store.writerTerm, primary.writerTerm);
    await store.commit(batch({ orders: [order(3)], balances: [balance(ALICE, EUR, 1)] }));
    await store.close();

    // The lock is free again, but the old primary's state predates the standby's commit: written
    // now, its balances and ids would undo the standby's. It must refuse, now and forever.
    for (const id of [4, 5]) {
      const refused = await primary
        .commit(batch({ orders: [order(id)], balances: [balance(ALICE, EUR, 7)] }))
        .then(
          () => undefined,
          (error: unknown) => error,
        );
      assert.ok(refused instanceof StoreUnavailableError, String(refused));
      assert.equal(refused.reason, 'another engine took over');
      assert.equal(await primary.getOrder(id as OrderId), undefined);
    }
    assert.equal(superseded.length, 1, 'told once');
    assert.match(superseded[0] ?? '', /another engine took over .* stale/);
    assert.deepEqual((await primary.loadSnapshot()).balances, [balance(ALICE, EUR, 1)]);
    // It gave the lock back: a new engine can open the store.
    const next = await PostgresStore.open({ url, applicationName: 'openspot test next' });
    await next.close();
  });

  test('takes over from a primary process killed with SIGKILL', async (t) => {
    const url = await freshDatabase(t);
    const child = await startHolder(t, url, 'openspot test primary process');
    const standby = openStandby(url, 'openspot test standby');
    t.after(async () => (await standby.opened.catch(() => undefined))?.close());
    assert.equal(await pendingAfter(standby.opened, POLL_MS * 3), true);
    assert.match(standby.waits[0] ?? '', /openspot test primary process/);

    const killed = performance.now();
    const exited = once(child, 'exit');
    child.kill('SIGKILL');
    const store = await standby.opened;
    const takeoverMs = performance.now() - killed;
    await exited;
    t.diagnostic(`takeover after SIGKILL of the primary: ${takeoverMs.toFixed(0)} ms (poll ${POLL_MS} ms)`);
    assert.ok(takeoverMs < TAKEOVER_BOUND_MS, `took ${takeoverMs} ms`);
    assert.equal((await store.loadSnapshot()).markets.length, CATALOGUE.markets?.length);
  });

  test('stops waiting when aborted, having taken nothing and left no session behind', async (t) => {
    const url = await freshDatabase(t);
    const primary = await PostgresStore.open({ url, applicationName: 'openspot test primary' });
    t.after(() => primary.close());
    const controller = new AbortController();
    const standby = openStandby(url, 'openspot test standby', controller.signal);
    assert.equal(await pendingAfter(standby.opened, POLL_MS * 2), true);
    controller.abort();
    await assert.rejects(standby.opened, { name: 'AbortError' });
    assert.equal(await sessionsNamed(url, 'openspot test standby'), 0);
    await primary.commit(batch(CATALOGUE));
    // Without waitForLock the refusal is immediate, as before.
    await assert.rejects(PostgresStore.open({ url }), { name: 'WriterLockHeldError' });
  });
});
