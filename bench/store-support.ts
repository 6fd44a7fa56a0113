/** What bench/store-commit.ts and bench/book-seq-commit.ts share: the batches they commit, the PostgreSQL database. */
import pg from 'pg';
import type { MarketId, OrderId, UserId } from '../src/domain/types.js';
import { balance, batch, candle, EUR, order, trade } from '../src/store/sqlite/test-fixtures.js';
import type { CommitBatch } from '../src/store/store.js';

/**
 * Batch `n` of a run of batches of `orders` new orders (an even number), `orders`/2 trades with
 * their resting orders' new state, 2·`orders` balance rows and a candle; with `bookSequence`, one
 * `book_sequences` row too. Commit `batch(CATALOGUE)` first.
 */
export function commitBatch(n: number, orders: number, bookSequence = false): CommitBatch {
  const firstOrder = 1 + n * orders;
  const placed = Array.from({ length: orders }, (_, i) =>
    order(firstOrder + i, { userId: (1 + ((firstOrder + i) % 500)) as UserId }),
  );
  const trades = Array.from({ length: orders / 2 }, (_, i) =>
    trade(1 + n * (orders / 2) + i, {
      takerOrderId: (firstOrder + i) as OrderId,
      makerOrderId: (firstOrder + orders / 2 + i) as OrderId,
    }),
  );
  const balances = Array.from({ length: 2 * orders }, (_, i) =>
    balance((1 + i) as UserId, EUR, 1_000_000 + n),
  );
  return {
    ...batch({ trades, orders: placed, balances, candles: [candle(60 * (1 + Math.floor(n / 100)))] }),
    changes: {
      ...batch({ orders: placed, balances }).changes,
      sequences: {
        nextOrderId: firstOrder + orders,
        nextTradeId: 1 + (n + 1) * (orders / 2),
        nextMarketId: 3,
      },
    },
    ...(bookSequence ? { bookSequences: [{ marketId: 1 as MarketId, sequence: n + 1 }] } : {}),
  };
}

/**
 * Runs `measure` on a database of its own (`<prefix>_<pid>`) on the server at `server`, dropped
 * afterwards whatever happens; `admin` is a connection to the server's default database.
 */
export async function withBenchDatabase(
  server: string,
  prefix: string,
  measure: (url: string, admin: pg.Client) => Promise<void>,
): Promise<void> {
  const name = `${prefix}_${process.pid}`;
  const admin = new pg.Client({ connectionString: server });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  try {
    const url = new URL(server);
    url.pathname = `/${name}`;
    await measure(url.toString(), admin);
  } finally {
    await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    await admin.end();
  }
}
