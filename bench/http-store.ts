/**
 * bench:http --store postgres — signed, durable order placement (POST /v1/orders, 201 only after
 * the group commit is durable) on PostgreSQL against the same server on SQLite and against a bare
 * Fastify route that answers the same requests doing nothing, in one run.
 *
 * The load generator is `wrk` (Debian package `wrk`), not autocannon: the requests are signed in
 * advance (no nonce is required by default, so a signed body may be sent again) and a Lua script
 * rotates through them, a few µs per request, so the server gets the cores, not the signer.
 *
 * The order mix (say it with the figures): 8 traders in 4 roles, 0.001 BTC limit orders on
 * BTC/EUR, in turn: a bid resting at 29990, an ask resting at 30010, a taker bid at 30010 and a
 * taker ask at 29990. A taker trades against the resting maker (or rests, then is taken itself),
 * so about half the orders trade and commits carry trades, balances, orders and candles. Roles
 * use distinct traders, so self-trade prevention never cancels anything.
 *
 * Rounds are interleaved (bare, SQLite, PostgreSQL; then rotated) and each ratio is the median of
 * the per-round ratios. Each row also gives the server's CPU per order (its process, /proc), the
 * PostgreSQL backends' CPU per order (the bench database's sessions), and from the server's
 * /metrics: orders per group commit, trades per order and the mean commit time.
 * Each PostgreSQL run uses a fresh database, dropped at the end (bench/http-target.ts).
 *
 *   npm run bench:http -- --store postgres [--seconds 10] [--connections 32] [--runs 3]
 *                         [--warmup 3] [--threads 1]
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { signRequest } from '../src/client/sign.js';
import { median, processCpuMicros, startTarget, type Trader } from './http-support.js';

const arg = (name: string, fallback: number): number => {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? Number(process.argv[i + 1]) : fallback;
};
const SECONDS = arg('seconds', 10);
const CONNECTIONS = arg('connections', 32);
const RUNS = arg('runs', 3);
const WARMUP = arg('warmup', 3);
const THREADS = arg('threads', 1);
const ADMIN_URL =
  process.env.BENCH_DATABASE_URL?.trim() ||
  process.env.TEST_DATABASE_URL?.trim() ||
  'postgres://postgres@127.0.0.1:5432/postgres';

export const ORDER_MIX =
  '8 traders in 4 roles, 0.001 BTC limit orders on BTC/EUR in turn: bid resting at 29990, ask resting at 30010, ' +
  'taker bid at 30010, taker ask at 29990 (about half the orders trade)';

/** The four roles of the mix: [direction, price]. Trader i plays role i % 4. */
const ROLES = [
  ['buy', '29990'],
  ['sell', '30010'],
  ['buy', '30010'],
  ['sell', '29990'],
] as const;

interface SignedOrder {
  readonly apiKey: string;
  readonly sign: string;
  readonly body: string;
}

/** One signed order per trader, in role order (maker bid, maker ask, taker bid, taker ask, …). */
export function signedOrders(traders: readonly Trader[]): SignedOrder[] {
  if (traders.length < ROLES.length || traders.length % ROLES.length !== 0)
    throw new Error(`the order mix needs a multiple of ${ROLES.length} traders, got ${traders.length}`);
  return traders.map((trader, i) => {
    const [direction, price] = ROLES[i % ROLES.length]!;
    const body = JSON.stringify({
      order_direction: direction,
      order_type: 'limit',
      pair: 'BTC/EUR',
      volume: '0.001',
      price,
    });
    return { apiKey: trader.apiKey, sign: signRequest('POST', body, trader.apiSecret), body };
  });
}

/** A Lua string literal (the values are printable ASCII: JSON's escapes are Lua's). */
function luaString(text: string): string {
  if (!/^[\x20-\x7e]*$/.test(text)) throw new Error('only printable ASCII goes into the wrk script');
  return JSON.stringify(text);
}

/** wrk's `done`: one JSON line with the figures runWrk reads. */
const WRK_DONE = `done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    '{"requests":%d,"durationUs":%d,"status":%d,"connect":%d,"read":%d,"write":%d,"timeout":%d,"p50Us":%d,"p99Us":%d}\\n',
    summary.requests, summary.duration, e.status, e.connect, e.read, e.write, e.timeout,
    latency:percentile(50), latency:percentile(99)))
end
`;

/** A wrk script sending GET `path` again and again. */
export function wrkGetScript(path: string): string {
  return `request = function()
  return wrk.format("GET", ${luaString(path)})
end
${WRK_DONE}`;
}

/**
 * The wrk script: the requests are formatted once per thread; each call hands out the next one.
 * `done` prints one JSON line with the figures this bench reads.
 */
export function wrkScript(orders: readonly SignedOrder[]): string {
  const entries = orders
    .map((o) => `  { ${luaString(o.apiKey)}, ${luaString(o.sign)}, ${luaString(o.body)} },`)
    .join('\n');
  return `local orders = {
${entries}
}
local requests = {}
local n = 0
init = function(args)
  for i, o in ipairs(orders) do
    requests[i] = wrk.format("POST", "/v1/orders",
      { ["Content-Type"] = "application/json", ["X-API-Key"] = o[1], ["X-API-Sign"] = o[2] }, o[3])
  end
end
request = function()
  n = n % #requests + 1
  return requests[n]
end
${WRK_DONE}`;
}

