/**
 * Starts `openspot engine` and `openspot gateway` as separate OS processes from the systemd units
 * an operator installs (deploy/systemd/*.service, read by ./systemd-unit.ts): the command is the
 * unit's `ExecStart=`, with the installed binary (`/usr/bin/openspot`) replaced by this checkout's
 * CLI (`node --import tsx src/cli/main.ts`, or the built `node dist/src/cli/main.js`), and the
 * unit's `Environment=` lines under the test's own variables (which stand for the unit's
 * `EnvironmentFile=`, as systemd lets that file override `Environment=`). It waits until each
 * process says where it listens, and stops every process (SIGTERM, then SIGKILL) when the test ends.
 *
 * Also what the cluster tests (test/cluster-e2e.test.ts, test/cluster-failover.test.ts) share:
 * the environment of one cluster (`clusterEnv`), the engine's admin API (`engineAdmin`) and
 * traders made through it (`trader`).
 */
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { OpenSpotClient } from '../../src/client/client.js';
import { type ChannelAuthorizer, connectRealtime, type Realtime } from '../../src/client/realtime.js';
import { LOCAL_VENUE_ENV } from './local-venue-env.js';
import { deleteStreamAfter, NATS_SKIP_REASON, TEST_NATS_URL, uniqueName } from './nats.js';
import { eventually, waitUntil } from './polling.js';
import { freshDatabase, POSTGRES_SKIP_REASON, TEST_DATABASE_URL } from './postgres.js';
import type { Cleanup } from './service-suite.js';
import { unitCommand } from './systemd-unit.js';

export { eventually, waitUntil };

/**
 * The time budget of a test that runs a cluster of OS processes (engines, gateways, a NATS relay or
 * restart): each process compiles the server through tsx at start, several start and stop in one
 * test, and CI runs them on loaded machines. Above the default of scripts/test-budgets.mjs.
 */
export const CLUSTER_TEST_TIMEOUT_MS = 300_000;

/**
 * Why a multi-process cluster test cannot run here (it needs TEST_NATS_URL and TEST_DATABASE_URL),
 * said on stdout so the skip is visible; undefined when it can.
 */
export function clusterSkipReason(what: string): string | undefined {
  const reason =
    TEST_NATS_URL === undefined
      ? NATS_SKIP_REASON
      : TEST_DATABASE_URL === undefined
        ? POSTGRES_SKIP_REASON
        : undefined;
  if (reason !== undefined) process.stdout.write(`# ${what} skipped: ${reason}\n`);
  return reason;
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
/**
 * What stands for the installed binary here: this checkout's CLI, from source (tsx), or as built
 * (`npm run build`: dist/, what `npm install -g` installs; benches that size a process use it).
 */
const CLI = {
  source: ['--import', 'tsx', 'src/cli/main.ts'],
  built: [join(ROOT, 'dist', 'src', 'cli', 'main.js')],
} as const;

/** The line a process logs once it listens: `{"url":"http://…", "msg":"OpenSpot … is listening…"}`. */
const LISTENING = /"url":"(http:\/\/[^"]+)","msg":"OpenSpot (?:engine|gateway) is listening/;

/**
 * Where a process started with another `ready` line listens, once it does (a `--standby` engine
 * opens its HTTP port only after it took the writer lock).
 */
export async function listeningUrl(started: ClusterProcess, timeoutMs = 30_000): Promise<string> {
  let url: string | undefined;
  await waitUntil(
    () => {
      url = LISTENING.exec(started.output())?.[1];
      return url !== undefined;
    },
    'the process to listen',
    timeoutMs,
  );
  return url!;
}

/**
 * Starts `openspot <args>` as its systemd unit would (UNIT_FOR maps `args` to the unit; `unit`
 * names another file, in deploy/systemd or by path, whose ExecStart= must run the same `args`).
 */
