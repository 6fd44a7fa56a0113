/**
 * ccxt's own caches for `watch*` results (ArrayCache and friends), which its pro classes use and
 * its `newUpdates` mode relies on (`getLimit`). The package exports only its root module, so they
 * are loaded from the file beside it: the same module instance ccxt itself uses.
 */

/** What the class uses of ccxt's caches (ccxt/js/src/base/ws/Cache.d.ts). */
export interface WatchCache<T> extends Array<T> {
  append(item: T): void;
  getLimit(symbol: string | undefined, limit: number | undefined): number | undefined;
}

interface CacheModule {
  ArrayCache: new (maxSize?: number) => WatchCache<unknown>;
  ArrayCacheByTimestamp: new (maxSize?: number) => WatchCache<unknown>;
  ArrayCacheBySymbolById: new (maxSize?: number) => WatchCache<unknown>;
}

const cacheModule = (await import(
  new URL('./src/base/ws/Cache.js', import.meta.resolve('ccxt')).href
)) as CacheModule;

export const newArrayCache = <T>(maxSize: number): WatchCache<T> =>
  new cacheModule.ArrayCache(maxSize) as WatchCache<T>;
export const newCacheByTimestamp = <T>(maxSize: number): WatchCache<T> =>
  new cacheModule.ArrayCacheByTimestamp(maxSize) as WatchCache<T>;
export const newCacheBySymbolById = <T>(maxSize: number): WatchCache<T> =>
  new cacheModule.ArrayCacheBySymbolById(maxSize) as WatchCache<T>;
