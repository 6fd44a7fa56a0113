/**
 * bench:ab — the signed order pair (POST /v1/orders + DELETE, as in bench:http) against two
 * checkouts in one run: this working tree and a git ref (checked out in a temporary worktree
 * that shares this node_modules). On a shared, noisy machine a change of a few percent shows only
 * this way: the two trees are measured in alternation, round after round, and the figure is the
 * median over the rounds of new/base. Each measurement gets a fresh server and data directory.
 *
 *   npm run bench:ab -- --ref HEAD~1 [--rounds 3] [--seconds 8] [--connections 64] [--warmup 2]
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import autocannon from 'autocannon';
import {
  cpuFigure,
  type Measurement,
  measureCpu,
  median,
  orderRequests,
  startTarget,
} from './http-support.js';

const option = (name: string): string | undefined => {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1] : undefined;
};
const ref = option('ref');
if (ref === undefined) {
  process.stderr.write('usage: npm run bench:ab -- --ref <git ref> [--rounds N] [--seconds N]\n');
  process.exit(2);
}
const ROUNDS = Number(option('rounds') ?? 3);
const SECONDS = Number(option('seconds') ?? 8);
const CONNECTIONS = Number(option('connections') ?? 64);
const WARMUP = Number(option('warmup') ?? 2);

const here = join(import.meta.dirname, '..');
const git = (...args: string[]) => execFileSync('git', args, { cwd: here, encoding: 'utf8' }).trim();

async function measure(root: string): Promise<Measurement> {
  const target = await startTarget('openspot', root);
  try {
    const options = () => ({
      url: target.info.url,
      connections: CONNECTIONS,
      requests: orderRequests(target.info.traders ?? []),
    });
    if (WARMUP > 0) await autocannon({ ...options(), duration: WARMUP });
    return await measureCpu(target.child.pid, () => autocannon({ ...options(), duration: SECONDS }));
  } finally {
    target.child.kill('SIGTERM');
    await new Promise((resolve) => target.child.once('exit', resolve));
  }
}

async function main(): Promise<void> {
  const base = mkdtempSync(join(tmpdir(), 'openspot-ab-'));
  const commit = git('rev-parse', '--short', ref!);
  git('worktree', 'add', '--detach', base, ref!);
  try {
    symlinkSync(join(here, 'node_modules'), join(base, 'node_modules'));
    process.stdout.write(
      `bench:ab — signed POST + DELETE, ${CONNECTIONS} connections, ${SECONDS} s each, ${ROUNDS} rounds: ` +
        `base ${ref} (${commit}) against this working tree\n`,
    );
    const samples: Record<'base' | 'new', Measurement[]> = { base: [], new: [] };
    for (let round = 0; round < ROUNDS; round++) {
      // Alternate which goes first, so a drift in the machine's load favours neither.
      const order: Array<['base' | 'new', string]> = [
        ['base', base],
        ['new', here],
      ];
      if (round % 2 === 1) order.reverse();
      for (const [name, root] of order) {
        const sample = await measure(root);
        samples[name].push(sample);
        process.stdout.write(
          `  round ${round + 1} ${name.padEnd(4)} ${Math.round(sample.result.requests.average)} req/s, ` +
            `p99 ${sample.result.latency.p99} ms, server ${cpuFigure([sample.serverCpu])} µs/req\n`,
        );
      }
    }
    const rate = (m: Measurement) => m.result.requests.average;
    const ratios = samples.new.map((m, i) => rate(m) / rate(samples.base[i]!));
    const row = (list: Measurement[]) => ({
      'req/s': Math.round(median(list.map(rate))),
      'p99 ms': median(list.map((m) => m.result.latency.p99)),
      'server CPU µs/req': cpuFigure(list.map((m) => m.serverCpu)),
    });
    console.table({ [`base ${commit}`]: row(samples.base), 'this tree': row(samples.new) });
    process.stdout.write(`new / base, median of the per-round ratios: ${median(ratios).toFixed(3)}\n`);
  } finally {
    git('worktree', 'remove', '--force', base);
    rmSync(base, { recursive: true, force: true });
  }
}

await main();
