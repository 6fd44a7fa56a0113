/**
 * Starts `openspot engine` and `openspot gateway` as separate OS processes, the way an operator
 * would (`node --import tsx src/cli/main.ts engine`), and waits until each says where it listens.
 * Every process is stopped (SIGTERM, then SIGKILL) when the test ends.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';

interface Cleanup {
  after(fn: () => Promise<void> | void): void;
}

export interface ClusterProcess {
  /** Where it listens ('' when started with another `ready` line). */
  readonly url: string;
  readonly child: ChildProcess;
  /** Everything it logged so far (JSON lines), for a failing test's message. */
  output(): string;
  stop(signal?: NodeJS.Signals): Promise<void>;
}

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
/** Resolves once `check` holds, polling. */
export async function waitUntil(check: () => boolean, what: string, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** The line a process logs once it listens: `{"url":"http://…", "msg":"OpenSpot … is listening…"}`. */
const LISTENING = /"url":"(http:\/\/[^"]+)","msg":"OpenSpot (?:engine|gateway) is listening/;

export async function startClusterProcess(
  t: Cleanup,
  args: readonly string[],
  env: Record<string, string>,
  options: { readonly timeoutMs?: number; readonly ready?: RegExp } = {},
): Promise<ClusterProcess> {
  const timeoutMs = options.timeoutMs ?? 30_000;
  const ready = options.ready ?? LISTENING;
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/cli/main.ts', ...args], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '', LOG_LEVEL: 'info', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let log = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (log += chunk));
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (log += chunk));
  const exited = once(child, 'exit');
  const stop = async (signal: NodeJS.Signals = 'SIGTERM'): Promise<void> => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    child.kill(signal);
    const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
    await exited;
    clearTimeout(timer);
  };
  t.after(() => stop());
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const match = ready.exec(log);
    if (match !== null) return { url: match[1] ?? '', child, output: () => log, stop };
    if (child.exitCode !== null || Date.now() > deadline) {
      await stop('SIGKILL');
      throw new Error(`openspot ${args.join(' ')} did not start:\n${log}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
