/**
 * bench:http --compare REF — this working tree against a git ref, both built (bench/builds.ts:
 * the ref in a temporary worktree sharing node_modules), each measured against a bare Fastify
 * route in the same run, so a regression shows as a ratio.
 *
 * Per round, in an order rotated round by round so a drift in the machine's load favours no
 * target: the bare route (POST /v1/orders answering 201 doing nothing, and GET /bare), REF's
 * server and this tree's (signed durable POST /v1/orders, and GET /v1/orderbook). Every server
 * is started once, in its own process, with a fresh data directory (or PostgreSQL database), 8
 * funded traders and a book of 200 resting orders. The load generator is wrk replaying
 * pre-signed orders (the order mix of `bench:http --store postgres`: bench/http-store.ts), so the
 * server gets the cores, not a signer.
 *
 * Printed per target: orders (or GETs) per second, p99, the server's CPU per request (/proc),
 * the median of the per-round ratios to the bare route, and new / REF (per-round ratios of the
 * rates, and of the CPU per order).
 *
 *   npm run bench:http -- --compare REF [--store sqlite|postgres] [--seconds 8] [--runs 3]
 *                         [--connections 32] [--warmup 3] [--only gets|orders] [--gets PATH,PATH…]
 *
 * The GET rows are, by default, `GET /v1/orderbook?ticker_id=BTC/EUR&depth=100` and
 * `GET /v1/tickers`, each against the bare GET of the same round; `--gets` names others
 * (comma-separated paths with their query strings, e.g.
 * `--gets '/v1/orderbook?ticker_id=BTC/EUR&depth=100,/v1/markets,/v1/ohlc?ticker_id=BTC/EUR'`).
 * `--only gets` leaves the signed-order rows out (their servers then serve GETs only, so the
 * GETs are measured on servers that have not handled orders), `--only orders` the GET rows.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildRef, buildServer, HERE } from './builds.js';
import { ORDER_MIX, runWrk, signedOrders, type WrkResult, wrkGetScript, wrkScript } from './http-store.js';
import { median, processCpuMicros, startTarget } from './http-support.js';

const option = (name: string): string | undefined => {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1] : undefined;
};
const SECONDS = Number(option('seconds') ?? 8);
const RUNS = Number(option('runs') ?? 3);
const CONNECTIONS = Number(option('connections') ?? 32);
const WARMUP = Number(option('warmup') ?? 3);
const STORE = option('store') ?? 'sqlite';
const ONLY = option('only');
const GETS = (option('gets') ?? '/v1/orderbook?ticker_id=BTC/EUR&depth=100,/v1/tickers')
  .split(',')
  .filter((path) => path !== '');

interface Measurement {
  readonly name: string;
  readonly url: string;
  readonly pid: number;
  readonly script: string;
}

interface Sample {
  readonly perSecond: number;
  readonly p99Ms: number;
  /** Server CPU per answered request, µs (/proc). */
  readonly cpu: number;
  readonly failed: number;
}

async function sample(m: Measurement, seconds: number): Promise<Sample> {
  const cpu0 = processCpuMicros(m.pid)!;
  const result: WrkResult = await runWrk(m.url, m.script, seconds, CONNECTIONS, 1);
  const cpu1 = processCpuMicros(m.pid)!;
  const ok = Math.max(1, result.requests - result.status);
  return {
    perSecond: ok / (result.durationUs / 1e6),
    p99Ms: result.p99Us / 1000,
    cpu: (cpu1 - cpu0) / ok,
    failed: result.status + result.connect + result.read + result.write + result.timeout,
  };
}

