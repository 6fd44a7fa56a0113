/**
 * The public HTTP interface: `/v1` (market data, trading, account, channel authorization), its
 * OpenAPI 3.1 document at /v1/openapi.json, and a browsable page at /docs.
 *
 * Two entry points: buildHttpApp makes a complete Fastify instance (JSON 404 and error shapes at
 * the root too); registerHttpApi adds the same API to an instance the caller already has (the
 * composition root may prefer one instance for health, admin and API routes).
 */
import type { Duplex } from 'node:stream';
import fastifySwagger from '@fastify/swagger';
import fastifySwaggerUi from '@fastify/swagger-ui';
import Fastify, {
  type FastifyBaseLogger,
  type FastifyInstance,
  type FastifyReply,
  LogController,
} from 'fastify';
import type { Micros } from '../domain/types.js';
import type { Exchange } from '../sequencer/ports.js';
import type { ChannelGrantIssuer } from '../ws/channel-grants.js';
import type { HttpConfig, SecretOpener } from './context.js';
import { clientErrorResponse, errorE, httpErrorHandler, INVALID_REQUEST } from './errors.js';
import { lazyChildren } from './lazy-logger.js';
import { PAGE_SECURITY_HEADERS } from './pages.js';
import type { PublicFront } from './public-front.js';
import { notFound, v1Plugin } from './v1/plugin.js';

export interface HttpApiOptions {
  readonly exchange: Exchange;
  /** Opens sealed API secrets (the CredentialVault). */
  readonly vault: SecretOpener;
  readonly config: HttpConfig;
  /** Wall clock in microseconds; defaults to Date.now() (pass the exchange's clock when at hand). */
  readonly clock?: () => Micros;
  /** Where /broadcasting/auth records which key obtained each token (src/ws/channel-grants.ts). */
  readonly channelGrants?: ChannelGrantIssuer;
  /**
   * Answers cached public GETs ahead of Fastify (src/http/public-front.ts). buildHttpApp puts it
   * in front of the server's handler; the caller connects the rate limit, chaos and metrics.
   */
  readonly publicFront?: PublicFront;
  /**
   * Cache the answers read from the exchange's history (/ohlc, /historical_trades): only when its
   * `onCommitted` listeners hear of each commit before any reply it acknowledges. Default false.
   */
  readonly cacheHistory?: boolean;
}

export interface HttpAppOptions extends HttpApiOptions {
  readonly logger: FastifyBaseLogger;
  readonly config: HttpConfig & {
    /** Trust X-Forwarded-* (behind a reverse proxy), for `meta.path` and logging. */
    readonly trustProxy?: boolean;
    /** Log every request (Fastify's request/response lines); off by default. */
    readonly logRequests?: boolean;
    /** Seconds a request's headers may take (slowloris); default 10. */
    readonly headersTimeoutSeconds?: number;
  };
}

export const API_PREFIX = '/v1';
const DEFAULT_HEADERS_TIMEOUT_SECONDS = 10;
export const DOCS_PREFIX = '/docs';

/** Adds /v1, /v1/openapi.json and /docs to `app`. Call before `app.ready()` / `listen()`. */
export function registerHttpApi(app: FastifyInstance, options: HttpApiOptions): FastifyInstance {
  app.register(fastifySwagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'OpenSpot spot trading API',
        version: '1.0.0',
        description:
          'Spot Trading Service Interface, v1. Decimal quantities are JSON strings. Private endpoints ' +
          'need X-API-Key and X-API-Sign = base64(HMAC-SHA512(base64decode(secret), METHOD + ' +
          'hex(SHA-256(raw body bytes, or "{}" when empty)))).',
      },
      // Paths include /v1, so the server is an origin. Without PUBLIC_URL it is relative: the
      // origin this document was fetched from (right behind a proxy, on every listening address).
      servers: [
        options.config.publicUrl === undefined
          ? { url: '/', description: 'The origin serving this document' }
          : { url: options.config.publicUrl.replace(/\/+$/, ''), description: 'Public origin (PUBLIC_URL)' },
      ],
      components: {
        securitySchemes: {
          apiKey: { type: 'apiKey', in: 'header', name: 'X-API-Key' },
          apiSign: {
            type: 'apiKey',
            in: 'header',
            name: 'X-API-Sign',
            description: 'Signature of the request; see the API description.',
          },
          // The operator's admin API (/admin/v1): the admin token as a bearer token.
          adminBearer: {
            type: 'http',
            scheme: 'bearer',
            description: 'The admin token (ADMIN_TOKEN, or the generated DATA_DIR/admin-token).',
          },
        },
      },
      tags: [
        { name: 'market data', description: 'Public' },
        { name: 'account', description: 'Private: balances and trades' },
        { name: 'trading', description: 'Private: orders' },
        { name: 'websocket', description: 'Private channel authorization' },
        {
          name: 'admin',
          description: "The operator's admin API (bearer token): users, keys, funds, catalogue",
        },
        { name: 'health', description: 'Liveness and readiness probes (no authentication)' },
      ],
    },
  });
  app.register(v1Plugin, {
    prefix: API_PREFIX,
    exchange: options.exchange,
    vault: options.vault,
    config: options.config,
    clock: options.clock ?? (() => (Date.now() * 1000) as Micros),
    channelGrants: options.channelGrants,
    publicFront: options.publicFront,
    cacheHistory: options.cacheHistory === true,
  });
  app.get(`${API_PREFIX}/openapi.json`, { schema: { hide: true } }, async () => app.swagger());
  // Swagger UI loads only files of its own (no inline script), so the pages' CSP fits it as it is.
  // Every answer under /docs carries it with the other page headers, set in onSend: the static
  // files' handler rewrites the headers set before it.
  app.register(async (docs) => {
    docs.addHook('onSend', async (_request, reply) => {
      reply.headers(PAGE_SECURITY_HEADERS);
    });
    await docs.register(fastifySwaggerUi, { routePrefix: DOCS_PREFIX });
  });
  return app;
}

