/**
 * bench:ws — WebSocket fan-out of the real server against a bare `ws` baseline, in one run.
 *
 *   (a) baseline: a bare `ws` WebSocketServer (own process) broadcasts real `order-book` and
 *       `trade` frames, captured from the server first, to N clients at the message rate of (b);
 *   (b) the real server (own process: HTTP /v1 + WebSocket, SQLite, fsync per commit) with N
 *       raw-`ws` subscribers of `order-book.BTCEUR` and `trade.BTCEUR`, while a driver places
 *       crossing orders over HTTP at a steady rate: each pair is a maker sell (one book update)
 *       and a taker buy at the same price (one trade, one book update), so 3 messages per pair
 *       and subscriber.
 *
 * The client sockets live in worker threads (default 2), the servers in child processes, the order
 * driver in the main thread: no two of them share an event loop. Each pair carries a unique
 * volume (its tag), so every `trade` frame is matched to the HTTP 201 of the taker order that made
 * it; the delay is (frame arrival at the client − 201 received by the driver). The feed publishes
 * after the batch's HTTP replies are written, so the delay is normally positive.
 *
 * Options: --seconds N (per phase, default 20), --clients N (default 1000), --rate N (order pairs
 * per second, default 20), --workers N (client threads, default 2), --cpu-prof DIR (profile the
 * server child of phase b into DIR; the profile is written when the child exits).
 *
 * The default rate, 20 pairs/s = 60 messages/s per client = 60 000 messages/s to 1 000 clients,
 * is about what the bare baseline itself can deliver on a 2-core machine that also runs the
 * clients; at lower rates both phases trivially deliver everything, at higher ones the machine
 * (mostly the kernel's loopback TCP work, one write per frame and client) is the limit for both.
 * With `--gateways N` the bench runs against `openspot engine` and 1..N `openspot gateway`s
 * instead (bench/ws-cluster.ts, its own options; needs PostgreSQL and NATS).
 *
 * The bench expects the machine to itself: other busy processes skew every figure.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { join } from 'node:path';
import { createInterface, type Interface } from 'node:readline';
import { WebSocket } from 'ws';
import { signRequest } from '../src/client/sign.js';
import { absNow, argument, numberArgument, percentile, sleep, withTimeout } from './measure.js';
import { ClientPool, deliveredPerSecond } from './ws-client-pool.js';
import type { ClientsReport } from './ws-clients.js';

const SECONDS = numberArgument('seconds', 20);
const CLIENTS = Math.round(numberArgument('clients', 1000));
const RATE = numberArgument('rate', 20);
const WORKERS = Math.max(1, Math.min(Math.round(numberArgument('workers', 2)), CLIENTS));
const CPU_PROF_DIR = argument('cpu-prof');

const PAIR = 'BTCEUR';
const CHANNELS = [`order-book.${PAIR}`, `trade.${PAIR}`];
/** Lots (1e-8 BTC) of tag 0; pair i trades (TAG_BASE + i) lots, above the 5 000-lot ordermin. */
const TAG_BASE = 10_000;
const PRICE = '30000';
/** Hard ceilings on every wait, so the bench always ends. */
const SETUP_TIMEOUT_MS = 120_000;
const DRAIN_MS = 2_000;

const poolOptions = (urls: string[], awaitSubscriptions: boolean) => ({
  urls,
  clients: CLIENTS,
  workers: WORKERS,
  channels: CHANNELS,
  awaitSubscriptions,
  setupTimeoutMs: SETUP_TIMEOUT_MS,
  seconds: SECONDS,
  tagBase: TAG_BASE,
});

// ---------------------------------------------------------------------------------------------
// Child processes.

interface Trader {
  userId: number;
  apiKey: string;
  apiSecret: string;
}

class Target {
  private readonly waiting: ((line: Record<string, unknown>) => boolean)[] = [];
  private readonly lines: Interface;
  readonly exited: Promise<void>;

  private constructor(readonly child: ChildProcess) {
    this.lines = createInterface({ input: child.stdout! });
    this.lines.on('line', (text) => {
      let line: Record<string, unknown>;
      try {
        line = JSON.parse(text) as Record<string, unknown>;
      } catch {
        process.stderr.write(`target: ${text}\n`);
        return;
      }
      const index = this.waiting.findIndex((accept) => accept(line));
      if (index >= 0) this.waiting.splice(index, 1);
    });
    this.exited = new Promise((resolve) => child.once('exit', () => resolve()));
  }