export async function compareBench(ref: string): Promise<void> {
  if (STORE !== 'sqlite' && STORE !== 'postgres') throw new Error(`--store sqlite or postgres, not ${STORE}`);
  if (ONLY !== undefined && ONLY !== 'gets' && ONLY !== 'orders')
    throw new Error(`--only gets or --only orders, not ${ONLY}`);
  process.stdout.write(`bench:http --compare ${ref}: building this tree and ${ref}…\n`);
  const hereDist = buildServer(HERE);
  const base = buildRef(ref);
  const dir = mkdtempSync(join(tmpdir(), 'openspot-compare-'));
  const mode = STORE === 'sqlite' ? 'openspot' : 'openspot-postgres';
  const bare = await startTarget('bare');
  const old = await startTarget(mode, undefined, { BENCH_SERVER_DIST: base.dist });
  const now = await startTarget(mode, undefined, { BENCH_SERVER_DIST: hereDist });
  try {
    process.stdout.write(
      `bench:http --compare — ${STORE === 'sqlite' ? 'SQLite (fsync)' : 'PostgreSQL'}, wrk -t 1 -c ${CONNECTIONS}, ` +
        `${SECONDS} s per measurement, ${RUNS} rotated rounds (medians of per-round ratios), ${WARMUP} s warm-up each\n` +
        `REF ${ref} = ${base.commit}; this tree = the working tree at ${HERE}\norder mix: ${ORDER_MIX}\n`,
    );
    let scripts = 0;
    const script = (_name: string, text: string) => {
      const path = join(dir, `${++scripts}.lua`);
      writeFileSync(path, text);
      return path;
    };
    const orders = (name: string, target: typeof old) => ({
      name,
      url: target.info.url,
      pid: target.child.pid!,
      script: script(name, wrkScript(signedOrders(target.info.traders ?? []))),
    });
    const gets = (name: string, target: typeof old, path: string) => ({
      name,
      url: target.info.url,
      pid: target.child.pid!,
      script: script(name, wrkGetScript(path)),
    });
    // Each group: its baseline (the bare route) first, then REF's and this tree's servers.
    const groups: Array<{ label: string; rows: Measurement[] }> = [];
    if (ONLY !== 'gets')
      groups.push({
        label: 'signed orders',
        rows: [
          {
            name: 'bare Fastify POST',
            url: bare.info.url,
            pid: bare.child.pid!,
            script: script('bare-post', wrkScript(signedOrders(now.info.traders ?? []))),
          },
          orders(`REF ${base.commit}: signed order`, old),
          orders('this tree: signed order', now),
        ],
      });
    if (ONLY !== 'orders') {
      const bareGet = {
        name: 'bare Fastify GET',
        url: bare.info.url,
        pid: bare.child.pid!,
        script: script('bare-get', wrkGetScript('/bare')),
      };
      for (const [k, path] of GETS.entries())
        groups.push({
          label: `GET ${path}`,
          // One bare GET row serves every GET group as their baseline (measured once per round).
          rows: [
            ...(k === 0 ? [bareGet] : []),
            gets(`REF ${base.commit}: GET ${path}`, old, path),
            gets(`this tree: GET ${path}`, now, path),
          ],
        });
    }
    const measurements: Measurement[] = groups.flatMap((g) => g.rows);
    const baselineOf = (i: number): number => {
      const name = measurements[i]!.name;
      return measurements.findIndex((m) =>
        name.includes(': GET ') || name === 'bare Fastify GET'
          ? m.name === 'bare Fastify GET'
          : m.name === 'bare Fastify POST',
      );
    };
    if (WARMUP > 0) for (const m of measurements) await sample(m, WARMUP);
    const samples: Sample[][] = measurements.map(() => []);
    for (let round = 0; round < RUNS; round++) {
      for (let k = 0; k < measurements.length; k++) {
        const i = (k + round) % measurements.length;
        const s = await sample(measurements[i]!, SECONDS);
        samples[i]!.push(s);
        process.stdout.write(
          `  round ${round + 1} ${measurements[i]!.name}: ${Math.round(s.perSecond)}/s, p99 ${s.p99Ms.toFixed(1)} ms, ` +
            `server ${s.cpu.toFixed(1)} µs CPU/request\n`,
        );
      }
    }
    const ratio = (i: number, j: number, of: (s: Sample) => number) =>
      median(samples[i]!.map((s, round) => of(s) / of(samples[j]![round]!)));
    const rate = (s: Sample) => s.perSecond;
    const cpu = (s: Sample) => s.cpu;
    const rows = measurements.map((m, i) => {
      const baseline = baselineOf(i);
      return {
        target: m.name,
        'req/s': Math.round(median(samples[i]!.map(rate))),
        'p99 ms': median(samples[i]!.map((s) => s.p99Ms)).toFixed(1),
        'server CPU µs/req': median(samples[i]!.map(cpu)).toFixed(1),
        'rate vs bare': ratio(i, baseline, rate).toFixed(2),
        'bare CPU / CPU': ratio(baseline, i, cpu).toFixed(2),
        'non-2xx or errors': samples[i]!.reduce((sum, s) => sum + s.failed, 0),
      };
    });
    console.table(rows);
    const newOverRef = groups.map((g) => {
      const ref = measurements.indexOf(g.rows[g.rows.length - 2]!);
      const here = measurements.indexOf(g.rows[g.rows.length - 1]!);
      return `${g.label}: rate ${ratio(here, ref, rate).toFixed(3)}, CPU per request ${ratio(here, ref, cpu).toFixed(3)}`;
    });
    process.stdout.write(`new / REF (medians of the per-round ratios):\n  ${newOverRef.join('\n  ')}\n`);
  } finally {
    for (const target of [bare, old, now]) {
      target.child.kill('SIGTERM');
      if (target.child.exitCode === null) await new Promise((resolve) => target.child.once('exit', resolve));
    }
    rmSync(dir, { recursive: true, force: true });
    base.remove();
  }
}
