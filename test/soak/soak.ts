/**
 * `npm run test:soak`: sustained mixed load on the real server (a child process, as in production)
 * for SOAK_SECONDS (default 300), then a report; exit code 1 when something went wrong.
 *
 * Load, all at once for the whole run:
 * - SOAK_CONCURRENCY (16) signed order clients: limit and market orders on BTC/EUR and ETH/EUR,
 *   half of the limits crossing, and cancels (every user keeps at most 60 orders open, so the
 *   books reach a steady size and memory must level off);
 * - SOAK_READERS (4) clients reading: order book, tickers, OHLC, public trades, markets, and the
 *   users' own wallet, open orders and trades (paginated);
 * - SOAK_SUBSCRIBERS (20) WebSocket connections (Pusher protocol) on the book, trade and ticker
 *   channels; one of them disconnects and reconnects every second (connection churn).
 *
 * Measured: requests per second by kind, latency percentiles, WebSocket messages; the server's RSS
 * (VmRSS from /proc/<pid>/status) and V8 heap (used after a full GC, through the inspector protocol:
 * the child runs with --inspect on a loopback ephemeral port) every SOAK_SAMPLE_SECONDS.
 *
 * Fails when: any request fails unexpectedly (no answer, a 5xx, a 4xx the load never causes), a
 * WebSocket closes or errs unasked or a subscription is refused, no WebSocket message arrived, the
 * ledger check or the store checks at the end fail, the graceful stop fails, or memory grows
 * without bound: RSS or heap still grew over the last third of the run by more than 10% of its
 * value after the warm-up (the first fifth of the run, at least 10 s) AND at the end it is above
 * twice that value — or, for the heap (used, after a full GC), above it by half (at least 16 MB).
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { WebSocket } from 'ws';
import { checkLedger, readCommitted } from '../crash/committed-state.js';
import {
  admin,
  fromUnits,
  markets as listMarkets,
  type MarketInfo,
  provisionTrader,
  request,
  seededRandom,
  signed,
  type Trader,
} from '../crash/http-client.js';
import { type ServerProcess, startServerProcess } from '../crash/server-process.js';

const env = (name: string, fallback: number): number => {
  const raw = process.env[name];
  const value = raw === undefined || raw === '' ? fallback : Number(raw);
  if (!Number.isFinite(value) || value <= 0) throw new Error(`${name} must be a positive number`);
  return value;
};
const SECONDS = env('SOAK_SECONDS', 300);
const CONCURRENCY = env('SOAK_CONCURRENCY', 16);
const READERS = env('SOAK_READERS', 4);
const SUBSCRIBERS = env('SOAK_SUBSCRIBERS', 20);
const SAMPLE_MS = 1000 * env('SOAK_SAMPLE_SECONDS', Math.max(1, Math.min(10, SECONDS / 30)));
const SEED = env('SOAK_SEED', Date.now() % 2 ** 31);
const WS_KEY = 'soak-app-key';
const WS_SECRET = 'soak-app-secret';
const MAX_OPEN_PER_USER = 60;
const MID: Readonly<Record<string, number>> = { 'BTC/EUR': 300_000, 'ETH/EUR': 200_000 };

// ---------------------------------------------------------------- measurements

class Latencies {
  readonly values: number[] = [];
  add(ms: number): void {
    this.values.push(ms);
  }
  summary(): string {
    if (this.values.length === 0) return 'none';
    const sorted = [...this.values].sort((a, b) => a - b);
    const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!.toFixed(1);
    return `n=${sorted.length} p50 ${at(0.5)} ms, p99 ${at(0.99)} ms, max ${sorted[sorted.length - 1]!.toFixed(1)} ms`;
  }
  p99(): number {
    const sorted = [...this.values].sort((a, b) => a - b);
    return sorted[Math.min(sorted.length - 1, Math.floor(0.99 * sorted.length))] ?? 0;
  }
}

interface Sample {
  readonly seconds: number;
  readonly rss: number;
  readonly heapUsed: number;
  readonly heapTotal: number;
  readonly requests: number;
}

/** A minimal Chrome DevTools Protocol client for the child's inspector. */
class Inspector {
  private nextId = 1;
  private readonly pending = new Map<number, (result: unknown) => void>();
  private constructor(private readonly socket: WebSocket) {
    socket.on('message', (data) => {
      const message = JSON.parse(String(data)) as { id?: number; result?: unknown };
      if (message.id !== undefined) this.pending.get(message.id)?.(message.result);
      if (message.id !== undefined) this.pending.delete(message.id);
    });
  }
  static connect(url: string): Promise<Inspector> {
    return new Promise((resolve, reject) => {
      const socket = new WebSocket(url);
      socket.once('open', () => resolve(new Inspector(socket)));
      socket.once('error', reject);
    });
  }
  call<T>(method: string, params: object = {}): Promise<T> {
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`inspector ${method}: no answer`)), 30_000);
      this.pending.set(id, (result) => {
        clearTimeout(timer);
        resolve(result as T);
      });
      this.socket.send(JSON.stringify({ id, method, params }));
    });
  }
  close(): void {
    this.socket.close();
  }
}

