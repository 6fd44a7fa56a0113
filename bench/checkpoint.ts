/**
 * How long a checkpoint save and a restore take, on disk, for a venue with a long history:
 * `npm run bench:checkpoint [trades]` (default 200,000 trades, their 400,000 orders, 2,000
 * resting orders). Both run inside one turn of the event loop, so this is also how long the
 * server pauses for them.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Micros } from '../src/domain/types.js';
import { SqliteStore } from '../src/store/sqlite/sqlite-store.js';
import { batch, CATALOGUE, order, ordersOf, T0, trade } from '../src/store/sqlite/test-fixtures.js';

const trades = Number(process.argv[2] ?? 200_000);
const dir = mkdtempSync(join(tmpdir(), 'openspot-bench-cp-'));
try {
  const store = SqliteStore.open({
    path: join(dir, 'openspot.db'),
    synchronous: 'NORMAL',
    checkpointDir: join(dir, 'checkpoints'),
  });
  store.commit(batch(CATALOGUE));
  const chunk = 10_000;
  for (let first = 1; first <= trades; first += chunk) {
    const list = Array.from({ length: Math.min(chunk, trades - first + 1) }, (_, i) =>
      trade(first + i, {
        takerOrderId: (2 * (first + i)) as never,
        makerOrderId: (2 * (first + i) + 1) as never,
      }),
    );
    store.commit(batch({ trades: list, orders: ordersOf(list) }));
  }
  const resting = Array.from({ length: 2000 }, (_, i) => order(10_000_000 + i));
  store.commit(batch({ orders: resting }));

  const time = (what: string, f: () => void) => {
    const started = process.hrtime.bigint();
    f();
    const ms = Number(process.hrtime.bigint() - started) / 1e6;
    console.log(`${what.padEnd(8)} ${ms.toFixed(0).padStart(6)} ms`);
  };
  console.log(`${trades} trades, ${2 * trades + resting.length} orders`);
  let bytes = 0;
  time('save', () => {
    bytes = store.saveCheckpoint('bench', T0 as Micros).bytes;
  });
  console.log(`checkpoint ${(bytes / 1024 / 1024).toFixed(1)} MiB`);
  time('restore', () => store.restoreCheckpoint('bench'));
  store.close();
} finally {
  rmSync(dir, { recursive: true, force: true });
}
