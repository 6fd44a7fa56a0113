/**
 * What the cluster benches share (bench/ws-cluster.ts, bench/gateway-size.ts): command-line
 * options, a fresh venue (PostgreSQL database and NATS stream of its own, both removed at the
 * end) with `openspot engine` and `openspot gateway` as OS processes started from the systemd
 * units (test/support/cluster.ts), traders made through the engine's admin API, signed orders,
 * and /proc readings of a process (CPU, memory, open-file limit).
 *
 * Environment: TEST_DATABASE_URL (an admin connection; default postgres://postgres@127.0.0.1:5432/postgres)
 * and NATS_URL (default nats://127.0.0.1:4222).
 */
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { signRequest } from '../src/client/sign.js';
import type { Trader } from '../test/support/cluster.js';
import { LOCAL_VENUE_ENV } from '../test/support/local-venue-env.js';
import { absNow } from './measure.js';

process.env.TEST_DATABASE_URL ??= 'postgres://postgres@127.0.0.1:5432/postgres';
export const NATS_URL = process.env.NATS_URL ?? 'nats://127.0.0.1:4222';
process.env.TEST_NATS_URL ??= NATS_URL;
// After the variables above: these modules read them when loaded.
const { startClusterProcess, trader } = await import('../test/support/cluster.js');

export type { Trader } from '../test/support/cluster.js';
/** A user with a read+trade key and a deposit per asset, made through the engine's admin API. */
export { trader };

const { freshDatabase } = await import('../test/support/postgres.js');
const { deleteStreamAfter, uniqueName } = await import('../test/support/nats.js');
export type ClusterProcess = Awaited<ReturnType<typeof startClusterProcess>>;

export { absNow, argument, numberArgument, percentile, sleep } from './measure.js';

export const median = (values: number[]): number => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  if (sorted.length === 0) return Number.NaN;
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
};

// ---------------------------------------------------------------------------------------------
// /proc readings (Linux).

/** CPU (user + system) a process has used so far, in ms; Linux clock ticks are 10 ms. */
export function processCpuMs(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  // Fields 14 and 15 of proc(5) (utime, stime); the slice starts at field 3.
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

/** Resident set size of a process, in bytes (VmRSS of /proc/<pid>/status). */
export function processRssBytes(pid: number): number {
  const match = /^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  if (match === null) throw new Error(`no VmRSS for process ${pid}`);
  return Number(match[1]) * 1024;
}

/** The soft limit on open files (`ulimit -n`) of a process, from /proc/<pid>/limits. */
export function openFilesLimit(pid: number | 'self'): number {
  const match = /^Max open files\s+(\d+|unlimited)/m.exec(readFileSync(`/proc/${pid}/limits`, 'utf8'));
  if (match === null) throw new Error(`no open-file limit for process ${pid}`);
  return match[1] === 'unlimited' ? Number.POSITIVE_INFINITY : Number(match[1]);
}

/**
 * The local nats-server's pid, when there is one on this machine: its CPU is where the stream's
 * fan-out to the gateways happens. It is shared: other NATS users' work is counted too.
 */
export function natsServerPid(): number | undefined {
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (readFileSync(`/proc/${entry}/comm`, 'utf8').trim() === 'nats-server') return Number(entry);
    } catch {
      // A process that ended meanwhile.
    }
  }
  return undefined;
}

// ---------------------------------------------------------------------------------------------
// The venue.

const cleanups: (() => Promise<void> | void)[] = [];
/** Registers what to undo when the bench ends (`runBench` runs them, last first). */
export const cleanup = { after: (fn: () => Promise<void> | void) => void cleanups.push(fn) };

/** Runs `main`, then every cleanup, whatever happened. */
export async function runBench(main: () => Promise<void>): Promise<void> {
  try {
    await main();
  } finally {
    for (const fn of cleanups.reverse()) await Promise.resolve(fn()).catch((error) => console.error(error));
  }
}

