/**
 * Group-commit benchmark of the store adapters alone (no HTTP, no engine):
 *   npm run bench:store [-- --batches N] [--orders K]
 *
 * Commits N batches (default 2000), one after the other as the sequencer does, each holding K new
 * orders (default 16), K/2 trades with their resting orders' new state, 2K balance rows and a
 * candle, to SQLite (a temp file, synchronous=FULL: fsync per commit) and, when DATABASE_URL or
 * TEST_DATABASE_URL is set, to PostgreSQL (a fresh database, dropped afterwards; synchronous_commit
 * as the server has it). Reports batches/s, orders/s and commit latency p50/p99 per adapter.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { PostgresStore } from '../src/store/postgres/postgres-store.js';
import { SqliteStore } from '../src/store/sqlite/sqlite-store.js';
import { batch, CATALOGUE } from '../src/store/sqlite/test-fixtures.js';
import type { CommitBatch } from '../src/store/store.js';
import { commitBatch, withBenchDatabase } from './store-support.js';

const { values } = parseArgs({
  options: { batches: { type: 'string', default: '2000' }, orders: { type: 'string', default: '16' } },
});
const BATCHES = Number(values.batches);
const ORDERS = Number(values.orders);

interface Commits {
  commit(batch: CommitBatch): unknown;
}

async function run(name: string, store: Commits): Promise<void> {
  await store.commit(batch(CATALOGUE));
  const latencies: number[] = [];
  const started = performance.now();
  for (let n = 0; n < BATCHES; n++) {
    const t0 = performance.now();
    await store.commit(commitBatch(n, ORDERS));
    latencies.push(performance.now() - t0);
  }
  const seconds = (performance.now() - started) / 1000;
  latencies.sort((a, b) => a - b);
  const at = (q: number) =>
    (latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))] ?? 0).toFixed(2);
  process.stdout.write(
    `${name.padEnd(34)} ${(BATCHES / seconds).toFixed(0).padStart(7)} batches/s ${((BATCHES * ORDERS) / seconds).toFixed(0).padStart(8)} orders/s   p50 ${at(0.5)} ms  p99 ${at(0.99)} ms\n`,
  );
}

process.stdout.write(
  `${BATCHES} batches of ${ORDERS} orders, ${ORDERS / 2} trades, ${2 * ORDERS} balances\n`,
);
const dir = mkdtempSync(join(tmpdir(), 'openspot-bench-store-'));
try {
  const sqlite = SqliteStore.open({ path: join(dir, 'openspot.db') });
  await run('SQLite (synchronous=FULL)', sqlite);
  sqlite.close();
} finally {
  rmSync(dir, { recursive: true, force: true });
}

const server = process.env.DATABASE_URL ?? process.env.TEST_DATABASE_URL;
if (server === undefined) {
  process.stdout.write(
    'PostgreSQL: skipped (set TEST_DATABASE_URL or DATABASE_URL to a server to measure it)\n',
  );
} else {
  await withBenchDatabase(server, 'openspot_bench', async (url, admin) => {
    const store = await PostgresStore.open({ url });
    const setting = await admin.query<{ synchronous_commit: string }>('SHOW synchronous_commit');
    await run(`PostgreSQL (synchronous_commit=${setting.rows[0]?.synchronous_commit})`, store);
    await store.close();
  });
}