function rssOf(pid: number): number {
  const match = /^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  if (match === null) throw new Error('no VmRSS');
  return Number(match[1]) * 1024;
}

const mb = (bytes: number) => `${(bytes / 2 ** 20).toFixed(1)} MB`;

/** Least-squares slope of value over seconds. */
function slope(samples: readonly Sample[], pick: (s: Sample) => number): number {
  const n = samples.length;
  if (n < 2) return 0;
  const mx = samples.reduce((a, s) => a + s.seconds, 0) / n;
  const my = samples.reduce((a, s) => a + pick(s), 0) / n;
  let num = 0;
  let den = 0;
  for (const s of samples) {
    num += (s.seconds - mx) * (pick(s) - my);
    den += (s.seconds - mx) ** 2;
  }
  return den === 0 ? 0 : num / den;
}

// ---------------------------------------------------------------- WebSocket subscribers

interface WsStats {
  messages: number;
  byEvent: Map<string, number>;
  connects: number;
  failures: string[];
}

const CHANNELS = ['order-book.BTCEUR', 'trade.BTCEUR', 'order-book.ETHEUR', 'ticker-information.BTCEUR'];

/** One Pusher-protocol subscriber; resolves when it is closed by us. */
function subscriber(base: string, stats: WsStats): { ready: Promise<void>; close(): Promise<void> } {
  const socket = new WebSocket(
    `${base.replace(/^http/, 'ws')}/app/${WS_KEY}?protocol=7&client=soak&version=1`,
  );
  let closing = false;
  const pendingSubscriptions = new Set(CHANNELS);
  let markReady: () => void = () => {};
  const ready = new Promise<void>((resolve) => {
    markReady = resolve;
  });
  const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
  stats.connects += 1;
  socket.on('message', (data) => {
    const frame = JSON.parse(String(data)) as { event: string; channel?: string };
    stats.messages += 1;
    stats.byEvent.set(frame.event, (stats.byEvent.get(frame.event) ?? 0) + 1);
    if (frame.event === 'pusher:connection_established')
      for (const channel of CHANNELS)
        socket.send(JSON.stringify({ event: 'pusher:subscribe', data: { channel } }));
    else if (frame.event === 'pusher:ping') socket.send(JSON.stringify({ event: 'pusher:pong', data: {} }));
    else if (frame.event === 'pusher_internal:subscription_succeeded') {
      pendingSubscriptions.delete(frame.channel ?? '');
      if (pendingSubscriptions.size === 0) markReady();
    } else if (frame.event === 'pusher:subscription_error' || frame.event === 'pusher:error')
      stats.failures.push(`websocket: ${String(data)}`);
  });
  socket.on('error', (error) => {
    if (!closing) stats.failures.push(`websocket error: ${error.message}`);
  });
  socket.on('close', (code) => {
    if (!closing) stats.failures.push(`websocket closed unasked (${code})`);
  });
  return {
    ready,
    async close() {
      closing = true;
      socket.close(1000);
      await Promise.race([closed, new Promise((resolve) => setTimeout(resolve, 5000))]);
    },
  };
}

// ---------------------------------------------------------------- main

