/**
 * bench:http — requests per second and latency with autocannon, in one run, against:
 *   baseline: a bare Fastify route;
 *   GET /v1/orderbook, GET /v1/tickers;
 *   signed POST /v1/orders + DELETE /v1/orders/:id (each request freshly signed; the order is
 *   durable — committed and fsynced — before its 201).
 * Each target server runs in its own process. The measurements are interleaved (round 1: baseline,
 * orderbook, tickers, orders; round 2: ...) so that a change in the machine's load during the run
 * affects every target alike, and each ratio is the median over the rounds of the target's
 * requests/s over the baseline's in the same round. Every target is warmed up first (not counted).
 * Two rows then show where the signed pair's time goes: the same server with commits that are not
 * fsynced (SQLITE_SYNCHRONOUS=normal), and with commits that do nothing at all (not durable: the
 * bound a durable server stays below). The last row sends the very same signed order requests to
 * bare routes that answer without doing anything: the rate the load generator itself can drive on
 * this machine, i.e. the ceiling of the signed-order ratio (on 2 cores, signing and autocannon's
 * per-request work weigh as much as a real server's).
 * Each row also says where the CPU went, per request: the target server's process (all its threads,
 * from /proc; Linux only) and the load generator's (this process: autocannon, and the signing of
 * each order request). On a 2-core machine both share the cores, so a load generator that costs
 * more per request leaves less to the server.
 * Options: --seconds N (per measurement, default 10), --connections N (default 64),
 * --runs N (rounds, default 3; medians), --warmup N (seconds per target, default 2).
 *
 * `--store postgres` runs the other bench instead (bench/http-store.ts): signed order placement
 * on PostgreSQL against SQLite and a bare route, driven by wrk with pre-signed requests.
 * `--compare REF` runs bench/http-compare.ts: this tree's build against REF's, each against a
 * bare Fastify route, in rotated rounds (wrk, pre-signed orders; `--store postgres` there too).
 */
import autocannon from 'autocannon';
import { compareBench } from './http-compare.js';
import { storeBench } from './http-store.js';
import {
  cpuFigure,
  type Measurement,
  measureCpu,
  median,
  orderRequests,
  startTarget,
} from './http-support.js';

const arg = (name: string, fallback: number): number => {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? Number(process.argv[i + 1]) : fallback;
};
const SECONDS = arg('seconds', 10);
const CONNECTIONS = arg('connections', 64);
const RUNS = arg('runs', 3);
const WARMUP = arg('warmup', 2);

interface Target {
  name: string;
  /** The process serving it, for its CPU time. */
  pid: number | undefined;
  /** Fresh options for each measurement (request pipelines keep state). */
  options: () => autocannon.Options;
}

const run = (target: Target, seconds: number): Promise<autocannon.Result> =>
  autocannon({ connections: CONNECTIONS, duration: seconds, ...target.options() });

const measure = (target: Target, seconds: number): Promise<Measurement> =>
  measureCpu(target.pid, () => run(target, seconds));

async function main(): Promise<void> {
  process.stdout.write(
    `bench:http — ${CONNECTIONS} connections, ${SECONDS} s per measurement, ${RUNS} interleaved rounds (medians), ${WARMUP} s warm-up per target\n`,
  );
  const bare = await startTarget('bare');
  const openspot = await startTarget('openspot');
  const normal = await startTarget('openspot-normal');
  const uncommitted = await startTarget('openspot-uncommitted');
  const url = openspot.info.url;
  const traders = openspot.info.traders ?? [];
  const targets: Target[] = [
    {
      name: 'bare Fastify route (baseline)',
      pid: bare.child.pid,
      options: () => ({ url: `${bare.info.url}/bare` }),
    },
    {
      name: 'GET /v1/orderbook',
      pid: openspot.child.pid,
      options: () => ({ url: `${url}/v1/orderbook?ticker_id=BTC/EUR&depth=100` }),
    },
    { name: 'GET /v1/tickers', pid: openspot.child.pid, options: () => ({ url: `${url}/v1/tickers` }) },
    {
      name: 'signed POST /v1/orders + DELETE',
      pid: openspot.child.pid,
      options: () => ({ url, requests: orderRequests(traders) }),
    },
    {
      name: 'same, SQLITE_SYNCHRONOUS=normal (no fsync)',
      pid: normal.child.pid,
      options: () => ({ url: normal.info.url, requests: orderRequests(normal.info.traders ?? []) }),
    },
    {
      name: 'same, nothing committed (bound, not durable)',
      pid: uncommitted.child.pid,
      options: () => ({ url: uncommitted.info.url, requests: orderRequests(uncommitted.info.traders ?? []) }),
    },
    {
      name: 'same requests, bare routes (load gen. ceiling)',
      pid: bare.child.pid,
      options: () => ({ url: bare.info.url, requests: orderRequests(traders) }),
    },
  ];
  if (WARMUP > 0) for (const target of targets) await run(target, WARMUP);
  const measurements: Measurement[][] = targets.map(() => []);
  for (let round = 0; round < RUNS; round++) {
    for (const [i, target] of targets.entries()) measurements[i]!.push(await measure(target, SECONDS));
  }
  const results = measurements.map((list) => list.map((m) => m.result));
  for (const target of [bare, openspot, normal, uncommitted]) target.child.kill();
  const baseline = results[0]!;
  const rows = targets.map((target, i) => {
    const runs = results[i]!;
    return {
      measurement: target.name,
      'req/s': Math.round(median(runs.map((r) => r.requests.average))),
      'p50 ms': median(runs.map((r) => r.latency.p50)),
      'p99 ms': median(runs.map((r) => r.latency.p99)),
      'vs baseline': median(
        runs.map((r, round) => r.requests.average / baseline[round]!.requests.average),
      ).toFixed(2),
      'server CPU µs/req': cpuFigure(measurements[i]!.map((m) => m.serverCpu)),
      'load gen. CPU µs/req': cpuFigure(measurements[i]!.map((m) => m.loadCpu)),
      'non-2xx': runs.reduce((s, r) => s + r.non2xx, 0),
      errors: runs.reduce((s, r) => s + r.errors, 0),
    };
  });
  console.table(rows);
  process.stdout.write(
    'Targets: public GETs >= 0.70 of the baseline; signed order placement + cancel >= 0.40 with p99 < 20 ms at 64 connections.\n',
  );
}

const storeIndex = process.argv.indexOf('--store');
const store = storeIndex >= 0 ? process.argv[storeIndex + 1] : undefined;
const compareIndex = process.argv.indexOf('--compare');
if (compareIndex >= 0) {
  const ref = process.argv[compareIndex + 1];
  if (ref === undefined || ref.startsWith('--')) {
    process.stderr.write('usage: npm run bench:http -- --compare <git rev> [--store sqlite|postgres]\n');
    process.exit(2);
  }
  await compareBench(ref);
} else if (store === 'postgres') await storeBench();
else if (store === undefined) await main();
else {
  process.stderr.write(`unknown --store ${store}: the store bench compares postgres against SQLite\n`);
  process.exit(2);
}
