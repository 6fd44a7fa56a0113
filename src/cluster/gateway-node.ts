/**
 * `openspot gateway`: the /v1 HTTP interface and the Pusher-protocol WebSocket server of
 * `openspot serve` (the same builder, src/server.ts `mountInterface`), on a RemoteExchange: no
 * engine and no store writer here. Run any number behind a load balancer; they keep no state
 * that matters. The admin API is not served here (it is on the engine's ENGINE_PORT).
 */
import { mkdirSync } from 'node:fs';
import type { Logger } from 'pino';
import { type Config, ConfigError } from '../config/config.js';
import { listenOn } from '../http/listen.js';
import { pagesPlugin } from '../http/pages.js';
import { Metrics } from '../metrics.js';
import { mountInterface } from '../server.js';
import { openGatewayStore } from '../store/open-store.js';
import { ClusterKey } from './cluster-key.js';
import { RefusalAlarm } from './refusal-alarm.js';
import { RemoteExchange } from './remote-exchange.js';
import { SECRETS_KEY_MISMATCH, SecretsKeyCheck } from './secrets-check.js';
import { clusterSettings, connectNats, subjects } from './settings.js';

export interface RunningGateway {
  readonly exchange: RemoteExchange;
  readonly url: string;
  close(): Promise<void>;
}

export async function startGateway(
  config: Config,
  logger: Logger,
  env: NodeJS.ProcessEnv,
): Promise<RunningGateway> {
  const cluster = clusterSettings(env);
  const names = subjects(cluster.subjectPrefix);
  mkdirSync(config.dataDir, { recursive: true, mode: 0o700 });
  const key = ClusterKey.fromEnvOrFile(config.dataDir, env, config.production);
  const metrics = new Metrics();
  const alarm = new RefusalAlarm(logger, metrics);
  const store = await openGatewayStore(config);
  const nc = await connectNats(cluster.nats, 'openspot-gateway');
  let exchange: RemoteExchange;
  try {
    exchange = await RemoteExchange.open({
      nc,
      store,
      logger,
      key,
      alarm,
      maxLagMs: cluster.maxLagMs,
      stream: cluster.stream,
      commandSubject: names.commands,
      snapshotSubject: names.snapshot,
      pingSubject: names.ping,
      heartbeatSubject: names.heartbeat,
    });
  } catch (error) {
    await nc.close();
    await store.close();
    throw error;
  }
  metrics.watchExchange(exchange);
  let shuttingDown = false;
  const front = await mountInterface({
    config,
    logger,
    env,
    inMemory: false,
    exchange,
    clock: exchange.clock,
    metrics,
    isShuttingDown: () => shuttingDown,
    storeName: 'postgresql',
    unavailableReason: () => exchange.notReadyReason() ?? 'engine unreachable',
    alarm: () => alarm.current(),
  });
  const { app } = front;
  // A SECRETS_KEY other than the engine's would refuse every signed request: refuse to start
  // instead, and later stop being ready should a key appear that this one cannot open.
  const secrets = new SecretsKeyCheck(front.vault, () => store.newestSealedSecret());
  if (!(await secrets.check())) {
    await app.close();
    await exchange.close();
    await nc.close();
    await store.close();
    throw new ConfigError(
      `${SECRETS_KEY_MISMATCH}: the engine sealed them under another key; give this gateway the engine's SECRETS_KEY (or DATA_DIR/secrets.key).`,
    );
  }
  secrets.watch();
  exchange.addReadinessCheck(() => secrets.notReadyReason());
  // A key revoked through the engine's admin API: its private subscriptions here end too.
  const revocations = nc.subscribe(names.keyRevoked, {
    callback: (error, msg) => {
      if (error !== null) return;
      try {
        const { userId } = msg.json<{ userId: unknown }>();
        if (Number.isSafeInteger(userId))
          front.realtime.realtime.disconnectUserPrivateChannels(userId as number);
      } catch {
        logger.warn('ignored an unreadable key revocation message');
      }
    },
  });
  await app.register(pagesPlugin, {
    production: config.production,
    adminUi: false,
    wsAppKey: front.ws.appKey,
    balanceCurrency: config.balanceCurrency,
    demoCredentials: () => undefined,
  });
  const { url } = await listenOn(app, config.host, config.port);
  logger.info({ url }, 'OpenSpot gateway is listening');
  return {
    exchange,
    url,
    async close() {
      if (shuttingDown) return;
      shuttingDown = true;
      secrets.stop();
      revocations.unsubscribe();
      await app.close();
      await exchange.close();
      await nc.drain().catch(() => undefined);
      await store.close();
    },
  };
}
