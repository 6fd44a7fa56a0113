/**
 * bench:stages — where a signed, durable POST /v1/orders spends the server's CPU, in µs per
 * order, stage by stage (the table of docs/performance.md, issue 25).
 *
 * The server (bench/http-target.ts, its own process, with funded traders and a book) is driven by
 * wrk replaying pre-signed orders (the order mix of `bench:http --store postgres`: makers and
 * takers, about half the orders trade). After a warm-up, V8's sampling profiler runs in the
 * server for the measured span (every 100 µs; started and stopped by signal), and the server's
 * CPU time is read from /proc around the same span. Each sample is attributed to a stage by
 * the innermost frame of its stack that belongs to one (STAGES below: the engine's code inside
 * the sequencer counts as the engine, `node:crypto` under the signature check as the signature,
 * and so on); the samples' time per stage, divided by the orders answered 201 in the span, gives
 * µs per order. The stages' sum is the main thread's busy time; the process's CPU (/proc) also
 * counts libuv's and V8's helper threads, and is printed beside it.
 *
 * A bare Fastify POST (the same requests, a route that answers doing nothing) is profiled the
 * same way in the same run, for the ratio the issue's target is stated in.
 *
 *   npm run bench:stages -- [--compare REF] [--store sqlite|postgres] [--seconds 10] [--runs 1]
 *                            [--connections 32] [--warmup 3] [--top 0] [--dist DIR]
 *
 * `--get PATH` profiles a public GET instead (e.g. `--get '/v1/orderbook?ticker_id=BTC/EUR&depth=100'`)
 * beside a bare Fastify GET (`/bare`): the same table, per GET answered 2xx ("order" reads
 * "request" there; issue 25's public GET target is a ratio to the bare GET).
 *
 * `--compare REF` profiles this tree's build and REF's (bench/builds.ts) beside the bare POST, in
 * one run: the before/after table. `--runs N` repeats every target N times (rotated, a fresh
 * server each time) and prints medians. `--dist DIR` profiles a build (DIR = a checkout's
 * dist/src) instead of this checkout's sources through tsx. `--top N` also lists the N functions with the most self
 * time, with their stage (to check the attribution). `--keep DIR` copies every profile into DIR
 * (`N-MODE.cpuprofile`, and the orders it answered in `N-MODE.orders`), for reading callers.
 */
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildRef, buildServer, HERE, type RefBuild } from './builds.js';
import { runWrk, signedOrders, wrkGetScript, wrkScript } from './http-store.js';
import { median, processCpuMicros, startTarget } from './http-support.js';

const option = (name: string): string | undefined => {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1] : undefined;
};
const STORE = option('store') ?? 'sqlite';
const SECONDS = Number(option('seconds') ?? 10);
const CONNECTIONS = Number(option('connections') ?? 32);
const WARMUP = Number(option('warmup') ?? 3);
const TOP = Number(option('top') ?? 0);
const DIST = option('dist');
const COMPARE = option('compare');
const RUNS = Number(option('runs') ?? 1);
/** A public GET's path and query to profile instead of signed orders. */
const GET = option('get');
/** `--keep DIR`: where to copy every profile (and its order count), to read its stacks afterwards. */
const KEEP = option('keep');
/** What the printed figures count: orders, or with `--get` requests (GETs). */
const per = (text: string): string =>
  GET === undefined
    ? text
    : text.replaceAll('bare POST', 'bare GET').replaceAll('orders', 'GETs').replaceAll('order', 'request');

/** A V8 CPU profile (the inspector's Profiler.stop result). */
export interface Profile {
  nodes: Array<{
    id: number;
    callFrame: { functionName: string; url: string; lineNumber: number };
    children?: number[];
  }>;
  startTime: number;
  endTime: number;
  samples: number[];
  timeDeltas: number[];
}

export interface Stage {
  readonly name: string;
  /** Does this frame belong to the stage? (url: a file:// or node: address, may be empty) */
  readonly test: (url: string, fn: string) => boolean;
}

const INSTRUMENTATION = "the bench's commit timer (left out)";

const under =
  (...parts: string[]) =>
  (url: string) =>
    parts.some((p) => url.includes(p));

/**
 * The stages, in the issue's order. A sample goes to the stage of the innermost frame that
 * matches one; a frame that matches several goes to the first listed.
 */
