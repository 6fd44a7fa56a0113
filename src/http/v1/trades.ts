/** The caller's trades: GET /trades and GET /trades/:trade_id. */
import { Type, type TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance, FastifyReply } from 'fastify';
import type { MarketId, MarketSpec, TradeId } from '../../domain/types.js';
import type { TradeFilter, UserTrade } from '../../store/store.js';
import { pageWindow, paginationMeta, serializeUserTrade } from '../../wire/serializers.js';
import type { V1Deps } from '../context.js';
import { MESSAGES } from '../context.js';
import { errorC, errorE, INVALID_REQUEST } from '../errors.js';
import { parseId, queryArray, resolvePair } from '../parse.js';
import { TRADE_NOT_FOUND } from '../rejections.js';
import { caller } from '../request-state.js';
import { Envelope, ErrorCSchema, ErrorESchema, PagedEnvelope, UserTradeSchema } from '../schemas.js';
import type { V1RouteConfig } from './plugin.js';
import { envelope, listPath, pageRequest, sendJsonStream, streamList } from './shared.js';

const security = [{ apiKey: [], apiSign: [] }];
/** More pair filters than markets would be pointless; this bounds the query size. */
const MAX_PAIRS = 100;

export async function tradeRoutes(base: FastifyInstance, deps: V1Deps): Promise<void> {
  const app = base.withTypeProvider<TypeBoxTypeProvider>();
  const { catalogue, history } = deps.exchange;

  const marketOf = (marketId: MarketId): MarketSpec => {
    const market = catalogue.market(marketId);
    if (market === undefined) throw new Error(`trade references unknown market ${marketId}`);
    return market;
  };
  const render = (trades: readonly UserTrade[]) =>
    trades.map((t) => serializeUserTrade(t, marketOf(t.trade.marketId), catalogue));

  app.get(
    '/trades',
    {
      config: { errorShape: 'E', auth: 'read' } satisfies V1RouteConfig,
      schema: {
        tags: ['account'],
        summary: "The caller's trades, newest first",
        security,
        querystring: Type.Object({
          'pairs[]': Type.Optional(
            Type.Union([Type.String(), Type.Array(Type.String(), { maxItems: MAX_PAIRS })], {
              description:
                'repeatable: pairs[]=BTC/EUR&pairs[]=ETH/EUR (pairs[0]=… and pairs=… also accepted)',
            }),
          ),
          'page-size': Type.Optional(Type.String({ description: 'enables pagination; 1 to 500' })),
          page: Type.Optional(Type.String({ description: '1-based; default 1' })),
        }),
        response: { 200: PagedEnvelope(UserTradeSchema), 400: ErrorESchema, 422: ErrorESchema },
      },
    },
    async (request, reply) => {
      const { userId } = caller(request);
      const names = queryArray(request.query as Record<string, unknown>, 'pairs');
      if (names === null || (names !== undefined && names.length > MAX_PAIRS))
        throw errorE(400, INVALID_REQUEST);
      let marketIds: MarketId[] | undefined;
      if (names !== undefined && names.length > 0) {
        marketIds = [];
        for (const name of names) {
          const market = resolvePair(catalogue, name);
          if (market === undefined) throw errorE(400, INVALID_REQUEST);
          if (!marketIds.includes(market.id)) marketIds.push(market.id);
        }
      }
      const filter: TradeFilter = marketIds === undefined ? { userId } : { userId, marketIds };
      const page = pageRequest(request.query);
      if (page === undefined) {
        const batch = (beforeId: number | undefined, limit: number) =>
          history.listUserTrades({ ...filter, beforeId }, { limit, offset: 0 });
        return sendJsonStream(
          reply as FastifyReply,
          await streamList(MESSAGES.trades, batch, (t) => t.trade.id, render),
        );
      }
      const total = await history.countUserTrades(filter);
      const trades = [...(await history.listUserTrades(filter, pageWindow(page)))];
      return {
        ...envelope(MESSAGES.trades, render(trades)),
        meta: paginationMeta(page, total, trades.length, listPath(request, deps)),
      };
    },
  );

  app.get(
    '/trades/:trade_id',
    {
      config: { errorShape: 'E', auth: 'read' } satisfies V1RouteConfig,
      schema: {
        tags: ['account'],
        summary: 'One of the caller’s trades',
        security,
        params: Type.Object({ trade_id: Type.String({ description: 'numeric trade id' }) }),
        response: { 200: Envelope(UserTradeSchema), 404: ErrorCSchema },
      },
    },
    async (request) => {
      const { userId } = caller(request);
      const id = parseId(request.params.trade_id);
      const trade = id === undefined ? undefined : await history.getUserTrade(userId, id as TradeId);
      if (trade === undefined) throw errorC(404, TRADE_NOT_FOUND);
      return envelope(MESSAGES.trade, render([trade])[0]!);
    },
  );
}
