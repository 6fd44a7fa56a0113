/**
 * Configuration from environment variables, validated once at start. A bad value stops the
 * process with a message naming the variable, instead of surfacing later as odd behaviour.
 */
import { existsSync, readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { parseDatabaseUrl } from '../store/postgres/url.js';
import { adminTokenProblem, placeholderSecrets, secretsKeyProblem } from './secret-checks.js';

export { isLoopback } from './secret-checks.js';

export interface Config {
  readonly port: number;
  readonly host: string;
  readonly dataDir: string;
  readonly adminToken: string | undefined;
  readonly ws: {
    readonly appId: string;
    readonly appKey: string;
    /**
     * Signs and checks private-channel tokens; only this server uses it. Undefined when
     * WS_APP_SECRET is unset: the server then generates one and keeps it in DATA_DIR/ws-app-secret
     * (src/config/kept-secret.ts). There is no built-in default.
     */
    readonly appSecret: string | undefined;
    readonly maxConnections: number;
    readonly maxSubscriptionsPerConnection: number;
    readonly maxFrameBytes: number;
    readonly maxBufferedBytes: number;
    readonly activityTimeoutSeconds: number;
    /** Client frames per second per connection (burst: see src/ws/rate-limit.ts); 0: no limit. */
    readonly maxFramesPerSecond: number;
    /** Open WebSocket connections per client address (src/ws/ip-admission.ts); 0: no limit. */
    readonly maxConnectionsPerIp: number;
    /** New WebSocket connections per second per client address, and their burst; 0: no limit. */
    readonly upgradesPerSecondPerIp: number;
    readonly upgradeBurstPerIp: number;
  };
  /** HTTP connections (slowloris): src/http/connection-limit.ts and the server's header timeout. */
  readonly httpConnections: {
    /** Open HTTP connections per client address (the TCP peer); 0: no limit. */
    readonly maxPerIp: number;
    /** A request's headers must arrive within this many seconds (else 408 and the connection closes). */
    readonly headersTimeoutSeconds: number;
  };
  /** HTTP rate limits (src/http/rate-limit.ts); a rate of 0 turns that limit off. */
  readonly rateLimit: {
    readonly ipPerSecond: number;
    readonly ipBurst: number;
    readonly keyPerSecond: number;
    readonly keyBurst: number;
  };
  readonly balanceCurrency: string;
  readonly logLevel: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';
  readonly production: boolean;
  readonly sqliteSynchronous: 'FULL' | 'NORMAL';
  /**
   * SQLITE_JOURNAL_BATCHES: journaled group commits written to the tables in one round (1–256).
   * More costs less CPU per order and keeps more commits waiting in memory (docs/operations.md).
   */
  readonly sqliteJournalBatches: number;
  /**
   * DATABASE_URL (postgres://…): the venue is stored in that PostgreSQL database instead of
   * SQLite in DATA_DIR. Undefined: SQLite, as by default.
   */
  readonly databaseUrl: string | undefined;
  /**
   * DATABASE_COMMIT_TIMEOUT_MS: a PostgreSQL commit with no answer after this long fails (503) and
   * its session is ended, freeing the writer lock; meanwhile /readyz already says not ready after
   * a few seconds (LocalExchange.isReady).
   */
  readonly databaseCommitTimeoutMs: number;
  /**
   * REDIS_URL (redis://…): the per-key rate limit is kept in that Redis, shared by every process
   * serving the API (src/http/shared-rate-limit.ts). Undefined: each process limits on its own.
   */
  readonly redisUrl: string | undefined;
  readonly catalogueFile: string | undefined;
  readonly bodyLimitBytes: number;
  /**
   * MAX_OPEN_ORDERS_PER_USER: the open orders one user may hold (one more is refused with 422).
   * An engine setting: every engine that replays the same commands must use the same value.
   */
  readonly maxOpenOrdersPerUser: number;
  readonly simulator: {
    readonly enabled: boolean;
    readonly ratePerSecond: number;
    readonly seed: number;
    /** Replay of a historical trade file (SIMULATOR_REPLAY_*, docs/simulation.md); undefined: none. */
    readonly replay: ReplaySettings | undefined;
  };
  /** Provision the demo account (credentials in DATA_DIR/demo-credentials.json) at start. */
  readonly demo: boolean;
  readonly secretsKey: string | undefined;
  /** Public origin (https://api.example.com) for URLs the API returns, when behind a proxy. */
  readonly publicUrl: string | undefined;
  /** Trust X-Forwarded-* headers (only behind a reverse proxy you control). */
  readonly trustProxy: boolean;
  /**
   * Fault injection may be set through /admin/v1/chaos (docs/chaos.md). CHAOS: `on` by default,
   * `off` in production, where a rehearsal must be asked for explicitly.
   */
  readonly chaos: boolean;
  /** CHAOS_SEED: the fault decisions' random seed (reproducible rehearsals); unset: Math.random. */
  readonly chaosSeed: number | undefined;
  /** ADMIN_UI=on: serve the operator console page (`/admin`) to non-local clients too. */
  readonly adminUi: boolean;
}

export interface ReplaySettings {
  /** Absolute path of the trade file (timestamp,price,volume per line). */
  readonly file: string;
  /** File seconds per real second, 1 to 1000. */
  readonly speed: number;
  /** Slash pair whose price follows the file. */
  readonly pair: string;
}

export class ConfigError extends Error {
  override readonly name = 'ConfigError';
}

type Env = Readonly<Record<string, string | undefined>>;

/** Public by nature (the key is part of every client's connection URL), so defaults are harmless. */
const DEFAULT_WS_APP = { appId: 'openspot', appKey: 'openspot-key' };
/** Shortest WS_APP_SECRET accepted: a short secret can be guessed offline from one captured token. */
const MIN_WS_SECRET_LENGTH = 16;
const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

function integer(env: Env, name: string, fallback: number, min: number, max: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (!/^\d+$/.test(raw)) throw new ConfigError(`${name} must be a whole number, got "${raw}".`);
  const value = Number(raw);
  if (value < min || value > max)
    throw new ConfigError(`${name} must be between ${min} and ${max}, got ${value}.`);
  return value;
}

function oneOf<T extends string>(env: Env, name: string, values: readonly T[], fallback: T): T {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = raw.toLowerCase() as T;
  if (!values.includes(value))
    throw new ConfigError(`${name} must be one of ${values.join(', ')}, got "${raw}".`);
  return value;
}

/** A postgres:// or postgresql:// URL with a host and a database; the refusal never repeats the URL (it may hold a password). */
function databaseUrl(raw: string | undefined): string | undefined {
  const text = raw?.trim();
  if (text === undefined || text === '') return undefined;
  try {
    return parseDatabaseUrl(text);
  } catch (error) {
    throw new ConfigError(error instanceof Error ? error.message : String(error));
  }
}

/** A redis:// or rediss:// URL with a host; the refusal never repeats the URL (it may hold a password). */
function redisUrl(raw: string | undefined): string | undefined {
  const text = raw?.trim();
  if (text === undefined || text === '') return undefined;
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new ConfigError('REDIS_URL is not a URL (expected redis://host:6379)');
  }
  if (url.protocol !== 'redis:' && url.protocol !== 'rediss:')
    throw new ConfigError(`REDIS_URL must start with redis:// or rediss:// (got ${url.protocol}//)`);
  if (url.hostname === '') throw new ConfigError('REDIS_URL names no host (expected redis://host:6379)');
  return text;
}

