/**
 * The real server (in-process, real HTTP) on storage that fails for real:
 * - a full disk: the data directory is a small tmpfs mount, filled up with a file (ENOSPC →
 *   SQLITE_FULL);
 * - a read-only data directory: the database, its WAL and the directory are made immutable
 *   (`chattr +i`) while the server runs, so every write fails in the kernel (EPERM →
 *   SQLITE_IOERR_WRITE). A real read-only remount is refused by the kernel while the database is
 *   open for writing ("mount point is busy"), so this is the closest a test can get.
 *
 * Both need root (mount, chattr); without it the tests are skipped with the reason, and
 * store-fault.test.ts covers the same behaviour with injected failures.
 *
 * Checked: commands are refused with 503 `{"error":"Service Unavailable"}` and Retry-After,
 * /readyz answers 503 "store unavailable", the admin API 503; what is served stays the committed
 * state, and /readyz stays 503 through several probes while no command is sent; nothing
 * acknowledged is lost; once the space (or the write permission) is back /readyz turns 200 and the
 * server accepts commands again by itself, without any command sent first; the file passes integrity_check and the full ledger/replay
 * checks of the crash test.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { closeSync, copyFileSync, mkdtempSync, openSync, rmSync, writeFileSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import type { MarketId, OrderId, UserId } from '../../src/domain/types.js';
import { Engine } from '../../src/engine/engine.js';
import { checkLedger, readCommitted, replayCheck } from '../crash/committed-state.js';
import { request, signed, type Trader } from '../crash/http-client.js';
import { startTestServer, type TestServer } from '../support/server-fixture.js';

const run = (command: string, args: string[]) => execFileSync(command, args, { stdio: 'pipe' });

// The failing storage here is DATA_DIR's SQLite file; PostgreSQL's outages are tested in
// test/store/postgres.test.ts, test/durability/postgres-outage.test.ts, test/crash/crash-postgres.test.ts
// and by npm run test:pg-restart and npm run test:crash -- --store postgres.
const SQLITE_ONLY = 'the SQLite data directory is what fails here (TEST_STORE=postgres)';

function mountUnsupported(): string | undefined {
  if (process.env.TEST_STORE === 'postgres')
    return 'the SQLite data directory is what fails here (TEST_STORE=postgres)';
  if (process.platform !== 'linux') return 'needs Linux (tmpfs mount)';
  const probe = mkdtempSync(join(tmpdir(), 'openspot-mount-probe-'));
  try {
    run('mount', ['-t', 'tmpfs', '-o', 'size=1m', 'tmpfs', probe]);
    run('umount', [probe]);
    return undefined;
  } catch (error) {
    return `mounting a tmpfs is not permitted here (${firstLine(error)}); store-fault.test.ts covers this with injected failures`;
  } finally {
    rmSync(probe, { recursive: true, force: true });
  }
}

function chattrUnsupported(dir: string): string | undefined {
  if (process.env.TEST_STORE === 'postgres') return SQLITE_ONLY;
  if (process.platform !== 'linux') return 'needs Linux (chattr)';
  const probe = join(dir, 'chattr-probe');
  writeFileSync(probe, 'x');
  try {
    run('chattr', ['+i', probe]);
    run('chattr', ['-i', probe]);
    return undefined;
  } catch (error) {
    return `chattr +i is not possible in ${dir} (${firstLine(error)}); store-fault.test.ts covers this with injected failures`;
  } finally {
    rmSync(probe, { force: true });
  }
}

const firstLine = (error: unknown) =>
  String((error as { stderr?: Buffer }).stderr ?? (error as Error).message)
    .trim()
    .split('\n')[0];

/** Writes until the file system says ENOSPC; returns the filler's path. */
function fillDisk(dir: string, name = 'filler'): string {
  const path = join(dir, name);
  const fd = openSync(path, 'w');
  try {
    for (const size of [1 << 20, 1 << 16, 1 << 12, 1 << 9]) {
      const chunk = Buffer.alloc(size, 7);
      for (let i = 0; i < 100_000; i++) {
        try {
          writeSync(fd, chunk);
        } catch (error) {
          if ((error as NodeJS.ErrnoException).code === 'ENOSPC') break;
          throw error;
        }
      }
    }
  } finally {
    closeSync(fd);
  }
  return path;
}

interface Scenario {
  /** The server running now (replaced by a restart). */
  server: TestServer;
  readonly a: Trader;
  readonly b: Trader;
  readonly acked: number[];
  place(i: number): Promise<number>;
}