  static async start(
    mode: 'openspot' | 'baseline',
    nodeArgs: string[] = [],
  ): Promise<{
    target: Target;
    info: Record<string, unknown>;
  }> {
    const child = spawn(
      process.execPath,
      [...nodeArgs, '--import', 'tsx', join(import.meta.dirname, 'ws-target.ts'), mode],
      { stdio: ['pipe', 'pipe', 'inherit'] },
    );
    const target = new Target(child);
    const died = target.exited.then(() => {
      throw new Error(`${mode} target exited during start (code ${child.exitCode})`);
    });
    const info = await withTimeout(
      Promise.race([target.next(() => true), died]),
      SETUP_TIMEOUT_MS,
      `${mode} target start`,
    );
    return { target, info };
  }

  /** The next stdout JSON line accepted by `accept`. */
  next(accept: (line: Record<string, unknown>) => boolean): Promise<Record<string, unknown>> {
    return new Promise((resolve) => {
      this.waiting.push((line) => {
        if (!accept(line)) return false;
        resolve(line);
        return true;
      });
    });
  }

  send(command: Record<string, unknown>): void {
    this.child.stdin!.write(`${JSON.stringify(command)}\n`);
  }

  /** CPU time (user + system) the child has used so far, in ms. */
  async cpuMs(): Promise<number> {
    const reply = this.next((line) => 'cpu' in line);
    this.send({ cmd: 'cpu' });
    const { cpu } = (await withTimeout(reply, 10_000, 'cpu usage')) as {
      cpu: { user: number; system: number };
    };
    return (cpu.user + cpu.system) / 1000;
  }

  async stop(): Promise<void> {
    this.send({ cmd: 'exit' });
    this.child.stdin!.end();
    // A profile takes a moment to write; past 30 s the child is killed.
    const timer = setTimeout(() => this.child.kill('SIGKILL'), 30_000);
    await this.exited;
    clearTimeout(timer);
    this.lines.close();
  }
}

const mergeCloses = (reports: ClientsReport[]): string => {
  const merged: Record<string, number> = {};
  for (const r of reports)
    for (const [code, n] of Object.entries(r.closed)) merged[code] = (merged[code] ?? 0) + n;
  const text = Object.entries(merged)
    .map(([code, n]) => `${n}×${code}`)
    .join(' ');
  return text === '' ? 'none' : text;
};

// ---------------------------------------------------------------------------------------------
// HTTP: signed with the client library's signer (independent of the server's code).

const sign = signRequest;

/** Milliseconds from sending each POST /v1/orders to reading its 201, for the report. */
const orderLatencies: number[] = [];

async function placeOrder(url: string, trader: Trader, side: 'buy' | 'sell', lots: number): Promise<void> {
  const sentAt = absNow();
  const volume = `0.${String(lots).padStart(8, '0')}`;
  const body = JSON.stringify({
    order_direction: side,
    order_type: 'limit',
    pair: 'BTC/EUR',
    volume,
    price: PRICE,
  });
  const response = await fetch(`${url}/v1/orders`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'x-api-key': trader.apiKey,
      'x-api-sign': sign('POST', body, trader.apiSecret),
    },
    body,
    signal: AbortSignal.timeout(10_000),
  });
  const text = await response.text();
  if (response.status !== 201) throw new Error(`order refused (${response.status}): ${text}`);
  orderLatencies.push(absNow() - sentAt);
}

/**
 * Places crossing pairs at a steady rate for `seconds`: pair i starts at start + i / rate (or as
 * soon as pair i − 1 is done, if that is later). Returns the taker's 201 time per tag.
 */
async function drive(url: string, traders: Trader[], firstTag: number, seconds: number) {
  const [maker, taker] = traders as [Trader, Trader];
  const acks: number[] = [];
  const start = absNow();
  const end = start + seconds * 1000;
  let lag = 0;
  for (let i = 0; ; i++) {
    const due = start + (i / RATE) * 1000;
    // Bounded by the clock as well as by the schedule: a slow server must not stretch the phase.
    if (due >= end || absNow() >= end) break;
    const wait = due - absNow();
    if (wait > 0) await sleep(wait);
    lag = Math.max(0, -wait);
    const lots = TAG_BASE + firstTag + i;
    await placeOrder(url, maker, 'sell', lots);
    await placeOrder(url, taker, 'buy', lots);
    acks.push(absNow());
  }
  return { acks, start, end: absNow(), lag };
}

// ---------------------------------------------------------------------------------------------

const wsAddress = (httpUrl: string, appKey: string): string =>
  `${httpUrl.replace(/^http/, 'ws')}/app/${appKey}?protocol=7&client=js&version=8.6.0&flash=false`;