export function buildHttpApp(options: HttpAppOptions): FastifyInstance {
  const { config } = options;
  const app = Fastify({
    loggerInstance: options.logger,
    bodyLimit: config.bodyLimitBytes,
    logController: new LogController({ disableRequestLogging: config.logRequests !== true }),
    trustProxy: config.trustProxy ?? false,
    // A path parameter is bounded by the request line, itself bounded by Node's header size limit
    // (16 KiB): find-my-way's own 100-character limit would answer a long id with 400 before the
    // route could answer it like any other unknown id (404 shape C, docs/interface-decisions.md H18).
    routerOptions: { maxParamLength: 16 * 1024 },
    // Requests Node's parser refuses never reach Fastify: answered in shape E too.
    clientErrorHandler: (error: NodeJS.ErrnoException, socket: Duplex) => {
      if (error.code === 'ECONNRESET' || socket.destroyed) return;
      // Never write into the middle of a response already under way on this connection.
      const inFlight = (socket as Duplex & { _httpMessage?: { headersSent?: boolean } })._httpMessage;
      if (socket.writable && inFlight?.headersSent !== true) socket.write(clientErrorResponse(error.code));
      socket.destroy(error);
    },
    // Node answers an HTTP/1.1 request without Host itself, with an empty 400; the hook below
    // gives the same answer in shape E.
    // Headers that have not all arrived after headersTimeoutSeconds get 408 (shape E, below) and
    // the connection is closed; Node's own 60 s, checked every 30 s, let half-sent requests hold
    // descriptors for up to 90 s. Checked every second so the limit is what it says.
    http: {
      requireHostHeader: false,
      headersTimeout: (config.headersTimeoutSeconds ?? DEFAULT_HEADERS_TIMEOUT_SECONDS) * 1000,
      connectionsCheckingInterval: 1000,
    },
    // Malformed URLs and the like are answered before routing: still JSON, still shape E.
    frameworkErrors: (_error, _request, reply: FastifyReply) => {
      reply
        .code(400)
        .type('application/json')
        .send(JSON.stringify(errorE(400, INVALID_REQUEST).body));
    },
  });
  // Request loggers are built only when a request logs (src/http/lazy-logger.ts).
  lazyChildren(app.log);
  const front = options.publicFront;
  if (front !== undefined) {
    front.install(app.server);
    // Request logging needs Fastify's request lines; closing, its 503s.
    if (config.logRequests === true) front.stepAsideWhen(() => true);
    app.addHook('preClose', (done) => {
      front.close();
      done();
    });
  }
  app.setErrorHandler(httpErrorHandler);
  app.setNotFoundHandler(notFound);
  app.addHook('onRequest', (request, reply, done) => {
    // RFC 9112 3.2: an HTTP/1.1 request without Host is refused with 400 (what Node itself did,
    // before any hook, only with an empty body).
    const { httpVersionMajor, httpVersionMinor } = request.raw;
    if (request.headers.host === undefined && httpVersionMajor === 1 && httpVersionMinor >= 1) {
      reply
        .code(400)
        .type('application/json')
        .send(JSON.stringify(errorE(400, INVALID_REQUEST).body));
      return;
    }
    done();
  });
  // An unknown route answers 404 whatever its body and headers (docs/interface-decisions.md H2). Fastify
  // checks the Content-Type and reads and parses the body before the 404 handler runs, which would
  // turn a malformed, oversized or oddly typed body into a 400 or 413: answer in preParsing, after
  // every onRequest hook (limits, logging) and before any of that. The runner stops once sent.
  app.addHook('preParsing', (request, reply, payload, done) => {
    if (request.is404) {
      notFound(request, reply);
      return;
    }
    done(null, payload);
  });
  return registerHttpApi(app, options);
}