async function scenario(server: TestServer): Promise<Scenario> {
  const a = await server.trader({ EUR: '1000000', BTC: '100' });
  const b = await server.trader({ EUR: '1000000', BTC: '100' });
  const acked: number[] = [];
  /** Alternately a resting ask of `a` and a bid of `b` that crosses about half of the time. */
  const place = async (i: number): Promise<number> => {
    const sell = i % 2 === 0;
    const answer = await signed(self.server.url, sell ? a : b, 'POST', '/orders', {
      order_direction: sell ? 'sell' : 'buy',
      order_type: 'limit',
      pair: 'BTC/EUR',
      volume: `0.0${1 + (i % 9)}`,
      price: sell ? `${30_000 + (i % 20) * 10}.0` : `${30_000 + ((i * 7) % 20) * 10}.0`,
    });
    if (answer === undefined) throw new Error('no answer');
    if (answer.status === 201) acked.push(Number(/(\d+)$/.exec(answer.headers.get('location')!)![1]));
    else if (answer.status === 503) {
      assert.deepEqual(JSON.parse(answer.text), { error: 'Service Unavailable' });
      assert.equal(answer.headers.get('retry-after'), '1');
    } else assert.fail(`unexpected ${answer.status} ${answer.text}`);
    return answer.status;
  };
  const self: Scenario = { server, a, b, acked, place };
  for (let i = 0; i < 30; i++) assert.equal(await place(i), 201);
  return self;
}

/** While refusing: readiness, admin, ledger check, and what is served = what is committed. */
async function checkRefusing(s: Scenario): Promise<void> {
  const { server } = s;
  const ready = await request(`${server.url}/readyz`, { method: 'GET' });
  assert.equal(ready?.status, 503);
  // With why, in the fixed vocabulary of src/store/sqlite/errors.ts (never a path or a message).
  const { status, store, reason } = JSON.parse(ready!.text) as Record<string, unknown>;
  assert.deepEqual([status, store], ['store unavailable', 'sqlite']);
  assert.match(
    String(reason),
    /^(disk full|database file is read-only|database file I\/O error|database file cannot be opened)$/,
  );
  assert.equal(await s.place(1), 503, 'refused while the store is unavailable');
  const deposit = await server.admin('POST', `/users/${s.a.userId}/deposits`, { asset: 'EUR', amount: '1' });
  assert.equal(deposit.status, 503);
  const check = await server.admin('GET', '/ledger/check');
  assert.equal((check.body as { ok: boolean }).ok, true);

  const exchange = server.server.exchange;
  const engine = Engine.restore(await exchange.store.loadSnapshot());
  for (const market of exchange.catalogue.markets()) {
    const book = exchange.book(market.id as MarketId, 0);
    assert.deepEqual(book.bids, engine.levels(market.id, 'buy'), `${market.base}/${market.quote} bids`);
    assert.deepEqual(book.asks, engine.levels(market.id, 'sell'), `${market.base}/${market.quote} asks`);
  }
  for (const trader of [s.a, s.b])
    for (const balance of exchange.balances(trader.userId as UserId))
      assert.deepEqual(
        { available: balance.available, reserved: balance.reserved },
        engine.balance(trader.userId as UserId, balance.asset),
      );
  for (const id of s.acked)
    assert.ok(await exchange.store.getOrder(id as OrderId), `acknowledged order ${id}`);
}

/** Commits may still fit for a while (into WAL space SQLite already has); then one fails. */
async function untilRefused(s: Scenario, t: { diagnostic(text: string): void }, when: string): Promise<void> {
  for (let attempts = 0; attempts <= 5000; attempts++) {
    if ((await s.place(attempts)) === 503) {
      t.diagnostic(`first 503 ${when} after ${attempts} more acknowledged orders`);
      return;
    }
  }
  assert.fail(`5000 orders fitted ${when}`);
}

