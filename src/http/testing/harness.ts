/**
 * In-process harness for route tests: the real exchange (openExchange over an in-memory SQLite
 * store), the real vault, and buildHttpApp, driven through Fastify's inject (no sockets).
 * Requests are signed exactly as the interface describes, over the bytes actually sent.
 */
import { randomBytes } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { pino } from 'pino';
import { computeSignature } from '../../auth/signature.js';
import { CredentialVault, generateApiCredentials } from '../../auth/vault.js';
import { parseDecimal } from '../../domain/money.js';
import type {
  Amount,
  AssetCode,
  FeeRate,
  MarketSpec,
  Micros,
  Price,
  UserId,
  Volume,
} from '../../domain/types.js';
import type { Command } from '../../engine/types.js';
import type { Exchange } from '../../sequencer/ports.js';
import { type LocalExchange, openExchange } from '../../sequencer/sequencer.js';
import { asyncStore } from '../../store/async-store.js';
import { SqliteStore } from '../../store/sqlite/sqlite-store.js';
import type { ApiKeyScope } from '../../store/store.js';
import { buildHttpApp } from '../app.js';
import type { PublicFront } from '../public-front.js';

export const WS_APP = { appKey: 'test-app-key', appSecret: 'test-app-secret' };
/** 2023-11-14 22:13:20 UTC. */
export const START = 1_700_000_000_000_000 as Micros;

export interface Trader {
  readonly userId: UserId;
  readonly apiKey: string;
  readonly apiSecret: string;
}

export interface Reply {
  readonly status: number;
  readonly headers: Record<string, string | string[] | number | undefined>;
  readonly text: string;
  readonly json: unknown;
}

export interface RequestOptions {
  readonly as?: Trader;
  /** A string or Buffer is sent byte for byte; anything else is JSON.stringify'd. */
  readonly body?: unknown;
  readonly headers?: Record<string, string>;
  /** Sign with this text instead of the body (to test mismatches). */
  readonly signBody?: string;
}

export interface Harness {
  readonly app: FastifyInstance;
  readonly exchange: LocalExchange;
  readonly vault: CredentialVault;
  readonly btceur: MarketSpec;
  readonly ethbtc: MarketSpec;
  /** Moves the clock (microseconds). */
  advance(micros: number): void;
  now(): Micros;
  trader(funds?: Record<string, string>, scopes?: ApiKeyScope[]): Promise<Trader>;
  submit(command: Command): Promise<void>;
  request(method: string, url: string, options?: RequestOptions): Promise<Reply>;
  close(): Promise<void>;
}

async function ok(exchange: LocalExchange, command: Command) {
  const result = await exchange.submit(command);
  if (!result.ok) throw new Error(`${command.kind}: ${result.error.message}`);
  return result.events;
}

export interface HarnessOptions {
  readonly bodyLimitBytes?: number;
  readonly publicUrl?: string;
  /** What GET /account reports as the per-key limit (the harness itself limits nothing). */
  readonly rateLimit?: { readonly keyPerSecond: number; readonly keyBurst: number };
  readonly logger?: pino.Logger;
  /** What the HTTP app sees instead of the exchange itself (fault injection). */
  readonly wrap?: (exchange: LocalExchange) => Exchange;
  /** Put in front of the app's HTTP server (src/http/public-front.ts); reached only through `listen`. */
  readonly publicFront?: PublicFront;
  /** buildHttpApp's `cacheHistory`; default true (what the in-process exchange allows). */
  readonly cacheHistory?: boolean;
}