export interface BenchCluster {
  readonly engine: ClusterProcess;
  readonly adminToken: string;
  /** The stream's name (the batches the engine published). */
  readonly stream: string;
  /** Every variable the processes were started with (without PORT / ENGINE_PORT). */
  readonly env: Readonly<Record<string, string>>;
  /** Starts one more gateway on a free port; stopped at the end unless stopped before. */
  startGateway(extra?: Record<string, string>): Promise<ClusterProcess>;
}

/**
 * Source (tsx) or built (dist/, as installed) CLI for the processes (test/support/cluster.ts), or
 * another build's cli/main.js (`--compare REF`).
 */
export type CliForm = 'source' | 'built' | { readonly main: string };

/** Builds the server into dist/ (`tsc -p tsconfig.build.json`, the server half of `npm run build`). */
export function buildServer(): void {
  const tsc = spawnSync('npx', ['tsc', '-p', 'tsconfig.build.json'], {
    cwd: fileURLToPath(new URL('..', import.meta.url)),
    encoding: 'utf8',
  });
  if (tsc.status !== 0) throw new Error(`the build failed:\n${tsc.stdout}${tsc.stderr}`);
}

/**
 * A fresh database and stream, and `openspot engine` on them. The per-address limits (HTTP and
 * WebSocket) are off: every bench client comes from 127.0.0.1, as in the single-process bench's
 * server (test/support/server-fixture.ts).
 */
export async function startBenchCluster(
  name: string,
  extraEnv: Record<string, string> = {},
  cli: CliForm = 'source',
): Promise<BenchCluster> {
  const stream = uniqueName(name);
  const database = await freshDatabase(cleanup);
  deleteStreamAfter(cleanup, stream);
  const dataDir = mkdtempSync(join(tmpdir(), 'openspot-bench-cluster-'));
  cleanup.after(() => rmSync(dataDir, { recursive: true, force: true }));
  const adminToken = randomBytes(24).toString('hex');
  const env: Record<string, string> = {
    DATABASE_URL: database,
    NATS_URL,
    OPENSPOT_STREAM: stream,
    OPENSPOT_STREAM_SUBJECT: `bench.${stream}`,
    OPENSPOT_SUBJECT_PREFIX: `bench.${stream}.engine`,
    DATA_DIR: dataDir,
    HOST: '127.0.0.1',
    ADMIN_TOKEN: adminToken,
    SECRETS_KEY: randomBytes(32).toString('base64'),
    CLUSTER_KEY: randomBytes(32).toString('base64'),
    WS_APP_SECRET: randomBytes(24).toString('hex'),
    ...LOCAL_VENUE_ENV,
    ...extraEnv,
  };
  const engine = await startClusterProcess(cleanup, ['engine'], { ...env, ENGINE_PORT: '0' }, { cli });
  return {
    engine,
    adminToken,
    stream,
    env,
    startGateway: (extra = {}) =>
      startClusterProcess(cleanup, ['gateway'], { ...env, PORT: '0', ...extra }, { cli }),
  };
}

export interface SignedOrder {
  readonly body: string;
  readonly headers: Record<string, string>;
}

/** A signed limit order's body and headers, made before it is sent (no HMAC work while measured). */
export function signOrder(
  who: Trader,
  order: {
    readonly side: 'buy' | 'sell';
    readonly pair: string;
    readonly volume: string;
    readonly price: string;
  },
): SignedOrder {
  const body = JSON.stringify({
    order_direction: order.side,
    order_type: 'limit',
    pair: order.pair,
    volume: order.volume,
    price: order.price,
  });
  return {
    body,
    headers: {
      'content-type': 'application/json',
      'x-api-key': who.apiKey,
      'x-api-sign': signRequest('POST', body, who.apiSecret),
    },
  };
}

/** POSTs a signed order; throws unless 201. Returns when the answer arrived (absolute ms). */
export async function postOrder(url: string, order: SignedOrder, latencies?: number[]): Promise<number> {
  const sentAt = absNow();
  const response = await fetch(`${url}/v1/orders`, {
    method: 'POST',
    headers: order.headers,
    body: order.body,
    signal: AbortSignal.timeout(10_000),
  });
  const text = await response.text();
  if (response.status !== 201) throw new Error(`order refused (${response.status}): ${text}`);
  const at = absNow();
  latencies?.push(at - sentAt);
  return at;
}
