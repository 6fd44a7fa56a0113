/**
 * One call for the main server: the Pusher-protocol server on the API's HTTP server, with the
 * exchange's channels and the feed that publishes every committed batch.
 */
import type { Server } from 'node:http';
import type { Clock } from '../sequencer/clock.js';
import type { Exchange } from '../sequencer/ports.js';
import { createExchangeChannels, type FeedOptions, startExchangeFeed } from './exchange-feed.js';
import type { WsLogger } from './logger.js';
import { createRealtimeServer, type RealtimeServer, type RealtimeServerOptions } from './server.js';

export interface MountOptions
  extends Pick<
    RealtimeServerOptions,
    | 'appKey'
    | 'appSecret'
    | 'activityTimeoutSeconds'
    | 'keepalive'
    | 'limits'
    | 'closeGraceMs'
    | 'channelGrants'
    | 'trustProxy'
    | 'onRefused'
    | 'faults'
  > {
  readonly server: Server;
  readonly exchange: Exchange;
  readonly clock?: Clock;
  readonly logger?: WsLogger;
  readonly snapshotTrades?: FeedOptions['snapshotTrades'];
  readonly snapshotOrders?: FeedOptions['snapshotOrders'];
}

export interface MountedRealtime {
  readonly realtime: RealtimeServer;
  /** Stops the feed, then closes every connection (4200) and stops accepting. */
  close(): Promise<void>;
}

export function mountRealtime(options: MountOptions): MountedRealtime {
  const feed: FeedOptions = {
    exchange: options.exchange,
    clock: options.clock,
    logger: options.logger,
    snapshotTrades: options.snapshotTrades,
    snapshotOrders: options.snapshotOrders,
  };
  const realtime = createRealtimeServer({ ...options, provider: createExchangeChannels(feed) });
  const stopFeed = startExchangeFeed({ ...feed, publisher: realtime });
  // After a checkpoint restore every subscriber's view is void: 4200 makes pusher-js reconnect at
  // once and subscribe again, and each subscription starts with a snapshot of the restored state.
  const stopRestored = options.exchange.onRestored(() => realtime.closeAll());
  return {
    realtime,
    async close() {
      stopRestored();
      stopFeed();
      await realtime.close();
    },
  };
}
