/**
 * Composition root: builds the store, the exchange and every adapter around it, and owns their
 * lifecycle (start, readiness, graceful shutdown). Nothing else wires modules together.
 */
import { randomBytes } from 'node:crypto';
import type { FastifyBaseLogger, FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import { resolveAdminToken } from './admin/admin-token.js';
import { adminRoutes } from './admin/routes.js';
import { CredentialVault } from './auth/vault.js';
import { type InstalledChaos, installChaos } from './chaos/index.js';
import { type Config, ConfigError } from './config/config.js';
import type { CatalogueFile } from './config/default-catalogue.js';
import { keptSecret } from './config/kept-secret.js';
import { adminTokenProblem } from './config/secret-checks.js';
import { buildHttpApp } from './http/app.js';
import { limitConnectionsPerIp } from './http/connection-limit.js';
import { listenOn } from './http/listen.js';
import { type DemoCredentials, pagesPlugin } from './http/pages.js';
import { mountProbes, type Readiness } from './http/probes.js';
import { PublicFront } from './http/public-front.js';
import { httpRateLimit } from './http/rate-limit.js';
import { Metrics } from './metrics.js';
import { privateDirectory } from './private-files.js';
import type { Clock } from './sequencer/clock.js';
import { keepInitialState } from './sequencer/initial-state.js';
import type { Exchange } from './sequencer/ports.js';
import { seedCatalogue } from './sequencer/seed.js';
import { type LocalExchange, openExchange } from './sequencer/sequencer.js';
import type { AdminApi, DemoAccount } from './simulator/demo.js';
import {
  DEFAULT_REFERENCE_PRICES,
  provisionDemo,
  type Simulator,
  startSimulator,
  websocketEndpoint,
} from './simulator/index.js';
import { type PreparedReplay, prepareReplay } from './simulator/replay.js';
import { openConfiguredStore } from './store/open-store.js';
import { unavailableReason } from './store/store.js';
import { ChannelGrants } from './ws/channel-grants.js';
import { mountRealtime } from './ws/mount.js';

export interface RunningServer {
  readonly app: FastifyInstance;
  readonly exchange: LocalExchange;
  /** The address actually bound (useful with PORT=0). */
  readonly url: string;
  readonly adminToken: string;
  /** True when this start found a fresh store and saved it as the `initial` checkpoint (reset). */
  readonly initialCheckpoint: boolean;
  /** Fault injection (src/chaos), also reachable through /admin/v1/chaos. */
  readonly chaos: InstalledChaos['chaos'];
  close(): Promise<void>;
}

/** Embedding options (the test venue, src/testing); `npm start` passes none. */
export interface ServerOptions {
  /**
   * Keep everything in memory: a ':memory:' database and nothing written to DATA_DIR (no
   * directory, no token, key or credential files). Needs ADMIN_TOKEN and SECRETS_KEY, which
   * would otherwise be generated into files.
   */
  readonly inMemory?: boolean;
  /** Seeded instead of CATALOGUE_FILE or the default catalogue. */
  readonly catalogue?: CatalogueFile;
  /** Simulator reference prices by slash pair, added to the default catalogue's. */
  readonly referencePrices?: Readonly<Record<string, string>>;
  /** The built web pages (default dist/web; the browser tests build their own). */
  readonly webDir?: string;
}

export async function startServer(
  config: Config,
  logger: Logger,
  env: NodeJS.ProcessEnv = process.env,
  options: ServerOptions = {},
): Promise<RunningServer> {
  const inMemory = options.inMemory === true;
  if (inMemory && (config.adminToken === undefined || !env.SECRETS_KEY))
    throw new Error(
      'an in-memory server needs ADMIN_TOKEN and SECRETS_KEY (nothing is written to DATA_DIR).',
    );
  // loadConfig refused it already; checked again for a caller that builds its own Config.
  const tokenProblem = adminTokenProblem(config.host, config.adminToken);
  if (tokenProblem !== undefined) throw new ConfigError(tokenProblem);
  if (!inMemory) privateDirectory(config.dataDir);
  const metrics = new Metrics();
  // DATABASE_URL selects PostgreSQL (writer lock taken, migrations run), otherwise SQLite in
  // DATA_DIR; never a silent fallback from one to the other.
  const { store, kind } = await openConfiguredStore(config, inMemory, undefined, (message) =>
    // It stays up, answering 503 with /readyz saying why, for the operator to act: its engine
    // state is stale and it never writes again (docs/operations.md, "One writer").
    logger.error(
      { reason: message },
      'another engine took over the database; no more writes from this server',
    ),
  );
  if (kind === 'postgres') logger.info('store: PostgreSQL (DATABASE_URL), writer lock held');
  let exchange: LocalExchange;
  try {
    exchange = await openExchange({
      store: metrics.instrumentStore(store),
      logger,
      engine: { maxOpenOrdersPerUser: config.maxOpenOrdersPerUser },
    });
  } catch (error) {
    await store.close();
    throw error;
  }
  metrics.watchExchange(exchange);
  const seeded = await seedCatalogue(exchange, options.catalogue ?? config.catalogueFile);
  if (seeded > 0) logger.info({ created: seeded }, 'created the missing assets and markets of the catalogue');
  let replay: PreparedReplay | undefined;
  try {
    replay = replayOf(config, exchange);
  } catch (error) {
    await exchange.close();
    await store.close();
    throw error;
  }
  let shuttingDown = false;
  const front = await mountInterface({
    config,
    logger,
    env,
    inMemory,
    exchange,
    clock: exchange.clock,
    metrics,
    isShuttingDown: () => shuttingDown,
    // Why, in a fixed phrase (never the driver's message, which names hosts): docs/operations.md.
    storeName: STORE_NAMES[kind],
    isReady: () => exchange.isReady(),
    unavailableReason: () => unavailableReason(exchange.notReadyCause()),
    historyFollowsCommits: true,
  });
  const { app, realtime, admin, vault, ws } = front;
  await app.register(adminRoutes, {
    prefix: '/admin/v1',
    exchange,
    vault,
    token: admin.token,
    onApiKeyRevoked: (userId) => realtime.realtime.disconnectUserPrivateChannels(userId),
    health: async () => ({ status: front.readiness(), ...(await metrics.summary()) }),
  });

  // The web pages (`/`, `/admin`, `/assets/*`, `/ui/*`; src/http/pages.ts). The demo account is
  // provisioned after listen (through the admin API): until then the page offers no demo.
  let demoAccount: DemoCredentials | undefined;
  await app.register(pagesPlugin, {
    ...(options.webDir === undefined ? {} : { webDir: options.webDir }),
    production: config.production,
    adminUi: config.adminUi,
    wsAppKey: ws.appKey,
    balanceCurrency: config.balanceCurrency,
    demoCredentials: () => demoAccount,
  });

  const { url, port } = await listenOn(app, config.host, config.port);
  logger.info({ url }, 'OpenSpot is listening');
  logger.info(
    { terminal: `${url}/`, console: `${url}/admin` },
    'web pages: trading terminal, operator console',
  );
  const { simulator, demo } = await startDemo(config, logger, app, admin.token, exchange, port, {
    ...options,
    replay,
  });
  if (config.demo) demoAccount = demo;
  // After a checkpoint restore the simulator's remembered quotes are void: it starts over (seed kept).
  if (simulator !== undefined) exchange.onRestored(() => void simulator.restart());
  // Right after provisioning, in the same turn: the simulator's first order needs several round
  // trips over HTTP (markets, tickers, open orders), so none can be committed before this runs.
  let initialCheckpoint = false;
  const { capabilities } = store;
  // Said once, plainly, rather than a failed save at every start (docs/interface-decisions.md 79a).
  if (!capabilities.checkpoints) logger.info(capabilities.why);
  else
    try {
      initialCheckpoint = await keepInitialState(exchange);
      if (initialCheckpoint) logger.info('saved the freshly seeded state as checkpoint "initial" (reset)');
    } catch (error) {
      // Only `reset` needs it: the venue runs without, and a reset then says there is none.
      logger.warn({ err: error }, 'could not save the freshly seeded state; reset will be refused');
    }
  return {
    app,
    exchange,
    url,
    adminToken: admin.token,
    initialCheckpoint,
    chaos: front.chaos.chaos,
    async close() {
      if (shuttingDown) return;
      shuttingDown = true;
      await simulator?.stop();
      await app.close();
      await exchange.close();
      await store.close();
    },
  };
}

/** What the HTTP interface and the WebSocket server are built on: `openspot serve` and `openspot gateway`. */
export interface InterfaceOptions {
  readonly config: Config;
  readonly logger: Logger;
  readonly env: NodeJS.ProcessEnv;
  readonly inMemory: boolean;
  readonly exchange: Exchange;
  readonly clock: Clock;
  readonly metrics: Metrics;
  readonly isShuttingDown: () => boolean;
  /** What /readyz names as the store (`sqlite`, `postgresql`). */
  readonly storeName: string;
  /**
   * What /readyz reports as ready (LocalExchange.isReady: also false after a failure until a real
   * commit, and while a commit is overdue); default `exchange.isWritable()`.
   */
  readonly isReady?: () => boolean;
  /** Called while not ready: why, for /readyz, in a fixed phrase. */
  readonly unavailableReason: () => string;
  /** A gateway's: a recent message from NATS it refused (in a ready /readyz's body). */
  readonly alarm?: () => string | undefined;
  /**
   * The exchange reports each commit to its `onCommitted` listeners before any reply it
   * acknowledges (the in-process exchange), so answers read from its history may be cached too
   * (/ohlc, /historical_trades). Not on a gateway: its feed may follow PostgreSQL, which a read
   * after a 201 must find. Default false.
   */
  readonly historyFollowsCommits?: boolean;
}

export interface MountedInterface {
  readonly app: FastifyInstance;
  readonly realtime: ReturnType<typeof mountRealtime>;
  readonly chaos: InstalledChaos;
  readonly admin: { readonly token: string };
  readonly vault: CredentialVault;
  readonly ws: Config['ws'];
  readonly readiness: () => Readiness;
}

/**
 * The /v1 HTTP interface, the probes, /metrics, chaos and the Pusher-protocol WebSocket server on
 * any Exchange: the in-process one (`serve`) or a gateway's RemoteExchange. Not listening yet;
 * the caller adds what is its own (the admin API, the pages) and listens.
 */
export async function mountInterface(options: InterfaceOptions): Promise<MountedInterface> {
  const { config, logger, env, inMemory, exchange, metrics } = options;
  const vault = CredentialVault.fromEnvOrFile(config.dataDir, env);
  const admin = resolveAdminToken(config.dataDir, config.adminToken);
  if (admin.file !== undefined) logger.info({ file: admin.file }, 'admin API token is stored in this file');
  // In memory nothing is written: without WS_APP_SECRET the secret lives as long as the process.
  const wsSecret =
    inMemory && !config.ws.appSecret
      ? { value: randomBytes(32).toString('base64url'), file: undefined, generated: false }
      : keptSecret(config.dataDir, 'ws-app-secret', config.ws.appSecret);
  if (wsSecret.generated) logger.info({ file: wsSecret.file }, 'generated the WebSocket app secret');
  const ws = { ...config.ws, appSecret: wsSecret.value };

  // Which key obtained each private-channel token: /broadcasting/auth records, the WebSocket server checks.
  const channelGrants = new ChannelGrants({
    isKeyActive: async (apiKey) => (await exchange.credentials.getApiKey(apiKey))?.revokedAt === null,
    maxPerConnection: config.ws.maxSubscriptionsPerConnection,
  });
  // Cached public GETs are answered ahead of Fastify; it honours the IP limit, chaos and metrics below.
  const publicFront = new PublicFront({ trustProxy: config.trustProxy });
  const app = buildHttpApp({
    publicFront,
    cacheHistory: options.historyFollowsCommits === true,
    channelGrants,
    exchange,
    vault,
    logger: logger as FastifyBaseLogger,
    clock: options.clock,
    config: {
      ...config,
      ws,
      logRequests: config.logLevel === 'debug' || config.logLevel === 'trace',
      headersTimeoutSeconds: config.httpConnections.headersTimeoutSeconds,
    },
  });
  limitConnectionsPerIp(app.server, config.httpConnections.maxPerIp, () => metrics.httpConnectionRefused());
  // Per-IP limit on every request but /healthz and /readyz; the per-key limit runs in authenticate(),
  // in Redis when REDIS_URL is set (shared by every process serving the API), else in this process.
  // The Redis client is loaded only then (~0.1 s of start-up otherwise spent for nothing).
  const keyLimiter =
    config.redisUrl !== undefined && config.rateLimit.keyPerSecond > 0
      ? new (await import('./http/shared-rate-limit.js')).SharedTokenBuckets({
          url: config.redisUrl,
          ratePerSecond: config.rateLimit.keyPerSecond,
          burst: config.rateLimit.keyBurst,
          onFallback: () => metrics.rateLimitFallback(),
          onStateChange: (up, error) => {
            if (up) logger.info('rate limit store (Redis) answers again: per-key limits are shared again');
            else
              logger.warn(
                { reason: error?.message },
                'rate limit store (Redis) is not answering: per-key limits are enforced by each process alone until it is back',
              );
          },
        })
      : undefined;
  if (keyLimiter !== undefined) {
    app.addHook('onClose', () => keyLimiter.close());
    // Starts shared when Redis answers within 2 s; otherwise starts anyway, limiting locally (logged).
    await keyLimiter.ready();
  }
  await app.register(httpRateLimit, {
    ...config.rateLimit,
    ...(keyLimiter === undefined ? {} : { keyLimiter }),
    shareIpLimit: (take) => publicFront.limitByIp(take),
  });
  metrics.mount(app, admin.token, publicFront);
  const readiness = mountProbes(app, {
    isShuttingDown: options.isShuttingDown,
    isWritable: options.isReady ?? (() => exchange.isWritable()),
    storeName: options.storeName,
    unavailableReason: options.unavailableReason,
    ...(options.alarm === undefined ? {} : { alarm: options.alarm }),
  });
  const chaos: InstalledChaos = await installChaos(app, {
    allowed: config.chaos,
    seed: config.chaosSeed,
    adminToken: admin.token,
    isKnownKey: async (apiKey) => (await exchange.credentials.getApiKey(apiKey)) !== undefined,
    keysOf: (socketId) => channelGrants.keysOf(socketId),
    onInjected: ({ fault, apiKey, detail }) => {
      metrics.chaosFault(fault);
      logger.info({ fault, api_key: apiKey ?? null, ...detail }, 'chaos: fault injected');
    },
  });
  // Faults set on the REST API (latency, errors) apply to public GETs too: Fastify's hook decides.
  publicFront.stepAsideWhen(() => chaos.chaos.flags.http);
  const realtime = mountRealtime({
    faults: chaos.ws,
    server: app.server,
    exchange,
    appKey: ws.appKey,
    appSecret: ws.appSecret,
    channelGrants,
    trustProxy: config.trustProxy,
    onRefused: (reason) => metrics.wsConnectionRefused(reason),
    activityTimeoutSeconds: config.ws.activityTimeoutSeconds,
    limits: config.ws,
    clock: options.clock,
    logger,
  });
  metrics.watchRealtime(() => realtime.realtime.stats());
  // Sockets are closed (4200: clients reconnect) before the HTTP server waits for connections to end.
  app.addHook('preClose', async () => {
    chaos.close();
    await realtime.close();
  });
  return { app, realtime, chaos, admin, vault, ws, readiness };
}

/** The simulator's replay (SIMULATOR_REPLAY_FILE), checked against the catalogue before listening. */
function replayOf(config: Config, exchange: LocalExchange): PreparedReplay | undefined {
  const settings = config.simulator.replay;
  if (settings === undefined) return undefined;
  return prepareReplay(settings, (pair) => {
    const market = exchange.catalogue.marketByName(pair);
    return market === undefined ? undefined : { pair, ...market };
  });
}
const STORE_NAMES = { sqlite: 'sqlite', postgres: 'postgresql' } as const;

/**
 * Development conveniences: the demo account (and the simulator's accounts), provisioned through
 * the admin API in-process, and the market simulator trading over the public HTTP API like any
 * client. The demo's credentials go to DATA_DIR/demo-credentials.json (0600); the log names the
 * file and the key, never the secret.
 */
async function startDemo(
  config: Config,
  logger: Logger,
  app: FastifyInstance,
  adminToken: string,
  exchange: LocalExchange,
  port: number,
  options: ServerOptions & { readonly replay?: PreparedReplay | undefined },
): Promise<{ simulator?: Simulator; demo?: DemoAccount }> {
  if (!config.demo && !config.simulator.enabled) return {};
  const adminApi: AdminApi = async (method, path, body) => {
    const response = await app.inject({
      method: method as 'GET',
      url: `/admin/v1${path}`,
      headers: {
        authorization: `Bearer ${adminToken}`,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      ...(body === undefined ? {} : { payload: JSON.stringify(body) }),
    });
    return {
      status: response.statusCode,
      body: response.body === '' ? null : (JSON.parse(response.body) as unknown),
    };
  };
  // The address clients use: a wildcard bind is reached through the loopback address.
  const reachableHost = config.host === '0.0.0.0' || config.host === '::' ? '127.0.0.1' : config.host;
  const base =
    config.publicUrl ??
    `http://${reachableHost.includes(':') ? `[${reachableHost}]` : reachableHost}:${port}`;
  const provision = await provisionDemo(adminApi, config.dataDir, logger, {
    url: `${base}/v1`,
    files: options.inMemory !== true,
    websocket: websocketEndpoint(base, config.ws.appKey),
  });
  if (config.demo && provision.created) {
    const credentials = {
      user_id: provision.demo.userId,
      api_key: provision.demo.apiKey,
      file: provision.demoFile,
    };
    // The secret is never logged, even for play money: logs get shipped and shared. It is in
    // the demo file (0600); an in-memory venue hands it to its caller instead.
    logger.info(credentials, 'demo account created (play money); its secret is in the file');
  }
  if (!config.simulator.enabled) return { demo: provision.demo };
  logger.info({ rate: config.simulator.ratePerSecond }, 'market simulator on (SIMULATOR=off to stop it)');
  if (options.replay !== undefined)
    logger.info(
      { file: options.replay.name, pair: options.replay.pair, speed: options.replay.speed },
      `replaying ${options.replay.trades.length} trades`,
    );
  const simulator = await startSimulator({
    baseUrl: `http://${reachableHost.includes(':') ? `[${reachableHost}]` : reachableHost}:${port}/v1`,
    makers: provision.makers,
    takers: provision.takers,
    markets: exchange.catalogue.markets().map((m) => `${m.base}/${m.quote}`),
    ratePerSecond: config.simulator.ratePerSecond,
    referencePrices: { ...DEFAULT_REFERENCE_PRICES, ...options.referencePrices },
    seed: config.simulator.seed,
    logger,
    ...(options.replay === undefined ? {} : { replay: options.replay }),
  });
  return { simulator, demo: provision.demo };
}
