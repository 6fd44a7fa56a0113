/**
 * The real server (in-process, real HTTP) on PostgreSQL while its database goes away under signed
 * load, and comes back: run by `npm run test:postgres` (TEST_STORE=postgres), skipped otherwise.
 *
 * The outage touches the test's own database only (never the cluster, which other suites use):
 * new connections refused (`ALTER DATABASE … ALLOW_CONNECTIONS false`) and every session of the
 * database ended (`pg_terminate_backend`): the writer with its lock, and the read pool. Then:
 * - commands are answered 503 in the interface's shape (`{"error":"Service Unavailable"}`, Retry-After),
 *   reads of history and the admin API too (503, never 500);
 * - /readyz answers 503 `{"status":"store unavailable","store":"postgresql","reason":"database refuses connections"}`;
 * - once connections are allowed again, the server takes commands again by itself, no restart;
 * - nothing acknowledged is lost, nothing applied twice (every stored order traces back to one
 *   request), the committed state passes the crash test's ledger and replay checks, and the books
 *   the running server serves hash to the committed ones.
 * The same with kills, on a child process, is test/crash/crash-postgres.test.ts; with the cluster
 * itself restarted, `npm run test:crash -- --store postgres`.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { bookHash } from '../crash/book-hash.js';
import { checkLedger, committedBooks, replayCheck } from '../crash/committed-state.js';
import { readCommittedPostgres } from '../crash/committed-state-postgres.js';
import { servedBooks } from '../crash/crash-run.js';
import { fromUnits, marketInfos, request, signed, type Trader } from '../crash/http-client.js';
import { databaseFor, queryDatabase, TEST_DATABASE_URL } from '../support/postgres.js';
import { startTestServer } from '../support/server-fixture.js';

const skip =
  process.env.TEST_STORE !== 'postgres' || TEST_DATABASE_URL === undefined
    ? 'the database going away is a PostgreSQL scenario: runs under `npm run test:postgres`'
    : undefined;

const UNAVAILABLE = { error: 'Service Unavailable' };
/** Lots per tag space: a stored order's tag is `volume % TAG_SPACE`. */
const TAG_SPACE = 1_000_000;

