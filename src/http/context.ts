/** What the v1 routes are given: the exchange port, the vault and the few settings they read. */

import type { Micros } from '../domain/types.js';
import type { Exchange } from '../sequencer/ports.js';
import type { ChannelGrantIssuer } from '../ws/channel-grants.js';
import type { AnswerSource } from './public-front.js';

export interface HttpConfig {
  /** Pusher-protocol app credentials; POST /broadcasting/auth signs channel tokens with them. */
  readonly ws: { readonly appKey: string; readonly appSecret: string };
  /** Valuation currency of the wallet's `*_in_fiat` fields (`balance_currency`). */
  readonly balanceCurrency: string;
  /** Largest accepted request body; larger ones get 413. */
  readonly bodyLimitBytes: number;
  /**
   * Public origin (`https://api.example.com`) used in pagination `path`. When absent the request's
   * own scheme and Host are used, which is right unless a proxy rewrites them.
   */
  readonly publicUrl?: string;
  /** The per-key request limit (config RATE_LIMIT_KEY_*), reported by GET /account; absent: none. */
  readonly rateLimit?: { readonly keyPerSecond: number; readonly keyBurst: number };
}

export interface SecretOpener {
  open(sealed: string): string;
}

export interface V1Deps {
  readonly exchange: Exchange;
  readonly vault: SecretOpener;
  readonly config: HttpConfig;
  /** Wall clock in microseconds (tickers' "today", order book timestamps). */
  readonly clock: () => Micros;
  /**
   * Records which key obtained each channel token, so that a revoked key's tokens open nothing
   * and tokens are issued only for live connections. Without it (tests of the HTTP layer alone)
   * tokens are signed and nothing is recorded.
   */
  readonly channelGrants?: ChannelGrantIssuer | undefined;
  /**
   * Answers cached public GETs before Fastify routes them (src/http/public-front.ts); the market
   * data routes hand it their cache. Without it every request goes through Fastify.
   */
  readonly publicFront?: { serve(source: AnswerSource): () => void } | undefined;
  /**
   * The history's answers (/ohlc, /historical_trades) may be cached: the exchange's `onCommitted`
   * listeners hear of every commit before any reply it acknowledges (not so on a gateway, whose
   * feed may follow the PostgreSQL a read after a 201 must see).
   */
  readonly cacheHistory?: boolean | undefined;
}

/** Laravel's default "no rows" message is not an interface contract; these texts are ours. */
export const MESSAGES = {
  markets: 'Markets retrieved successfully.',
  wallet: 'Wallet retrieved successfully.',
  orderCreated: 'Order created successfully.',
  orderCanceled: 'Order canceled successfully.',
  order: 'Order retrieved successfully.',
  openOrders: 'Open orders retrieved successfully.',
  closedOrders: 'Closed orders retrieved successfully.',
  trades: 'Trades retrieved successfully.',
  trade: 'Trade retrieved successfully.',
  account: 'Account retrieved successfully.',
  fees: 'Fees retrieved successfully.',
} as const;