/** While writes fail, with no command sent: /readyz stays 503 through several probes. */
async function staysUnready(s: Scenario, ms = 3_000): Promise<void> {
  const start = Date.now();
  while (Date.now() - start < ms) {
    const ready = await request(`${s.server.url}/readyz`, { method: 'GET' });
    assert.equal(ready?.status, 503, '/readyz said ready while real commits fail');
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/**
 * Once the store takes writes again, with no command sent: /readyz turns 200 by itself (the
 * probe's own write, as large as a real commit, is what proves it), and orders are accepted.
 * Returns how long after the call /readyz said ready.
 */
async function waitReady(s: Scenario, ms = 10_000): Promise<number> {
  const start = Date.now();
  for (;;) {
    const ready = await request(`${s.server.url}/readyz`, { method: 'GET' });
    if (ready?.status === 200) break;
    if (Date.now() - start > ms) assert.fail(`/readyz still ${ready?.status} after ${ms} ms`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  const readyAfter = Date.now() - start;
  assert.equal(await s.place(1000), 201);
  return readyAfter;
}

/** After the server stopped: the file is sound and holds exactly the acknowledged history. */
function checkFile(dir: string, acked: readonly number[]): void {
  const state = readCommitted(join(dir, 'openspot.db'));
  assert.equal(state.integrity, 'ok');
  assert.deepEqual(checkLedger(state), []);
  assert.deepEqual(replayCheck(state), []);
  const ids = new Set(state.orders.map((o) => o.id));
  for (const id of acked) assert.ok(ids.has(id), `acknowledged order ${id} is in the file`);
}

test('a full disk: 503 while full, /readyz 503, recovery by itself when space returns, no damage', async (t) => {
  const unsupported = mountUnsupported();
  if (unsupported !== undefined) {
    t.skip(unsupported);
    return;
  }
  const dir = mkdtempSync(join(tmpdir(), 'openspot-fulldisk-'));
  run('mount', ['-t', 'tmpfs', '-o', 'size=24m,mode=0700', 'tmpfs', dir]);
  let server: TestServer | undefined;
  try {
    server = await startTestServer({}, dir);
    const s = await scenario(server);
    const filler = fillDisk(dir);
    await untilRefused(s, t, 'on the full disk');
    await checkRefusing(s);
    await staysUnready(s);

    // A restart while the disk is still full: the server comes up and serves reads; commands are
    // refused once no room is left (at once when the start's probe write finds none).
    await server.close();
    const filler2 = fillDisk(dir, 'filler-2'); // whatever closing freed
    server = await startTestServer({}, dir);
    s.server = server;
    const book = await request(`${server.url}/v1/orderbook?ticker_id=BTC/EUR&depth=0`, { method: 'GET' });
    assert.equal(book?.status, 200);
    await untilRefused(s, t, 'after a restart on the full disk');
    await checkRefusing(s);
    await staysUnready(s);

    rmSync(filler);
    rmSync(filler2);
    t.diagnostic(`ready again ${await waitReady(s)} ms after space returned`);
    for (let i = 0; i < 20; i++) assert.equal(await s.place(i), 201);
    await server.close();
    server = undefined;
    checkFile(dir, s.acked);
  } finally {
    await server?.close();
    try {
      run('umount', [dir]);
    } catch {
      run('umount', ['-l', dir]);
    }
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a read-only data directory: 503 while writes fail, recovery by itself when writable again', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'openspot-readonly-'));
  const unsupported = chattrUnsupported(dir);
  if (unsupported !== undefined) {
    rmSync(dir, { recursive: true, force: true });
    t.skip(unsupported);
    return;
  }
  const frozen = [
    join(dir, 'openspot.db'),
    join(dir, 'openspot.db-wal'),
    join(dir, 'openspot.db.commits'),
    join(dir, 'openspot.db.commits2'),
    dir,
  ];
  let server: TestServer | undefined;
  try {
    server = await startTestServer({}, dir);
    const s = await scenario(server);
    run('chattr', ['+i', ...frozen]);
    assert.equal(await s.place(100), 503, 'the first commit after the directory became read-only fails');
    await checkRefusing(s);
    await staysUnready(s);

    run('chattr', ['-i', ...frozen]);
    t.diagnostic(`ready again ${await waitReady(s)} ms after the directory became writable`);
    for (let i = 0; i < 20; i++) assert.equal(await s.place(i), 201);
    await server.close();
    server = undefined;
    checkFile(dir, s.acked);
  } finally {
    try {
      run('chattr', ['-i', ...frozen]);
    } catch {
      // not frozen
    }
    await server?.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a data directory that is read-only at start: the server refuses to start, saying why', async (t) => {
  const unsupported = mountUnsupported();
  if (unsupported !== undefined) {
    t.skip(unsupported);
    return;
  }
  const dir = mkdtempSync(join(tmpdir(), 'openspot-rostart-'));
  let mounted = false;
  try {
    const first = await startTestServer({}, dir);
    const s = await scenario(first);
    // Leave the WAL behind as a crash would (SQLite then opens the file read-only without a word).
    const keep = mkdtempSync(join(tmpdir(), 'openspot-rostart-wal-'));
    for (const suffix of ['', '-wal', '-shm'])
      copyFileSync(join(dir, `openspot.db${suffix}`), join(keep, `x${suffix}`));
    await first.close();
    for (const suffix of ['', '-wal', '-shm'])
      copyFileSync(join(keep, `x${suffix}`), join(dir, `openspot.db${suffix}`));
    rmSync(keep, { recursive: true, force: true });

    run('mount', ['--bind', dir, dir]);
    mounted = true;
    run('mount', ['-o', 'remount,ro,bind', dir]);
    await assert.rejects(startTestServer({}, dir), (error: Error) => {
      assert.equal(error.name, 'StoreUnavailableError');
      // The data directory's lock (openspot.lock) is taken first: it meets the read-only mount.
      assert.match(
        error.message,
        /(openspot\.db|data directory \S+) cannot be written \(EROFS\)|unable to open/,
      );
      t.diagnostic(`start refused: ${error.message}`);
      return true;
    });
    run('mount', ['-o', 'remount,rw,bind', dir]);
    const again = await startTestServer({}, dir);
    try {
      const ready = await request(`${again.url}/readyz`, { method: 'GET' });
      assert.equal(ready?.status, 200);
      s.server = again;
      assert.equal(await s.place(0), 201);
    } finally {
      await again.close();
    }
    checkFile(dir, s.acked);
  } finally {
    if (mounted) {
      try {
        run('umount', [dir]);
      } catch {
        run('umount', ['-l', dir]);
      }
    }
    rmSync(dir, { recursive: true, force: true });
  }
});