export const STAGES: readonly Stage[] = [
  {
    // http-target.ts's commit timer (process.cpuUsage around each commit): the bench's, not the server's.
    name: INSTRUMENTATION,
    test: under('/bench/http-target'),
  },
  {
    name: 'engine',
    test: under('/src/engine/'),
  },
  {
    name: 'signature (HMAC-SHA512, SHA-256)',
    test: (url, fn) =>
      under('/src/auth/signature', '/src/auth/key-policy', '/src/http/authenticate')(url) ||
      (url === 'node:internal/crypto/hash' && fn !== ''),
  },
  {
    name: 'validation and exact decimal parsing',
    test: under(
      '/src/http/order-input',
      '/src/http/order-controls',
      '/src/http/parse',
      '/src/http/idempotency-key',
      '/src/domain/',
    ),
  },
  {
    name: 'feed, MarketView and candles',
    test: under(
      '/src/sequencer/committed-feed',
      '/src/sequencer/market-view',
      '/src/sequencer/trade-stats',
      '/src/market-data/',
      '/src/ws/',
      '/src/http/v1/public-cache',
    ),
  },
  {
    name: 'group commit',
    test: under('/src/store/', '/better-sqlite3/', '/node_modules/pg', '/node_modules/pg-'),
  },
  {
    name: 'metrics and logging',
    test: under('/src/metrics', '/src/logger', '/src/http/lazy-logger', '/prom-client/', '/pino'),
  },
  {
    name: 'queueing and promises (sequencer, route)',
    test: (url, fn) =>
      under('/src/sequencer/', '/src/http/v1/orders', '/src/http/v1/shared', '/src/http/rejections')(url) ||
      fn === 'processTicksAndRejections' ||
      fn === 'runMicrotasks' ||
      url === 'node:internal/process/task_queues' ||
      url === 'node:internal/timers',
  },
  {
    name: 'body read and JSON parse',
    test: (url, fn) =>
      under(
        '/fastify/lib/contentTypeParser',
        '/fastify/lib/content-type',
        '/secure-json-parse/',
        '/src/http/duplicate-keys',
      )(url) ||
      (fn === 'parse' && url === ''),
  },
  {
    name: 'reply',
    test: (url, fn) =>
      under(
        '/fastify/lib/reply',
        '/fastify/lib/error-serializer',
        '/fast-json-stringify',
        'node:_http_outgoing',
        'node:internal/streams/writable',
        'node:internal/stream_base_commons',
      )(url) ||
      (url === 'node:_http_server' && (fn.startsWith('writeHead') || fn === 'resOnFinish')) ||
      fn === 'writev' ||
      fn === 'writeUtf8String' ||
      fn === 'writeBuffer',
  },
  {
    name: 'Fastify routing, hooks and request objects',
    test: under('/fastify/', '/find-my-way/', '/avvio/', '/light-my-request/', '/src/http/', '/src/chaos/'),
  },
  {
    name: 'HTTP parsing and sockets',
    test: under(
      'node:_http_',
      'node:net',
      'node:internal/streams/',
      'node:events',
      'node:internal/stream_base',
    ),
  },
];

const GC = 'garbage collection';
const NATIVE = '(program): native code not attributed by V8';
const OTHER = 'other JavaScript';

export interface StageTimes {
  /** Stage name → µs of main-thread time in the profile. */
  readonly micros: Map<string, number>;
  /** µs of samples in the profile, idle excluded. */
  readonly busy: number;
  /** Self time per function (stage, function, file) for --top. */
  readonly functions: Map<string, { stage: string; micros: number }>;
}

/** Attributes every sample's time to a stage (see the header). */
export function stageTimes(profile: Profile): StageTimes {
  return stageTimesIn(profile, STAGES);
}

/**
 * stageTimes with the given stages, counting only the samples taken between `fromUs` and `toUs`
 * (the profile's clock: the monotonic clock of process.hrtime, in µs).
 */