async function main(): Promise<number> {
  const random = seededRandom(SEED);
  const dataDir = mkdtempSync(join(tmpdir(), 'openspot-soak-'));
  let inspectorUrl: string | undefined;
  let server: ServerProcess | undefined;
  let inspector: Inspector | undefined;
  const failures: string[] = [];
  const unexpected = (text: string) => {
    if (failures.length < 100) failures.push(text);
  };
  console.log(
    `soak: ${SECONDS} s, ${CONCURRENCY} order clients, ${READERS} readers, ${SUBSCRIBERS} WebSocket subscribers, seed ${SEED}`,
  );
  try {
    server = await startServerProcess({
      dataDir,
      env: { WS_APP_KEY: WS_KEY, WS_APP_SECRET: WS_SECRET },
      nodeArgs: ['--inspect=127.0.0.1:0'],
      onStderrLine: (line) => {
        inspectorUrl ??= /Debugger listening on (ws:\/\/\S+)/.exec(line)?.[1];
      },
    });
    if (inspectorUrl === undefined) throw new Error('the inspector address was not printed');
    inspector = await Inspector.connect(inspectorUrl);
    const live = server;
    const sample = async (start: number, requests: number): Promise<Sample> => {
      await inspector!.call('HeapProfiler.collectGarbage');
      const heap = await inspector!.call<{ usedSize: number; totalSize: number }>('Runtime.getHeapUsage');
      return {
        seconds: (performance.now() - start) / 1000,
        rss: rssOf(live.pid),
        heapUsed: heap.usedSize,
        heapTotal: heap.totalSize,
        requests,
      };
    };

    const allMarkets = await listMarkets(server.url);
    const traded: MarketInfo[] = allMarkets.filter((m) => MID[m.pair] !== undefined);
    const traders: Trader[] = [];
    for (let i = 0; i < 8; i++)
      traders.push(
        await provisionTrader(server.url, `soak-${SEED}-${i}`, {
          EUR: '100000000',
          BTC: '5000',
          ETH: '50000',
        }),
      );
    const open = new Map<number, number[]>(traders.map((t) => [t.userId, []]));
    const pick = <T>(list: readonly T[]): T => list[Math.floor(random() * list.length)]!;

    const latency = { place: new Latencies(), cancel: new Latencies(), read: new Latencies() };
    const counts = { place: 0, cancel: 0, canceledLate: 0, read: 0 };
    let stopping = false;
    const timed = async (kind: keyof typeof latency, run: () => Promise<unknown>) => {
      const t0 = performance.now();
      await run();
      latency[kind].add(performance.now() - t0);
    };

    const orderClient = async () => {
      while (!stopping) {
        const trader = pick(traders);
        const list = open.get(trader.userId)!;
        if (list.length > 0 && (random() < 0.3 || list.length >= MAX_OPEN_PER_USER)) {
          const orderId = list.splice(Math.floor(random() * list.length), 1)[0]!;
          await timed('cancel', async () => {
            const answer = await signed(live.url, trader, 'DELETE', `/orders/${orderId}`);
            counts.cancel += 1;
            if (answer?.status === 409)
              counts.canceledLate += 1; // filled in the meantime
            else if (answer?.status !== 200)
              unexpected(`cancel: ${answer?.status ?? 'no answer'} ${answer?.text ?? ''}`);
          });
          continue;
        }
        const market = pick(traded);
        const side = random() < 0.5 ? 'buy' : 'sell';
        const type = random() < 0.1 ? 'market' : 'limit';
        const offset =
          random() < 0.5 ? (random() - 0.5) * 0.01 : (side === 'buy' ? -1 : 1) * (0.003 + random() * 0.015);
        const price = Math.round((MID[market.pair]! * (1 + offset)) / 100) * 100;
        const volume = (1 + Math.floor(random() * 20)) * 1_000_000;
        await timed('place', async () => {
          const answer = await signed(live.url, trader, 'POST', '/orders', {
            order_direction: side,
            order_type: type,
            pair: market.pair,
            volume: fromUnits(volume, market.lotDecimals),
            ...(type === 'limit' ? { price: fromUnits(price, market.pairDecimals) } : {}),
          });
          counts.place += 1;
          if (answer?.status !== 201) {
            unexpected(`place: ${answer?.status ?? 'no answer'} ${answer?.text ?? ''}`);
            return;
          }
          if (type === 'limit') list.push(Number(/(\d+)$/.exec(answer.headers.get('location') ?? '')?.[1]));
        });
      }
    };

    const reads: readonly ((t: Trader) => Promise<unknown>)[] = [
      () => request(`${live.url}/v1/orderbook?ticker_id=BTC/EUR&depth=100`, { method: 'GET' }),
      () => request(`${live.url}/v1/orderbook?ticker_id=ETH/EUR&depth=0`, { method: 'GET' }),
      () => request(`${live.url}/v1/tickers`, { method: 'GET' }),
      () => request(`${live.url}/v1/ohlc?ticker_id=BTC/EUR&interval=1`, { method: 'GET' }),
      () => request(`${live.url}/v1/historical_trades?ticker_id=BTC/EUR&limit=50`, { method: 'GET' }),
      () => request(`${live.url}/v1/markets`, { method: 'GET' }),
      (t) => signed(live.url, t, 'GET', '/spot-wallet'),
      (t) => signed(live.url, t, 'GET', '/open-orders'),
      (t) => signed(live.url, t, 'GET', '/trades?page-size=50'),
      (t) => signed(live.url, t, 'GET', '/closed-orders?page-size=50'),
    ];
    const reader = async () => {
      while (!stopping) {
        const read = pick(reads);
        await timed('read', async () => {
          const answer = (await read(pick(traders))) as { status: number; text: string } | undefined;
          counts.read += 1;
          if (answer?.status !== 200)
            unexpected(`read: ${answer?.status ?? 'no answer'} ${answer?.text.slice(0, 200) ?? ''}`);
        });
      }
    };

    const ws: WsStats = { messages: 0, byEvent: new Map(), connects: 0, failures: [] };
    const subscribers = Array.from({ length: SUBSCRIBERS }, () => subscriber(live.url, ws));
    await Promise.race([
      Promise.all(subscribers.map((s) => s.ready)),
      new Promise((_, reject) =>
        setTimeout(() => reject(new Error('subscriptions not confirmed in 10 s')), 10_000),
      ),
    ]);

    const start = performance.now();
    const samples: Sample[] = [await sample(start, 0)];
    const requests = () => counts.place + counts.cancel + counts.read;
    const clients = [
      ...Array.from({ length: CONCURRENCY }, orderClient),
      ...Array.from({ length: READERS }, reader),
    ];
    const churn = setInterval(() => {
      const i = Math.floor(random() * subscribers.length);
      const old = subscribers[i]!;
      subscribers[i] = subscriber(live.url, ws);
      void old.close();
    }, 1000);
    const deadline = start + SECONDS * 1000;
    let nextReport = start + 30_000;
    while (performance.now() < deadline) {
      await new Promise((resolve) =>
        setTimeout(resolve, Math.max(0, Math.min(SAMPLE_MS, deadline - performance.now()))),
      );
      samples.push(await sample(start, requests()));
      if (live.child.exitCode !== null || live.child.signalCode !== null) {
        unexpected(`the server died:\n${live.recentOutput()}`);
        break;
      }
      if (performance.now() >= nextReport) {
        const s = samples[samples.length - 1]!;
        console.log(
          `  ${s.seconds.toFixed(0)} s: ${requests()} requests, RSS ${mb(s.rss)}, heap ${mb(s.heapUsed)}, ws messages ${ws.messages}`,
        );
        nextReport += 30_000;
      }
    }
    stopping = true;
    clearInterval(churn);
    await Promise.all(clients);
    const elapsed = (performance.now() - start) / 1000;
    await Promise.all(subscribers.map((s) => s.close()));
    const end = await sample(start, requests());

    const check = await admin(live.url, 'GET', '/ledger/check');
    if ((check.body as { ok?: boolean }).ok !== true)
      unexpected(`ledger check: ${JSON.stringify(check.body)}`);
    const warnings = live.warnings().filter((w) => w.msg !== 'request refused: service unavailable');
    for (const w of warnings.slice(0, 5)) unexpected(`server logged: ${JSON.stringify(w).slice(0, 300)}`);
    inspector.close();
    inspector = undefined;
    const stopped = await live.stop(30_000);
    server = undefined;
    if (stopped.code !== 0) unexpected(`graceful stop ended with ${stopped.code}/${stopped.signal}`);
    const t0 = performance.now();
    const committed = readCommitted(join(dataDir, 'openspot.db'));
    const problems = checkLedger(committed);
    for (const p of problems.slice(0, 10)) unexpected(`store: ${p}`);
    const storeCheckMs = performance.now() - t0;
    failures.push(...ws.failures.slice(0, 20));
    if (ws.messages === 0) failures.push('no WebSocket message arrived');

    // Memory: bounded means it levels off after the warm-up.
    const warmAt = Math.max(10, SECONDS / 5);
    const warm = samples.find((s) => s.seconds >= warmAt) ?? samples[0]!;
    const lastThird = samples.filter((s) => s.seconds >= (2 * SECONDS) / 3);
    const verdicts: string[] = [];
    for (const [name, pickValue] of [
      ['RSS', (s: Sample) => s.rss],
      ['heap', (s: Sample) => s.heapUsed],
    ] as const) {
      const grewLastThird = slope(lastThird, pickValue) * (SECONDS / 3);
      const last = pickValue(end);
      const base = pickValue(warm);
      const stillGrowing = grewLastThird > 0.1 * base;
      // RSS: doubled since the warm-up and still growing. The heap, measured after a full GC, is
      // steady for a bounded load; growth by half (at least 16 MB) that still goes on is a leak
      // even in a run too short to double it.
      const unbounded =
        stillGrowing &&
        (last > 2 * base || (name === 'heap' && last - base > Math.max(0.5 * base, 16 * 2 ** 20)));
      verdicts.push(
        `${name}: start ${mb(pickValue(samples[0]!))}, after warm-up (${warm.seconds.toFixed(0)} s) ${mb(pickValue(warm))}, ` +
          `end ${mb(last)}; trend over the last third ${grewLastThird >= 0 ? '+' : ''}${mb(grewLastThird)} → ${unbounded ? 'GROWING' : 'bounded'}`,
      );
      if (unbounded) failures.push(`${name} grows without bound`);
    }

    const total = counts.place + counts.cancel + counts.read;
    console.log('\nsoak report');
    console.log(`  duration ${elapsed.toFixed(1)} s, seed ${SEED}`);
    console.log(
      `  throughput ${(total / elapsed).toFixed(0)} requests/s: placements ${(counts.place / elapsed).toFixed(0)}/s, ` +
        `cancels ${(counts.cancel / elapsed).toFixed(0)}/s (${counts.canceledLate} already filled: 409), reads ${(counts.read / elapsed).toFixed(0)}/s`,
    );
    console.log(`  latency placements: ${latency.place.summary()}`);
    console.log(`  latency cancels:    ${latency.cancel.summary()}`);
    console.log(`  latency reads:      ${latency.read.summary()}`);
    console.log(
      `  websocket: ${ws.messages} messages (${(ws.messages / elapsed).toFixed(0)}/s) over ${ws.connects} connections; ` +
        [...ws.byEvent].map(([k, v]) => `${k} ${v}`).join(', '),
    );
    console.log(
      `  store at the end: ${committed.orders.length} orders, ${committed.trades.length} trades; checks ${storeCheckMs.toFixed(0)} ms`,
    );
    for (const v of verdicts) console.log(`  ${v}`);
    console.log(
      `  samples (s: RSS/heap MB): ${samples
        .filter((_, i) => i % Math.max(1, Math.floor(samples.length / 12)) === 0 || i === samples.length - 1)
        .map(
          (s) =>
            `${s.seconds.toFixed(0)}: ${(s.rss / 2 ** 20).toFixed(0)}/${(s.heapUsed / 2 ** 20).toFixed(0)}`,
        )
        .join(', ')}`,
    );
    if (failures.length > 0) {
      console.log(`\nFAILED (${failures.length}):\n  ${failures.slice(0, 30).join('\n  ')}`);
      return 1;
    }
    console.log('\nPASSED');
    return 0;
  } finally {
    inspector?.close();
    if (server !== undefined) await server.kill();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    console.error(error);
    process.exit(1);
  },
);