test('PostgreSQL going away under signed load: 503 with a reason, back by itself, nothing lost or doubled', {
  timeout: 120_000,
  ...(skip === undefined ? {} : { skip }),
}, async (t) => {
  const server = await startTestServer();
  t.after(() => server.close());
  const url = (await databaseFor(server.dataDir)).url;
  const name = new URL(url).pathname.slice(1);
  const admin = TEST_DATABASE_URL!;
  const traders: Trader[] = [];
  for (let i = 0; i < 4; i++) traders.push(await server.trader({ EUR: '1000000', BTC: '100', ETH: '1000' }));
  const all = marketInfos((await server.admin('GET', '/markets')).body);
  const btc = all.find((m) => m.pair === 'BTC/EUR')!;

  // Every placement carries its number in the volume's last digits (lots), so a stored order
  // traces back to exactly one request, answered or not.
  const sent = new Map<number, { trader: Trader; status: number | undefined }>();
  let next = 1;
  const place = async (trader: Trader): Promise<{ status: number | undefined; text: string }> => {
    const tag = next++;
    const side = tag % 2 === 0 ? 'buy' : 'sell';
    const entry = { trader, status: undefined as number | undefined };
    sent.set(tag, entry);
    const answer = await signed(server.url, trader, 'POST', '/orders', {
      order_direction: side,
      order_type: 'limit',
      pair: 'BTC/EUR',
      // 2 * 10^6 + tag lots at 300,000 ± 200 ticks (BTC/EUR: 30,000 ± 20 EUR): about half cross.
      volume: fromUnits(2 * TAG_SPACE + tag, btc.lotDecimals),
      price: fromUnits(300_000 + (((tag * 7) % 41) - 20) * 10, btc.pairDecimals),
    });
    entry.status = answer?.status;
    if (answer?.status === 503) {
      assert.deepEqual(JSON.parse(answer.text), UNAVAILABLE);
      assert.equal(answer.headers.get('retry-after'), '1');
    } else if (answer !== undefined && answer.status !== 201 && answer.status !== 422)
      assert.fail(`placement ${tag}: ${answer.status} ${answer.text}`);
    return { status: answer?.status, text: answer?.text ?? '' };
  };
  let loading = true;
  const load = traders.map(async (trader) => {
    while (loading) await place(trader);
  });
  await sleep(500);

  await queryDatabase(admin, `ALTER DATABASE ${name} ALLOW_CONNECTIONS false`);
  try {
    await queryDatabase(
      admin,
      'SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()',
      [name],
    );
    // Every command is refused now: the commit in flight lost its connection, the next ones
    // cannot get one. /readyz names the cause once the probe has met it.
    const deadline = Date.now() + 10_000;
    let ready: { status?: number; body?: unknown } = {};
    while (Date.now() < deadline) {
      const r = await request(`${server.url}/readyz`, { method: 'GET' });
      ready = { status: r?.status, body: r === undefined ? undefined : JSON.parse(r.text) };
      if ((ready.body as { reason?: string } | undefined)?.reason === 'database refuses connections') break;
      await sleep(50);
    }
    assert.equal(ready.status, 503);
    assert.deepEqual(ready.body, {
      status: 'store unavailable',
      store: 'postgresql',
      reason: 'database refuses connections',
    });
    assert.equal((await place(traders[0]!)).status, 503);
    const history = await signed(server.url, traders[0]!, 'GET', '/closed-orders');
    assert.equal(history?.status, 503, `history while away: ${history?.status} ${history?.text}`);
    const deposit = await server.admin('POST', `/users/${traders[0]!.userId}/deposits`, {
      asset: 'EUR',
      amount: '1',
    });
    assert.equal(deposit.status, 503);
    await sleep(1000); // a longer outage: the probe keeps failing, the load keeps being refused
  } finally {
    await queryDatabase(admin, `ALTER DATABASE ${name} ALLOW_CONNECTIONS true`);
  }
  const refusedDuring = [...sent.values()].filter((s) => s.status === 503).length;
  assert.ok(refusedDuring > 0, 'no command was answered 503 while the database was away');

  // Back by itself: /readyz 200 and acknowledgements again, no restart.
  const back = Date.now();
  let ready = await request(`${server.url}/readyz`, { method: 'GET' });
  while (ready?.status !== 200 && Date.now() - back < 10_000) {
    await sleep(50);
    ready = await request(`${server.url}/readyz`, { method: 'GET' });
  }
  assert.deepEqual([ready?.status, ready && JSON.parse(ready.text)], [200, { status: 'ready' }]);
  const ackedBefore = [...sent.values()].filter((s) => s.status === 201).length;
  await sleep(500);
  loading = false;
  await Promise.all(load);
  const acked = [...sent.values()].filter((s) => s.status === 201).length;
  assert.ok(acked > ackedBefore, 'no command was acknowledged after the database came back');
  t.diagnostic(
    `${sent.size} placements: ${acked} acknowledged, ${refusedDuring} answered 503; back ${Date.now() - back} ms after connections were allowed`,
  );

  // The committed state, read by the test's own SQL, against what the clients were told.
  const committed = await readCommittedPostgres(url);
  const problems = [...checkLedger(committed), ...replayCheck(committed)];
  assert.deepEqual(problems, []);
  const stored = new Map<number, number>();
  for (const o of committed.orders) {
    if (o.market_id !== btc.id) continue;
    const tag = o.volume % TAG_SPACE;
    assert.equal(stored.has(tag), false, `request ${tag} was applied twice`);
    stored.set(tag, o.id);
    assert.notEqual(sent.get(tag)?.status, 422, `order ${o.id} stored, but its request was refused`);
  }
  for (const [tag, s] of sent)
    if (s.status === 201) assert.ok(stored.has(tag), `acknowledged placement ${tag} is missing`);
  // The running server's engine was rebuilt from the database after the failed commit: its books
  // are the committed ones, whatever that commit's fate.
  assert.equal(bookHash(await servedBooks(server.url, traders, all)), bookHash(committedBooks(committed)));
  // And the whole engine (balances, reservations, every order in time priority, counters) is what
  // a restore of the committed state holds: the outage left nothing uncommitted in it.
  const state = (await server.admin('GET', '/engine/state')).body as { state_hash: string; ok: boolean };
  assert.equal(state.ok, true);
  assert.equal(state.state_hash, committed.stateHash);
});
