/**
 * bench:ws --gateways N — WebSocket fan-out of the split cluster (issue 14): one `openspot engine`
 * and 1..N `openspot gateway`s, each its own OS process (test/support/cluster.ts), on a fresh
 * PostgreSQL database (dropped afterwards) and a NATS stream of its own (deleted afterwards).
 *
 *   npm run bench:ws -- --gateways 2 [--seconds S] [--clients C] [--rate R] [--workers W] [--rounds K]
 *
 * Each round runs one phase per gateway count g = 1..N (extra gateways are started or stopped
 * between phases, so the engine serves exactly g consumers of its stream). In a phase, C raw-`ws`
 * clients (worker threads, spread over the g gateways) subscribe to `trade.BTCEUR`, while the main
 * thread places R signed orders/s (R/2 crossing pairs: a maker sell, then a taker buy of the same
 * unique volume, its tag), pairs spread round-robin over the g gateways. Bodies and signatures are
 * made before the phase starts, so the driver does no HMAC work while measured.
 *
 * Measured per phase: trade frames delivered per second (whole 100 ms buckets), the CPU time of
 * the engine and of each gateway (utime + stime from /proc/<pid>/stat), batches the engine
 * published (the stream's message count before and after), the local nats-server's CPU (shared
 * with anything else using it), and the delay from each taker's 201
 * to its trade frame at every client. With several rounds, medians per gateway count.
 *
 * Environment: TEST_DATABASE_URL (an admin connection; default postgres://postgres@127.0.0.1:5432/postgres)
 * and NATS_URL (default nats://127.0.0.1:4222).
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Worker } from 'node:worker_threads';
import { jetstreamManager } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import { signRequest } from '../src/client/sign.js';
import type { ClientsConfig, ClientsReport } from './ws-clients.js';

const argument = (name: string): string | undefined => {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1] : undefined;
};
const numberArgument = (name: string, fallback: number): number => {
  const value = Number(argument(name) ?? fallback);
  if (!Number.isFinite(value) || value <= 0) throw new Error(`--${name} must be a positive number`);
  return value;
};
const GATEWAYS = Math.round(numberArgument('gateways', 2));
const SECONDS = numberArgument('seconds', 20);
const CLIENTS = Math.round(numberArgument('clients', 1000));
/** Signed orders per second (half makers, half takers). */
const RATE = numberArgument('rate', 100);
const WORKERS = Math.max(GATEWAYS, Math.round(numberArgument('workers', 2)));
const ROUNDS = Math.round(numberArgument('rounds', 1));

process.env.TEST_DATABASE_URL ??= 'postgres://postgres@127.0.0.1:5432/postgres';
const NATS_URL = process.env.NATS_URL ?? 'nats://127.0.0.1:4222';
process.env.TEST_NATS_URL ??= NATS_URL;
// After the variables above: these modules read them when loaded.
const { startClusterProcess } = await import('../test/support/cluster.js');
const { freshDatabase } = await import('../test/support/postgres.js');
const { deleteStreamAfter, uniqueName } = await import('../test/support/nats.js');
type ClusterProcess = Awaited<ReturnType<typeof startClusterProcess>>;

const PAIR = 'BTCEUR';
const CHANNEL = `trade.${PAIR}`;
const TAG_BASE = 10_000;
const TAGS_PER_PHASE = 1_000_000;
const PRICE = '30000';
const DRAIN_MS = 2_000;
const SETUP_TIMEOUT_MS = 120_000;

