/**
 * bench:order-cpu — CPU time per signed POST /v1/orders inside the server process, this tree
 * against a git ref, in one run. Where bench:ab measures requests per second (which a shared,
 * busy machine moves by more than the few percent looked for), this measures the process's own
 * CPU time (process.cpuUsage) per request, which other jobs on the machine disturb far less.
 *
 * Each measurement is a fresh server in its own process (the checkout's own code, through its
 * test fixture) with SQLITE_SYNCHRONOUS=normal (no fsync: the store's disk wait is not what is
 * measured), 8 funded traders and the order mix of `bench:http --store postgres` (makers and
 * takers, about half the orders trade). Requests go through Fastify's `inject` (every hook, the
 * signature check, validation, the sequencer and the commit; not the socket layer), in waves of
 * 64 concurrent requests so that batches form as under load. Trees alternate, round after round;
 * the figure is the median of the per-round ratios.
 *
 *   npm run bench:order-cpu -- --ref 10eeddb [--rounds 5] [--waves 300]
 */
import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { median } from './http-support.js';

const option = (name: string): string | undefined => {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1] : undefined;
};
const here = join(import.meta.dirname, '..');

interface Sample {
  /** Server-process CPU (user + system) per request, µs. */
  readonly cpuUsPerReq: number;
}

const ROLES = [
  ['buy', '29990'],
  ['sell', '30010'],
  ['buy', '30010'],
  ['sell', '29990'],
] as const;

/** The child: one server of the checkout at `root`, measured. Prints one JSON line. */
async function child(root: string, waves: number): Promise<void> {
  const fixture = await import(pathToFileURL(join(root, 'test/support/server-fixture.ts')).href);
  const signer = await import(pathToFileURL(join(root, 'src/client/sign.ts')).href);
  const dir = mkdtempSync(join(tmpdir(), 'openspot-order-cpu-'));
  const t = await fixture.startTestServer({ SQLITE_SYNCHRONOUS: 'normal' }, dir);
  try {
    const requests: Array<{
      method: 'POST';
      url: string;
      payload: string;
      headers: Record<string, string>;
    }> = [];
    for (let i = 0; i < 8; i++) {
      const trader = await t.trader({ EUR: '100000000', BTC: '10000' });
      const [direction, price] = ROLES[i % ROLES.length]!;
      const body = JSON.stringify({
        order_direction: direction,
        order_type: 'limit',
        pair: 'BTC/EUR',
        volume: '0.001',
        price,
      });
      requests.push({
        method: 'POST' as const,
        url: '/v1/orders',
        payload: body,
        headers: {
          'content-type': 'application/json',
          'x-api-key': trader.apiKey,
          'x-api-sign': signer.signRequest('POST', body, trader.apiSecret),
        },
      });
    }
    const app = t.server.app;
    const wave = async () => {
      const answers = await Promise.all(
        Array.from({ length: 64 }, (_, i) => app.inject(requests[i % requests.length])),
      );
      for (const a of answers) if (a.statusCode !== 201) throw new Error(`${a.statusCode} ${a.body}`);
    };
    for (let i = 0; i < 50; i++) await wave(); // warm-up: JIT, caches
    const before = process.cpuUsage();
    for (let i = 0; i < waves; i++) await wave();
    const used = process.cpuUsage(before);
    const sample: Sample = { cpuUsPerReq: (used.user + used.system) / (waves * 64) };
    process.stdout.write(`${JSON.stringify(sample)}\n`);
  } finally {
    await t.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

function measure(root: string, waves: number): Promise<Sample> {
  return new Promise((resolve, reject) => {
    const run = spawn(
      process.execPath,
      ['--import', 'tsx', join(here, 'bench', 'order-cpu.ts'), '--child', root, '--waves', String(waves)],
      { cwd: root, stdio: ['ignore', 'pipe', 'inherit'] },
    );
    let out = '';
    run.stdout.on('data', (chunk) => {
      out += chunk;
    });
    run.on('error', reject);
    run.on('exit', (code) => {
      const line = out.split('\n').find((l) => l.startsWith('{'));
      if (code !== 0 || line === undefined) reject(new Error(`measurement in ${root} failed (${code})`));
      else resolve(JSON.parse(line) as Sample);
    });
  });
}

async function main(): Promise<void> {
  const ref = option('ref');
  if (ref === undefined) {
    process.stderr.write('usage: npm run bench:order-cpu -- --ref <git ref> [--rounds N] [--waves N]\n');
    process.exit(2);
  }
  const rounds = Number(option('rounds') ?? 5);
  const waves = Number(option('waves') ?? 300);
  const git = (...args: string[]) => execFileSync('git', args, { cwd: here, encoding: 'utf8' }).trim();
  const base = mkdtempSync(join(tmpdir(), 'openspot-order-cpu-ref-'));
  const commit = git('rev-parse', '--short', ref);
  git('worktree', 'add', '--detach', base, ref);
  try {
    symlinkSync(join(here, 'node_modules'), join(base, 'node_modules'));
    process.stdout.write(
      `bench:order-cpu — server CPU per signed POST /v1/orders (inject, waves of 64, ${waves} waves, SQLITE_SYNCHRONOUS=normal), ` +
        `${rounds} alternating rounds: base ${ref} (${commit}) against this working tree\n`,
    );
    const samples: Record<'base' | 'new', Sample[]> = { base: [], new: [] };
    for (let round = 0; round < rounds; round++) {
      const order: Array<['base' | 'new', string]> = [
        ['base', base],
        ['new', here],
      ];
      if (round % 2 === 1) order.reverse();
      for (const [name, root] of order) {
        const sample = await measure(root, waves);
        samples[name].push(sample);
        process.stdout.write(
          `  round ${round + 1} ${name.padEnd(4)} ${sample.cpuUsPerReq.toFixed(1)} µs CPU/request\n`,
        );
      }
    }
    const ratios = samples.new.map((s, i) => s.cpuUsPerReq / samples.base[i]!.cpuUsPerReq);
    process.stdout.write(
      `median CPU per request: base ${median(samples.base.map((s) => s.cpuUsPerReq)).toFixed(1)} µs, ` +
        `this tree ${median(samples.new.map((s) => s.cpuUsPerReq)).toFixed(1)} µs; ` +
        `new / base, median of the per-round ratios: ${median(ratios).toFixed(3)} ` +
        `(per round: ${ratios.map((r) => r.toFixed(2)).join(', ')})\n`,
    );
  } finally {
    git('worktree', 'remove', '--force', base);
    rmSync(base, { recursive: true, force: true });
  }
}

if (process.argv.includes('--child')) {
  await child(option('child')!, Number(option('waves') ?? 300));
  process.exit(0);
} else {
  await main();
}