/** Real frames of one pair from the server, in arrival order: the maker's book update, then the taker's book update and trade. */
async function captureFrames(httpUrl: string, wsUrl: string, traders: Trader[]): Promise<string[]> {
  const socket = new WebSocket(wsUrl);
  const frames: string[] = [];
  const subscribed = new Set<string>();
  socket.on('message', (raw) => {
    const text = String(raw);
    const frame = JSON.parse(text) as { event: string; channel?: string };
    if (frame.event === 'update') frames.push(text);
    if (frame.event === 'pusher_internal:subscription_succeeded') subscribed.add(frame.channel ?? '');
  });
  await withTimeout(new Promise((resolve) => socket.once('open', resolve)), 10_000, 'capture socket');
  for (const channel of CHANNELS)
    socket.send(JSON.stringify({ event: 'pusher:subscribe', data: { auth: '', channel } }));
  const deadline = Date.now() + 10_000;
  while (subscribed.size < CHANNELS.length && Date.now() < deadline) await sleep(5);
  // Tags below TAG_BASE's range of the driver: lots 9 000 and 9 001.
  for (const lots of [9_000, 9_001]) {
    await placeOrder(httpUrl, traders[0]!, 'sell', lots);
    await placeOrder(httpUrl, traders[1]!, 'buy', lots);
  }
  while (frames.length < 6 && Date.now() < deadline) await sleep(5);
  socket.terminate();
  if (frames.length < 6) throw new Error(`captured only ${frames.length} frames`);
  const last = frames.slice(-3);
  if (last.filter((f) => f.includes('"channel":"trade.')).length !== 1)
    throw new Error(`expected two book frames and one trade frame: ${last.join('\n')}`);
  return last;
}

const cpuMsSince = (before: NodeJS.CpuUsage): number => {
  const used = process.cpuUsage(before);
  return (used.user + used.system) / 1000;
};
const percent = (cpuMs: number): string => `${((cpuMs / (SECONDS * 1000)) * 100).toFixed(0)} %`;

