/**
 * bench:engine-ceiling — how many commands per second one `openspot engine` accepts over NATS
 * with PostgreSQL group commits, fed pre-authenticated commands (no gateway: this process is the
 * gateway's command client, bench/cluster-support.ts starts the engine on a fresh database and
 * stream). Issue 25 §4.
 *
 * Commands: the order mix of `bench:http --store postgres` (8 traders in 4 roles, 0.001 BTC limit
 * orders on BTC/EUR, about half of them trade), each a `placeOrder` sent with CommandClient.submit
 * (the gateway's path: codec, MAC, NATS request/reply), `--in-flight` of them at a time (default
 * 256; the engine's sequencer batches what arrives during a commit). After a warm-up, `--seconds`
 * are measured: commands answered per second, and per command the CPU of the engine process, of
 * the PostgreSQL sessions of the bench database, of the NATS server (shared with whatever else uses
 * it) and of this process (the client: it shares the two cores).
 *
 * With `--profile`, V8's sampling profiler runs in the engine for the measured span (a preloaded
 * module, bench/profile-on-signal.mjs, started and stopped by SIGUSR2) and its samples are
 * attributed to stages as in
 * bench:stages (bench/order-stages.ts), plus the cluster's own: command codec and MAC, NATS client,
 * batch publication to the stream.
 *
 *   npm run bench:engine-ceiling -- [--seconds 15] [--in-flight 256] [--warmup 5] [--profile] [--top N]
 *                                   [--built] [--compare REF [--rounds 3]]
 *
 * `--built` runs the engine from dist/ (`npx tsc -p tsconfig.build.json` first), as installed.
 *
 * `--compare REF` builds REF in a temporary worktree and this checkout into dist/ (bench/builds.ts)
 * and measures both, `--rounds` times each, interleaved (REF first in odd rounds, this checkout
 * first in even ones), each round on a fresh engine, database and stream; the command client is
 * each build's own (its wire format), loaded from that build. It prints every round, the medians
 * and the ratios of this checkout's to REF's.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { connect } from '@nats-io/transport-node';
import pg from 'pg';
import type { ClusterKey } from '../src/cluster/cluster-key.js';
import type { CommandClient } from '../src/cluster/command-client.js';
import type { subjects } from '../src/cluster/settings.js';
import type { MarketId, Price, UserId, Volume } from '../src/domain/types.js';
import type { PlaceOrder } from '../src/engine/types.js';
import { buildRef, buildServer, HERE } from './builds.js';
import {
  type CliForm,
  cleanup,
  median,
  NATS_URL,
  natsServerPid,
  processCpuMs,
  runBench,
  startBenchCluster,
  trader,
} from './cluster-support.js';
import { processCpuMicros } from './http-support.js';
import { STAGES, type Stage, stageTimesIn } from './order-stages.js';

const { values } = parseArgs({
  options: {
    seconds: { type: 'string', default: '15' },
    warmup: { type: 'string', default: '5' },
    'in-flight': { type: 'string', default: '256' },
    profile: { type: 'boolean', default: false },
    built: { type: 'boolean', default: false },
    compare: { type: 'string' },
    rounds: { type: 'string', default: '3' },
    // Read by bench/order-stages.ts: list the N functions with the most self time.
    top: { type: 'string', default: '0' },
  },
});
const SECONDS = Number(values.seconds);
const WARMUP = Number(values.warmup);
const IN_FLIGHT = Number(values['in-flight']);

/** The engine's own stages, ahead of bench:stages' (whose HTTP rows do not apply here). */
const CLUSTER_STAGES: readonly Stage[] = [
  {
    name: 'command codec and MAC (src/cluster)',
    test: (url) =>
      [
        '/src/cluster/codec',
        '/src/cluster/exact-json',
        '/src/cluster/cluster-key',
        '/src/cluster/command-service',
      ].some((p) => url.includes(p)),
  },
  {
    name: 'batch publication (src/cluster/batch-stream)',
    test: (url) => url.includes('/src/cluster/batch-stream'),
  },
  { name: 'NATS client', test: (url) => url.includes('/@nats-io/') },
];

