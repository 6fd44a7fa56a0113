/**
 * bench:gateway-size — what one `openspot gateway` holds (docs/deployment.md, "Sizing"): one
 * `openspot engine` and one gateway as OS processes (bench/cluster-support.ts), on a fresh
 * PostgreSQL database and NATS stream, with a book of --levels price levels a side on BTC/EUR
 * and a few trades.
 *
 *   npm run bench:gateway-size -- [--levels 500] [--steps 1000,4000,5000] [--channels 3]
 *                                  [--idle-seconds 30] [--wrk-seconds 10] [--wrk-connections 32]
 *                                  [--rounds 2] [--workers 4] [--source]
 *
 * The processes run the built CLI (the server is built into dist/ first: what `npm install -g`
 * installs and the units run), or with --source from source through tsx, as in the tests (tsx
 * adds its own memory).
 *
 * Each round starts a fresh gateway (so memory starts from the same place) and measures on it:
 *
 * 1. memory and idle CPU at 0 WebSocket connections, then at each step of --steps connections
 *    (added to those already open: 1 000, 5 000, 10 000 by default), first without
 *    subscriptions, then after each new connection subscribed to --channels channels
 *    (order-book, trade, ticker-information of BTCEUR): RSS (/proc/<pid>/status VmRSS), V8 heap
 *    used and total (the gateway's /metrics, prom-client's process metrics), each the median of
 *    5 samples 1 s apart, each taken after a full garbage collection asked through the gateway's
 *    inspector (NODE_OPTIONS=--inspect=127.0.0.1:0); then the gateway's CPU over --idle-seconds
 *    with all of them subscribed and no trading: the keep-alive `pusher:ping` after
 *    WS_ACTIVITY_TIMEOUT (30 s) of silence, answered by every client, is the only traffic.
 * 2. with the clients closed, public HTTP reads (after 3 s of warm-up each, not counted): `wrk` (one thread) on
 *    `/v1/orderbook?ticker_id=BTCEUR&depth=100` and on `/v1/tickers`, alternating, twice each,
 *    --wrk-seconds each; requests/s, latency, and the gateway's CPU meanwhile (/proc/<pid>/stat).
 *    The venue is idle, so these are answers from the gateway's HTTP answer cache
 *    (src/http/v1/public-cache.ts): the best case, a quiet market.
 *
 * Figures are medians over rounds. The clients (worker threads of this process) and wrk run on the
 * same machine as the gateway, the engine and PostgreSQL: on a small machine, reads/s is bounded
 * by the load generator too (its CPU is printed), and the gateway's CPU per read is the figure
 * that carries over.
 *
 * Environment: TEST_DATABASE_URL and NATS_URL (bench/cluster-support.ts). Needs `wrk` on the PATH
 * (Debian: apt-get install wrk) and an open-file limit (`ulimit -n`) above the largest step, for
 * this process and the gateway.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { cpus, loadavg } from 'node:os';
import type { Worker } from 'node:worker_threads';
import { WebSocket } from 'ws';
import {
  argument,
  buildServer,
  type ClusterProcess,
  median,
  numberArgument,
  openFilesLimit,
  postOrder,
  processCpuMs,
  processRssBytes,
  runBench,
  type SignedOrder,
  signOrder,
  sleep,
  startBenchCluster,
  trader,
} from './cluster-support.js';
import { closeWorkers, shareOf, startTsWorker } from './ws-client-pool.js';
import type { IdleClientsConfig, IdleClientsMessage } from './ws-idle-clients.js';

const LEVELS = Math.round(numberArgument('levels', 500));
const STEPS = (argument('steps') ?? '1000,4000,5000').split(',').map((s) => {
  const n = Number(s);
  if (!Number.isInteger(n) || n <= 0)
    throw new Error('--steps must be positive whole numbers, e.g. 1000,5000');
  return n;
});
const CHANNELS = ['order-book.BTCEUR', 'trade.BTCEUR', 'ticker-information.BTCEUR'].slice(
  0,
  Math.round(numberArgument('channels', 3)),
);
const IDLE_SECONDS = numberArgument('idle-seconds', 30);
const WRK_SECONDS = Math.round(numberArgument('wrk-seconds', 10));
const WRK_CONNECTIONS = Math.round(numberArgument('wrk-connections', 32));
const ROUNDS = Math.round(numberArgument('rounds', 2));
const WORKERS = Math.round(numberArgument('workers', 4));
/** `--source`: the processes run from source through tsx, as in the tests; default: as built (dist/). */
const cli = process.argv.includes('--source') ? 'source' : 'built';
const TRADES = 50;
const MID = 30_000;

