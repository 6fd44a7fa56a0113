/**
 * Serialized answers of the public market-data GETs (/orderbook, /tickers), reused until the state
 * they were read from changes. The busy public endpoints are read far more often than the book or
 * the trade statistics change, and building the body (levels, decimal formatting, serialization)
 * costs more than everything else the request does.
 *
 * Never stale: every entry records the versions of what it depends on, taken in the same turn of
 * the event loop as the reads that built it, and the time bucket its body shows (the order book's
 * Unix second, the tickers' UTC day). The exchange reports each committed batch to `committed`
 * synchronously, before any request acknowledged by that batch gets its reply, and it bumps the
 * versions of the markets the batch touched; an entry whose versions or bucket no longer match is
 * not served. Nothing is cached or served while the exchange reports its store unwritable (the
 * engine may then hold state that is not the committed one).
 *
 * Entries are keyed by the request URL exactly as received (path and query string), so an entry
 * is only ever served for a request the route's own validation already answered with this body.
 * Size is bounded (entries and bytes); the oldest entry goes first.
 *
 * An entry filed with its route (`CachedRoute`: the route's path, for the request metrics, and
 * its time bucket) may also be answered by the PublicFront (src/http/public-front.ts) before
 * Fastify sees the request at all.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { MarketId } from '../../domain/types.js';
import type { CommittedBatch, Exchange } from '../../sequencer/ports.js';
import { sendJson } from './shared.js';

export interface PublicCacheLimits {
  readonly maxEntries: number;
  /** Sum of the cached bodies' sizes. */
  readonly maxBytes: number;
  /** Larger bodies (a full order book) are not cached. */
  readonly maxBodyBytes: number;
}

const DEFAULT_LIMITS: PublicCacheLimits = {
  maxEntries: 512,
  maxBytes: 16 * 1024 * 1024,
  maxBodyBytes: 512 * 1024,
};

/**
 * The state an answer was read from: one market (its book, trades, candles), every market and the
 * catalogue ('all'), or the catalogue alone (assets and markets: 'catalogue').
 */
export type Dependency = MarketId | 'all' | 'catalogue';

/** The route an entry answers, for answering it outside Fastify (PublicFront). */
export interface CachedRoute {
  /** The route's path as Fastify names it (`/v1/orderbook`): the request metrics' label. */
  readonly url: string;
  /** The route's time bucket now (the one its handler files answers under). */
  readonly bucket: () => number;
}

/** A cached answer ready to be written, and the route it belongs to. */
export interface CachedAnswer {
  readonly body: Buffer;
  readonly route: string;
}

interface Entry {
  readonly body: Buffer;
  readonly dependency: Dependency;
  readonly version: number;
  readonly catalogue: number;
  readonly bucket: number;
  readonly route: CachedRoute | undefined;
  /** What `answer` hands out (made once). */
  readonly answer: CachedAnswer | undefined;
}

/** A version stamp taken before reading state; `store` files the answer under it. */
export interface Stamp {
  readonly dependency: Dependency;
  readonly version: number;
  readonly catalogue: number;
}

export class PublicResponseCache {
  private readonly entries = new Map<string, Entry>();
  private bytes = 0;
  private readonly marketVersions = new Map<MarketId, number>();
  /** Bumped by every change to any market or to the catalogue. */
  private anyVersion = 0;
  /** Bumped by catalogue changes (assets, markets) and anything not known to be market-local. */
  private catalogueVersion = 0;

  constructor(
    private readonly exchange: Pick<Exchange, 'isWritable'>,
    private readonly limits: PublicCacheLimits = DEFAULT_LIMITS,
  ) {}

  /** The `onCommitted` listener: invalidates what the batch changed. */
  committed(batch: CommittedBatch): void {
    for (const event of batch.events) {
      switch (event.type) {
        case 'orderAccepted':
        case 'orderDone':
          this.touch(event.order.marketId);
          break;
        case 'trade':
          this.touch(event.trade.marketId);
          break;
        case 'deposited':
        case 'withdrawn':
          break; // balances only: nothing public
        default:
          // Catalogue changes, and any event this cache does not know: everything is stale.
          this.catalogueVersion++;
          this.anyVersion++;
      }
    }
    // The book changes of a batch always come with order events, but be defensive.
    for (const { marketId } of batch.books) this.touch(marketId);
  }

