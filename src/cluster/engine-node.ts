/**
 * `openspot engine`: the sequencer, the engine and the only store writer (PostgreSQL, holding the
 * writer lock), serving the gateways over NATS:
 *
 * - commands by request/reply (CommandService), answered after their commit;
 * - every committed-feed entry published to the JetStream batch stream (BatchPublishQueue: a
 *   commit never waits for NATS);
 * - the market snapshot (the MarketView and the stream batch sequence it includes) on request,
 *   in chunks that fit max_payload (snapshot.ts), for gateways that start or repair a gap; a
 *   ping answered with whether commands are taken.
 *
 * Stream numbering across engine starts: the feed counts from 0 at each start, so the engine
 * numbers the stream after what it already holds. Its first message is a `reset` carrying the
 * state it starts from, book sequences included (committed with their batches, loaded at start).
 * A gateway that followed the previous engine goes on without a reload when that state is the
 * one it already shows; otherwise it reloads from it (and its WebSocket clients subscribe again
 * from a snapshot), exactly as after a checkpoint restore (decision 101).
 *
 * A small HTTP port (ENGINE_PORT) serves /healthz, /readyz, /metrics and the admin API.
 */
import { mkdirSync } from 'node:fs';
import type { NatsConnection } from '@nats-io/transport-node';
import Fastify, { type FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import { resolveAdminToken } from '../admin/admin-token.js';
import { adminRoutes } from '../admin/routes.js';
import { CredentialVault } from '../auth/vault.js';
import type { Config } from '../config/config.js';
import { httpErrorHandler } from '../http/errors.js';
import { listenOn } from '../http/listen.js';
import { mountProbes } from '../http/probes.js';
import { Metrics } from '../metrics.js';
import type { FeedEntry } from '../sequencer/committed-feed.js';
import { seedCatalogue } from '../sequencer/seed.js';
import { type LocalExchange, openExchange } from '../sequencer/sequencer.js';
import { openConfiguredStore } from '../store/open-store.js';
import { unavailableReason } from '../store/store.js';
import {
  BatchPublisher,
  BatchPublishQueue,
  type BatchStreamConfig,
  StreamForkError,
} from './batch-stream.js';
import { ClusterKey } from './cluster-key.js';
import { CommandService } from './command-service.js';
import type { ExactValue } from './exact-json.js';
import { publishHeartbeats } from './heartbeat.js';
import { RefusalAlarm } from './refusal-alarm.js';
import { clusterSettings, connectNats, describeNats, subjects } from './settings.js';
import { servePing, serveSnapshots } from './snapshot.js';
import { serveStandbyProbes } from './standby-probes.js';
import { warmUp } from './warm-up.js';

/** How often a standby tries the writer lock. */
export const STANDBY_LOCK_POLL_MS = 50;

export interface RunningEngine {
  readonly exchange: LocalExchange;
  readonly url: string;
  close(): Promise<void>;
}

export async function startEngine(
  config: Config,
  logger: Logger,
  env: NodeJS.ProcessEnv,
  options: { readonly standby: boolean; readonly port: number },
): Promise<RunningEngine> {
  if (config.databaseUrl === undefined)
    throw new Error('the engine needs DATABASE_URL: gateways read its PostgreSQL database');
  const cluster = clusterSettings(env);
  const names = subjects(cluster.subjectPrefix);
  mkdirSync(config.dataDir, { recursive: true, mode: 0o700 });
  const key = ClusterKey.fromEnvOrFile(config.dataDir, env, config.production);
  const metrics = new Metrics();
  const alarm = new RefusalAlarm(logger, metrics);
  let fatal: (() => void) | undefined;
  // A standby answers its probes while it waits, on the port it will serve from once it takes over.
  const standby = options.standby ? await serveStandbyProbes(config.host, options.port) : undefined;
  if (standby !== undefined) logger.info({ url: standby.url }, 'standby: probes listening (readyz: standby)');
  const port = standby?.port ?? options.port;
  // Connected before the writer lock: a standby taking over has one step less to make then.
  const nc = await connectNats(cluster.nats, 'openspot-engine');
  if (options.standby) {
    // Its first commands after a takeover then run optimised code (warm-up.ts).
    const started = performance.now();
    await warmUp();
    logger.info({ ms: Math.round(performance.now() - started) }, 'standby: warmed up the order path');
  }
  const { store } = await openConfiguredStore(
    config,
    false,
    options.standby
      ? {
          onLockWait: (holder) => logger.info({ holder }, 'standby: waiting for the writer lock'),
          // Every 50 ms rather than 200: a failover waits for this poll.
          lockPollMs: STANDBY_LOCK_POLL_MS,
        }
      : undefined,
    // Its state is stale: leave the command subject at once (a zombie subscriber there would
    // answer gateways with 503s) and exit, for the supervisor to restart it.
    (message) => {
      logger.error({ reason: message }, 'superseded as the writer; stopping');
      fatal?.();
    },
  );
  logger.info('store: PostgreSQL (DATABASE_URL), writer lock held');
  // Closed meanwhile: gateways wait for commands, not for the probes' port (awaited before listening).
  const standbyClosed = standby?.close();
  let exchange: LocalExchange;
  try {
    exchange = await openExchange({
      store: metrics.instrumentStore(store),
      logger,
      engine: { maxOpenOrdersPerUser: config.maxOpenOrdersPerUser },
    });
  } catch (error) {
    await store.close();
    await nc.close();
    throw error;
  }
  logger.info('committed state loaded');
  metrics.watchExchange(exchange);
  const seeded = await seedCatalogue(exchange, config.catalogueFile);
  if (seeded > 0) logger.info({ created: seeded }, 'created the missing assets and markets of the catalogue');

  let stopping = false;
  const served = await serveCluster(exchange, nc, {
    stream: cluster.stream,
    subjects: names,
    logger,
    key,
    alarm,
    takesCommands: () => !stopping,
    onFatal: () => fatal?.(),
  });
  logger.info({ nats: describeNats(cluster.nats) }, 'serving the cluster over NATS');

  const vault = CredentialVault.fromEnvOrFile(config.dataDir, env);
  const admin = resolveAdminToken(config.dataDir, config.adminToken);
  const app: FastifyInstance = Fastify({ logger: false });
  app.setErrorHandler(httpErrorHandler);
  metrics.mount(app, admin.token);
  const readiness = mountProbes(app, {
    isShuttingDown: () => stopping,
    isWritable: () => exchange.isReady(),
    storeName: 'postgresql',
    unavailableReason: () => unavailableReason(exchange.notReadyCause()),
    alarm: () => alarm.current(),
  });
  await app.register(adminRoutes, {
    prefix: '/admin/v1',
    exchange,
    vault,
    token: admin.token,
    // Core NATS, not the stream: a gateway that misses it still refuses the key over HTTP within
    // the reader's 500 ms key cache; this closes the private WebSocket subscriptions at once.
    onApiKeyRevoked: (userId) => nc.publish(names.keyRevoked, JSON.stringify({ userId })),
    health: async () => ({ status: readiness(), ...(await metrics.summary()) }),
  });
  await standbyClosed;
  const { url } = await listenOn(app, config.host, port);
  logger.info({ url }, 'OpenSpot engine is listening (probes, metrics, admin API)');

  const close = async (): Promise<void> => {
    if (stopping) return;
    stopping = true;
    // No new commands; those taken are answered (after their commit), then the rest is published.
    await served.stopCommands();
    await exchange.close();
    await served.close();
    await nc.drain().catch(() => undefined);
    await app.close();
    await store.close();
  };
  fatal = () => void close().then(() => process.exit(1));
  return { exchange, url, close };
}

export interface ServeClusterOptions {
  readonly stream: Partial<BatchStreamConfig>;
  readonly subjects: ReturnType<typeof subjects>;
  readonly logger: Pick<Logger, 'info' | 'warn' | 'error'>;
  /** Commands are taken, and batches published, with a MAC under this key. */
  readonly key: ClusterKey;
  /** Told of every command refused and every stream message set aside (default: the log only). */
  readonly alarm?: RefusalAlarm;
  /** False once the engine is stopping: the ping then says so. */
  readonly takesCommands?: () => boolean;
  /** The stream forked (another engine published): the process should stop. */
  readonly onFatal?: () => void;
}

export interface ServedCluster {
  /** The stream batch sequence of the engine's feed entry `sequence`. */
  streamSequence(feedSequence: number): number;
  /** Stops taking commands; resolves once those taken are answered. */
  stopCommands(): Promise<void>;
  /** Publishes what is queued (5 s at most), then stops answering snapshots and pings. */
  close(): Promise<void>;
}

/**
 * The engine's side of NATS, on any LocalExchange: commands, the batch stream, snapshots, the
 * ping. Call it between commits (at start): the first stream message is the current state.
 */
export async function serveCluster(
  exchange: LocalExchange,
  nc: NatsConnection,
  options: ServeClusterOptions,
): Promise<ServedCluster> {
  const { logger } = options;
  const names = options.subjects;
  const alarm = options.alarm ?? new RefusalAlarm(logger, undefined);
  const publisher = await BatchPublisher.open(nc, options.stream, {
    key: options.key,
    onSetAside: ({ streamSequence, reason }) => alarm.refused('batch', reason, { streamSequence }),
  });
  logger.info({ stream: publisher.config.stream }, 'batch stream opened');
  let retries = 0;
  const queue = new BatchPublishQueue(publisher, {
    onDropped: (sequence, reason) =>
      logger.warn({ sequence, reason }, 'a committed batch was not published: gateways will re-snapshot'),
    onRetry: (error) => {
      // Every 10 s of an outage, not every 250 ms.
      if (retries++ % 40 === 0) logger.warn({ err: error }, 'cannot publish to the batch stream; retrying');
    },
    onFatal: (error) => {
      logger.error({ err: error }, 'the batch stream forked: another engine published; stopping');
      options.onFatal?.();
    },
  });
  // Stream numbering: after what the stream holds; its first message here is the state we start
  // from. Batches committed while that is published wait for its number.
  const startHead = exchange.feed.head();
  const reset = {
    kind: 'reset',
    sequence: startHead,
    snapshot: exchange.view.snapshot(),
  } as unknown as ExactValue;
  let offset: number | undefined;
  const early: FeedEntry[] = [];
  const stopFeed = exchange.feed.subscribe(startHead + 1, (message) => {
    if (message.kind === 'gap') {
      logger.error({ requested: message.requested }, 'engine feed gap: batches not published');
      return;
    }
    if (offset === undefined) early.push(message);
    else queue.enqueue(offset + message.sequence, message as unknown as ExactValue);
  });
  // Commands are taken before the state is published (a takeover is the shorter for it): the
  // batches they commit wait in `early` for the reset's stream number.
  const service = await CommandService.start(nc, exchange, {
    subject: names.commands,
    key: options.key,
    // Committed by the engine this one took over from (or by this one before a restart).
    loadReceipts: (notBefore) => exchange.store.loadCommandReceipts(notBefore),
    onDropped: (reason) => {
      if (reason === 'unverified' || reason === 'operator_command') alarm.refused('command', reason);
      // An id seen again is what a gateway's resend is (a failover, a slow answer): answered with
      // the first answer, applied once; a capture replayed gets the same and applies nothing too.
      else if (reason !== 'replay') logger.warn({ reason }, 'a command request was dropped unapplied');
    },
    onFailed: (error) => logger.error({ err: error }, 'a command failed in the engine'),
  });
  // From now on: the first beat tells every gateway that this engine takes commands, and they
  // send again at once what the engine before it never answered.
  const heartbeats = publishHeartbeats(nc, { subject: names.heartbeat, key: options.key });
  logger.info({ subject: names.commands, receipts: service.remembered }, 'taking commands over NATS');
  let resetAt: number;
  try {
    resetAt = await publisher.publishAtEnd(reset);
  } catch (error) {
    if (error instanceof StreamForkError) {
      heartbeats.stop();
      await service.stop();
      throw error;
    }
    // JetStream not answering now: the queue publishes it when it can, after the end read at start.
    resetAt = (publisher.lastPublished ?? 0) + 1;
    logger.warn(
      { err: error },
      'cannot publish to the batch stream yet; the state will follow when it answers',
    );
    queue.enqueue(resetAt, reset);
  }
  const streamOffset = resetAt - startHead;
  offset = streamOffset;
  for (const message of early)
    queue.enqueue(streamOffset + message.sequence, message as unknown as ExactValue);
  logger.info({ stream: publisher.config.stream, first: resetAt }, 'publishing committed batches');
  const snapshots = serveSnapshots(
    nc,
    () => ({ sequence: streamOffset + exchange.view.sequence, snapshot: exchange.view.snapshot() }),
    names.snapshot,
    (error) => logger.error({ err: error }, 'could not answer a snapshot request'),
    { sequence: () => streamOffset + exchange.view.sequence },
  );
  const takesCommands = options.takesCommands ?? (() => true);
  const ping = servePing(
    nc,
    () => takesCommands() && exchange.isWritable(),
    names.ping,
    () => streamOffset + exchange.feed.head(),
  );
  await nc.flush();
  return {
    streamSequence: (feedSequence) => streamOffset + feedSequence,
    stopCommands: async () => {
      heartbeats.stop();
      await service.stop();
    },
    async close() {
      heartbeats.stop();
      await service.stop();
      await Promise.race([queue.flushed(), new Promise((resolve) => setTimeout(resolve, 5_000))]);
      stopFeed();
      await queue.close();
      snapshots.unsubscribe();
      ping.unsubscribe();
    },
  };
}
