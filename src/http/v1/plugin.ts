/**
 * The `/v1` API as one Fastify plugin. Everything that makes it behave like the interface lives
 * in this encapsulated context, so it does not leak onto other routes of the same server (admin
 * API, health checks): the raw-body JSON parser, the TypeBox validator, the authentication hook,
 * the error handler that speaks the interface's error shapes, and the JSON 404.
 */
import type {
  FastifyContextConfig,
  FastifyInstance,
  FastifyReply,
  FastifyRequest,
  preValidationHookHandler,
} from 'fastify';
import type { ApiKeyScope } from '../../store/store.js';
import { authenticate, requireScope } from '../authenticate.js';
import type { V1Deps } from '../context.js';
import { firstDuplicateKey } from '../duplicate-keys.js';
import {
  type ErrorShape,
  errorC,
  errorForShape,
  httpErrorHandler,
  INVALID_REQUEST,
  routeErrorShape,
  rule,
  validationError,
} from '../errors.js';
import {
  type Caller,
  declareRequestState,
  isMalformed,
  markMalformed,
  markRepeatedKey,
  repeatedKey,
  setCaller,
  setRawBody,
} from '../request-state.js';
import { checkFirstValidatorCompiler } from '../validator.js';
import { accountRoutes } from './account.js';
import { broadcastingRoutes } from './broadcasting.js';
import { marketDataRoutes } from './market-data.js';
import { orderControlRoutes } from './order-controls.js';
import { orderRoutes } from './orders.js';
import { tradeRoutes } from './trades.js';
import { walletRoutes } from './wallet.js';

/** Per-route settings read by the hooks and the error handler. */
export type V1RouteConfig = FastifyContextConfig & {
  readonly errorShape: ErrorShape;
  /** Private route: authenticate, and require this scope (separate permissions: docs/security.md, Scopes). */
  readonly auth?: ApiKeyScope;
};

const utf8 = new TextDecoder('utf-8', { fatal: true });

/** A signed request's caller is known: its scope, then the malformed-body refusal, then on. */
function admit(
  request: FastifyRequest,
  who: Caller,
  scope: ApiKeyScope,
  done: (error?: Error) => void,
): void {
  try {
    requireScope(who, scope);
    setCaller(request, who);
    if (isMalformed(request)) throw errorForShape(routeErrorShape(request), 400, INVALID_REQUEST);
    // A signed body that two readers could read differently is refused (422 shape D, whatever
    // the route's shape: it is a validation of the body; docs/interface-decisions.md 210).
    const field = repeatedKey(request);
    if (field !== undefined) throw validationError({ [field]: [rule.repeated(field)] });
  } catch (error) {
    done(error as Error);
    return;
  }
  done();
}

export async function v1Plugin(app: FastifyInstance, deps: V1Deps): Promise<void> {
  declareRequestState(app);
  app.setValidatorCompiler(checkFirstValidatorCompiler);
  app.setErrorHandler(httpErrorHandler);
  app.setNotFoundHandler(notFound);

  // Only JSON bodies (the interface's only body format); anything else is refused as 400 by the
  // error handler. The parser keeps the exact bytes for the signature check and, instead of
  // failing at once on malformed JSON, marks the request so that a private route still answers
  // "Invalid Signature" first: an unauthenticated caller learns nothing about body handling.
  app.removeAllContentTypeParsers();
  const secureJson = app.getDefaultJsonParser('error', 'error');
  app.addContentTypeParser(
    'application/json',
    { parseAs: 'buffer', bodyLimit: deps.config.bodyLimitBytes },
    (request: FastifyRequest, body: Buffer, done: (err: Error | null, body?: unknown) => void) => {
      setRawBody(request, body);
      if (body.length === 0) return done(null, undefined);
      let text: string;
      try {
        text = utf8.decode(body);
      } catch {
        markMalformed(request);
        return done(null, undefined);
      }
      secureJson(request, text, (error, value) => {
        if (error) markMalformed(request);
        else if (typeof value === 'object' && value !== null) {
          const field = firstDuplicateKey(text, value);
          if (field !== undefined) markRepeatedKey(request, field);
        }
        done(null, error ? undefined : value);
      });
    },
  );

  // Authentication, then the malformed-body refusal, as one preValidation hook per route, with the
  // route's scope read once here rather than from its options on every request. It runs before
  // any hook the route declares itself; an unknown route (the 404 handler) has none, so it answers
  // 404 whatever the body or headers.
  app.addHook('onRoute', (route) => {
    const scope = requiredScope(route.config);
    const refuseMalformed = (request: FastifyRequest): void => {
      if (isMalformed(request)) throw errorForShape(routeErrorShape(request), 400, INVALID_REQUEST);
    };
    const check: preValidationHookHandler = (request, _reply, done) => {
      if (scope === undefined) {
        try {
          refuseMalformed(request);
        } catch (error) {
          done(error as Error);
          return;
        }
        done();
        return;
      }
      // The key record comes from the credential store: at once when it is cached (the common
      // case: no promise, no turn of the event loop), otherwise read; a nonce is recorded there too.
      let authenticated: Caller | Promise<Caller>;
      try {
        authenticated = authenticate(request, deps);
      } catch (error) {
        done(error as Error);
        return;
      }
      if (!(authenticated instanceof Promise)) {
        admit(request, authenticated, scope, done);
        return;
      }
      authenticated.then(
        (who) => admit(request, who, scope, done),
        (error: unknown) => done(error as Error),
      );
    };
    const own = route.preValidation;
    route.preValidation = own === undefined ? [check] : [check, ...(Array.isArray(own) ? own : [own])];
  });

  // Only the dependencies go down: passing the options object on would repeat its `prefix`.
  const routeDeps: V1Deps = {
    exchange: deps.exchange,
    vault: deps.vault,
    config: deps.config,
    clock: deps.clock,
    channelGrants: deps.channelGrants,
    publicFront: deps.publicFront,
    cacheHistory: deps.cacheHistory,
  };
  for (const routes of [
    marketDataRoutes,
    walletRoutes,
    orderRoutes,
    orderControlRoutes,
    tradeRoutes,
    broadcastingRoutes,
    accountRoutes,
  ]) {
    await app.register(routes, routeDeps);
  }
}

/** The scope a private route requires, from its config; undefined on public routes. */
function requiredScope(config: unknown): ApiKeyScope | undefined {
  const auth = typeof config === 'object' && config !== null && 'auth' in config ? config.auth : undefined;
  return auth === 'read' || auth === 'trade' ? auth : undefined;
}

/** Unknown paths (and methods) under /v1: a JSON 404 in the document's 404 shape (C). */
export function notFound(_request: FastifyRequest, reply: FastifyReply): void {
  reply
    .code(404)
    .type('application/json')
    .send(JSON.stringify(errorC(404, 'Not Found').body));
}
