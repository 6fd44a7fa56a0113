/**
 * A NATS server of the test's own (`nats-server -js` on a free port, its JetStream store in a
 * temporary directory), which the test may stop (SIGTERM or SIGKILL) and start again on the same
 * port and store: a real NATS restart, without touching the shared server other suites use.
 *
 * The binary is /usr/sbin/nats-server (Debian's package, what .ci/run installs), or
 * TEST_NATS_SERVER_BIN. A missing binary is an error, not a skip: the caller decided to run.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { accessSync, constants, mkdtempSync, rmSync } from 'node:fs';
import { type AddressInfo, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Cleanup } from './service-suite.js';

export const NATS_SERVER_BIN: string = process.env.TEST_NATS_SERVER_BIN?.trim() || '/usr/sbin/nats-server';

export interface PrivateNatsServer {
  readonly url: string;
  readonly port: number;
  /** The JetStream store directory (`-sd`), kept across restarts. */
  readonly storeDir: string;
  /** The running server's pid (undefined while stopped). */
  readonly pid: number | undefined;
  /** Starts the server (again) on the same port and store; resolves once it accepts clients. */
  start(): Promise<void>;
  /** Sends `signal` and resolves once the process has exited. */
  stop(signal: 'SIGTERM' | 'SIGKILL'): Promise<void>;
  /** Everything every run of the server logged (for a failing test's message). */
  output(): string;
}

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

export interface PrivateNatsServerOptions {
  /** A configuration file (`-c`), with its own JetStream store directory; the port and address are still the test's own. */
  readonly configFile?: string;
  /** Added to the server's environment (a configuration's `$VARIABLE`s). */
  readonly env?: Readonly<Record<string, string>>;
}

/** Starts a private nats-server; it is killed and its store removed when the test ends. */
export async function privateNatsServer(
  t: Cleanup,
  options: PrivateNatsServerOptions = {},
): Promise<PrivateNatsServer> {
  try {
    accessSync(NATS_SERVER_BIN, constants.X_OK);
  } catch {
    throw new Error(
      `no nats-server at ${NATS_SERVER_BIN}: this test restarts a NATS server of its own; install the nats-server package or set TEST_NATS_SERVER_BIN to its path`,
    );
  }
  const port = await freePort();
  const storeDir = mkdtempSync(join(tmpdir(), 'openspot-nats-'));
  let log = '';
  let child: ChildProcess | undefined;

  const stop = async (signal: 'SIGTERM' | 'SIGKILL'): Promise<void> => {
    const running = child;
    if (running === undefined) return;
    child = undefined;
    if (running.exitCode !== null || running.signalCode !== null) return;
    const exited = once(running, 'exit');
    running.kill(signal);
    // A server that ignores SIGTERM for 10 s is killed: the test must not hang on it.
    const timer = setTimeout(() => running.kill('SIGKILL'), 10_000);
    await exited;
    clearTimeout(timer);
  };

  const start = async (): Promise<void> => {
    if (child !== undefined) throw new Error('the private nats-server is already running');
    const from = log.length;
    // A configuration file names its own store directory (nats-server refuses it twice).
    const config = options.configFile === undefined ? ['-js', '-sd', storeDir] : ['-c', options.configFile];
    const started = spawn(NATS_SERVER_BIN, [...config, '-a', '127.0.0.1', '-p', String(port)], {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, ...options.env },
    });
    child = started;
    started.stdout?.setEncoding('utf8').on('data', (chunk: string) => (log += chunk));
    started.stderr?.setEncoding('utf8').on('data', (chunk: string) => (log += chunk));
    const deadline = Date.now() + 15_000;
    // "Server is ready" is logged once the client port listens (JetStream is enabled before it).
    while (!log.slice(from).includes('Server is ready')) {
      if (started.exitCode !== null || Date.now() > deadline) {
        await stop('SIGKILL');
        throw new Error(`the private nats-server did not start on port ${port}:\n${log.slice(from)}`);
      }
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  };

  t.after(async () => {
    await stop('SIGKILL');
    rmSync(storeDir, { recursive: true, force: true });
  });
  await start();
  return {
    url: `nats://127.0.0.1:${port}`,
    port,
    storeDir,
    get pid() {
      return child?.pid;
    },
    start,
    stop,
    output: () => log,
  };
}
