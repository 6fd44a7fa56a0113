/**
 * Public market data: GET /markets, /tickers, /ohlc, /orderbook, /historical_trades.
 * Conventions follow Kraken (markets, OHLC) and CoinGecko's exchange API (tickers, order book,
 * historical trades); defaults and limits the interface leaves open are in docs/interface-decisions.md H.
 */
import { Type, type TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { MarketSpec, Micros, Side } from '../../domain/types.js';
import { INTERVALS, type Interval } from '../../market-data/candle.js';
import { MICROS_PER_DAY } from '../../sequencer/clock.js';
import {
  serializeCandle,
  serializeLevels,
  serializeMarket,
  serializePublicTrade,
  serializeTicker,
} from '../../wire/serializers.js';
import { unixSeconds } from '../../wire/time.js';
import type { V1Deps } from '../context.js';
import { MESSAGES } from '../context.js';
import { errorA, errorB, errorE, INVALID_REQUEST, rule } from '../errors.js';
import { parseIntInRange, parseUnixTime, resolvePair } from '../parse.js';
import {
  CandleSchema,
  Envelope,
  ErrorASchema,
  ErrorBSchema,
  ErrorESchema,
  MarketSchema,
  OrderBookSchema,
  PublicTradeSchema,
  StringEnum,
  TickerSchema,
} from '../schemas.js';
import type { V1RouteConfig } from './plugin.js';
import { type CachedRoute, type Dependency, PublicResponseCache, serveFromCache } from './public-cache.js';
import { envelope, sendJson } from './shared.js';

/** Kraken: at most 720 candles (the most recent; the oldest after `since` when paging forward). */
export const OHLC_MAX_CANDLES = 720;
/** Kraken's default interval, in minutes. */
export const OHLC_DEFAULT_INTERVAL: Interval = 1;
/** Levels across both sides when `depth` is absent (50 bids + 50 asks). */
export const ORDERBOOK_DEFAULT_DEPTH = 100;
export const HISTORICAL_DEFAULT_LIMIT = 100;
/** Per side; also what `limit=0` ("everything" in CoinGecko's text) is capped to. */
export const HISTORICAL_MAX_LIMIT = 1000;

const TickerId = Type.String({
  maxLength: 64,
  description: 'market in slash form, e.g. BTC/EUR (BTCEUR also accepted)',
});
const UnixTime = Type.String({
  pattern: '^[0-9]{1,12}(\\.[0-9]{1,9})?$',
  description: 'Unix time in seconds',
});
const Count = (description: string) => Type.String({ pattern: '^[0-9]{1,9}$', description });

const config = (c: V1RouteConfig) => c;

/** The UTC day of a time: the bucket of the tickers' "today" statistics. */
const utcDay = (time: Micros): number => Math.floor(time / MICROS_PER_DAY);

/** The market a B-shaped endpoint's `ticker_id` names, or a 422 saying it is unknown. */
function tickerMarket(deps: V1Deps, tickerId: string): MarketSpec {
  const market = resolvePair(deps.exchange.view.catalogue, tickerId);
  if (market === undefined) throw errorB(422, [rule.invalid('ticker_id')]);
  return market;
}

export async function marketDataRoutes(base: FastifyInstance, deps: V1Deps): Promise<void> {
  const app = base.withTypeProvider<TypeBoxTypeProvider>();
  const { exchange } = deps;
  // Market state comes from the MarketView (kept from the committed feed), never the engine.
  // Its catalogue is read per request: a reset (a restore, a gateway's reload) replaces it.
  const view = exchange.view;
  const cache = new PublicResponseCache(exchange);
  // At the commit itself: a client reading right after its 201 must not get the older answer.
  const stopWatching = exchange.onCommitted((batch) => cache.committed(batch), { immediate: true });
  const stopRestored = exchange.onRestored(() => cache.restored());
  // Cached answers filed with their route may be written before Fastify routes the request.
  const stopFront = deps.publicFront?.serve(cache);
  app.addHook('onClose', async () => {
    stopWatching();
    stopRestored();
    stopFront?.();
  });
  // The routes' time buckets: an answer is served only within the bucket it was built in.
  const orderbookSecond = () => unixSeconds(deps.clock());
  const tickersDay = () => utcDay(deps.clock());
  /** Answers that show no time: the market list, candles and trades (their rows carry their own). */
  const timeless = () => 0;
  /** The history's answers, cached only where the exchange says commits are heard before replies. */
  const historyCache = deps.cacheHistory === true ? cache : undefined;
  const fromHistoryCache = historyCache === undefined ? [] : [serveFromCache(historyCache, timeless)];
  const route = (request: FastifyRequest, bucket: () => number): CachedRoute => ({
    url: request.routeOptions.url ?? request.url,
    bucket,
  });

  app.get(
    '/markets',
    {
      config: config({ errorShape: 'A' }),
      schema: {
        tags: ['market data'],
        summary: 'Markets, keyed by joined pair name',
        querystring: Type.Object({ pair: Type.Optional(Type.String({ maxLength: 64 })) }),
        response: { 200: Envelope(Type.Record(Type.String(), MarketSchema)), 400: ErrorASchema },
      },
      onRequest: serveFromCache(cache, timeless),
    },
    async (request, reply) => {
      const { pair } = request.query;
      // The catalogue alone: stamped before it is read, in the same synchronous run.
      const stamp = cache.stamp('catalogue');
      let markets: readonly MarketSpec[] = view.catalogue.markets();
      if (pair !== undefined) {
        const market = resolvePair(view.catalogue, pair);
        if (market === undefined) throw errorA(400, 'Unknown asset pair');
        markets = [market];
      }
      const data: Record<string, ReturnType<typeof serializeMarket>> = {};
      for (const market of markets) data[`${market.base}${market.quote}`] = serializeMarket(market);
      const body = envelope(MESSAGES.markets, data);
      if (request.method !== 'GET') return body;
      const serialized = reply.serialize(body);
      return sendJson(reply, cache.store(request.url, stamp, 0, serialized, route(request, timeless)));
    },
  );

  app.get(
    '/tickers',
    {
      config: config({ errorShape: 'E' }),
      schema: {
        tags: ['market data'],
        summary: 'Tickers; high, low and volumes since 00:00 UTC',
        querystring: Type.Object({ ticker_id: Type.Optional(TickerId) }),
        response: { 200: Type.Array(TickerSchema), 400: ErrorESchema },
      },
      onRequest: serveFromCache(cache, tickersDay),
    },
    async (request, reply) => {
      const { ticker_id } = request.query;
      let markets: readonly MarketSpec[] = view.catalogue.markets();
      let dependency: Dependency = 'all';
      if (ticker_id !== undefined) {
        const market = resolvePair(view.catalogue, ticker_id);
        if (market === undefined) throw errorE(400, INVALID_REQUEST);
        markets = [market];
        dependency = market.id;
      }
      // Stamped in the same synchronous run as the reads below: no commit can come in between,
      // and the view holds committed state only.
      const stamp = cache.stamp(dependency);
      const now = deps.clock();
      const tickers = markets.map((market) => {
        const top = view.book(market.id, 1);
        return serializeTicker(market, view.catalogue, {
          today: view.statsToday(market.id, now),
          last: view.lastPrice(market.id),
          bestBid: top.bids[0]?.[0] ?? null,
          bestAsk: top.asks[0]?.[0] ?? null,
        });
      });
      if (request.method !== 'GET') return tickers;
      const serialized = reply.serialize(tickers);
      return sendJson(
        reply,
        cache.store(request.url, stamp, utcDay(now), serialized, route(request, tickersDay)),
      );
    },
  );

  app.get(
    '/ohlc',
    {
      config: config({ errorShape: 'B' }),
      schema: {
        tags: ['market data'],
        summary: `Candles, oldest first: the most recent, or with \`since\` the oldest after it; at most ${OHLC_MAX_CANDLES}`,
        querystring: Type.Object({
          ticker_id: TickerId,
          since: Type.Optional(
            Type.String({
              ...UnixTime,
              description:
                'Unix time in seconds, exclusive: the oldest candles starting after it (a page forward)',
            }),
          ),
          limit: Type.Optional(Count(`candles, 1 to ${OHLC_MAX_CANDLES}; default ${OHLC_MAX_CANDLES}`)),
          interval: Type.Optional(
            StringEnum(
              INTERVALS.map((i) => String(i)),
              { description: `minutes; default ${OHLC_DEFAULT_INTERVAL}` },
            ),
          ),
        }),
        response: { 200: Type.Array(CandleSchema), 422: ErrorBSchema },
      },
      onRequest: fromHistoryCache,
    },
    async (request, reply) => {
      const { ticker_id, since, interval, limit } = request.query;
      const market = tickerMarket(deps, ticker_id);
      // Before the store is read: a commit during the read makes the answer one not to keep.
      const stamp = historyCache?.stamp(market.id);
      const minutes = (interval === undefined ? OHLC_DEFAULT_INTERVAL : Number(interval)) as Interval;
      // `since` is exclusive and candle starts are whole seconds: "> 100.5" is "> 100".
      const after = since === undefined ? -1 : parseUnixTime(since)?.seconds;
      if (after === undefined) throw errorB(422, [rule.format('since')]);
      const count = limit === undefined ? OHLC_MAX_CANDLES : parseIntInRange(limit, 1, OHLC_MAX_CANDLES);
      if (count === undefined) throw errorB(422, [rule.between('limit', 1, OHLC_MAX_CANDLES)]);
      // With `since` a client pages forward through history: the oldest candles after it, so the
      // next page starts after the last one received (decision H190). Without it, the most recent.
      const keep = since === undefined ? 'newest' : 'oldest';
      const candles = await exchange.history.listCandles(market.id, minutes, after, count, keep);
      const body = candles.map((candle) => serializeCandle(candle, market));
      if (request.method !== 'GET' || stamp === undefined) return body;
      const serialized = reply.serialize(body);
      return sendJson(reply, cache.store(request.url, stamp, 0, serialized, route(request, timeless)));
    },
  );

  app.get(
    '/orderbook',
    {
      config: config({ errorShape: 'B' }),
      schema: {
        tags: ['market data'],
        summary: 'Order book, aggregated by price level',
        querystring: Type.Object({
          ticker_id: TickerId,
          depth: Type.Optional(
            Count(
              `levels across both sides (half per side, odd rounds up); 0 = full book; default ${ORDERBOOK_DEFAULT_DEPTH}`,
            ),
          ),
        }),
        response: { 200: Type.Array(OrderBookSchema), 422: ErrorBSchema },
      },
      onRequest: serveFromCache(cache, orderbookSecond),
    },
    async (request, reply) => {
      const { ticker_id, depth } = request.query;
      const market = tickerMarket(deps, ticker_id);
      const total = depth === undefined ? ORDERBOOK_DEFAULT_DEPTH : Number(depth);
      const perSide = total === 0 ? 0 : Math.ceil(total / 2);
      // Stamped in the same synchronous run as the read below: no commit can come in between,
      // and the view holds committed state only.
      const stamp = cache.stamp(market.id);
      const book = view.book(market.id, perSide);
      const timestamp = unixSeconds(deps.clock());
      const body = [
        {
          ticker_id: `${market.base}/${market.quote}`,
          timestamp,
          bids: serializeLevels(market, book.bids),
          asks: serializeLevels(market, book.asks),
        },
      ];
      if (request.method !== 'GET') return body;
      const serialized = reply.serialize(body);
      return sendJson(
        reply,
        cache.store(request.url, stamp, timestamp, serialized, route(request, orderbookSecond)),
      );
    },
  );

  app.get(
    '/historical_trades',
    {
      config: config({ errorShape: 'B' }),
      schema: {
        tags: ['market data'],
        summary:
          'Recent trades by taker side, newest first; with `start_time`, the oldest from it, oldest first',
        querystring: Type.Object({
          ticker_id: TickerId,
          type: Type.Optional(StringEnum(['buy', 'sell'], { description: 'taker side' })),
          limit: Type.Optional(
            Count(
              `per side; default ${HISTORICAL_DEFAULT_LIMIT}, at most ${HISTORICAL_MAX_LIMIT}; 0 = the maximum`,
            ),
          ),
          start_time: Type.Optional(
            Type.String({
              ...UnixTime,
              description:
                'Unix time in seconds, inclusive: the oldest trades from it, oldest first (a page forward)',
            }),
          ),
        }),
        response: {
          200: Type.Object({ buy: Type.Array(PublicTradeSchema), sell: Type.Array(PublicTradeSchema) }),
          422: ErrorBSchema,
        },
      },
      onRequest: fromHistoryCache,
    },
    async (request, reply) => {
      const { ticker_id, type, limit, start_time } = request.query;
      const market = tickerMarket(deps, ticker_id);
      // Before the store is read: a commit during the reads makes the answer one not to keep.
      const stamp = historyCache?.stamp(market.id);
      let count = HISTORICAL_DEFAULT_LIMIT;
      if (limit !== undefined) {
        const parsed = parseIntInRange(limit, 0, HISTORICAL_MAX_LIMIT);
        if (parsed === undefined) throw errorB(422, [rule.max('limit', String(HISTORICAL_MAX_LIMIT))]);
        count = parsed === 0 ? HISTORICAL_MAX_LIMIT : parsed;
      }
      const since: Micros | undefined =
        start_time === undefined ? undefined : parseUnixTime(start_time)?.micros;
      if (start_time !== undefined && since === undefined) throw errorB(422, [rule.format('start_time')]);
      const side = async (takerSide: Side) =>
        type !== undefined && type !== takerSide
          ? []
          : (
              await exchange.history.listPublicTrades({
                marketId: market.id,
                takerSide,
                limit: count,
                // A page forward from `start_time` (decision H191); without it, the newest.
                ...(since === undefined ? {} : { since, oldestFirst: true }),
              })
            ).map((trade) => serializePublicTrade(trade, market, view.catalogue));
      const body = { buy: await side('buy'), sell: await side('sell') };
      if (request.method !== 'GET' || stamp === undefined) return body;
      const serialized = reply.serialize(body);
      return sendJson(reply, cache.store(request.url, stamp, 0, serialized, route(request, timeless)));
    },
  );
}
