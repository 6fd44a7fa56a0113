/** Private balances: GET /spot-wallet and its deprecated twin GET /trade-wallet. */
import { Type, type TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { serializeWalletEntry } from '../../wire/serializers.js';
import type { V1Deps } from '../context.js';
import { MESSAGES } from '../context.js';
import { caller } from '../request-state.js';
import { Envelope, ErrorESchema, WalletEntrySchema } from '../schemas.js';
import { createValuation } from '../valuation.js';
import type { V1RouteConfig } from './plugin.js';
import { envelope } from './shared.js';

/**
 * RFC 9745 `Deprecation` (a structured-field date, `@<unix seconds>`): the day this server first
 * shipped /spot-wallet as the successor. No `Sunset`: the interface gives no removal schedule.
 */
export const TRADE_WALLET_DEPRECATED_AT = '@1735689600'; // 2025-01-01T00:00:00Z

export async function walletRoutes(base: FastifyInstance, deps: V1Deps): Promise<void> {
  const app = base.withTypeProvider<TypeBoxTypeProvider>();
  const { exchange } = deps;
  const routeConfig: V1RouteConfig = { errorShape: 'E', auth: 'read' };
  const schema = {
    tags: ['account'],
    security: [{ apiKey: [], apiSign: [] }],
    response: { 200: Envelope(Type.Array(WalletEntrySchema)), 422: ErrorESchema },
  };

  const wallet = async (request: FastifyRequest) => {
    const { userId } = caller(request);
    const valuation = createValuation(exchange.view, deps.config.balanceCurrency);
    const data = [];
    // A gateway reads them from the database (read-your-writes across gateways, ports.ts).
    const balances =
      exchange.committedBalances === undefined
        ? await exchange.readCommitted(() => exchange.balances(userId))
        : await exchange.committedBalances(userId);
    for (const balance of balances) {
      const asset = exchange.catalogue.asset(balance.asset);
      if (asset !== undefined) data.push(serializeWalletEntry(asset, balance, valuation));
    }
    return envelope(MESSAGES.wallet, data);
  };

  app.get(
    '/spot-wallet',
    { config: routeConfig, schema: { ...schema, summary: 'Balances of every asset' } },
    wallet,
  );

  app.get(
    '/trade-wallet',
    {
      config: routeConfig,
      schema: { ...schema, summary: 'Deprecated: same as /spot-wallet', deprecated: true },
    },
    async (request: FastifyRequest, reply: FastifyReply) => {
      reply.header('deprecation', TRADE_WALLET_DEPRECATED_AT);
      reply.header('link', `<${base.prefix}/spot-wallet>; rel="successor-version"`);
      return wallet(request);
    },
  );
}
