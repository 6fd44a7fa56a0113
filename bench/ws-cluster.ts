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
 * Environment: TEST_DATABASE_URL and NATS_URL (bench/cluster-support.ts).
 */
import { jetstreamManager } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import {
  absNow,
  type ClusterProcess,
  cleanup,
  median,
  NATS_URL,
  natsServerPid,
  numberArgument,
  percentile,
  postOrder,
  processCpuMs,
  runBench,
  type SignedOrder,
  signOrder as signLimitOrder,
  sleep,
  startBenchCluster,
  type Trader,
  trader,
} from './cluster-support.js';
import { ClientPool, deliveredPerSecond } from './ws-client-pool.js';

const GATEWAYS = Math.round(numberArgument('gateways', 2));
const SECONDS = numberArgument('seconds', 20);
const CLIENTS = Math.round(numberArgument('clients', 1000));
/** Signed orders per second (half makers, half takers). */
const RATE = numberArgument('rate', 100);
const WORKERS = Math.max(GATEWAYS, Math.round(numberArgument('workers', 2)));
const ROUNDS = Math.round(numberArgument('rounds', 1));

const PAIR = 'BTCEUR';
const CHANNEL = `trade.${PAIR}`;
const TAG_BASE = 10_000;
const TAGS_PER_PHASE = 1_000_000;
const PRICE = '30000';
const DRAIN_MS = 2_000;
const SETUP_TIMEOUT_MS = 120_000;

const signOrder = (who: Trader, side: 'buy' | 'sell', lots: number): SignedOrder =>
  signLimitOrder(who, { side, pair: 'BTC/EUR', volume: `0.${String(lots).padStart(8, '0')}`, price: PRICE });
const post = (url: string, order: SignedOrder, latencies: number[]): Promise<number> =>
  postOrder(url, order, latencies);

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
  const cluster = await startBenchCluster('BENCH_WS');
  const { engine, adminToken, stream } = cluster;
  const gateways: ClusterProcess[] = [];

  const maker = await trader(engine.url, adminToken, { BTC: '1000' });
  const taker = await trader(engine.url, adminToken, { EUR: '100000000' });

  const nc = await connect({ servers: NATS_URL, name: 'openspot-bench-ws' });
  cleanup.after(() => nc.close());
  const jsm = await jetstreamManager(nc);
  const streamMessages = async (): Promise<number> => (await jsm.streams.info(stream)).state.messages;

  const results: PhaseResult[] = [];
  let phase = 0;
  for (let round = 0; round < ROUNDS; round++)
    for (let g = 1; g <= GATEWAYS; g++) {
      while (gateways.length > g) await gateways.pop()!.stop();
      while (gateways.length < g) gateways.push(await cluster.startGateway());
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
      const clients = await ClientPool.start({
        urls: wsUrls,
        clients: CLIENTS,
        workers: WORKERS,
        channels: [CHANNEL],
        awaitSubscriptions: true,
        setupTimeoutMs: SETUP_TIMEOUT_MS,
        seconds: SECONDS,
        tagBase: TAG_BASE + firstTag,
      });
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

await runBench(main);