async function main(): Promise<void> {
  const benchStart = absNow();
  process.stdout.write(
    `bench:ws — ${CLIENTS} clients in ${WORKERS} worker thread(s), ${SECONDS} s per phase, ` +
      `${RATE} order pairs/s (3 messages per pair and client: ${3 * RATE * CLIENTS} msgs/s offered)\n`,
  );

  const nodeArgs = CPU_PROF_DIR === undefined ? [] : ['--cpu-prof', `--cpu-prof-dir=${CPU_PROF_DIR}`];
  const { target: server, info } = await Target.start('openspot', nodeArgs);
  const serverUrl = info.url as string;
  const traders = info.traders as Trader[];
  const serverWs = wsAddress(serverUrl, info.appKey as string);

  try {
    const frames = await captureFrames(serverUrl, serverWs, traders);
    process.stdout.write(`captured frames (${frames.map((f) => f.length).join(', ')} bytes)\n`);

    // (a) Baseline.
    const { target: baseline, info: baselineInfo } = await Target.start('baseline');
    let baselineRate: number;
    let baselineCpu: number;
    let baselineCloses: string;
    let baselineClientsCpu: number;
    try {
      const pool = await ClientPool.start(
        poolOptions([wsAddress(baselineInfo.url as string, 'bench')], false),
      );
      try {
        process.stdout.write(`(a) baseline: ${pool.connected} clients connected (${pool.failed} failed)\n`);
        const cpuBefore = await baseline.cpuMs();
        const clientCpuBefore = process.cpuUsage();
        const done = baseline.next((line) => 'done' in line);
        // As the server sends them: the maker's book update, then half an interval later the
        // taker's book update and trade together.
        baseline.send({
          cmd: 'broadcast',
          groups: [[frames[0]], frames.slice(1)],
          rate: RATE,
          seconds: SECONDS,
        });
        const result = (await withTimeout(done, (SECONDS + 60) * 1000, 'baseline broadcast')) as {
          start: number;
          end: number;
        };
        baselineCpu = (await baseline.cpuMs()) - cpuBefore;
        baselineClientsCpu = cpuMsSince(clientCpuBefore);
        await sleep(DRAIN_MS);
        const reports = await pool.report();
        baselineRate = deliveredPerSecond(reports, pool.epoch, result.start, result.start + SECONDS * 1000);
        baselineCloses = mergeCloses(reports);
      } finally {
        await pool.close();
      }
    } finally {
      await baseline.stop();
    }

    // (b) The real server.
    const pool = await ClientPool.start(poolOptions([serverWs], true));
    let serverRate: number;
    let serverCpu: number;
    let delays: Float64Array;
    let missing: number;
    let pairs: number;
    let achievedRate: number;
    let serverCloses: string;
    let lag: number;
    let clientsCpu: number;
    try {
      process.stdout.write(`(b) server: ${pool.connected} clients subscribed (${pool.failed} failed)\n`);
      const cpuBefore = await server.cpuMs();
      const clientCpuBefore = process.cpuUsage();
      orderLatencies.length = 0;
      const run = await drive(serverUrl, traders, 0, SECONDS);
      serverCpu = (await server.cpuMs()) - cpuBefore;
      clientsCpu = cpuMsSince(clientCpuBefore);
      pairs = run.acks.length;
      lag = run.lag;
      achievedRate = pairs / ((run.end - run.start) / 1000);
      // Wait (bounded) for the last trade to reach every client.
      await sleep(DRAIN_MS);
      const reports = await pool.report();
      serverRate = deliveredPerSecond(reports, pool.epoch, run.start, run.start + SECONDS * 1000);
      serverCloses = mergeCloses(reports);
      const samples: number[] = [];
      for (const report of reports)
        for (let k = 0; k < report.tags.length; k++) {
          const ack = run.acks[report.tags[k]!];
          if (ack !== undefined) samples.push(report.times[k]! - ack);
        }
      missing = pairs * pool.connected - samples.length;
      delays = Float64Array.from(samples).sort();
    } finally {
      await pool.close();
    }

    const latencies = Float64Array.from(orderLatencies).sort();
    const ratio = serverRate / baselineRate;
    const p50 = percentile(delays, 50);
    const p99 = percentile(delays, 99);
    const offered = 3 * RATE * CLIENTS;
    console.table([
      {
        phase: '(a) baseline: bare ws broadcast',
        'msgs/s delivered': Math.round(baselineRate),
        'of offered': `${((baselineRate / offered) * 100).toFixed(1)} %`,
        'server CPU': percent(baselineCpu),
        'clients CPU': percent(baselineClientsCpu),
        closes: baselineCloses,
      },
      {
        phase: '(b) OpenSpot: orders over HTTP → feed',
        'msgs/s delivered': Math.round(serverRate),
        'of offered': `${((serverRate / offered) * 100).toFixed(1)} %`,
        'server CPU': percent(serverCpu),
        'clients CPU': percent(clientsCpu),
        closes: serverCloses,
      },
    ]);
    console.table([
      { figure: 'baseline msgs/s', value: Math.round(baselineRate), target: '', met: '' },
      { figure: 'server msgs/s', value: Math.round(serverRate), target: '', met: '' },
      { figure: 'ratio server / baseline', value: ratio.toFixed(3), target: '>= 0.80', met: ratio >= 0.8 },
      { figure: 'p50 delay 201 → trade frame (ms)', value: p50.toFixed(2), target: '', met: '' },
      { figure: 'p99 delay 201 → trade frame (ms)', value: p99.toFixed(2), target: '< 50', met: p99 < 50 },
      { figure: 'max delay (ms)', value: (delays.at(-1) ?? Number.NaN).toFixed(2), target: '', met: '' },
      { figure: 'trade frames missing', value: missing, target: '0', met: missing === 0 },
      {
        figure: 'order pairs placed (per s)',
        value: `${pairs} (${achievedRate.toFixed(1)})`,
        target: `${RATE}/s`,
        met: '',
      },
      { figure: 'driver behind schedule at the end (ms)', value: lag.toFixed(0), target: '', met: '' },
      {
        figure: 'POST /v1/orders latency p50 / p99 (ms)',
        value: `${percentile(latencies, 50).toFixed(1)} / ${percentile(latencies, 99).toFixed(1)}`,
        target: '',
        met: '',
      },
    ]);
    process.stdout.write(
      `offered: ${offered} msgs/s (3 per pair and client); delay < 0 would mean the frame arrived before the HTTP 201 ` +
        `(the feed publishes after the replies are written). Total run ${((absNow() - benchStart) / 1000).toFixed(0)} s.\n`,
    );
  } finally {
    await server.stop();
    if (CPU_PROF_DIR !== undefined) process.stdout.write(`server CPU profile written to ${CPU_PROF_DIR}\n`);
  }
}

// `--gateways N`: the split cluster (engine + gateways as OS processes), bench/ws-cluster.ts.
if (argument('gateways') !== undefined) await import('./ws-cluster.js');
else await main();