export async function startClusterProcess(
  t: Cleanup,
  args: readonly string[],
  env: Record<string, string>,
  options: {
    readonly timeoutMs?: number;
    readonly ready?: RegExp;
    readonly unit?: string;
    /**
     * `built`: dist/src/cli/main.js (run `npm run build` first); `{ main }`: another build's
     * cli/main.js (a bench comparing versions); default `source`.
     */
    readonly cli?: keyof typeof CLI | { readonly main: string };
  } = {},
): Promise<ClusterProcess> {
  const timeoutMs = options.timeoutMs ?? 30_000;
  const ready = options.ready ?? LISTENING;
  const fromUnit = unitCommand(args, options.unit);
  const cli = typeof options.cli === 'object' ? [options.cli.main] : CLI[options.cli ?? 'source'];
  if (options.cli !== undefined && options.cli !== 'source' && !existsSync(cli[0]!))
    throw new Error(`${cli[0]} does not exist: build first (npm run build)`);
  const child = spawn(process.execPath, [...cli, ...fromUnit.args], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '', LOG_LEVEL: 'info', ...fromUnit.environment, ...env },
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
      throw new Error(`openspot ${args.join(' ')} (${fromUnit.unit}) did not start:\n${log}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** `openspot engine` on a free port; `extra` overrides variables of `env` (e.g. a relay's NATS_URL). */
export const startEngine = (t: Cleanup, env: Record<string, string>, extra: Record<string, string> = {}) =>
  startClusterProcess(t, ['engine'], { ...env, ENGINE_PORT: '0', ...extra });

/** `openspot engine --standby`, counted as started once it logs that it waits for the writer lock. */
export const startStandby = (t: Cleanup, env: Record<string, string>) =>
  startClusterProcess(
    t,
    ['engine', '--standby'],
    { ...env, ENGINE_PORT: '0' },
    { ready: /standby: waiting for the writer lock/ },
  );

/** `openspot gateway` on a free port; `extra` overrides variables of `env`. */
export const startGateway = (t: Cleanup, env: Record<string, string>, extra: Record<string, string> = {}) =>
  startClusterProcess(t, ['gateway'], { ...env, PORT: '0', ...extra });

/** The environment every process of one cluster shares: its database, its stream and subjects, its secrets. */
export async function clusterEnv(t: Cleanup): Promise<Record<string, string>> {
  if (TEST_NATS_URL === undefined) throw new Error('TEST_NATS_URL is not set');
  const name = uniqueName('E2E_BATCHES');
  deleteStreamAfter(t, name);
  const dataDir = mkdtempSync(join(tmpdir(), 'openspot-cluster-'));
  t.after(() => rmSync(dataDir, { recursive: true, force: true }));
  return {
    DATABASE_URL: await freshDatabase(t),
    NATS_URL: TEST_NATS_URL,
    OPENSPOT_STREAM: name,
    OPENSPOT_STREAM_SUBJECT: `e2e.${name}`,
    OPENSPOT_SUBJECT_PREFIX: `e2e.${name}.engine`,
    DATA_DIR: dataDir,
    HOST: '127.0.0.1',
    ADMIN_TOKEN: randomBytes(24).toString('hex'),
    // Shared by every process: API secrets sealed by the engine are opened by the gateways,
    // a channel token from one gateway's /broadcasting/auth is checked by another's WebSocket server.
    SECRETS_KEY: randomBytes(32).toString('base64'),
    CLUSTER_KEY: randomBytes(32).toString('base64'),
    WS_APP_SECRET: randomBytes(24).toString('hex'),
    ...LOCAL_VENUE_ENV,
  };
}

/** A request to the engine's admin API; the answer's status and parsed body (null when empty). */
export async function engineAdmin(
  engineUrl: string,
  adminToken: string,
  method: string,
  path: string,
  body?: unknown,
): Promise<{ status: number; body: unknown; text: string }> {
  const response = await fetch(`${engineUrl}/admin/v1${path}`, {
    method,
    headers: {
      authorization: `Bearer ${adminToken}`,
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    signal: AbortSignal.timeout(30_000),
  });
  const text = await response.text();
  return { status: response.status, body: text === '' ? null : (JSON.parse(text) as unknown), text };
}

export interface Trader {
  readonly userId: number;
  readonly apiKey: string;
  readonly apiSecret: string;
}

/** A user with a read+trade API key and one deposit per asset (`{ BTC: '2' }`), made through the engine's admin API. */
export async function trader(
  engineUrl: string,
  adminToken: string,
  funds: Readonly<Record<string, string>>,
): Promise<Trader> {
  const created = async (path: string, body: unknown): Promise<Record<string, unknown>> => {
    const answer = await engineAdmin(engineUrl, adminToken, 'POST', path, body);
    assert.equal(answer.status, 201, `${path}: ${answer.text}`);
    return answer.body as Record<string, unknown>;
  };
  const user = (await created('/users', {})) as { id: number };
  const key = (await created(`/users/${user.id}/api-keys`, { scopes: ['read', 'trade'] })) as {
    api_key: string;
    api_secret: string;
  };
  for (const [asset, amount] of Object.entries(funds))
    await created(`/users/${user.id}/deposits`, { asset, amount });
  return { userId: user.id, apiKey: key.api_key, apiSecret: key.api_secret };
}

/** The trader's signed client of one gateway (no retries: every answer is the gateway's own). */
export const on = (gateway: { url: string }, who: Trader) =>
  new OpenSpotClient({
    baseUrl: `${gateway.url}/v1`,
    apiKey: who.apiKey,
    apiSecret: who.apiSecret,
    timeoutMs: 10_000,
    orderRetries: 0,
  });

/**
 * A pusher-js client (src/client connectRealtime) of one gateway, disconnected when the test ends;
 * `client` signs its private channels.
 */
export function realtimeOf(t: Cleanup, gateway: { url: string }, client?: ChannelAuthorizer): Realtime {
  const rt = connectRealtime({
    wsHost: '127.0.0.1',
    wsPort: Number(new URL(gateway.url).port),
    appKey: 'openspot-key',
    ...(client === undefined ? {} : { client }),
  });
  t.after(() => rt.disconnect());
  return rt;
}