export function loadConfig(env: Env = process.env): Config {
  const production = env.NODE_ENV === 'production';
  const host = env.HOST?.trim() || '127.0.0.1';
  const adminToken = env.ADMIN_TOKEN === undefined || env.ADMIN_TOKEN === '' ? undefined : env.ADMIN_TOKEN;
  if (adminToken !== undefined && adminToken.length < 16)
    throw new ConfigError('ADMIN_TOKEN must be at least 16 characters.');
  const balanceCurrency = env.BALANCE_CURRENCY?.trim() || 'EUR';
  if (!/^[A-Z0-9]{2,12}$/.test(balanceCurrency))
    throw new ConfigError(`BALANCE_CURRENCY must be an asset code, got "${balanceCurrency}".`);
  const wsAppId = env.WS_APP_ID || DEFAULT_WS_APP.appId;
  const wsAppKey = env.WS_APP_KEY || DEFAULT_WS_APP.appKey;
  const wsAppSecret = env.WS_APP_SECRET || undefined;
  if (wsAppSecret !== undefined && wsAppSecret.length < MIN_WS_SECRET_LENGTH)
    throw new ConfigError(
      `WS_APP_SECRET must be at least ${MIN_WS_SECRET_LENGTH} characters (or unset: a random one is then kept in DATA_DIR).`,
    );
  for (const [name, value] of [
    ['WS_APP_KEY', wsAppKey],
    ['WS_APP_ID', wsAppId],
  ] as const) {
    if (!/^[A-Za-z0-9_.-]{1,64}$/.test(value))
      throw new ConfigError(`${name} may hold only letters, digits, '_', '.' and '-'.`);
  }
  checkSecrets(env, production, host, adminToken);
  const simulator = oneOf(env, 'SIMULATOR', ['on', 'off'] as const, production ? 'off' : 'on');
  return {
    port: integer(env, 'PORT', 8080, 0, 65535),
    host,
    dataDir: resolve(env.DATA_DIR?.trim() || './data'),
    adminToken,
    ws: {
      appId: wsAppId,
      appKey: wsAppKey,
      appSecret: wsAppSecret,
      maxConnections: integer(env, 'WS_MAX_CONNECTIONS', 10_000, 1, 1_000_000),
      maxSubscriptionsPerConnection: integer(env, 'WS_MAX_SUBSCRIPTIONS', 100, 1, 10_000),
      maxFrameBytes: integer(env, 'WS_MAX_FRAME_BYTES', 16 * 1024, 256, 16 * 1024 * 1024),
      maxBufferedBytes: integer(env, 'WS_MAX_BUFFERED_BYTES', 4 * 1024 * 1024, 16 * 1024, 1024 * 1024 * 1024),
      activityTimeoutSeconds: integer(env, 'WS_ACTIVITY_TIMEOUT', 30, 1, 3600),
      maxFramesPerSecond: integer(env, 'WS_MAX_FRAMES_PER_SECOND', 50, 0, 100_000),
      maxConnectionsPerIp: integer(env, 'WS_MAX_CONNECTIONS_PER_IP', 100, 0, 1_000_000),
      ...wsUpgradeRate(env),
    },
    httpConnections: {
      maxPerIp: integer(env, 'HTTP_MAX_CONNECTIONS_PER_IP', 256, 0, 1_000_000),
      headersTimeoutSeconds: integer(env, 'HTTP_HEADERS_TIMEOUT', 10, 1, 300),
    },
    rateLimit: rateLimits(env),
    balanceCurrency,
    logLevel: oneOf(env, 'LOG_LEVEL', LOG_LEVELS, 'info'),
    production,
    sqliteSynchronous: oneOf(env, 'SQLITE_SYNCHRONOUS', ['full', 'normal'] as const, 'full').toUpperCase() as
      | 'FULL'
      | 'NORMAL',
    sqliteJournalBatches: integer(env, 'SQLITE_JOURNAL_BATCHES', 8, 1, 256),
    databaseUrl: databaseUrl(env.DATABASE_URL),
    databaseCommitTimeoutMs: integer(env, 'DATABASE_COMMIT_TIMEOUT_MS', 10_000, 1000, 600_000),
    redisUrl: redisUrl(env.REDIS_URL),
    catalogueFile: catalogueFile(env.CATALOGUE_FILE),
    bodyLimitBytes: integer(env, 'BODY_LIMIT_BYTES', 64 * 1024, 1024, 16 * 1024 * 1024),
    maxOpenOrdersPerUser: integer(env, 'MAX_OPEN_ORDERS_PER_USER', 1000, 1, 10_000_000),
    simulator: {
      enabled: simulator === 'on',
      ratePerSecond: integer(env, 'SIMULATOR_RATE', 5, 1, 10_000),
      seed: integer(env, 'SIMULATOR_SEED', 1, 0, 2 ** 31 - 1),
      replay: replaySettings(env, simulator === 'on'),
    },
    demo: oneOf(env, 'DEMO', ['on', 'off'] as const, production ? 'off' : 'on') === 'on',
    secretsKey: env.SECRETS_KEY || undefined,
    publicUrl: publicUrl(env.PUBLIC_URL),
    trustProxy: oneOf(env, 'TRUST_PROXY', ['true', 'false'] as const, 'false') === 'true',
    chaos: oneOf(env, 'CHAOS', ['on', 'off'] as const, production ? 'off' : 'on') === 'on',
    chaosSeed: env.CHAOS_SEED ? integer(env, 'CHAOS_SEED', 0, 0, 2 ** 31 - 1) : undefined,
    adminUi: oneOf(env, 'ADMIN_UI', ['on', 'off'] as const, 'off') === 'on',
  };
}