export interface WrkResult {
  requests: number;
  durationUs: number;
  status: number;
  connect: number;
  read: number;
  write: number;
  timeout: number;
  p50Us: number;
  p99Us: number;
}

export function runWrk(
  url: string,
  script: string,
  seconds: number,
  connections = CONNECTIONS,
  threads = THREADS,
): Promise<WrkResult> {
  return new Promise((resolve, reject) => {
    execFile(
      'wrk',
      [
        '-t',
        String(threads),
        '-c',
        String(connections),
        '-d',
        `${seconds}s`,
        '--timeout',
        '10s',
        '-s',
        script,
        url,
      ],
      { encoding: 'utf8' },
      (error, stdout, stderr) => {
        if (error) {
          reject(
            (error as NodeJS.ErrnoException).code === 'ENOENT'
              ? new Error('wrk is not installed: apt-get install -y wrk')
              : new Error(`wrk failed: ${stderr || error.message}`),
          );
          return;
        }
        const line = stdout.split('\n').find((l) => l.startsWith('{"requests"'));
        if (line === undefined) reject(new Error(`no figures in wrk's output:\n${stdout}`));
        else resolve(JSON.parse(line) as WrkResult);
      },
    );
  });
}

/** The figures of the server's /metrics this bench reads (counters since start). */
interface ServerCounters {
  commits: number;
  commitSeconds: number;
  accepted: number;
  trades: number;
}

async function serverCounters(
  url: string,
  adminToken: string | undefined,
): Promise<ServerCounters | undefined> {
  if (adminToken === undefined) return undefined;
  const response = await fetch(`${url}/metrics`, { headers: { authorization: `Bearer ${adminToken}` } });
  if (!response.ok) return undefined;
  const text = await response.text();
  const value = (pattern: RegExp) => Number(text.match(pattern)?.[1] ?? Number.NaN);
  return {
    commits: value(/^openspot_commit_duration_seconds_count (\S+)$/m),
    commitSeconds: value(/^openspot_commit_duration_seconds_sum (\S+)$/m),
    accepted: value(/^openspot_engine_events_total\{type="orderAccepted"\} (\S+)$/m),
    trades: value(/^openspot_engine_events_total\{type="trade"\} (\S+)$/m),
  };
}

/** CPU (µs) the PostgreSQL sessions of `database` have used so far (they run as separate processes). */
async function backendCpuMicros(database: string | undefined): Promise<number | undefined> {
  if (database === undefined) return undefined;
  const client = new pg.Client({ connectionString: ADMIN_URL, connectionTimeoutMillis: 5000 });
  client.on('error', () => undefined);
  try {
    await client.connect();
    const { rows } = await client.query<{ pid: number }>(
      'SELECT pid FROM pg_stat_activity WHERE datname = $1',
      [database],
    );
    let total = 0;
    for (const { pid } of rows) total += processCpuMicros(pid) ?? 0;
    return total;
  } catch {
    return undefined;
  } finally {
    await client.end().catch(() => undefined);
  }
}

interface Sample {
  ordersPerSecond: number;
  p50: number;
  p99: number;
  serverCpu: number | undefined;
  databaseCpu: number | undefined;
  perCommit: number | undefined;
  tradesPerOrder: number | undefined;
  commitMs: number | undefined;
  non2xx: number;
  errors: number;
}

interface Target {
  readonly name: string;
  readonly url: string;
  readonly pid: number | undefined;
  readonly script: string;
  readonly adminToken?: string | undefined;
  readonly database?: string | undefined;
}

async function measure(target: Target, seconds: number): Promise<Sample> {
  const counters0 = await serverCounters(target.url, target.adminToken);
  const server0 = processCpuMicros(target.pid);
  const db0 = await backendCpuMicros(target.database);
  const result = await runWrk(target.url, target.script, seconds);
  const server1 = processCpuMicros(target.pid);
  const db1 = await backendCpuMicros(target.database);
  const counters1 = await serverCounters(target.url, target.adminToken);
  const ok = Math.max(1, result.requests - result.status);
  const per = (a: number | undefined, b: number | undefined) =>
    a === undefined || b === undefined ? undefined : (b - a) / ok;
  const delta = (key: keyof ServerCounters) =>
    counters0 === undefined || counters1 === undefined ? undefined : counters1[key] - counters0[key];
  const commits = delta('commits');
  const accepted = delta('accepted');
  const trades = delta('trades');
  const commitSeconds = delta('commitSeconds');
  return {
    ordersPerSecond: ok / (result.durationUs / 1e6),
    p50: result.p50Us / 1000,
    p99: result.p99Us / 1000,
    serverCpu: per(server0, server1),
    databaseCpu: per(db0, db1),
    perCommit: commits && accepted !== undefined ? accepted / commits : undefined,
    tradesPerOrder: accepted && trades !== undefined ? trades / accepted : undefined,
    commitMs: commits && commitSeconds !== undefined ? (commitSeconds / commits) * 1000 : undefined,
    non2xx: result.status,
    errors: result.connect + result.read + result.write + result.timeout,
  };
}