async function backendCpuMicros(adminUrl: string, database: string): Promise<number> {
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  try {
    const { rows } = await client.query<{ pid: number }>(
      'SELECT pid FROM pg_stat_activity WHERE datname = $1',
      [database],
    );
    return rows.reduce((sum, { pid }) => sum + (processCpuMicros(pid) ?? 0), 0);
  } finally {
    await client.end();
  }
}

/** The command client of one version of the server: its modules, from its sources or its build. */
interface ClientModules {
  readonly ClusterKey: typeof ClusterKey;
  readonly CommandClient: typeof CommandClient;
  readonly subjects: typeof subjects;
}

/** The client modules under `root`: this checkout's src/ (through tsx) or a build's dist/src. */
async function clientModules(root: string): Promise<ClientModules> {
  const load = (path: string) => import(pathToFileURL(join(root, path)).href);
  return {
    ClusterKey: (await load('cluster/cluster-key.js')).ClusterKey,
    CommandClient: (await load('cluster/command-client.js')).CommandClient,
    subjects: (await load('cluster/settings.js')).subjects,
  };
}

/** One measured span's figures (per command unless said). */
interface Figures {
  readonly rate: number;
  readonly refused: number;
  readonly engine: number;
  readonly backends: number;
  readonly nats: number;
  readonly client: number;
  readonly perCommit: number;
  readonly commitMs: number;
}

const FIGURE_ROWS: readonly [keyof Figures, string][] = [
  ['rate', 'commands/s accepted'],
  ['refused', 'refused (engine said no)'],
  ['engine', 'engine process CPU µs/command'],
  ['backends', 'PostgreSQL sessions CPU µs/command'],
  ['nats', 'NATS server CPU µs/command (shared server)'],
  ['client', 'this client CPU µs/command'],
  ['perCommit', 'commands per group commit'],
  ['commitMs', 'group commit ms (mean, PostgreSQL round trip included)'],
];

async function main(): Promise<void> {
  if (values.compare !== undefined) {
    await compare(values.compare, Number(values.rounds));
    return;
  }
  const form: CliForm = values.built ? 'built' : 'source';
  const figures = await measure(
    form,
    await clientModules(join(HERE, values.built ? 'dist/src' : 'src')),
    values.profile,
  );
  process.stdout.write(
    `bench:engine-ceiling — one openspot engine (${values.built ? 'built' : 'sources through tsx'}) on PostgreSQL, ` +
      `placeOrder over NATS from this process, ${IN_FLIGHT} in flight, ${WARMUP} s warm-up, ${SECONDS} s measured\n`,
  );
  printFigures(figures);
  await figures.printProfile?.();
}

function printFigures(f: Figures): void {
  console.table(
    Object.fromEntries(
      FIGURE_ROWS.map(([key, label]) => [
        label,
        key === 'rate' || key === 'refused' ? Math.round(f[key]) : f[key].toFixed(key === 'commitMs' ? 2 : 1),
      ]),
    ),
  );
}