  /** The `onRestored` listener: a checkpoint restore replaced every market and the catalogue. */
  restored(): void {
    this.catalogueVersion++;
    this.anyVersion++;
    this.entries.clear();
    this.bytes = 0;
  }

  private touch(marketId: MarketId): void {
    this.marketVersions.set(marketId, (this.marketVersions.get(marketId) ?? 0) + 1);
    this.anyVersion++;
  }

  /** Call before reading the state the answer is built from (same turn of the event loop). */
  stamp(dependency: Dependency): Stamp {
    return { dependency, version: this.versionOf(dependency), catalogue: this.catalogueVersion };
  }

  private versionOf(dependency: Dependency): number {
    if (dependency === 'all') return this.anyVersion;
    // The catalogue's own version is compared for every entry (`current`).
    if (dependency === 'catalogue') return 0;
    return this.marketVersions.get(dependency) ?? 0;
  }

  /** The cached body for this URL, if it is still exactly what the route would answer now. */
  lookup(url: string, bucket: number): Buffer | undefined {
    const entry = this.entries.get(url);
    if (entry === undefined || entry.bucket !== bucket || !this.current(entry)) return undefined;
    if (!this.exchange.isWritable()) return undefined;
    return entry.body;
  }

  /**
   * The cached answer for a GET of this URL, if it was filed with its route and is still exactly
   * what that route would answer now (the route's bucket is read from its clock here).
   */
  answer(url: string): CachedAnswer | undefined {
    const entry = this.entries.get(url);
    if (entry?.route === undefined || entry.bucket !== entry.route.bucket() || !this.current(entry))
      return undefined;
    if (!this.exchange.isWritable()) return undefined;
    return entry.answer;
  }

  /**
   * Files a 200 body built from the state `stamp` was taken on; returns the body as sent. With
   * `route`, the entry may also be answered before routing (`answer`).
   */
  store(
    url: string,
    stamp: Stamp,
    bucket: number,
    serialized: string | ArrayBuffer | Buffer,
    route?: CachedRoute,
  ): Buffer {
    const body =
      typeof serialized === 'string'
        ? Buffer.from(serialized, 'utf8')
        : Buffer.isBuffer(serialized)
          ? serialized
          : Buffer.from(serialized);
    if (body.length > this.limits.maxBodyBytes || !this.exchange.isWritable()) return body;
    const entry: Entry = {
      body,
      ...stamp,
      bucket,
      route,
      answer: route === undefined ? undefined : { body, route: route.url },
    };
    if (!this.current(entry)) return body; // the state moved on while the answer was built
    this.remove(url);
    this.entries.set(url, entry);
    this.bytes += body.length;
    for (const [key, oldest] of this.entries) {
      if (this.entries.size <= this.limits.maxEntries && this.bytes <= this.limits.maxBytes) break;
      this.entries.delete(key);
      this.bytes -= oldest.body.length;
    }
    return body;
  }

  private remove(url: string): void {
    const previous = this.entries.get(url);
    if (previous === undefined) return;
    this.entries.delete(url);
    this.bytes -= previous.body.length;
  }

  private current(entry: Stamp): boolean {
    return entry.catalogue === this.catalogueVersion && entry.version === this.versionOf(entry.dependency);
  }

  /** Entries held (for tests). */
  get size(): number {
    return this.entries.size;
  }
}

/**
 * A route-level onRequest hook answering GETs from the cache. `bucket` is the route's time
 * bucket for the current moment (it must be the one its handler files answers under).
 */
export function serveFromCache(cache: PublicResponseCache, bucket: () => number) {
  return (request: FastifyRequest, reply: FastifyReply, done: () => void): void => {
    if (request.method === 'GET') {
      const body = cache.lookup(request.url, bucket());
      if (body !== undefined) {
        sendJson(reply, body);
        return;
      }
    }
    done();
  };
}
