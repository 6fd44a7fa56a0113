/**
 * What persisting book sequences costs a SQLite group commit: CPU per commit of the same batches
 * (K new orders, K/2 trades, 2K balances, a candle, as bench/store-commit.ts) with and without one
 * `book_sequences` row, in alternating blocks of 300 commits in one process (synchronous=NORMAL:
 * no fsync, so the CPU of the write path is what is measured). Prints the medians and the median
 * of the per-block ratios. With DATABASE_URL or TEST_DATABASE_URL, the same on PostgreSQL (a fresh
 * database, dropped afterwards), as commit latency.
 *
 *   node --import tsx bench/book-seq-commit.ts [K=16]
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PostgresStore } from '../src/store/postgres/postgres-store.js';
import { SqliteStore } from '../src/store/sqlite/sqlite-store.js';
import { batch, CATALOGUE } from '../src/store/sqlite/test-fixtures.js';
import type { CommitBatch } from '../src/store/store.js';
import { commitBatch, withBenchDatabase } from './store-support.js';

const ORDERS = Number(process.argv[2] ?? 16);
if (!Number.isSafeInteger(ORDERS) || ORDERS < 2 || ORDERS % 2 !== 0)
  throw new RangeError('K: an even number >= 2');
const med = (a: number[]) => [...a].sort((x, y) => x - y)[Math.floor(a.length / 2)]!;

/**
 * Alternating blocks of `size` commits without and with the row, `rounds` of each; `cost` gives
 * what one block cost (µs of CPU, or ms of wall time), divided per commit.
 */
async function alternate(
  commit: (b: CommitBatch) => unknown,
  rounds: number,
  size: number,
  measure: () => () => number,
): Promise<{ without: number; with: number; ratio: number }> {
  const per: Record<'without' | 'with', number[]> = { without: [], with: [] };
  let n = 0;
  for (let round = 0; round < rounds; round++) {
    for (const mode of round % 2 === 0 ? (['without', 'with'] as const) : (['with', 'without'] as const)) {
      const batches = Array.from({ length: size }, (_, i) => commitBatch(n + i, ORDERS, mode === 'with'));
      const stop = measure();
      for (const b of batches) await commit(b);
      per[mode].push(stop() / size);
      n += size;
    }
  }
  return {
    without: med(per.without),
    with: med(per.with),
    ratio: med(per.with.map((w, i) => w / per.without[i]!)),
  };
}

const cpuMicros = () => {
  const c0 = process.cpuUsage();
  return () => {
    const c = process.cpuUsage(c0);
    return c.user + c.system;
  };
};
const wallMillis = () => {
  const t0 = performance.now();
  return () => performance.now() - t0;
};

const dir = mkdtempSync(join(tmpdir(), 'openspot-bench-book-seq-'));
try {
  const store = SqliteStore.open({ path: join(dir, 'db'), synchronous: 'NORMAL' });
  store.commit(batch(CATALOGUE));
  const r = await alternate((b) => store.commit(b), 20, 300, cpuMicros);
  process.stdout.write(
    `SQLite, ${ORDERS} orders/batch: CPU per commit without ${r.without.toFixed(1)} µs, with one book-sequence row ${r.with.toFixed(1)} µs; median ratio ${r.ratio.toFixed(3)}\n`,
  );
  store.close();
} finally {
  rmSync(dir, { recursive: true, force: true });
}

// PostgreSQL when a server is named: the commit's wall time (the work is the server's), as
// bench/store-commit.ts does it, in a database of its own dropped afterwards.
const server = process.env.DATABASE_URL ?? process.env.TEST_DATABASE_URL;
if (server !== undefined) {
  await withBenchDatabase(server, 'openspot_bench_book_seq', async (url) => {
    const store = await PostgresStore.open({ url });
    await store.commit(batch(CATALOGUE));
    const r = await alternate((b) => store.commit(b), 10, 200, wallMillis);
    process.stdout.write(
      `PostgreSQL, ${ORDERS} orders/batch: commit latency without ${r.without.toFixed(3)} ms, with one book-sequence row ${r.with.toFixed(3)} ms; median ratio ${r.ratio.toFixed(3)}\n`,
    );
    await store.close();
  });
}
