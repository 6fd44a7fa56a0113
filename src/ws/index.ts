/** The WebSocket side of OpenSpot: a Pusher Channels protocol 7 server and the exchange feed. */
export { signChannelAuth, verifyChannelAuth } from './channel-auth.js';
export {
  type ChannelKind,
  type ChannelProvider,
  channelName,
  isPrivateChannel,
  type ParsedChannel,
  parseChannelName,
  type ResolvedChannel,
} from './channels.js';
export {
  createExchangeChannels,
  type FeedOptions,
  type Publisher,
  startExchangeFeed,
} from './exchange-feed.js';
export { CloseCode } from './frames.js';
export type { WsLogger } from './logger.js';
export { type MountedRealtime, type MountOptions, mountRealtime } from './mount.js';
export {
  createRealtimeServer,
  DEFAULT_LIMITS,
  type RealtimeLimits,
  type RealtimeServer,
  type RealtimeServerOptions,
  type RealtimeStats,
} from './server.js';
export { isSocketId } from './socket-id.js';
