/**
 * The PostgreSQL store while PostgreSQL itself restarts (the adapter alone; the whole server
 * through the same restarts, with SIGKILLs between them, is `npm run test:crash -- --store postgres`):
 *   TEST_DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres npm run test:pg-restart [-- --restarts 3]
 *
 * Commits one batch after another (an order and a referenced deposit each) into a fresh database
 * while `pg_ctlcluster <version> main restart` runs `--restarts` times (default 3), then checks:
 * every acknowledged batch is there exactly once; commits came back by themselves after each
 * restart (no new store was opened); a batch answered "unavailable" is either absent or, when the
 * connection broke after PostgreSQL had committed it, present (counted: the ambiguous case the
 * sequencer resolves by reloading). Needs root (pg_ctlcluster) and a local cluster. Not part of
 * `npm test`: restarting the server would break the other suites' connections.
 */
import { execFile } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { parseArgs, promisify } from 'node:util';
import pg from 'pg';
import type { OrderId } from '../../src/domain/types.js';
import { PostgresStore } from '../../src/store/postgres/postgres-store.js';
import { batch, CATALOGUE, ledger, order } from '../../src/store/sqlite/test-fixtures.js';
import { StoreUnavailableError } from '../../src/store/store.js';

const { values } = parseArgs({ options: { restarts: { type: 'string', default: '3' } } });
const RESTARTS = Number(values.restarts);
const server = process.env.TEST_DATABASE_URL;
if (server === undefined) {
  process.stderr.write('TEST_DATABASE_URL is not set\n');
  process.exit(2);
}
const version = readdirSync('/etc/postgresql').sort().at(-1) ?? '15';
const name = `openspot_restart_${process.pid}`;
const admin = async (sql: string) => {
  for (let attempt = 0; ; attempt++) {
    const c = new pg.Client({ connectionString: server });
    c.on('error', () => undefined);
    try {
      await c.connect();
      await c.query(sql);
      await c.end();
      return;
    } catch (error) {
      await c.end().catch(() => undefined);
      if (attempt > 30) throw error;
      await new Promise((r) => setTimeout(r, 500));
    }
  }
};
await admin(`CREATE DATABASE ${name}`);
const url = new URL(server);
url.pathname = `/${name}`;
const store = await PostgresStore.open({ url: url.toString(), connectTimeoutMs: 2000 });
await store.commit(batch(CATALOGUE));

const acked: number[] = [];
const failed: number[] = [];
const ackedAfterRestart: number[] = [];
let restartsDone = 0;
let running = true;
const writer = (async () => {
  for (let n = 1; running; n++) {
    try {
      await store.commit(
        batch({
          orders: [order(n)],
          ledger: [ledger({ reference: `dep-${n}` })],
          sequences: { nextOrderId: n + 1, nextTradeId: 1, nextMarketId: 3 },
        }),
      );
      acked.push(n);
      if (restartsDone > 0)
        ackedAfterRestart[restartsDone - 1] = (ackedAfterRestart[restartsDone - 1] ?? 0) + 1;
    } catch (error) {
      if (!(error instanceof StoreUnavailableError)) throw error;
      failed.push(n);
      await new Promise((r) => setTimeout(r, 100)); // as the sequencer's probe interval would
    }
  }
})();

for (let i = 0; i < RESTARTS; i++) {
  await new Promise((r) => setTimeout(r, 1500));
  const started = performance.now();
  // Asynchronously: the commits go on (and fail, then recover) while PostgreSQL restarts.
  await promisify(execFile)('pg_ctlcluster', ['--skip-systemctl-redirect', version, 'main', 'restart']);
  restartsDone++;
  process.stdout.write(`restart ${i + 1}: ${(performance.now() - started).toFixed(0)} ms\n`);
}
await new Promise((r) => setTimeout(r, 2000));
running = false;
await writer;

const lost = [];
let ambiguousPresent = 0;
for (const n of acked) if ((await store.getOrder(n as OrderId)) === undefined) lost.push(n);
for (const n of failed) if ((await store.getOrder(n as OrderId)) !== undefined) ambiguousPresent++;
const entries = (await store.loadLedgerReferences()).length;
await store.close();
await admin(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);

const resumed = ackedAfterRestart.length === RESTARTS && ackedAfterRestart.every((n) => n > 0);
process.stdout.write(
  `acknowledged ${acked.length}, unavailable ${failed.length} (of which committed before the connection broke: ${ambiguousPresent})\n` +
    `acknowledged but missing: ${lost.length}; ledger entries ${entries} = acknowledged + ambiguous: ${entries === acked.length + ambiguousPresent}\n` +
    `commits resumed by themselves after every restart: ${resumed} (${ackedAfterRestart.join(', ')})\n`,
);
process.exit(lost.length === 0 && resumed && entries === acked.length + ambiguousPresent ? 0 : 1);