const figure = (values: ReadonlyArray<number | undefined>, digits: number): string => {
  const known = values.filter((v): v is number => v !== undefined && Number.isFinite(v));
  return known.length === 0 ? 'n/a' : median(known).toFixed(digits);
};

export async function storeBench(): Promise<void> {
  process.stdout.write(
    `bench:http --store postgres — signed POST /v1/orders (201 after a durable commit), wrk -t ${THREADS} -c ${CONNECTIONS}, ` +
      `${SECONDS} s per measurement, ${RUNS} interleaved rounds (medians), ${WARMUP} s warm-up per target\n` +
      `order mix: ${ORDER_MIX}\n`,
  );
  const dir = mkdtempSync(join(tmpdir(), 'openspot-wrk-'));
  const bare = await startTarget('bare');
  const sqlite = await startTarget('openspot');
  const postgres = await startTarget('openspot-postgres');
  const children = [bare, sqlite, postgres];
  try {
    const script = (name: string, traders: readonly Trader[]) => {
      const path = join(dir, `${name}.lua`);
      writeFileSync(path, wrkScript(signedOrders(traders)));
      return path;
    };
    const targets: Target[] = [
      {
        name: 'bare Fastify route (baseline)',
        url: bare.info.url,
        pid: bare.child.pid,
        // The same requests: what the route costs without the work (and what wrk can drive).
        script: script('bare', sqlite.info.traders ?? []),
      },
      {
        name: 'OpenSpot on SQLite (fsync)',
        url: sqlite.info.url,
        pid: sqlite.child.pid,
        script: script('sqlite', sqlite.info.traders ?? []),
        adminToken: sqlite.info.adminToken,
      },
      {
        name: 'OpenSpot on PostgreSQL',
        url: postgres.info.url,
        pid: postgres.child.pid,
        script: script('postgres', postgres.info.traders ?? []),
        adminToken: postgres.info.adminToken,
        database: postgres.info.database,
      },
    ];
    if (WARMUP > 0) for (const target of targets) await measure(target, WARMUP);
    const samples: Sample[][] = targets.map(() => []);
    for (let round = 0; round < RUNS; round++) {
      // Rotated each round, so a drift in the machine's load favours no target.
      for (let k = 0; k < targets.length; k++) {
        const i = (k + round) % targets.length;
        const sample = await measure(targets[i]!, SECONDS);
        samples[i]!.push(sample);
        process.stdout.write(
          `  round ${round + 1} ${targets[i]!.name}: ${Math.round(sample.ordersPerSecond)} orders/s, ` +
            `p99 ${sample.p99.toFixed(1)} ms\n`,
        );
      }
    }
    const ratio = (i: number, base: number) =>
      median(samples[i]!.map((s, round) => s.ordersPerSecond / samples[base]![round]!.ordersPerSecond));
    const rows = targets.map((target, i) => {
      const list = samples[i]!;
      return {
        target: target.name,
        'orders/s': Math.round(median(list.map((s) => s.ordersPerSecond))),
        'p50 ms': figure(
          list.map((s) => s.p50),
          1,
        ),
        'p99 ms': figure(
          list.map((s) => s.p99),
          1,
        ),
        'vs bare': ratio(i, 0).toFixed(2),
        'vs SQLite': ratio(i, 1).toFixed(2),
        'server CPU µs/order': figure(
          list.map((s) => s.serverCpu),
          1,
        ),
        'PG backends CPU µs/order': figure(
          list.map((s) => s.databaseCpu),
          1,
        ),
        'orders/commit': figure(
          list.map((s) => s.perCommit),
          1,
        ),
        'trades/order': figure(
          list.map((s) => s.tradesPerOrder),
          2,
        ),
        'commit ms (mean)': figure(
          list.map((s) => s.commitMs),
          2,
        ),
        'non-2xx': list.reduce((sum, s) => sum + s.non2xx, 0),
        errors: list.reduce((sum, s) => sum + s.errors, 0),
      };
    });
    console.table(rows);
    const pgVsSqlite = ratio(2, 1);
    const pgP99 = median(samples[2]!.map((s) => s.p99));
    const verdict = (ok: boolean) => (ok ? 'met' : 'MISSED');
    process.stdout.write(
      `Targets: PostgreSQL >= 0.60 of SQLite's orders/s: ${pgVsSqlite.toFixed(2)}, ${verdict(pgVsSqlite >= 0.6)}; ` +
        `p99 < 20 ms at ${CONNECTIONS} connections: ${pgP99.toFixed(1)} ms, ${verdict(pgP99 < 20)}` +
        `${CONNECTIONS === 32 ? '' : ' (the target is stated at 32 connections)'}\n`,
    );
  } finally {
    for (const target of children) {
      target.child.kill('SIGTERM');
      if (target.child.exitCode === null) await new Promise((resolve) => target.child.once('exit', resolve));
    }
    rmSync(dir, { recursive: true, force: true });
  }
}
