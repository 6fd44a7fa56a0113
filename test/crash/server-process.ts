/**
 * The real server as a child process (`node --import tsx src/main.ts`), as an operator runs it:
 * configuration through the environment, the bound address read from its log line
 * `"msg":"OpenSpot is listening"` on stdout. Used by the HTTP crash test and the soak test.
 *
 * Every child started here is killed when the test process exits, whatever happens to the test.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { join } from 'node:path';
import { createInterface } from 'node:readline';

export const REPO_ROOT = join(import.meta.dirname, '..', '..');
export const ADMIN_TOKEN = 'crash-test-admin-token-0123456789';

export interface ServerProcess {
  readonly url: string;
  readonly pid: number;
  readonly child: ChildProcess;
  /** Resolves when the process has exited (code, or the signal that ended it). */
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** The last lines the server wrote (stdout and stderr), for failure messages. */
  recentOutput(): string;
  /** Log records (parsed stdout JSON) at level warn (40) or above, since start. */
  warnings(): readonly Record<string, unknown>[];
  /** SIGKILL, and wait until the process is gone. */
  kill(): Promise<void>;
  /** SIGTERM (graceful: commit in-flight work, close the store); SIGKILL after `graceMs`. */
  stop(graceMs?: number): Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

export interface StartOptions {
  readonly dataDir: string;
  readonly env?: Record<string, string>;
  /** Extra node flags before `--import tsx` (e.g. `--inspect=127.0.0.1:0`). */
  readonly nodeArgs?: readonly string[];
  readonly startTimeoutMs?: number;
  /** Called with every stderr line (e.g. to find the inspector's address). */
  readonly onStderrLine?: (line: string) => void;
}

const live = new Set<ChildProcess>();
process.once('exit', () => {
  for (const child of live) child.kill('SIGKILL');
});

export function startServerProcess(options: StartOptions): Promise<ServerProcess> {
  const env: NodeJS.ProcessEnv = {
    PATH: process.env.PATH,
    HOME: process.env.HOME,
    NODE_ENV: 'test',
    PORT: '0',
    HOST: '127.0.0.1',
    DATA_DIR: options.dataDir,
    ADMIN_TOKEN,
    LOG_LEVEL: 'info',
    SIMULATOR: 'off',
    DEMO: 'off',
    // Rate limits off unless a test sets them: suites send far more than any one client would.
    RATE_LIMIT_IP_PER_SECOND: '0',
    RATE_LIMIT_KEY_PER_SECOND: '0',
    WS_MAX_FRAMES_PER_SECOND: '0',
    ...options.env,
  };
  const child = spawn(process.execPath, [...(options.nodeArgs ?? []), '--import', 'tsx', 'src/main.ts'], {
    cwd: REPO_ROOT,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  live.add(child);
  const recent: string[] = [];
  const warnings: Record<string, unknown>[] = [];
  const remember = (line: string) => {
    recent.push(line);
    if (recent.length > 60) recent.shift();
  };
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    child.once('exit', (code, signal) => {
      live.delete(child);
      resolve({ code, signal });
    });
  });
  const recentOutput = () => recent.join('\n');

  return new Promise((resolve, reject) => {
    let settled = false;
    const timeout = setTimeout(() => {
      if (settled) return;
      settled = true;
      child.kill('SIGKILL');
      reject(
        new Error(
          `the server did not start within ${options.startTimeoutMs ?? 30_000} ms:\n${recentOutput()}`,
        ),
      );
    }, options.startTimeoutMs ?? 30_000);
    // stdout is read to the end whatever happens: a full pipe would block the server's logger.
    createInterface({ input: child.stdout! }).on('line', (line) => {
      remember(line);
      let record: Record<string, unknown>;
      try {
        record = JSON.parse(line) as Record<string, unknown>;
      } catch {
        return;
      }
      if (typeof record.level === 'number' && record.level >= 40) warnings.push(record);
      if (!settled && record.msg === 'OpenSpot is listening' && typeof record.url === 'string') {
        settled = true;
        clearTimeout(timeout);
        const url = record.url;
        resolve({
          url,
          pid: child.pid!,
          child,
          exited,
          recentOutput,
          warnings: () => warnings,
          async kill() {
            if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
            await exited;
          },
          async stop(graceMs = 10_000) {
            if (child.exitCode !== null || child.signalCode !== null) return exited;
            child.kill('SIGTERM');
            const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
            const result = await exited;
            clearTimeout(timer);
            return result;
          },
        });
      }
    });
    createInterface({ input: child.stderr! }).on('line', (line) => {
      remember(line);
      options.onStderrLine?.(line);
    });
    void exited.then(({ code, signal }) => {
      if (settled) return;
      settled = true;
      clearTimeout(timeout);
      reject(
        new Error(`the server exited before listening (code ${code}, signal ${signal}):\n${recentOutput()}`),
      );
    });
  });
}
