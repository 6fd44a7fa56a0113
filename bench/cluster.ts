/**
 * The cluster transport alone (no engine, no store), against the NATS server in NATS_URL
 * (default nats://127.0.0.1:4222):
 *   npm run bench:cluster [-- --rounds R] [--requests N] [--batches B] [--events E]
 *
 * Interleaved rounds (default 5) of:
 * - `raw request`: nc.request with an empty body and an echoing subscriber — the NATS round trip
 *   itself, the baseline;
 * - `command`: CommandClient.submit → CommandService → a submitter that answers at once with a
 *   trade result (encode, decode and validation on both sides), one request at a time;
 * - `command x64`: the same with 64 requests in flight (throughput);
 * - `publish`: BatchPublisher.publish of a batch of E engine events (default 16: orders and trades),
 *   one after the other as the engine's queue does (a memory stream, deleted afterwards);
 * - `encode`: encodeBatch of that batch alone (the CPU part of a publish).
 * Prints the median over the rounds of per-operation time (p50 and p99 of latency where it is
 * one at a time) and the ratio of `command` to `raw request`.
 */
import { parseArgs } from 'node:util';
import { jetstreamManager } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import { BatchPublisher, DEFAULT_BATCH_STREAM } from '../src/cluster/batch-stream.js';
import { encodeBatch } from '../src/cluster/codec.js';
import { CommandClient } from '../src/cluster/command-client.js';
import { CommandService } from '../src/cluster/command-service.js';
import type { ExactValue } from '../src/cluster/exact-json.js';
import { TEST_CLUSTER_KEY } from '../src/cluster/test-support.js';
import type {
  Amount,
  MarketId,
  Micros,
  OrderId,
  Price,
  TradeId,
  UserId,
  Volume,
} from '../src/domain/types.js';
import type { Command, CommandResult, EngineEvent } from '../src/engine/types.js';

const { values } = parseArgs({
  options: {
    rounds: { type: 'string', default: '5' },
    requests: { type: 'string', default: '2000' },
    batches: { type: 'string', default: '2000' },
    events: { type: 'string', default: '16' },
  },
});
const ROUNDS = Number(values.rounds);
const REQUESTS = Number(values.requests);
const BATCHES = Number(values.batches);
const EVENTS = Number(values.events);
const url = process.env.NATS_URL ?? 'nats://127.0.0.1:4222';

const trade = (i: number): EngineEvent => ({
  type: 'trade',
  trade: {
    id: i as TradeId,
    marketId: 1 as MarketId,
    price: 6_543_210 as Price,
    volume: 12_345_678 as Volume,
    cost: 807_804_687 as Amount,
    takerOrderId: (2 * i) as OrderId,
    makerOrderId: (2 * i + 1) as OrderId,
    takerUserId: 7 as UserId,
    makerUserId: 8 as UserId,
    takerSide: 'buy',
    takerType: 'limit',
    takerFee: 1_293 as Amount,
    makerFee: 808 as Amount,
    time: 1_764_000_000_000_000 as Micros,
  },
});
const accepted = (i: number): EngineEvent => ({
  type: 'orderAccepted',
  order: {
    id: i as OrderId,
    userId: 7 as UserId,
    marketId: 1 as MarketId,
    side: 'buy',
    type: 'limit',
    price: 6_543_210 as Price,
    volume: 12_345_678 as Volume,
    executed: 0 as Volume,
    status: 'open',
    reason: null,
    openTime: 1_764_000_000_000_000 as Micros,
    closeTime: null,
    cost: 0 as Amount,
    fee: 0 as Amount,
    feeExcess: 0,
    reserved: 807_804_687 as Amount,
  },
});
const result: CommandResult = { ok: true, events: [accepted(1), trade(1)] };
const command: Command = {
  kind: 'placeOrder',
  userId: 7 as UserId,
  marketId: 1 as MarketId,
  side: 'buy',
  type: 'limit',
  price: 6_543_210 as Price,
  volume: 12_345_678 as Volume,
};
const batchPayload: ExactValue = {
  events: Array.from({ length: EVENTS }, (_, i) =>
    i % 2 === 0 ? accepted(i) : trade(i),
  ) as unknown as ExactValue,
};

