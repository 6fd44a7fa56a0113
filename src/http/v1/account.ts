/**
 * Who the caller is and what it pays: GET /account (the key's user, scopes and limits) and
 * GET /fees (maker and taker rates per market). Neither is in the interface document; they let a
 * client such as the ccxt class (src/ccxt) work without being told its user id or guessing fees
 * (docs/interface-decisions.md H192, H193).
 */
import { Type, type TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance } from 'fastify';
import { formatUnits } from '../../domain/money.js';
import { FEE_RATE_DECIMALS, joinedPair, type MarketSpec, slashPair } from '../../domain/types.js';
import type { V1Deps } from '../context.js';
import { MESSAGES } from '../context.js';
import { caller } from '../request-state.js';
import { Envelope, ErrorESchema, StringEnum } from '../schemas.js';
import type { V1RouteConfig } from './plugin.js';
import { envelope } from './shared.js';

const security = [{ apiKey: [], apiSign: [] }];
const routeConfig: V1RouteConfig = { errorShape: 'E', auth: 'read' };
const Rate = (description: string) => Type.String({ pattern: '^[0-9]+\\.[0-9]+$', description });

const AccountSchema = Type.Object({
  user_id: Type.Integer({
    description: 'the user the key belongs to (the private channel is private-order-executed.{user_id})',
  }),
  scopes: Type.Array(StringEnum(['read', 'trade'])),
  nonce_required: Type.Boolean({ description: 'every signed body must carry an increasing nonce' }),
  rate_limit: Type.Union(
    [
      Type.Object({
        per_second: Type.Integer({ description: 'requests per second this key may sustain' }),
        burst: Type.Integer({ description: 'requests this key may send at once' }),
      }),
      Type.Null(),
    ],
    { description: "this key's request limit; null when the venue sets none" },
  ),
});

const FeeSchema = Type.Object({
  wsname: Type.String({ description: 'the market in slash form, e.g. BTC/EUR' }),
  maker_fee: Rate('fraction of the quote amount charged to the resting order, e.g. 0.00100000 = 0.1 %'),
  taker_fee: Rate('fraction of the quote amount charged to the incoming order'),
});

/** A market's rates as decimal fractions, exactly (8 decimals, the unit fees are kept in). */
export const feeView = (market: MarketSpec) => ({
  wsname: slashPair(market),
  maker_fee: formatUnits(market.makerFee, FEE_RATE_DECIMALS),
  taker_fee: formatUnits(market.takerFee, FEE_RATE_DECIMALS),
});

export async function accountRoutes(base: FastifyInstance, deps: V1Deps): Promise<void> {
  const app = base.withTypeProvider<TypeBoxTypeProvider>();
  const { rateLimit } = deps.config;

  app.get(
    '/account',
    {
      config: routeConfig,
      schema: {
        tags: ['account'],
        summary: 'The API key that signed the request: its user, scopes and limits',
        security,
        response: { 200: Envelope(AccountSchema), 422: ErrorESchema },
      },
    },
    async (request) => {
      const who = caller(request);
      return envelope(MESSAGES.account, {
        user_id: who.userId,
        scopes: [...who.scopes],
        nonce_required: who.nonceRequired,
        rate_limit:
          rateLimit === undefined || rateLimit.keyPerSecond === 0
            ? null
            : { per_second: rateLimit.keyPerSecond, burst: rateLimit.keyBurst },
      });
    },
  );

  app.get(
    '/fees',
    {
      config: routeConfig,
      schema: {
        tags: ['account'],
        summary: "The caller's maker and taker fee rates on each market, keyed by joined pair name",
        security,
        response: { 200: Envelope(Type.Record(Type.String(), FeeSchema)), 422: ErrorESchema },
      },
    },
    async () => {
      const data: Record<string, ReturnType<typeof feeView>> = {};
      // Read per request: a restore or a gateway's reload replaces the catalogue.
      for (const market of deps.exchange.view.catalogue.markets()) data[joinedPair(market)] = feeView(market);
      return envelope(MESSAGES.fees, data);
    },
  );
}