export async function startHarness(config: HarnessOptions = {}): Promise<Harness> {
  const store = SqliteStore.open({ path: ':memory:' });
  let now: number = START;
  const clock = () => now as Micros;
  const exchange = await openExchange({ store: asyncStore(store), clock });
  const assets = [
    { code: 'BTC', name: 'Bitcoin', type: 'crypto', decimals: 8 },
    { code: 'EUR', name: 'Euro', type: 'fiat', decimals: 2 },
    { code: 'ETH', name: 'Ether', type: 'crypto', decimals: 10 },
  ] as const;
  for (const a of assets) await ok(exchange, { kind: 'createAsset', ...a });
  const createMarket = async (
    base: string,
    quote: string,
    pairDecimals: number,
    lotDecimals: number,
    ordermin: number,
  ) => {
    const events = await ok(exchange, {
      kind: 'createMarket',
      base: base as AssetCode,
      quote: quote as AssetCode,
      pairDecimals,
      lotDecimals,
      ordermin: ordermin as Volume,
      makerFee: 100_000 as FeeRate, // 0.1 %
      takerFee: 200_000 as FeeRate, // 0.2 %
    });
    const created = events.find((e) => e.type === 'marketCreated');
    if (created?.type !== 'marketCreated') throw new Error('no market');
    return created.market;
  };
  const btceur = await createMarket('BTC', 'EUR', 1, 8, 10_000); // ordermin 0.0001 BTC
  const ethbtc = await createMarket('ETH', 'BTC', 5, 4, 100); // ordermin 0.01 ETH

  const vault = new CredentialVault(randomBytes(32));
  const app = buildHttpApp({
    exchange: config.wrap === undefined ? exchange : config.wrap(exchange),
    vault,
    logger: config.logger ?? pino({ level: 'silent' }),
    config: {
      ws: WS_APP,
      balanceCurrency: 'EUR',
      bodyLimitBytes: config.bodyLimitBytes ?? 16 * 1024,
      ...(config.publicUrl === undefined ? {} : { publicUrl: config.publicUrl }),
      ...(config.rateLimit === undefined ? {} : { rateLimit: config.rateLimit }),
    },
    clock,
    ...(config.publicFront === undefined ? {} : { publicFront: config.publicFront }),
    // The in-process exchange tells its listeners of each commit before replying.
    cacheHistory: config.cacheHistory ?? true,
  });
  await app.ready();

  return {
    app,
    exchange,
    vault,
    btceur,
    ethbtc,
    advance(micros) {
      now += micros;
    },
    now: clock,
    async trader(funds = { EUR: '100000', BTC: '10', ETH: '100' }, scopes = ['read', 'trade']) {
      const user = store.createUser(null, clock());
      const { apiKey, apiSecret } = generateApiCredentials();
      store.createApiKey({
        key: apiKey,
        userId: user.id,
        sealedSecret: vault.seal(apiSecret),
        scopes,
        createdAt: clock(),
        revokedAt: null,
      });
      for (const [code, amount] of Object.entries(funds)) {
        const asset = exchange.catalogue.asset(code);
        const parsed = asset && parseDecimal(amount, asset.decimals);
        if (!parsed?.ok) throw new Error(`bad deposit ${code} ${amount}`);
        await ok(exchange, {
          kind: 'deposit',
          userId: user.id,
          asset: asset!.code,
          amount: parsed.units as Amount,
        });
      }
      return { userId: user.id, apiKey, apiSecret };
    },
    async submit(command) {
      await ok(exchange, command);
    },
    async request(method, url, options = {}) {
      const payload: string | Buffer | undefined =
        options.body === undefined || typeof options.body === 'string' || Buffer.isBuffer(options.body)
          ? options.body
          : JSON.stringify(options.body);
      const headers: Record<string, string> = { accept: 'application/json' };
      if (payload !== undefined) headers['content-type'] = 'application/json';
      if (options.as !== undefined) {
        headers['x-api-key'] = options.as.apiKey;
        headers['x-api-sign'] = computeSignature(
          method,
          options.signBody ?? payload ?? '',
          options.as.apiSecret,
        );
      }
      const response = await app.inject({
        method: method as 'GET',
        url,
        headers: { ...headers, ...options.headers },
        ...(payload === undefined ? {} : { payload }),
      });
      let json: unknown;
      try {
        json = JSON.parse(response.body);
      } catch {
        json = undefined;
      }
      return { status: response.statusCode, headers: response.headers, text: response.body, json };
    },
    async close() {
      await app.close();
      await exchange.close();
      store.close();
    },
  };
}

/** A limit order command (prices in ticks, volumes in lots) for seeding books directly. */
export const limit = (
  userId: UserId,
  market: MarketSpec,
  side: 'buy' | 'sell',
  price: number,
  volume: number,
): Command => ({
  kind: 'placeOrder',
  userId,
  marketId: market.id,
  side,
  type: 'limit',
  price: price as Price,
  volume: volume as Volume,
});