/** Secrets that would be refused later, or accepted though copied from an example (secret-checks.ts). */
function checkSecrets(env: Env, production: boolean, host: string, adminToken: string | undefined): void {
  if (production) {
    const placeholders = placeholderSecrets(env);
    if (placeholders.length > 0)
      throw new ConfigError(
        `${placeholders.join(', ')}: still the example value of the documentation; set a secret of your own (NODE_ENV=production refuses examples).`,
      );
  }
  const problem = adminTokenProblem(host, adminToken) ?? secretsKeyProblem(env.SECRETS_KEY);
  if (problem !== undefined) throw new ConfigError(problem);
}

const MAX_RATE = 1_000_000;

/** A rate and its burst: the burst defaults to twice the rate and may not be below 1. */
function rateAndBurst(env: Env, rateName: string, burstName: string, fallback: number) {
  const rate = integer(env, rateName, fallback, 0, MAX_RATE);
  const burst = integer(env, burstName, Math.max(1, rate * 2), 1, 2 * MAX_RATE);
  return { rate, burst };
}

function rateLimits(env: Env): Config['rateLimit'] {
  const ip = rateAndBurst(env, 'RATE_LIMIT_IP_PER_SECOND', 'RATE_LIMIT_IP_BURST', 200);
  const key = rateAndBurst(env, 'RATE_LIMIT_KEY_PER_SECOND', 'RATE_LIMIT_KEY_BURST', 100);
  return { ipPerSecond: ip.rate, ipBurst: ip.burst, keyPerSecond: key.rate, keyBurst: key.burst };
}