export function stageTimesIn(
  profile: Profile,
  stages: readonly Stage[],
  fromUs = Number.NEGATIVE_INFINITY,
  toUs = Number.POSITIVE_INFINITY,
): StageTimes {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const stageOfNode = new Map<number, string | null>();
  const stageOf = (id: number): string | null => {
    const known = stageOfNode.get(id);
    if (known !== undefined) return known;
    const node = byId.get(id)!;
    const { url, functionName } = node.callFrame;
    let stage: string | null = null;
    if (functionName === '(garbage collector)') stage = GC;
    else if (functionName === '(program)') stage = NATIVE;
    else if (functionName === '(idle)') stage = 'idle';
    else {
      stage = stages.find((s) => s.test(url, functionName))?.name ?? null;
      if (stage === null) {
        const up = parent.get(id);
        stage = up === undefined ? null : stageOf(up);
      }
    }
    stageOfNode.set(id, stage);
    return stage;
  };
  const micros = new Map<string, number>();
  const functions = new Map<string, { stage: string; micros: number }>();
  let busy = 0;
  let at = profile.startTime;
  for (let i = 0; i < profile.samples.length; i++) {
    // timeDeltas[i] is the time before sample i; the time a sample stands for is the next delta.
    at += profile.timeDeltas[i]!;
    const dt = profile.timeDeltas[i + 1] ?? 0;
    if (at < fromUs || at > toUs) continue;
    const id = profile.samples[i]!;
    const stage = stageOf(id) ?? OTHER;
    if (stage === 'idle') continue;
    busy += dt;
    micros.set(stage, (micros.get(stage) ?? 0) + dt);
    if (TOP > 0) {
      const { functionName, url, lineNumber } = byId.get(id)!.callFrame;
      const key = `${functionName || '(anonymous)'} ${url.replace(/^.*\/(node_modules|src)\//, '$1/')}:${lineNumber + 1}`;
      const entry = functions.get(key) ?? { stage, micros: 0 };
      entry.micros += dt;
      functions.set(key, entry);
    }
  }
  return { micros, busy, functions };
}