/** `--compare REF`: REF's build and this checkout's, measured in interleaved rounds. */
async function compare(ref: string, rounds: number): Promise<void> {
  const before = buildRef(ref);
  cleanup.after(() => before.remove());
  const after = { commit: 'this checkout', dist: buildServer(HERE) };
  const builds = [before, after];
  const results = new Map<string, Figures[]>(builds.map((b) => [b.commit, []]));
  for (let round = 1; round <= rounds; round++) {
    const order = round % 2 === 1 ? builds : [...builds].reverse();
    for (const build of order) {
      const figures = await measure(
        { main: join(build.dist, 'cli', 'main.js') },
        await clientModules(build.dist),
        false,
      );
      results.get(build.commit)!.push(figures);
      process.stdout.write(
        `round ${round}, ${build.commit}: ${Math.round(figures.rate)} commands/s, engine ${figures.engine.toFixed(1)} µs/command\n`,
      );
    }
  }
  process.stdout.write(
    `bench:engine-ceiling --compare ${ref} — one openspot engine (built) on PostgreSQL, placeOrder over NATS from ` +
      `this process (each build's own command client), ${IN_FLIGHT} in flight, ${WARMUP} s warm-up, ${SECONDS} s ` +
      `measured, ${rounds} rounds interleaved; medians:\n`,
  );
  const medianOf = (commit: string, key: keyof Figures) => median(results.get(commit)!.map((f) => f[key]));
  console.table(
    Object.fromEntries(
      FIGURE_ROWS.map(([key, label]) => {
        const a = medianOf(before.commit, key);
        const b = medianOf(after.commit, key);
        return [
          label,
          {
            [before.commit]: Number(a.toFixed(1)),
            [after.commit]: Number(b.toFixed(1)),
            ratio: a === 0 ? '' : (b / a).toFixed(2),
          },
        ];
      }),
    ),
  );
}

