/**
 * `npm start` as a supervisor (systemd, `docker stop`, a process manager) runs it: the signal goes
 * to the top process only, which is npm. SIGTERM to npm must stop the server cleanly and leave no
 * process of the tree behind — no orphaned server still listening (and trading). And in production
 * `npm start` runs the build that is there: it does not rebuild on every start.
 *
 * Linux only: the process tree is read from /proc.
 */
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { after, before, test } from 'node:test';

const REPO_ROOT = join(import.meta.dirname, '..', '..');
const skip = process.platform !== 'linux' ? 'reads the process tree from /proc (Linux only)' : false;

let dir: string;
const started: ChildProcess[] = [];

before(() => {
  dir = mkdtempSync(join(tmpdir(), 'openspot-npm-start-'));
});

after(() => {
  // Whatever the outcome, nothing of ours survives the test: kill each started group.
  for (const child of started) {
    try {
      if (child.pid !== undefined) process.kill(-child.pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
  rmSync(dir, { recursive: true, force: true });
});

interface Stat {
  readonly pid: number;
  readonly ppid: number;
  readonly pgid: number;
}

/** Every process on the machine: pid, parent and process group (fields 4 and 5 of /proc/pid/stat). */
function processes(): Stat[] {
  const list: Stat[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      // The command name (field 2) may hold spaces and parentheses: split after its closing one.
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (fields[0] === 'Z') continue; // a zombie is already dead, only not yet reaped
      list.push({ pid: Number(name), ppid: Number(fields[1]), pgid: Number(fields[2]) });
    } catch {
      // exited while we were reading
    }
  }
  return list;
}

function descendants(root: number): number[] {
  const all = processes();
  const found: number[] = [];
  const queue = [root];
  while (queue.length > 0) {
    const parent = queue.shift()!;
    for (const p of all)
      if (p.ppid === parent) {
        found.push(p.pid);
        queue.push(p.pid);
      }
  }
  return found;
}

function alive(pid: number): boolean {
  return processes().some((p) => p.pid === pid);
}

interface NpmStart {
  readonly child: ChildProcess;
  readonly url: string;
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  output(): string;
}

/** `npm start` in the repository, in its own process group, until the server answers /readyz. */
async function npmStart(env: Record<string, string>): Promise<NpmStart> {
  const dataDir = mkdtempSync(join(dir, 'data-'));
  const child = spawn('npm', ['start'], {
    cwd: REPO_ROOT,
    env: {
      PATH: process.env.PATH ?? '',
      HOME: dir,
      // npm itself stays offline: no update check against the registry.
      npm_config_update_notifier: 'false',
      PORT: '0',
      DATA_DIR: dataDir,
      SIMULATOR: 'off',
      DEMO: 'off',
      LOG_LEVEL: 'info',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
    // Its own group, so the test can find and (afterwards) clean up the whole tree; the signal
    // under test still goes to npm's pid alone.
    detached: true,
  });
  started.push(child);
  const lines: string[] = [];
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('exit', (code, signal) => resolve({ code, signal })),
  );
  child.stderr!.on('data', (chunk: Buffer) => lines.push(String(chunk)));
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`npm start: no server within 60 s\n${lines.join('\n')}`)),
      60_000,
    );
    createInterface({ input: child.stdout! }).on('line', (line) => {
      lines.push(line);
      if (!line.startsWith('{')) return; // npm's own "> openspot@… start" header
      const entry = JSON.parse(line) as { msg?: string; url?: string };
      if (entry.msg === 'OpenSpot is listening' && entry.url !== undefined) {
        clearTimeout(timer);
        resolve(entry.url);
      }
    });
    void exited.then(({ code, signal }) => {
      clearTimeout(timer);
      reject(new Error(`npm start exited (${code ?? signal}) before serving\n${lines.join('\n')}`));
    });
  });
  const ready = await fetch(`${url}/readyz`);
  assert.equal(ready.status, 200, 'the server is ready');
  return { child, url, exited, output: () => lines.slice(-30).join('\n') };
}

async function within<T>(ms: number, what: string, promise: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} within ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/** SIGTERM to npm's pid only; then npm exits 0, no process of its tree remains, the port is closed. */
async function sigtermLeavesNothing(run: NpmStart): Promise<void> {
  const npmPid = run.child.pid!;
  const tree = descendants(npmPid);
  assert.ok(tree.length > 0, 'npm started the server as a child process');

  process.kill(npmPid, 'SIGTERM');
  const { code, signal } = await within(15_000, 'npm did not exit after SIGTERM', run.exited);

  const deadline = Date.now() + 10_000;
  let left = tree.filter(alive);
  while (left.length > 0 && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 100));
    left = tree.filter(alive);
  }
  assert.deepEqual(left, [], `processes of npm start's tree still running after SIGTERM:\n${run.output()}`);
  assert.deepEqual(
    processes().filter((p) => p.pgid === npmPid),
    [],
    'nothing left in the process group',
  );
  await assert.rejects(fetch(`${run.url}/readyz`), 'the port no longer answers');
  assert.equal(code, 0, `npm start exited with ${code ?? signal}:\n${run.output()}`);
  assert.match(run.output(), /stopped cleanly/, 'the server shut down through its SIGTERM handler');
}

test('SIGTERM to the `npm start` process stops the server cleanly and leaves no process', {
  skip,
  timeout: 120_000,
}, async () => {
  // In development `npm start` builds first: dist/ is written anew even when it already exists.
  const main = join(REPO_ROOT, 'dist', 'src', 'main.js');
  const startedAt = Date.now();
  const run = await npmStart({});
  assert.ok(statSync(main).mtimeMs >= startedAt - 1000, `npm start did not rebuild dist/:\n${run.output()}`);
  // The web pages are part of the build: the terminal answers at the address npm start prints.
  const page = await fetch(`${run.url}/`);
  assert.equal(page.status, 200, `npm start serves the trading terminal at /:\n${run.output()}`);
  assert.match(await page.text(), /<script type="module"[^>]* src="\/assets\//);
  await sigtermLeavesNothing(run);
});

test('NODE_ENV=production `npm start` runs the existing build without rebuilding; SIGTERM as above', {
  skip,
  timeout: 120_000,
}, async () => {
  // The first test built dist/; a production start must leave it untouched.
  const main = join(REPO_ROOT, 'dist', 'src', 'main.js');
  const before = statSync(main).mtimeMs;
  const run = await npmStart({ NODE_ENV: 'production' });
  assert.equal(statSync(main).mtimeMs, before, 'dist/ was rebuilt by a production start');
  await sigtermLeavesNothing(run);
});
