/**
 * REST faults, as Fastify hooks on the `/v1` routes only (never /admin, /metrics, /healthz,
 * /readyz, /docs or an unknown path):
 * - latency: the request waits before it is handled;
 * - errors: the request is refused before it is handled (nothing is done), 503 or 429 with
 *   Retry-After, in the route's error shape;
 * - timeouts: an order placement or cancellation is carried out and committed, then its 2xx
 *   answer is never sent; the connection is held `hold_ms` and destroyed.
 *
 * A request is in a key's scope when its X-API-Key header names that key. The header is read
 * before the signature is checked: a fault acts like the network or a front proxy, which see no
 * signature either, and a caller who merely knows a key can only slow down or fail its own requests.
 *
 * With no REST fault set, each hook costs one boolean check.
 */
import type { Socket } from 'node:net';
import type { FastifyInstance, FastifyPluginCallback, FastifyReply, FastifyRequest } from 'fastify';
import { errorForShape, routeErrorShape, statusText } from '../http/errors.js';
import type { Chaos } from './controller.js';
import { appliesTo } from './faults.js';

export interface ChaosHttpOptions {
  readonly chaos: Chaos;
}

const V1 = '/v1/';
/** The API's description is documentation, not the trading interface. */
const OPENAPI = '/v1/openapi.json';
const ORDERS = '/v1/orders';
const ORDER = '/v1/orders/:order_id';

const apiKeyOf = (request: FastifyRequest): string | undefined => {
  const header = request.headers['x-api-key'];
  return typeof header === 'string' && header !== '' ? header : undefined;
};

/** Placing and canceling orders: the state changes whose lost answer a client must reconcile. */
const changesOrders = (request: FastifyRequest): boolean => {
  const route = request.routeOptions.url;
  return (request.method === 'POST' && route === ORDERS) || (request.method === 'DELETE' && route === ORDER);
};

function refuse(request: FastifyRequest, reply: FastifyReply, status: 503 | 429, retryAfter: number): void {
  const { body } = errorForShape(routeErrorShape(request), status, statusText(status));
  reply
    .code(status)
    .header('retry-after', String(retryAfter))
    .type('application/json')
    .send(JSON.stringify(body));
}

export const chaosHttp: FastifyPluginCallback<ChaosHttpOptions> = (
  app: FastifyInstance,
  { chaos }: ChaosHttpOptions,
  done: (error?: Error) => void,
) => {
  const { flags } = chaos;
  /** Connections whose answer is being withheld, destroyed at once when the server closes. */
  const held = new Map<Socket, NodeJS.Timeout>();
  /** Requests waiting out their latency, let through at once when the server closes. */
  const waiting = new Map<NodeJS.Timeout, () => void>();

  app.addHook('onRequest', (request, reply, next) => {
    if (!flags.http) return next();
    const route = request.routeOptions.url ?? '';
    if (!route.startsWith(V1) || route === OPENAPI) return next();
    const apiKey = apiKeyOf(request);
    const latency = chaos.pick('latency', apiKey);
    let delayMs = 0;
    if (latency !== undefined && appliesTo(latency.fault, request.method, route)) {
      delayMs = latency.fault.ms + Math.floor(chaos.random() * (latency.fault.jitter_ms + 1));
      chaos.injected(latency, 'latency', apiKey, { route, ms: delayMs });
    }
    const error = chaos.pick('errors', apiKey);
    const failing =
      error !== undefined && appliesTo(error.fault, request.method, route) && chaos.chance(error.fault.rate);
    if (error !== undefined && failing) {
      const fault = error.fault.status === 429 ? 'error_429' : 'error_503';
      chaos.injected(error, fault, apiKey, { route });
    }
    const proceed = () => {
      if (error !== undefined && failing) refuse(request, reply, error.fault.status, error.fault.retry_after);
      else next();
    };
    if (delayMs <= 0) return proceed();
    const timer = setTimeout(() => {
      waiting.delete(timer);
      proceed();
    }, delayMs);
    waiting.set(timer, proceed);
  });

  app.addHook('onSend', (request, reply, payload, next) => {
    if (!flags.http || reply.statusCode >= 300 || reply.statusCode < 200 || !changesOrders(request))
      return next(null, payload);
    const apiKey = apiKeyOf(request);
    const timeout = chaos.pick('timeouts', apiKey);
    if (timeout === undefined || !chaos.chance(timeout.fault.rate)) return next(null, payload);
    chaos.injected(timeout, 'timeout', apiKey, {
      route: request.routeOptions.url,
      status: reply.statusCode,
      hold_ms: timeout.fault.hold_ms,
    });
    // The change is committed; its answer is withheld: `next` is never called, so nothing is
    // written, and the socket is destroyed after the hold (the client sees a reset, or its own
    // timeout first). Destroying also ends any other request pipelined on that connection.
    const socket = request.raw.socket;
    const timer = setTimeout(() => {
      held.delete(socket);
      socket.destroy();
    }, timeout.fault.hold_ms);
    held.set(socket, timer);
    socket.once('close', () => {
      clearTimeout(timer);
      held.delete(socket);
    });
  });

  // A held connection or a delayed request would keep the server from closing until it ends.
  app.addHook('preClose', (next) => {
    for (const [timer, proceed] of waiting) {
      clearTimeout(timer);
      proceed();
    }
    waiting.clear();
    for (const [socket, timer] of held) {
      clearTimeout(timer);
      socket.destroy();
    }
    held.clear();
    next();
  });
  done();
};
// Like fastify-plugin: the hooks go on the parent instance, so they see every route.
(chaosHttp as unknown as Record<symbol, unknown>)[Symbol.for('skip-override')] = true;
(chaosHttp as unknown as Record<symbol, unknown>)[Symbol.for('fastify.display-name')] = 'chaos-http';
