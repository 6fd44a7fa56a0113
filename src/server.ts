/**
 * Composition root: builds the store, the exchange and every adapter around it, and owns their
 * lifecycle (start, readiness, graceful shutdown). Nothing else wires modules together.
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { FastifyBaseLogger, FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import { resolveAdminToken } from './admin/admin-token.js';
import { adminRoutes } from './admin/routes.js';
import { type OpenExchange, openExchange } from './app/exchange.js';
import { seedCatalogue } from './app/seed.js';
import { CredentialVault } from './auth/vault.js';
import { type Config, isLoopback } from './config/config.js';
import { buildHttpApp } from './http/app.js';
import { SqliteStore } from './store/sqlite/sqlite-store.js';
import { mountRealtime } from './ws/mount.js';

export interface RunningServer {
  readonly app: FastifyInstance;
  readonly exchange: OpenExchange;
  /** The address actually bound (useful with PORT=0). */
  readonly url: string;
  readonly adminToken: string;
  close(): Promise<void>;
}

export async function startServer(
  config: Config,
  logger: Logger,
  env: NodeJS.ProcessEnv = process.env,
): Promise<RunningServer> {
  if (!isLoopback(config.host) && config.adminToken === undefined) {
    throw new Error(
      'ADMIN_TOKEN must be set when HOST is not a loopback address (the admin API would be reachable from the network).',
    );
  }
  if (config.production && config.ws.usingDefaults) {
    logger.warn(
      'WS_APP_KEY / WS_APP_SECRET are not set: using the development defaults. Set them in production.',
    );
  }
  mkdirSync(config.dataDir, { recursive: true, mode: 0o700 });
  const store = SqliteStore.open({
    path: join(config.dataDir, 'openspot.db'),
    synchronous: config.sqliteSynchronous,
  });
  const exchange = openExchange({ store, logger });
  if (await seedCatalogue(exchange, config.catalogueFile))
    logger.info('created the default catalogue of assets and markets');
  const vault = CredentialVault.fromEnvOrFile(config.dataDir, env);
  const admin = resolveAdminToken(config.dataDir, config.adminToken);
  if (admin.file !== undefined) logger.info({ file: admin.file }, 'admin API token is stored in this file');

  let shuttingDown = false;
  const app = buildHttpApp({
    exchange,
    vault,
    logger: logger as FastifyBaseLogger,
    clock: exchange.clock,
    config: { ...config, logRequests: config.logLevel === 'debug' || config.logLevel === 'trace' },
  });
  app.get('/healthz', async () => ({ status: 'ok' }));
  app.get('/readyz', async (_request, reply) => {
    const ready = !shuttingDown && exchange.isWritable();
    return reply
      .code(ready ? 200 : 503)
      .send({ status: ready ? 'ready' : shuttingDown ? 'shutting down' : 'store unavailable' });
  });
  const realtime = mountRealtime({
    server: app.server,
    exchange,
    appKey: config.ws.appKey,
    appSecret: config.ws.appSecret,
    activityTimeoutSeconds: config.ws.activityTimeoutSeconds,
    limits: config.ws,
    clock: exchange.clock,
    logger,
  });
  // Sockets are closed (4200: clients reconnect) before the HTTP server waits for connections to end.
  app.addHook('preClose', async () => realtime.close());
  await app.register(adminRoutes, {
    prefix: '/admin/v1',
    exchange,
    vault,
    token: admin.token,
    onApiKeyRevoked: (userId) => realtime.realtime.disconnectUserPrivateChannels(userId),
  });

  await app.listen({ port: config.port, host: config.host });
  const address = app.server.address();
  const port = typeof address === 'object' && address !== null ? address.port : config.port;
  const url = `http://${config.host.includes(':') ? `[${config.host}]` : config.host}:${port}`;
  logger.info({ url }, 'OpenSpot is listening');

  return {
    app,
    exchange,
    url,
    adminToken: admin.token,
    async close() {
      if (shuttingDown) return;
      shuttingDown = true;
      await app.close();
      await exchange.close();
      store.close();
    },
  };
}