function wsUpgradeRate(env: Env) {
  const { rate, burst } = rateAndBurst(env, 'WS_UPGRADES_PER_SECOND_PER_IP', 'WS_UPGRADE_BURST_PER_IP', 20);
  return { upgradesPerSecondPerIp: rate, upgradeBurstPerIp: burst };
}

/** SIMULATOR_REPLAY_FILE and its companions; the file's content is checked when the server starts. */
function replaySettings(env: Env, simulatorOn: boolean): ReplaySettings | undefined {
  const file = env.SIMULATOR_REPLAY_FILE?.trim();
  if (file === undefined || file === '') {
    for (const name of ['SIMULATOR_REPLAY_SPEED', 'SIMULATOR_REPLAY_PAIR'])
      if (env[name]) throw new ConfigError(`${name} needs SIMULATOR_REPLAY_FILE (the trade file to replay).`);
    return undefined;
  }
  if (!simulatorOn)
    throw new ConfigError('SIMULATOR_REPLAY_FILE needs SIMULATOR=on: the simulator replays it.');
  const path = resolve(file);
  if (!existsSync(path)) throw new ConfigError(`SIMULATOR_REPLAY_FILE: no such file: ${path}`);
  const pair = env.SIMULATOR_REPLAY_PAIR?.trim() || 'BTC/EUR';
  if (!/^[A-Z0-9]{2,12}\/[A-Z0-9]{2,12}$/.test(pair))
    throw new ConfigError(`SIMULATOR_REPLAY_PAIR must be a pair such as BTC/EUR, got "${pair}".`);
  return { file: path, speed: integer(env, 'SIMULATOR_REPLAY_SPEED', 1, 1, 1000), pair };
}

/**
 * CATALOGUE_FILE: read and parsed now, so a missing or malformed file stops the start before the
 * store is created. Each entry is checked when seeded, through the admin API's own validation.
 */
function catalogueFile(raw: string | undefined): string | undefined {
  const file = raw?.trim();
  if (file === undefined || file === '') return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFileSync(file, 'utf8'));
  } catch (error) {
    const why =
      (error as NodeJS.ErrnoException).code ?? (error instanceof Error ? error.message : String(error));
    throw new ConfigError(`CATALOGUE_FILE ${resolve(file)} cannot be read as JSON (${why}).`);
  }
  const catalogue = parsed as { assets?: unknown; markets?: unknown } | null;
  if (
    typeof catalogue !== 'object' ||
    catalogue === null ||
    !Array.isArray(catalogue.assets) ||
    !Array.isArray(catalogue.markets)
  )
    throw new ConfigError(
      `CATALOGUE_FILE ${resolve(file)} must be an object with "assets" and "markets" arrays.`,
    );
  return file;
}

function publicUrl(raw: string | undefined): string | undefined {
  if (raw === undefined || raw.trim() === '') return undefined;
  if (!/^https?:\/\/[^/?#\s]+$/.test(raw.trim()))
    throw new ConfigError(`PUBLIC_URL must be an origin such as https://api.example.com, got "${raw}".`);
  return raw.trim();
}