const MiB = 1024 * 1024;
const mib = (bytes: number): string => (bytes / MiB).toFixed(1);

/** `wrk` itself: where it is, or a clear refusal. */
async function checkWrk(): Promise<void> {
  const child = spawn('wrk', ['--version'], { stdio: 'ignore' });
  const [code] = (await Promise.race([once(child, 'exit'), once(child, 'error').then(() => [127])])) as [
    number,
  ];
  // wrk --version prints its banner and exits 1.
  if (code === 127) throw new Error('wrk is not installed (Debian: apt-get install wrk)');
}

interface WrkResult {
  readonly requestsPerSecond: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
  readonly non2xx: number;
  readonly gatewayCpuMs: number;
  readonly wrkCpuMs: number;
  readonly seconds: number;
}

const LATENCY_UNIT: Record<string, number> = { us: 0.001, ms: 1, s: 1000 };
function latencyMs(output: string, label: string): number {
  const match = new RegExp(`^\\s*${label}\\s+([\\d.]+)(us|ms|s)\\s*$`, 'm').exec(output);
  return match === null ? Number.NaN : Number(match[1]) * (LATENCY_UNIT[match[2]!] ?? Number.NaN);
}

async function runWrk(url: string, gatewayPid: number, duration = WRK_SECONDS): Promise<WrkResult> {
  const child = spawn(
    'wrk',
    ['-t1', `-c${WRK_CONNECTIONS}`, `-d${duration}s`, '--latency', '--timeout', '5s', url],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let output = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
  const before = processCpuMs(gatewayPid);
  const startedAt = performance.now();
  let wrkCpuMs = 0;
  // wrk's own CPU, read just before it exits (its /proc entry goes with it).
  const sampler = setInterval(() => {
    try {
      wrkCpuMs = processCpuMs(child.pid!);
    } catch {
      // Ended.
    }
  }, 200);
  const [code] = (await once(child, 'exit')) as [number | null];
  clearInterval(sampler);
  const seconds = (performance.now() - startedAt) / 1000;
  const gatewayCpuMs = processCpuMs(gatewayPid) - before;
  const rps = /^Requests\/sec:\s+([\d.]+)/m.exec(output);
  if (code !== 0 || rps === null) throw new Error(`wrk failed (${code}):\n${output}`);
  const non2xx = /Non-2xx or 3xx responses:\s+(\d+)/.exec(output);
  return {
    requestsPerSecond: Number(rps[1]),
    p50Ms: latencyMs(output, '50%'),
    p99Ms: latencyMs(output, '99%'),
    non2xx: non2xx === null ? 0 : Number(non2xx[1]),
    gatewayCpuMs,
    wrkCpuMs,
    seconds,
  };
}

/** The gateway's V8 heap and RSS as its /metrics reports them (prom-client's process metrics). */
async function metricsMemory(url: string, adminToken: string) {
  const response = await fetch(`${url}/metrics`, { headers: { authorization: `Bearer ${adminToken}` } });
  const text = await response.text();
  if (response.status !== 200) throw new Error(`/metrics: ${response.status} ${text}`);
  const value = (name: string): number => {
    const match = new RegExp(`^${name}(?:\\{[^}]*\\})? ([\\d.e+]+)$`, 'm').exec(text);
    return match === null ? Number.NaN : Number(match[1]);
  };
  return {
    heapUsed: value('openspot_nodejs_heap_size_used_bytes'),
    heapTotal: value('openspot_nodejs_heap_size_total_bytes'),
    external: value('openspot_nodejs_external_memory_bytes'),
    metricsRss: value('openspot_process_resident_memory_bytes'),
    connections: value('openspot_ws_connections'),
    subscriptions: value('openspot_ws_subscriptions'),
  };
}

interface MemorySample {
  readonly rss: number;
  readonly heapUsed: number;
  readonly heapTotal: number;
  readonly external: number;
  readonly metricsRss: number;
  readonly connections: number;
  readonly subscriptions: number;
}

/**
 * A full garbage collection in the gateway, through its inspector (started with
 * `NODE_OPTIONS=--inspect=127.0.0.1:0`): the heap then holds what is reachable, not what the
 * collector has not got to yet, and per-connection figures are not lost in its noise.
 */
async function collectGarbage(gateway: ClusterProcess): Promise<void> {
  const match = /Debugger listening on (ws:\/\/\S+)/.exec(gateway.output());
  if (match === null) throw new Error('the gateway has no inspector (NODE_OPTIONS=--inspect=127.0.0.1:0)');
  const socket = new WebSocket(match[1]!);
  await once(socket, 'open');
  for (let id = 1; id <= 2; id++) {
    socket.send(JSON.stringify({ id, method: 'HeapProfiler.collectGarbage' }));
    for (;;) {
      const [data] = (await once(socket, 'message')) as [Buffer];
      if ((JSON.parse(data.toString()) as { id?: number }).id === id) break;
    }
  }
  socket.close();
  await once(socket, 'close');
}

async function memory(gateway: ClusterProcess, adminToken: string): Promise<MemorySample> {
  const samples: MemorySample[] = [];
  for (let i = 0; i < 5; i++) {
    await sleep(1_000);
    await collectGarbage(gateway);
    samples.push({
      rss: processRssBytes(gateway.child.pid!),
      ...(await metricsMemory(gateway.url, adminToken)),
    });
  }
  const m = (f: (s: MemorySample) => number) => median(samples.map(f));
  return {
    rss: m((s) => s.rss),
    heapUsed: m((s) => s.heapUsed),
    heapTotal: m((s) => s.heapTotal),
    external: m((s) => s.external),
    metricsRss: m((s) => s.metricsRss),
    connections: samples.at(-1)!.connections,
    subscriptions: samples.at(-1)!.subscriptions,
  };
}

/** `count` more idle clients in worker threads; resolves once every one is connected (or failed). */
async function openClients(wsUrl: string, count: number) {
  const workers: Worker[] = [];
  const inbox: IdleClientsMessage[][] = [];
  const waiters: (((message: IdleClientsMessage) => void) | undefined)[] = [];
  const next = (w: number): Promise<IdleClientsMessage> =>
    new Promise((resolve) => {
      const queued = inbox[w]!.shift();
      if (queued !== undefined) resolve(queued);
      else waiters[w] = resolve;
    });
  for (let w = 0; w < WORKERS; w++) {
    const config: IdleClientsConfig = {
      url: wsUrl,
      count: shareOf(count, WORKERS, w),
    };
    const worker = startTsWorker('./ws-idle-clients.ts', config);
    inbox.push([]);
    worker.on('message', (message: IdleClientsMessage) => {
      const waiter = waiters[w];
      if (waiter !== undefined) {
        waiters[w] = undefined;
        waiter(message);
      } else inbox[w]!.push(message);
    });
    worker.on('error', (error) => console.error('client worker:', error));
    workers.push(worker);
  }
  const all = () => Promise.all(workers.map((_, w) => next(w)));
  const connected = await all();
  const sum = (messages: IdleClientsMessage[], f: (m: IdleClientsMessage) => number) =>
    messages.reduce((total, m) => total + f(m), 0);
  return {
    connected: sum(connected, (m) => (m.type === 'connected' ? m.connected : 0)),
    failed: sum(connected, (m) => (m.type === 'connected' ? m.failed : 0)),
    async subscribe(channels: readonly string[]) {
      for (const worker of workers) worker.postMessage({ type: 'subscribe', channels });
      const answers = await all();
      return {
        subscribed: sum(answers, (m) => (m.type === 'subscribed' ? m.subscribed : 0)),
        refused: sum(answers, (m) => (m.type === 'subscribed' ? m.refused : 0)),
      };
    },
    async stats() {
      for (const worker of workers) worker.postMessage({ type: 'stats' });
      const answers = await all();
      const closed: Record<string, number> = {};
      for (const m of answers)
        if (m.type === 'stats')
          for (const [code, n] of Object.entries(m.closed)) closed[code] = (closed[code] ?? 0) + n;
      return { pings: sum(answers, (m) => (m.type === 'stats' ? m.pings : 0)), closed };
    },
    close: () => closeWorkers(workers),
  };
}
type Clients = Awaited<ReturnType<typeof openClients>>;

/** The gateway's CPU over `seconds` of doing nothing asked, as a share of one core. */
async function idleCpu(pid: number, seconds: number): Promise<number> {
  const before = processCpuMs(pid);
  const startedAt = performance.now();
  await sleep(seconds * 1000);
  return (processCpuMs(pid) - before) / (performance.now() - startedAt);
}

/** Orders sent `concurrency` at a time, each to the gateway; throws at the first refusal. */
async function sendAll(url: string, orders: readonly SignedOrder[], concurrency = 16): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < orders.length) await postOrder(url, orders[next++]!);
    }),
  );
}