const absNow = (): number => performance.timeOrigin + performance.now();
const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** CPU (user + system) a process has used so far, in ms; Linux clock ticks are 10 ms. */
function processCpuMs(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  // Fields 14 and 15 of proc(5) (utime, stime); the slice starts at field 3.
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

/**
 * The local nats-server's pid, when there is one on this machine: its CPU is where the stream's
 * fan-out to the gateways happens. It is shared: other NATS users' work is counted too.
 */
function natsServerPid(): number | undefined {
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

const cleanups: (() => Promise<void> | void)[] = [];
const cleanup = { after: (fn: () => Promise<void> | void) => void cleanups.push(fn) };

interface Trader {
  readonly apiKey: string;
  readonly apiSecret: string;
}

async function trader(engineUrl: string, adminToken: string, asset: string, amount: string): Promise<Trader> {
  const admin = async (path: string, body: unknown): Promise<Record<string, unknown>> => {
    const response = await fetch(`${engineUrl}/admin/v1${path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${adminToken}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    const text = await response.text();
    if (response.status !== 201) throw new Error(`${path}: ${response.status} ${text}`);
    return JSON.parse(text) as Record<string, unknown>;
  };
  const user = (await admin('/users', {})) as { id: number };
  const key = (await admin(`/users/${user.id}/api-keys`, { scopes: ['read', 'trade'] })) as {
    api_key: string;
    api_secret: string;
  };
  await admin(`/users/${user.id}/deposits`, { asset, amount });
  return { apiKey: key.api_key, apiSecret: key.api_secret };
}

interface SignedOrder {
  readonly body: string;
  readonly headers: Record<string, string>;
}

function signOrder(who: Trader, side: 'buy' | 'sell', lots: number): SignedOrder {
  const body = JSON.stringify({
    order_direction: side,
    order_type: 'limit',
    pair: 'BTC/EUR',
    volume: `0.${String(lots).padStart(8, '0')}`,
    price: PRICE,
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

async function post(url: string, order: SignedOrder, latencies: number[]): Promise<number> {
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
  latencies.push(at - sentAt);
  return at;
}

// ---------------------------------------------------------------------------------------------
// Client workers (bench/ws-clients.ts), as in bench/ws.ts.

const WORKER_BOOTSTRAP = `import('tsx/esm/api').then(({ register }) => {
  register();
  return import(${JSON.stringify(new URL('./ws-clients.ts', import.meta.url).href)});
});`;

async function startClients(wsUrls: string[], tagBase: number) {
  const epoch = absNow();
  const workers: Worker[] = [];
  const ready: Promise<{ connected: number; failed: number }>[] = [];
  for (let w = 0; w < WORKERS; w++) {
    const config: ClientsConfig = {
      url: wsUrls[w % wsUrls.length]!,
      count: Math.floor(CLIENTS / WORKERS) + (w < CLIENTS % WORKERS ? 1 : 0),
      channels: [CHANNEL],
      awaitSubscriptions: true,
      epoch,
      buckets: Math.ceil((SETUP_TIMEOUT_MS / 1000 + SECONDS + 60) * 10),
      tagBase,
    };
    const worker = new Worker(WORKER_BOOTSTRAP, { eval: true, workerData: config });
    workers.push(worker);
    ready.push(
      new Promise((resolve, reject) => {
        worker.once('error', reject);
        worker.once('message', resolve);
      }),
    );
  }
  const counts = await Promise.all(ready);
  return {
    epoch,
    connected: counts.reduce((sum, c) => sum + c.connected, 0),
    failed: counts.reduce((sum, c) => sum + c.failed, 0),
    report: () =>
      Promise.all(
        workers.map(
          (worker) =>
            new Promise<ClientsReport>((resolve) => {
              const onMessage = (message: { type: string; report: ClientsReport }) => {
                if (message.type !== 'report') return;
                worker.off('message', onMessage);
                resolve(message.report);
              };
              worker.on('message', onMessage);
              worker.postMessage({ type: 'report' });
            }),
        ),
      ),
    close: () =>
      Promise.all(
        workers.map(async (worker) => {
          worker.postMessage({ type: 'close' });
          const timer = setTimeout(() => void worker.terminate(), 5_000);
          await new Promise((resolve) => worker.once('exit', resolve));
          clearTimeout(timer);
        }),
      ),
  };
}

function deliveredPerSecond(reports: ClientsReport[], epoch: number, start: number, end: number): number {
  const first = Math.ceil((start - epoch) / 100);
  const last = Math.floor((end - epoch) / 100);
  let total = 0;
  for (const report of reports) for (let b = first; b < last; b++) total += report.buckets[b] ?? 0;
  return total / ((last - first) / 10);
}

const percentile = (sorted: Float64Array, p: number): number =>
  sorted.length === 0
    ? Number.NaN
    : sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
const median = (values: number[]): number => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  if (sorted.length === 0) return Number.NaN;
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
};

interface PhaseResult {
  gateways: number;
  connected: number;
  delivered: number;
  engineCpuMs: number;
  gatewayCpuMs: number[];
  natsCpuMs: number;
  batches: number;
  p50: number;
  p99: number;
  missing: number;
  ordersPerSecond: number;
  postP50: number;
  postP99: number;
  benchCpuMs: number;
}

async function main(): Promise<void> {
  process.stdout.write(
    `bench:ws --gateways ${GATEWAYS} — ${CLIENTS} clients on ${CHANNEL} in ${WORKERS} worker thread(s), ` +
      `${RATE} signed orders/s (${RATE / 2} trades/s), ${SECONDS} s per phase, ${ROUNDS} round(s)\n`,
  );
  const stream = uniqueName('BENCH_WS');
  const database = await freshDatabase(cleanup);
  deleteStreamAfter(cleanup, stream);
  const dataDir = mkdtempSync(join(tmpdir(), 'openspot-bench-ws-cluster-'));
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
    WS_APP_SECRET: randomBytes(24).toString('hex'),
    SIMULATOR: 'off',
    DEMO: 'off',
    RATE_LIMIT_IP_PER_SECOND: '0',
    RATE_LIMIT_KEY_PER_SECOND: '0',
    // Every bench client comes from 127.0.0.1: the per-address WebSocket limits are off, as in
    // the single-process bench's server (test/support/server-fixture.ts).
    WS_MAX_FRAMES_PER_SECOND: '0',
    WS_MAX_CONNECTIONS_PER_IP: '0',
    WS_UPGRADES_PER_SECOND_PER_IP: '0',
  };
  const engine = await startClusterProcess(cleanup, ['engine'], { ...env, ENGINE_PORT: '0' });
  const gateways: ClusterProcess[] = [];

  const maker = await trader(engine.url, adminToken, 'BTC', '1000');
  const taker = await trader(engine.url, adminToken, 'EUR', '100000000');

  const nc = await connect({ servers: NATS_URL, name: 'openspot-bench-ws' });
  cleanup.after(() => nc.close());
  const jsm = await jetstreamManager(nc);
  const streamMessages = async (): Promise<number> => (await jsm.streams.info(stream)).state.messages;

  const results: PhaseResult[] = [];
  let phase = 0;
  for (let round = 0; round < ROUNDS; round++)
    for (let g = 1; g <= GATEWAYS; g++) {
      while (gateways.length > g) await gateways.pop()!.stop();
      while (gateways.length < g)
        gateways.push(await startClusterProcess(cleanup, ['gateway'], { ...env, PORT: '0' }));
      const httpUrls = gateways.map((gw) => gw.url);
      const wsUrls = httpUrls.map(
        (u) => `${u.replace(/^http/, 'ws')}/app/openspot-key?protocol=7&client=js&version=8.6.0&flash=false`,
      );
      const firstTag = phase * TAGS_PER_PHASE;
      phase += 1;
      const pairs = Math.floor((SECONDS * RATE) / 2);
      const signed = Array.from({ length: pairs }, (_, i) => {
        const lots = TAG_BASE + firstTag + i;
        return [signOrder(maker, 'sell', lots), signOrder(taker, 'buy', lots)] as const;
      });
      const clients = await startClients(wsUrls, TAG_BASE + firstTag);
      try {
        if (clients.connected !== CLIENTS)
          process.stdout.write(`warning: ${clients.connected} of ${CLIENTS} clients subscribed\n`);
        const pids = [engine, ...gateways].map((p) => p.child.pid!);
        const natsPid = natsServerPid();
        const natsBefore = natsPid === undefined ? Number.NaN : processCpuMs(natsPid);
        const cpuBefore = pids.map(processCpuMs);
        const benchBefore = process.cpuUsage();
        const batchesBefore = await streamMessages();
        const latencies: number[] = [];
        const acks = new Float64Array(pairs).fill(Number.NaN);
        const start = absNow();
        const end = start + SECONDS * 1000;
        const inFlight: Promise<void>[] = [];
        let placed = 0;
        for (let i = 0; i < pairs; i++) {
          const due = start + ((2 * i) / RATE) * 1000;
          if (absNow() >= end) break;
          const wait = due - absNow();
          if (wait > 0) await sleep(wait);
          const url = httpUrls[i % httpUrls.length]!;
          const [sell, buy] = signed[i]!;
          // Pairs overlap when a round trip is longer than the interval; each taker still trades
          // with its own maker (same price, older makers are already filled by their own takers).
          inFlight.push(
            (async () => {
              await post(url, sell, latencies);
              acks[i] = await post(url, buy, latencies);
            })(),
          );
          placed += 1;
        }
        await Promise.all(inFlight);
        const runEnd = absNow();
        const cpuAfter = pids.map(processCpuMs);
        const natsCpuMs = natsPid === undefined ? Number.NaN : processCpuMs(natsPid) - natsBefore;
        const batches = (await streamMessages()) - batchesBefore;
        const bench = process.cpuUsage(benchBefore);
        await sleep(DRAIN_MS);
        const reports = await clients.report();
        const samples: number[] = [];
        for (const report of reports)
          for (let k = 0; k < report.tags.length; k++) {
            const ack = acks[report.tags[k]!];
            if (ack !== undefined && !Number.isNaN(ack)) samples.push(report.times[k]! - ack);
          }
        const delays = Float64Array.from(samples).sort();
        const posts = Float64Array.from(latencies).sort();
        const used = cpuAfter.map((after, k) => after - cpuBefore[k]!);
        results.push({
          gateways: g,
          connected: clients.connected,
          delivered: deliveredPerSecond(reports, clients.epoch, start, Math.min(end, runEnd)),
          engineCpuMs: used[0]!,
          gatewayCpuMs: used.slice(1),
          natsCpuMs,
          batches,
          p50: percentile(delays, 50),
          p99: percentile(delays, 99),
          missing: placed * clients.connected - samples.length,
          ordersPerSecond: (2 * placed) / ((runEnd - start) / 1000),
          postP50: percentile(posts, 50),
          postP99: percentile(posts, 99),
          benchCpuMs: (bench.user + bench.system) / 1000,
        });
        const r = results.at(-1)!;
        process.stdout.write(
          `round ${round + 1}, ${g} gateway(s): ${Math.round(r.delivered)} frames/s, p99 ${r.p99.toFixed(1)} ms\n`,
        );
      } finally {
        await clients.close();
      }
    }

  const rows = [];
  const engineMsPerBatch: number[] = [];
  for (let g = 1; g <= GATEWAYS; g++) {
    const of = results.filter((r) => r.gateways === g);
    const m = (f: (r: PhaseResult) => number) => median(of.map(f));
    const wall = SECONDS * 1000;
    const gatewaysCpu = (r: PhaseResult) => r.gatewayCpuMs.reduce((a, b) => a + b, 0);
    const deliveries = (r: PhaseResult) => r.delivered * SECONDS;
    engineMsPerBatch.push(m((r) => r.engineCpuMs / r.batches));
    rows.push({
      gateways: g,
      'frames/s delivered': Math.round(m((r) => r.delivered)),
      'of offered': `${((m((r) => r.delivered) / ((RATE / 2) * CLIENTS)) * 100).toFixed(1)} %`,
      'engine CPU': `${((m((r) => r.engineCpuMs) / wall) * 100).toFixed(0)} %`,
      'gateways CPU (last round)': of
        .at(-1)!
        .gatewayCpuMs.map((ms) => `${((ms / wall) * 100).toFixed(0)} %`)
        .join(' + '),
      'nats-server CPU': `${((m((r) => r.natsCpuMs) / wall) * 100).toFixed(0)} %`,
      'server µs/delivery': m((r) => ((r.engineCpuMs + gatewaysCpu(r)) * 1000) / deliveries(r)).toFixed(1),
      'gateway µs/delivery': m((r) => (gatewaysCpu(r) * 1000) / deliveries(r)).toFixed(1),
      batches: m((r) => r.batches),
      'engine ms/batch': engineMsPerBatch.at(-1)!.toFixed(3),
      'delay p50/p99 ms': `${m((r) => r.p50).toFixed(1)} / ${m((r) => r.p99).toFixed(1)}`,
      missing: m((r) => r.missing),
      'orders/s': m((r) => r.ordersPerSecond).toFixed(1),
      'POST p50/p99 ms': `${m((r) => r.postP50).toFixed(1)} / ${m((r) => r.postP99).toFixed(1)}`,
      'bench CPU': `${((m((r) => r.benchCpuMs) / wall) * 100).toFixed(0)} %`,
    });
  }
  console.table(rows);
  process.stdout.write(
    `engine CPU per published batch (the engine's whole work per batch: command, commit, publish) ` +
      `with ${GATEWAYS} gateways / with 1: ${(engineMsPerBatch.at(-1)! / engineMsPerBatch[0]!).toFixed(2)}; ` +
      `latency target (1 gateway): p99 201 → trade frame < 50 ms.\n`,
  );
}

try {
  await main();
} finally {
  for (const fn of cleanups.reverse()) await Promise.resolve(fn()).catch((error) => console.error(error));
}