async function waitForFile(path: string, timeoutMs: number): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (!existsSync(path)) {
    if (Date.now() > until) throw new Error(`no profile at ${path} after ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

interface Measured {
  readonly name: string;
  /** Orders answered 201 in the profiled span. */
  readonly orders: number;
  /** Of the span without the profiler. */
  readonly ordersPerSecond: number;
  readonly p99Ms: number;
  /** Server process CPU per order (/proc: every thread), in the span without the profiler. */
  readonly processCpu: number;
  readonly times: StageTimes;
  /** µs per order the main thread sat blocked in SQLite commits (fsync), in the profiled span. */
  readonly commitWait: number;
  /** Orders per SQLite commit in the profiled span (undefined: none timed, e.g. PostgreSQL). */
  readonly perCommit: number | undefined;
  readonly non2xx: number;
}

/** Profiles one target under wrk; SIGTERMs it at the end. */
interface Target {
  readonly name: string;
  readonly mode: 'bare' | 'openspot' | 'openspot-postgres';
  /** A build's dist/src; undefined: this checkout's sources through tsx. */
  readonly dist: string | undefined;
}

let profiles = 0;

async function profileTarget({ name, mode, dist }: Target, dir: string): Promise<Measured> {
  const file = join(dir, `${++profiles}.cpuprofile`);
  const env: Record<string, string> = { BENCH_CPU_PROFILE: file };
  if (dist !== undefined) env.BENCH_SERVER_DIST = dist;
  const target = await startTarget(mode, undefined, env);
  try {
    // The bare target has no traders: it gets the openspot target's requests (any signed body).
    const traders = target.info.traders ?? anyTraders();
    const script = join(dir, `${profiles}.lua`);
    writeFileSync(
      script,
      GET === undefined ? wrkScript(signedOrders(traders)) : wrkGetScript(mode === 'bare' ? '/bare' : GET),
    );
    if (WARMUP > 0) await runWrk(target.info.url, script, WARMUP, CONNECTIONS, 1);
    const pid = target.child.pid!;
    // First without the profiler (its sampling costs the server CPU): the CPU per order and the rate.
    const cpu0 = processCpuMicros(pid)!;
    const plain = await runWrk(target.info.url, script, SECONDS, CONNECTIONS, 1);
    const cpu1 = processCpuMicros(pid)!;
    const plainOrders = Math.max(1, plain.requests - plain.status);
    // Then the same span under the profiler: how that CPU divides among the stages.
    process.kill(pid, 'SIGUSR2');
    await new Promise((resolve) => setTimeout(resolve, 200));
    const result = await runWrk(target.info.url, script, SECONDS, CONNECTIONS, 1);
    process.kill(pid, 'SIGUSR2');
    await waitForFile(file, 60_000);
    const { profile, commits } = JSON.parse(readFileSync(file, 'utf8')) as {
      profile: Profile;
      commits: { commits: number; wallUs: number; cpuUs: number };
    };
    const orders = Math.max(1, result.requests - result.status);
    if (KEEP !== undefined) {
      const kept = join(KEEP, `${profiles}-${mode}`);
      copyFileSync(file, `${kept}.cpuprofile`);
      writeFileSync(`${kept}.orders`, `${orders}\n`);
    }
    return {
      name,
      orders,
      ordersPerSecond: plainOrders / (plain.durationUs / 1e6),
      p99Ms: plain.p99Us / 1000,
      processCpu: (cpu1 - cpu0) / plainOrders,
      times: stageTimes(profile),
      commitWait: Math.max(0, commits.wallUs - commits.cpuUs) / orders,
      perCommit: commits.commits > 0 ? orders / commits.commits : undefined,
      non2xx: plain.status + result.status,
    };
  } finally {
    target.child.kill('SIGTERM');
    if (target.child.exitCode === null) await new Promise((resolve) => target.child.once('exit', resolve));
  }
}

/** Signed requests for the bare target: any keys will do, it checks nothing. */
function anyTraders() {
  return Array.from({ length: 8 }, (_, i) => ({
    apiKey: `bench-key-${i}`,
    apiSecret: Buffer.alloc(64, i + 1).toString('base64'),
  }));
}

/**
 * CPU µs per order of each stage: its share of the main thread's busy samples (the commits' fsync
 * wait taken out of the group commit first: blocked, not computing) times the process's CPU per
 * order measured without the profiler.
 */
export function cpuByStage(run: Measured): Map<string, number> {
  const perOrder = (stage: string) => (run.times.micros.get(stage) ?? 0) / run.orders;
  const busy = run.times.busy / run.orders - run.commitWait - perOrder(INSTRUMENTATION);
  const result = new Map<string, number>();
  for (const stage of STAGE_NAMES) {
    if (stage === INSTRUMENTATION) continue;
    const own = stage === COMMIT ? Math.max(0, perOrder(stage) - run.commitWait) : perOrder(stage);
    result.set(stage, busy > 0 ? (own / busy) * run.processCpu : 0);
  }
  return result;
}

const COMMIT = 'group commit';
const STAGE_NAMES = [...STAGES.map((s) => s.name), GC, NATIVE, OTHER];

const mid = (values: number[]) => median(values);

/** The table: per target, the median over its runs of each figure. */
function report(targets: readonly Target[], runs: readonly Measured[][]): void {
  const cpu = runs.map((list) => list.map(cpuByStage));
  const rows: Record<string, Record<string, string>> = {};
  for (const stage of STAGE_NAMES) {
    if (stage === INSTRUMENTATION) continue;
    rows[stage] = Object.fromEntries(
      targets.map((t, i) => {
        const micros = mid(cpu[i]!.map((m) => m.get(stage)!));
        const share = mid(cpu[i]!.map((m, k) => m.get(stage)! / runs[i]![k]!.processCpu));
        return [t.name, `${micros.toFixed(1)} (${(share * 100).toFixed(0)} %)`];
      }),
    );
  }
  const row = (label: string, value: (list: readonly Measured[]) => string) => {
    rows[label] = Object.fromEntries(targets.map((t, i) => [t.name, value(runs[i]!)]));
  };
  const figure =
    (of: (run: Measured) => number | undefined, digits: number) => (list: readonly Measured[]) => {
      const known = list.map(of).filter((v): v is number => v !== undefined);
      return known.length === 0 ? 'n/a' : mid(known).toFixed(digits);
    };
  row(
    per('= server process CPU per order (/proc)'),
    figure((r) => r.processCpu, 1),
  );
  row(
    per('orders/s (without the profiler)'),
    figure((r) => r.ordersPerSecond, 0),
  );
  row(
    'p99 ms (without the profiler)',
    figure((r) => r.p99Ms, 1),
  );
  row(
    per('main thread busy under the profiler, µs/order'),
    figure((r) => r.times.busy / r.orders, 1),
  );
  row(
    'of which blocked in commit (fsync)',
    figure((r) => r.commitWait, 1),
  );
  row(
    'orders per SQLite commit',
    figure((r) => r.perCommit, 1),
  );
  row('non-2xx answers', (list) => String(list.reduce((sum, r) => sum + r.non2xx, 0)));
  process.stdout.write(per('µs of server CPU per order, by stage (medians over the runs):\n'));
  console.table(rows);
  const bareCpu = mid(runs[0]!.map((r) => r.processCpu));
  for (let i = 1; i < targets.length; i++) {
    const own = mid(runs[i]!.map((r) => r.processCpu));
    const rate = median(runs[i]!.map((r, k) => r.ordersPerSecond / runs[0]![k]!.ordersPerSecond));
    process.stdout.write(
      per(
        `${targets[i]!.name}: ${own.toFixed(1)} µs CPU per order; bare POST CPU / its CPU ${(bareCpu / own).toFixed(2)}; ` +
          `orders/s / bare POSTs/s ${rate.toFixed(2)} (median of the runs)\n`,
      ),
    );
  }
  if (TOP > 0) {
    for (let i = 0; i < targets.length; i++) {
      const run = runs[i]![0]!;
      process.stdout.write(
        per(`\n${targets[i]!.name}: top ${TOP} functions by self time (µs per order, stage; first run)\n`),
      );
      const top = [...run.times.functions.entries()].sort((a, b) => b[1].micros - a[1].micros).slice(0, TOP);
      for (const [fn, { stage, micros }] of top)
        process.stdout.write(`  ${(micros / run.orders).toFixed(2).padStart(7)}  ${fn}  [${stage}]\n`);
    }
  }
}

async function main(): Promise<void> {
  if (STORE !== 'sqlite' && STORE !== 'postgres') {
    process.stderr.write(`--store sqlite or --store postgres, not ${STORE}\n`);
    process.exit(2);
  }
  const mode = STORE === 'sqlite' ? 'openspot' : 'openspot-postgres';
  let ref: RefBuild | undefined;
  const targets: Target[] = [
    { name: GET === undefined ? 'bare Fastify POST' : 'bare Fastify GET', mode: 'bare', dist: undefined },
  ];
  if (COMPARE !== undefined) {
    process.stdout.write(`building this tree and ${COMPARE}…\n`);
    const here = buildServer(HERE);
    ref = buildRef(COMPARE);
    targets.push({ name: `${COMPARE} (${ref.commit})`, mode, dist: ref.dist });
    targets.push({ name: 'this tree', mode, dist: here });
  } else
    targets.push({ name: GET === undefined ? `signed order, ${STORE}` : `GET ${GET}`, mode, dist: DIST });
  process.stdout.write(
    `bench:stages — ${GET === undefined ? 'signed durable POST /v1/orders' : `GET ${GET}`} on ${STORE === 'sqlite' ? 'SQLite (fsync)' : 'PostgreSQL'}` +
      `${COMPARE !== undefined ? ' (builds)' : DIST === undefined ? ' (sources through tsx)' : ` (build at ${DIST})`}, ` +
      `wrk -t 1 -c ${CONNECTIONS}, per run and target: a fresh server, ${WARMUP} s warm-up, ${SECONDS} s measured, ` +
      per(
        `${SECONDS} s profiled (V8 sampling profiler, 100 µs); ${RUNS} run(s), targets rotated; against a bare Fastify POST\n`,
      ),
  );
  const dir = mkdtempSync(join(tmpdir(), 'openspot-stages-'));
  if (KEEP !== undefined) mkdirSync(KEEP, { recursive: true });
  try {
    const runs: Measured[][] = targets.map(() => []);
    for (let round = 0; round < RUNS; round++) {
      for (let k = 0; k < targets.length; k++) {
        const i = (k + round) % targets.length;
        runs[i]!.push(await profileTarget(targets[i]!, dir));
      }
    }
    report(targets, runs);
  } finally {
    rmSync(dir, { recursive: true, force: true });
    ref?.remove();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) await main();