interface StepResult {
  readonly round: number;
  readonly connections: number;
  readonly bare: MemorySample;
  readonly subscribed: MemorySample;
  readonly idleCpu: number;
  readonly pings: number;
}

async function main(): Promise<void> {
  await checkWrk();
  if (cli === 'built') buildServer();
  const largest = STEPS.reduce((a, b) => a + b, 0);
  process.stdout.write(
    `bench:gateway-size — book of ${LEVELS} levels a side on BTC/EUR, connections 0 → ${STEPS.join(' → ')} ` +
      `(cumulative: up to ${largest}), ${CHANNELS.length} subscription(s) each (${CHANNELS.join(', ')}), ` +
      `idle CPU over ${IDLE_SECONDS} s, wrk ${WRK_SECONDS} s × ${WRK_CONNECTIONS} connections, ${ROUNDS} round(s)\n`,
  );
  const cluster = await startBenchCluster(
    'BENCH_SIZE',
    {
      // The default (10 000) would refuse the largest step: the bench measures past it.
      WS_MAX_CONNECTIONS: String(largest + 1_000),
    },
    cli,
  );
  const { engine, adminToken } = cluster;

  // The book: LEVELS asks above MID and LEVELS bids below it, a few volumes, one order a level;
  // TRADES trades at MID first, so tickers and recent trades are not empty.
  const seller = await trader(engine.url, adminToken, { BTC: '100000' });
  const buyer = await trader(engine.url, adminToken, { EUR: '100000000000' });
  const volume = (i: number) => `0.${String(5_000 + ((i * 7919) % 500_000)).padStart(8, '0')}`;
  const trades = Array.from({ length: TRADES }, (_, i) => [
    signOrder(seller, { side: 'sell', pair: 'BTC/EUR', volume: volume(i), price: String(MID) }),
    signOrder(buyer, { side: 'buy', pair: 'BTC/EUR', volume: volume(i), price: String(MID) }),
  ]);
  const book = Array.from({ length: LEVELS }, (_, i) => [
    signOrder(seller, {
      side: 'sell',
      pair: 'BTC/EUR',
      volume: volume(i),
      price: (MID + 1 + i * 0.5).toFixed(1),
    }),
    signOrder(buyer, {
      side: 'buy',
      pair: 'BTC/EUR',
      volume: volume(i + LEVELS),
      price: (MID - 1 - i * 0.5).toFixed(1),
    }),
  ]).flat();

  const setupGateway = await cluster.startGateway();
  for (const [sell, buy] of trades) {
    await postOrder(setupGateway.url, sell!);
    await postOrder(setupGateway.url, buy!);
  }
  await sendAll(setupGateway.url, book);
  const depth = (await (
    await fetch(`${setupGateway.url}/v1/orderbook?ticker_id=BTCEUR&depth=${2 * LEVELS}`)
  ).json()) as { bids: unknown[]; asks: unknown[] }[];
  process.stdout.write(
    `book: ${depth[0]?.bids.length} bids, ${depth[0]?.asks.length} asks; ${TRADES} trades; ` +
      `open-file limit (ulimit -n): this process ${openFilesLimit('self')}, gateway ${openFilesLimit(setupGateway.child.pid!)}\n`,
  );
  await setupGateway.stop();

  const reads: { path: string; result: WrkResult }[] = [];
  const steps: StepResult[] = [];
  const idle: { rss: MemorySample; cpu: number }[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    const gateway = await cluster.startGateway({ NODE_OPTIONS: '--inspect=127.0.0.1:0' });
    const pid = gateway.child.pid!;
    const limit = openFilesLimit(pid);
    if (limit < largest + 500)
      throw new Error(`the gateway may open ${limit} files (ulimit -n): raise it above ${largest + 500}`);
    await sleep(5_000);
    idle.push({ rss: await memory(gateway, adminToken), cpu: await idleCpu(pid, IDLE_SECONDS) });
    const wsUrl = `${gateway.url.replace(/^http/, 'ws')}/app/openspot-key?protocol=7&client=js&version=8.6.0&flash=false`;
    const open: Clients[] = [];
    try {
      let total = 0;
      for (const step of STEPS) {
        const clients = await openClients(wsUrl, step);
        open.push(clients);
        total += clients.connected;
        if (clients.failed > 0)
          process.stdout.write(`warning: ${clients.failed} of ${step} connections failed\n`);
        const bare = await memory(gateway, adminToken);
        const answer = await clients.subscribe(CHANNELS);
        if (answer.refused > 0) process.stdout.write(`warning: ${answer.refused} subscriptions refused\n`);
        const subscribed = await memory(gateway, adminToken);
        const pingsBefore = (await Promise.all(open.map((c) => c.stats()))).reduce((s, x) => s + x.pings, 0);
        const cpu = await idleCpu(pid, IDLE_SECONDS);
        const stats = await Promise.all(open.map((c) => c.stats()));
        const pings = stats.reduce((s, x) => s + x.pings, 0) - pingsBefore;
        const closed = stats.flatMap((s) => Object.entries(s.closed)).filter(([, n]) => n > 0);
        if (closed.length > 0)
          process.stdout.write(`warning: connections closed: ${JSON.stringify(closed)}\n`);
        steps.push({ round, connections: total, bare, subscribed, idleCpu: cpu, pings });
        process.stdout.write(
          `round ${round + 1}: ${total} connections: RSS ${mib(bare.rss)} MiB, subscribed ${mib(subscribed.rss)} MiB ` +
            `(${subscribed.subscriptions} subscriptions), idle CPU ${(cpu * 100).toFixed(1)} %, ${pings} pings\n`,
        );
      }
    } finally {
      for (const clients of open) await clients.close();
    }
    // Alternating, each path's rounds between the other's: drift (a warming JIT, other load on the
    // machine) falls on both.
    const paths = ['/v1/orderbook?ticker_id=BTCEUR&depth=100', '/v1/tickers'];
    // Warm-up, not counted: the first seconds of a route run unoptimised code.
    for (const path of paths) await runWrk(`${gateway.url}${path}`, pid, 3);
    for (let k = 0; k < 2; k++)
      for (const path of round % 2 === 0 ? paths : [...paths].reverse()) {
        const result = await runWrk(`${gateway.url}${path}`, pid);
        reads.push({ path, result });
        process.stdout.write(
          `round ${round + 1}: ${path}: ${Math.round(result.requestsPerSecond)} reads/s, gateway CPU ` +
            `${((result.gatewayCpuMs / (result.seconds * 1000)) * 100).toFixed(0)} %\n`,
        );
      }
    await gateway.stop();
  }

  // ---- Tables.
  const idleOf = (f: (s: MemorySample) => number) => median(idle.map((i) => f(i.rss)));
  const idleCpuShare = median(idle.map((i) => i.cpu));
  const levels: Level[] = [
    {
      connections: 0,
      subscriptions: 0,
      bareRss: idleOf((s) => s.rss),
      rss: idleOf((s) => s.rss),
      bareHeap: idleOf((s) => s.heapUsed),
      heap: idleOf((s) => s.heapUsed),
      external: idleOf((s) => s.external),
      cpu: idleCpuShare,
      pings: 0,
    },
  ];
  for (const index of STEPS.keys()) {
    const of = steps.filter((_, k) => k % STEPS.length === index);
    const m = (f: (s: StepResult) => number) => median(of.map(f));
    levels.push({
      connections: m((s) => s.connections),
      subscriptions: m((s) => s.subscribed.subscriptions),
      bareRss: m((s) => s.bare.rss),
      rss: m((s) => s.subscribed.rss),
      bareHeap: m((s) => s.bare.heapUsed),
      heap: m((s) => s.subscribed.heapUsed),
      external: m((s) => s.subscribed.external),
      cpu: m((s) => s.idleCpu),
      pings: m((s) => s.pings),
    });
  }
  console.log(
    `\nMemory and idle CPU of one gateway (${cli} CLI; medians over ${ROUNDS} rounds; "a → b": before → after ` +
      `the new connections subscribed; RSS at 0 connections per round: ${idle.map((i) => mib(i.rss.rss)).join(', ')} MiB)`,
  );
  console.table(
    levels.map((l) => ({
      connections: l.connections,
      subscriptions: l.subscriptions,
      'RSS MiB': l.connections === 0 ? mib(l.rss) : `${mib(l.bareRss)} → ${mib(l.rss)}`,
      'V8 heap used MiB': l.connections === 0 ? mib(l.heap) : `${mib(l.bareHeap)} → ${mib(l.heap)}`,
      'external MiB': mib(l.external),
      'idle CPU % of a core': (l.cpu * 100).toFixed(2),
      'pings/s': (l.pings / IDLE_SECONDS).toFixed(0),
    })),
  );
  // Costs as slopes between levels: what one more connection adds. The first level's own figures
  // (a process just started) move by several MiB from round to round, so the slope from the first
  // step to the last is the figure to size with.
  const kib = (bytes: number): string => (bytes / 1024).toFixed(2);
  const slope = (from: Level, to: Level) => {
    const added = to.connections - from.connections;
    return {
      'from → to connections': `${from.connections} → ${to.connections}`,
      'RSS KiB/connection': kib((to.rss - from.rss) / added),
      'heap KiB/connection': kib((to.heap - from.heap) / added),
      'RSS KiB/subscription': kib((to.rss - to.bareRss) / (added * CHANNELS.length)),
      'heap KiB/subscription': kib((to.heap - to.bareHeap) / (added * CHANNELS.length)),
      'idle CPU % per 1k connections': (((to.cpu - from.cpu) * 100 * 1000) / added).toFixed(3),
    };
  };
  const rows = levels.slice(1).map((level, k) => slope(levels[k]!, level));
  if (levels.length > 2) {
    const first = levels[1]!;
    const last = levels.at(-1)!;
    rows.push({
      ...slope(first, last),
      'RSS KiB/subscription': kib(
        levels.slice(1).reduce((sum, l) => sum + l.rss - l.bareRss, 0) / (last.connections * CHANNELS.length),
      ),
      'heap KiB/subscription': kib(
        levels.slice(1).reduce((sum, l) => sum + l.heap - l.bareHeap, 0) /
          (last.connections * CHANNELS.length),
      ),
    });
  }
  console.log(
    `\nWhat a connection costs (each with ${CHANNELS.length} subscriptions, included in the per-connection figures; ` +
      'per subscription: the step when the new connections subscribed; last row: first step to last)',
  );
  console.table(rows);

  const readRows = ['/v1/orderbook?ticker_id=BTCEUR&depth=100', '/v1/tickers'].map((path) => {
    const of = reads.filter((r) => r.path === path).map((r) => r.result);
    const m = (f: (r: WrkResult) => number) => median(of.map(f));
    const cpuPerRead = m((r) => (r.gatewayCpuMs * 1000) / (r.requestsPerSecond * r.seconds));
    return {
      path,
      'reads/s': Math.round(m((r) => r.requestsPerSecond)),
      'p50 / p99 ms': `${m((r) => r.p50Ms).toFixed(2)} / ${m((r) => r.p99Ms).toFixed(2)}`,
      'gateway CPU %': Math.round(m((r) => r.gatewayCpuMs / r.seconds / 1000) * 100),
      'gateway CPU µs/read': cpuPerRead.toFixed(1),
      'reads/s per core (1e6 / µs)': Math.round(1e6 / cpuPerRead),
      'wrk CPU %': Math.round(m((r) => r.wrkCpuMs / r.seconds / 1000) * 100),
      'non-2xx': m((r) => r.non2xx),
      runs: of.length,
    };
  });
  console.log(`\nPublic HTTP reads on one gateway (wrk -t1 -c${WRK_CONNECTIONS} -d${WRK_SECONDS}s; medians)`);
  console.table(readRows);
  process.stdout.write(
    `load average at the end: ${loadavg()
      .map((l) => l.toFixed(2))
      .join(' ')} (${cpus().length} CPUs)\n`,
  );
}

interface Level {
  readonly connections: number;
  readonly subscriptions: number;
  readonly bareRss: number;
  readonly rss: number;
  readonly bareHeap: number;
  readonly heap: number;
  readonly external: number;
  readonly cpu: number;
  readonly pings: number;
}

await runBench(main);