const nc = await connect({ servers: url, name: 'bench-cluster' });
const subject = `bench.cluster.${process.pid}`;
const echo = nc.subscribe(`${subject}.raw`, { callback: (_e, m) => void m.respond(m.data) });
const service = await CommandService.start(
  nc,
  { submit: async () => result, submitOnce: async () => ({ kind: 'mismatch' }) },
  { key: TEST_CLUSTER_KEY, subject: `${subject}.cmd` },
);
const client = new CommandClient(nc, { key: TEST_CLUSTER_KEY, subject: `${subject}.cmd` });
const jsm = await jetstreamManager(nc);
const stream = `BENCH_CLUSTER_${process.pid}`;
const publisher = await BatchPublisher.open(
  nc,
  {
    ...DEFAULT_BATCH_STREAM,
    stream,
    subject: `${subject}.batches`,
    storage: 'memory',
  },
  { key: TEST_CLUSTER_KEY },
);
let nextBatch = 1;

const quantile = (sorted: number[], q: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

async function oneAtATime(
  n: number,
  op: () => Promise<unknown>,
): Promise<{ mean: number; p50: number; p99: number }> {
  const times: number[] = [];
  const start = performance.now();
  for (let i = 0; i < n; i += 1) {
    const t0 = performance.now();
    await op();
    times.push(performance.now() - t0);
  }
  const total = performance.now() - start;
  times.sort((a, b) => a - b);
  return { mean: (total / n) * 1000, p50: quantile(times, 0.5) * 1000, p99: quantile(times, 0.99) * 1000 };
}

async function inFlight(n: number, width: number, op: () => Promise<unknown>): Promise<number> {
  let sent = 0;
  const start = performance.now();
  await Promise.all(
    Array.from({ length: width }, async () => {
      while (sent < n) {
        sent += 1;
        await op();
      }
    }),
  );
  return ((performance.now() - start) / n) * 1000;
}

const rows: Record<string, Array<{ mean: number; p50?: number; p99?: number }>> = {};
const record = (name: string, r: { mean: number; p50?: number; p99?: number }) => {
  rows[name] ??= [];
  rows[name].push(r);
};
const empty = new Uint8Array();

for (let round = 0; round < ROUNDS; round += 1) {
  record(
    'raw request',
    await oneAtATime(REQUESTS, () => nc.request(`${subject}.raw`, empty, { timeout: 5_000 })),
  );
  record('command', await oneAtATime(REQUESTS, () => client.submit(command)));
  record('command x64', { mean: await inFlight(REQUESTS, 64, () => client.submit(command)) });
  record('publish', await oneAtATime(BATCHES, () => publisher.publish(nextBatch++, batchPayload)));
  const t0 = performance.now();
  let bytes = 0;
  for (let i = 0; i < BATCHES; i += 1) bytes = encodeBatch({ sequence: i + 1, payload: batchPayload }).length;
  record('encode', { mean: ((performance.now() - t0) / BATCHES) * 1000 });
  if (round === 0) console.log(`batch of ${EVENTS} events: ${bytes} bytes on the wire`);
}

console.log(
  `NATS ${nc.info?.version} at ${url}; ${ROUNDS} interleaved rounds; medians over rounds (µs per operation)`,
);
console.log('operation      mean     p50     p99');
for (const [name, rs] of Object.entries(rows)) {
  const cell = (k: 'mean' | 'p50' | 'p99') =>
    rs[0]?.[k] === undefined
      ? '      -'
      : median(rs.map((r) => r[k]!))
          .toFixed(0)
          .padStart(7);
  console.log(`${name.padEnd(12)} ${cell('mean')} ${cell('p50')} ${cell('p99')}`);
}
const ratios = rows.command!.map((r, i) => r.mean / rows['raw request']![i]!.mean);
console.log(
  `command / raw request (per round): ${ratios.map((r) => r.toFixed(2)).join(' ')}; median ${median(ratios).toFixed(2)}`,
);

echo.unsubscribe();
await service.stop();
await jsm.streams.delete(stream);
await nc.close();
