/**
 * What persisting book sequences costs a SQLite group commit: CPU per commit of the same batches
 * (K new orders, K/2 trades, 2K balances, a candle, as bench/store-commit.ts) with and without one
 * `book_sequences` row, in alternating blocks of 300 commits in one process (synchronous=NORMAL:
 * no fsync, so the CPU of the write path is what is measured). Prints the medians and the median
 * of the per-block ratios.
 *
 *   node --import tsx bench/book-seq-commit.ts [K=16]
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { MarketId, OrderId, UserId } from '../src/domain/types.js';
import { SqliteStore } from '../src/store/sqlite/sqlite-store.js';
import { balance, batch, CATALOGUE, candle, EUR, order, trade } from '../src/store/sqlite/test-fixtures.js';
import type { CommitBatch } from '../src/store/store.js';

const ORDERS = Number(process.argv[2] ?? 16);
if (!Number.isSafeInteger(ORDERS) || ORDERS < 2 || ORDERS % 2 !== 0)
  throw new RangeError('K: an even number >= 2');
function batchNumber(n: number, books: boolean): CommitBatch {
  const firstOrder = 1 + n * ORDERS;
  const orders = Array.from({ length: ORDERS }, (_, i) =>
    order(firstOrder + i, { userId: (1 + ((firstOrder + i) % 500)) as UserId }),
  );
  const trades = Array.from({ length: ORDERS / 2 }, (_, i) =>
    trade(1 + n * (ORDERS / 2) + i, {
      takerOrderId: (firstOrder + i) as OrderId,
      makerOrderId: (firstOrder + ORDERS / 2 + i) as OrderId,
    }),
  );
  const balances = Array.from({ length: 2 * ORDERS }, (_, i) =>
    balance((1 + i) as UserId, EUR, 1_000_000 + n),
  );
  return {
    ...batch({ trades, orders, balances, candles: [candle(60 * (1 + Math.floor(n / 100)))] }),
    changes: {
      ...batch({ orders, balances }).changes,
      sequences: {
        nextOrderId: firstOrder + ORDERS,
        nextTradeId: 1 + (n + 1) * (ORDERS / 2),
        nextMarketId: 3,
      },
    },
    ...(books ? { bookSequences: [{ marketId: 1 as MarketId, sequence: n + 1 }] } : {}),
  };
}
const dir = mkdtempSync(join(tmpdir(), 'openspot-bench-book-seq-'));
const store = SqliteStore.open({ path: join(dir, 'db'), synchronous: 'NORMAL' });
store.commit(batch(CATALOGUE));
const cpu: Record<string, number[]> = { without: [], with: [] };
let n = 0;
for (let round = 0; round < 20; round++) {
  for (const mode of round % 2 === 0 ? ['without', 'with'] : ['with', 'without']) {
    const batches = Array.from({ length: 300 }, (_, i) => batchNumber(n + i, mode === 'with'));
    const c0 = process.cpuUsage();
    for (const b of batches) store.commit(b);
    const c = process.cpuUsage(c0);
    n += 300;
    cpu[mode]!.push((c.user + c.system) / 300);
  }
}
const med = (a: number[]) => [...a].sort((x, y) => x - y)[Math.floor(a.length / 2)]!;
const ratios = cpu.with!.map((w, i) => w / cpu.without![i]!);
console.log(
  `orders/batch ${ORDERS}: CPU per commit: without ${med(cpu.without!).toFixed(1)} µs, with one book-sequence row ${med(cpu.with!).toFixed(1)} µs; median ratio ${med(ratios).toFixed(3)}`,
);
store.close();
rmSync(dir, { recursive: true, force: true });