/** One engine on a fresh database and stream, fed by `client` for the measured span. */
async function measure(
  form: CliForm,
  modules: ClientModules,
  profile: boolean,
): Promise<Figures & { printProfile?: () => Promise<void> }> {
  const { ClusterKey, CommandClient, subjects } = modules;
  const profileDir = profile ? mkdtempSync(join(tmpdir(), 'openspot-ceiling-prof-')) : undefined;
  if (profileDir !== undefined) cleanup.after(() => rmSync(profileDir, { recursive: true, force: true }));
  const profileFile = profileDir === undefined ? undefined : join(profileDir, 'engine.cpuprofile');
  const cluster = await startBenchCluster(
    'CEILING',
    profileFile === undefined
      ? {}
      : {
          // The unit's NODE_OPTIONS (deploy/systemd/openspot-engine.service), which this replaces,
          // and the profiler: without the unit's semi-space the profile would show another GC.
          NODE_OPTIONS: `--max-semi-space-size=64 --import ${pathToFileURL(join(import.meta.dirname, 'profile-on-signal.mjs')).href}`,
          BENCH_CPU_PROFILE: profileFile,
        },
    form,
  );
  const { engine, adminToken, env } = cluster;
  const enginePid = engine.child.pid!;
  const databaseUrl = new URL(env.DATABASE_URL!);
  const database = databaseUrl.pathname.slice(1);
  const adminUrl = process.env.TEST_DATABASE_URL!;

  const markets = (await (
    await fetch(`${engine.url}/admin/v1/markets`, { headers: { authorization: `Bearer ${adminToken}` } })
  ).json()) as { data: Array<{ id: number; wsname: string; pair_decimals: number; lot_decimals: number }> };
  const market = markets.data.find((m) => m.wsname === 'BTC/EUR');
  if (market === undefined) throw new Error('no BTC/EUR market in the default catalogue');
  const traders = [];
  for (let i = 0; i < 8; i++)
    traders.push(await trader(engine.url, adminToken, { EUR: '100000000', BTC: '10000' }));
  const ticks = (price: number) => (price * 10 ** market.pair_decimals) as Price;
  const ROLES = [
    ['buy', 29990],
    ['sell', 30010],
    ['buy', 30010],
    ['sell', 29990],
  ] as const;
  const commands: PlaceOrder[] = traders.map((t, i) => {
    const [side, price] = ROLES[i % ROLES.length]!;
    return {
      kind: 'placeOrder',
      userId: t.userId as UserId,
      marketId: market.id as MarketId,
      side,
      type: 'limit',
      price: ticks(price),
      volume: (0.001 * 10 ** market.lot_decimals) as Volume,
    };
  });

  const nc = await connect({ servers: NATS_URL });
  const client = new CommandClient(nc, {
    key: new ClusterKey(Buffer.from(env.CLUSTER_KEY!, 'base64')),
    subject: subjects(env.OPENSPOT_SUBJECT_PREFIX!).commands,
    timeoutMs: 30_000,
  });

  let answered = 0;
  let refused = 0;
  let running = true;
  let next = 0;
  const worker = async () => {
    while (running) {
      const result = await client.submit(commands[next++ % commands.length]!);
      if (result.ok) answered++;
      else refused++;
    }
  };
  const workers = Array.from({ length: IN_FLIGHT }, worker);
  await new Promise((resolve) => setTimeout(resolve, WARMUP * 1000));

  const natsPid = natsServerPid();
  /** The engine's group commits so far (count, seconds), from its /metrics. */
  const commits = async () => {
    const text = await (
      await fetch(`${engine.url}/metrics`, { headers: { authorization: `Bearer ${adminToken}` } })
    ).text();
    const value = (pattern: RegExp) => Number(text.match(pattern)?.[1] ?? Number.NaN);
    return {
      count: value(/^openspot_commit_duration_seconds_count (\S+)$/m),
      seconds: value(/^openspot_commit_duration_seconds_sum (\S+)$/m),
    };
  };
  const reading = async () => ({
    commits: await commits(),
    at: performance.now(),
    mono: process.hrtime.bigint(),
    answered,
    engine: processCpuMs(enginePid) * 1000,
    backends: await backendCpuMicros(adminUrl, database),
    nats: natsPid === undefined ? Number.NaN : processCpuMs(natsPid) * 1000,
    client: process.cpuUsage(),
  });
  const start = await reading();
  if (profileFile !== undefined) process.kill(enginePid, 'SIGUSR2');
  await new Promise((resolve) => setTimeout(resolve, SECONDS * 1000));
  if (profileFile !== undefined) process.kill(enginePid, 'SIGUSR2');
  const end = await reading();
  running = false;
  await Promise.all(workers);

  const n = end.answered - start.answered;
  const seconds = (end.at - start.at) / 1000;
  const per = (a: number, b: number) => (b - a) / n;
  const clientCpu = process.cpuUsage(start.client);
  await nc.close();
  const commitCount = end.commits.count - start.commits.count;
  const figures: Figures = {
    rate: n / seconds,
    refused,
    engine: per(start.engine, end.engine),
    backends: per(start.backends, end.backends),
    nats: per(start.nats, end.nats),
    client: (clientCpu.user + clientCpu.system) / n,
    perCommit: n / commitCount,
    commitMs: ((end.commits.seconds - start.commits.seconds) / commitCount) * 1000,
  };
  // Without a profile to wait for, the engine stops now (its database and stream go at the end):
  // the next round has the cores to itself.
  if (profileFile === undefined) {
    await cluster.engine.stop();
    return figures;
  }

  const printProfile = async () => {
    for (let waited = 0; !existsSync(profileFile) && waited < 60_000; waited += 100)
      await new Promise((resolve) => setTimeout(resolve, 100));
    if (!existsSync(profileFile)) {
      process.stdout.write('no engine profile was written\n');
      return;
    }
    const profile = JSON.parse(readFileSync(profileFile, 'utf8'));
    const times = stageTimesIn(profile, [...CLUSTER_STAGES, ...STAGES]);
    const busy = times.busy / n;
    process.stdout.write(
      `engine main thread, µs per command by stage (profile of the measured span; busy ${busy.toFixed(1)} µs/command ` +
        'of wall time, which on a loaded machine includes time waiting for a core):\n',
    );
    const rows = [...times.micros.entries()]
      .sort((a, b) => b[1] - a[1])
      .map(([stage, micros]) => ({
        stage,
        'µs/command': (micros / n).toFixed(1),
        share: `${((micros / times.busy) * 100).toFixed(0)} %`,
      }));
    console.table(rows);
    const top = [...times.functions.entries()]
      .sort((a, b) => b[1].micros - a[1].micros)
      .slice(0, Number(values.top));
    for (const [fn, { stage, micros }] of top)
      process.stdout.write(`  ${(micros / n).toFixed(2).padStart(7)}  ${fn}  [${stage}]\n`);
  };
  return { ...figures, printProfile };
}

await runBench(main);
