/**
 * Orders: POST /orders, DELETE /orders/:order_id, GET /orders/:order_id, GET /open-orders,
 * GET /closed-orders. A user sees and cancels only their own orders; another user's id is
 * answered exactly like an unknown one (404 shape C), so ids reveal nothing.
 */
import { type Static, Type, type TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { MarketSpec, OrderId, UserId } from '../../domain/types.js';
import type { CommandResult, OrderState } from '../../engine/types.js';
import type { OrderFilter } from '../../store/store.js';
import { pageWindow, paginationMeta, serializeOrder } from '../../wire/serializers.js';
import type { V1Deps } from '../context.js';
import { MESSAGES } from '../context.js';
import { errorC, errorE, INVALID_REQUEST, validationError } from '../errors.js';
import {
  IDEMPOTENCY_KEY_FIELD,
  INVALID_KEY,
  idempotencyRequest,
  KEY_REUSED,
  parseIdempotencyKey,
} from '../idempotency-key.js';
import { placeOrderCommand, STP_MODES, TIMES_IN_FORCE, validateOrderControls } from '../order-controls.js';
import { ORDER_TYPES, validateCreateOrder } from '../order-input.js';
import { optionalPairQuery, parseId } from '../parse.js';
import { ORDER_NOT_FOUND, orderNotOpen, rejectionToHttp } from '../rejections.js';
import { caller } from '../request-state.js';
import {
  BareEnvelope,
  Envelope,
  ErrorCSchema,
  ErrorDSchema,
  ErrorESchema,
  OrderSchema,
  PagedEnvelope,
  StringEnum,
} from '../schemas.js';
import type { V1RouteConfig } from './plugin.js';
import { envelope, listPath, pageRequest, sendJson, sendJsonStream, streamList } from './shared.js';

const security = [{ apiKey: [], apiSign: [] }];
const OrderIdParam = Type.Object({ order_id: Type.String({ description: 'numeric order id' }) });
const ListQuery = Type.Object({
  pair: Type.Optional(Type.String({ maxLength: 64, description: 'BTC/EUR or BTCEUR' })),
  'page-size': Type.Optional(Type.String({ description: 'enables pagination; 1 to 500' })),
  page: Type.Optional(Type.String({ description: '1-based; default 1' })),
});

export const CreateOrderBody = Type.Object({
  order_direction: StringEnum(['buy', 'sell']),
  order_type: StringEnum(ORDER_TYPES, {
    description:
      'market, limit, or a conditional order that waits (reserved, outside the book) until the last trade price ' +
      'reaches its trigger: stop-loss and take-profit (then a market order), stop-loss-limit and take-profit-limit ' +
      '(then a limit order at price), trailing-stop (a market order whose trigger follows the best price by ' +
      'trailing_offset). A sell stop-loss fires when the price falls to the trigger, a sell take-profit when it ' +
      'rises to it; buys the other way round. A trigger the last trade price has reached already is refused (422).',
  }),
  pair: Type.String({ description: 'BTC/EUR (BTCEUR also accepted)' }),
  volume: Type.String({ description: 'decimal string, at most lotDecimals decimals, at least ordermin' }),
  price: Type.Optional(
    Type.String({
      description:
        'the limit price: decimal string, at most pairDecimals decimals; required for limit, stop-loss-limit and ' +
        'take-profit-limit; ignored for market; refused for stop-loss, take-profit and trailing-stop',
    }),
  ),
  trigger_price: Type.Optional(
    Type.String({
      description:
        'the last trade price that fires the order: decimal string, at most pairDecimals decimals; required for ' +
        'stop-loss, take-profit, stop-loss-limit and take-profit-limit, refused otherwise',
    }),
  ),
  trailing_offset: Type.Optional(
    Type.String({
      description:
        'trailing-stop only (and required there): the distance of the trigger from the best price since placement, ' +
        'a price distance ("150.5", at most pairDecimals decimals) or a percentage ("2.5%", 0.01% to 50%, at most ' +
        '2 decimals)',
    }),
  ),
  time_in_force: Type.Optional(
    StringEnum(TIMES_IN_FORCE, {
      description:
        'GTC (default): rests until canceled; IOC: what does not trade at once is canceled; FOK: trades its ' +
        'whole volume at once or nothing; GTD: rests until expire_time',
    }),
  ),
  expire_time: Type.Optional(
    Type.Union([Type.String(), Type.Integer()], {
      description:
        'GTD only (and required there): Unix seconds, a decimal string or an integer; after now and at most a year ahead',
    }),
  ),
  post_only: Type.Optional(
    Type.Boolean({
      description:
        'limit orders, GTC or GTD only: an order that would take liquidity on arrival trades nothing and ends canceled',
    }),
  ),
  client_order_id: Type.Optional(
    Type.String({
      pattern: '^[A-Za-z0-9_-]{1,36}$',
      description:
        "the client's own id, unique among the user's open orders (GET/DELETE /orders/client/{id})",
    }),
  ),
  stp: Type.Optional(
    StringEnum(STP_MODES, {
      description:
        'self-trade prevention when this order meets a resting order of the same user: cancel-oldest (default: ' +
        'the resting one), cancel-newest (this one), cancel-both, or decrement (no trade; the larger is reduced by ' +
        'the smaller, the smaller canceled)',
    }),
  ),
});

const CreateOrderHeaders = Type.Object({
  'idempotency-key': Type.Optional(
    Type.String({
      minLength: 1,
      maxLength: 255,
      description: 'makes retries safe: the order is placed at most once per key (24 hours)',
    }),
  ),
});

const config = (c: V1RouteConfig) => c;
/**
 * The validator of a schema that only documents: passes everything as it is. `true`, not
 * `{ value }`: Fastify writes a `{ value }` back onto the request, and `request.headers` written
 * back becomes a copy of every header made again on each later read (Fastify's request.js).
 */
export const documentOnly = () => (_value: unknown) => true;

/**
 * The 201 of POST /orders: the bare envelope, and the new order's address in `Location` (the
 * body holds no record; interface decision 14). `headers` is @fastify/swagger's way to document
 * response headers.
 */
const OrderCreated = Type.Object(BareEnvelope.properties, {
  description: 'Created: the order is accepted and committed; its state is at Location.',
  headers: {
    Location: {
      type: 'string',
      description: 'The new order: /v1/orders/{order_id} (read it with GET /v1/orders/{order_id}).',
    },
  },
});
export const ABSENT = Symbol('absent');

/**
 * The `order_id` of a DELETE body (a JSON integer or its decimal text): ABSENT when there is no
 * such field, undefined when it is not a valid id. docs/security.md: one signed body, one order.
 */
export function orderIdOfBody(body: unknown): number | typeof ABSENT | undefined {
  if (typeof body !== 'object' || body === null || !Object.hasOwn(body, 'order_id')) return ABSENT;
  const value: unknown = (body as { order_id: unknown }).order_id;
  if (typeof value === 'number') return Number.isSafeInteger(value) && value >= 1 ? value : undefined;
  return parseId(value);
}

/** The two answers that never vary, serialized once (BareEnvelope, in its key order). */
const CREATED_BODY = Buffer.from(
  JSON.stringify({ success: true, message: MESSAGES.orderCreated, code: 201 }),
);
export const CANCELED_BODY = Buffer.from(
  JSON.stringify({ success: true, message: MESSAGES.orderCanceled, code: 200 }),
);

/**
 * Sends the 201 of POST /orders: the new order's address in Location, the constant body. Returns
 * what the handler's promise is to settle with: nothing once the answer is written, or the reply
 * itself (a thenable Fastify waits on until the response ends) while an onSend hook holds the
 * answer back (a chaos timeout); settling with nothing then would make Fastify send again.
 */
function sendCreated(
  reply: FastifyReply,
  prefix: string,
  orderId: OrderId,
): PromiseLike<undefined> | undefined {
  reply.header('location', `${prefix}/orders/${orderId}`);
  sendJson(reply, CREATED_BODY, 201);
  // Typed as what it is to a promise: Fastify's reply type declares its `then` as returning nothing.
  return reply.sent ? undefined : (reply as unknown as PromiseLike<undefined>);
}

/** The id of the order a placeOrder created, or the refusal as an HTTP error. */
export function createdOrderId(result: CommandResult): OrderId {
  if (!result.ok) throw rejectionToHttp(result.error);
  const accepted = result.events.find((e) => e.type === 'orderAccepted');
  if (accepted === undefined) throw new Error('placeOrder succeeded without an orderAccepted event');
  return accepted.order.id;
}

/** How the order routes read orders: the caller's own, and as records. */
export function orderReaders({ catalogue, history }: Pick<V1Deps['exchange'], 'catalogue' | 'history'>) {
  /** The caller's own order, or the 404 an unknown id gets. */
  const ownOrder = async (userId: UserId, id: number | undefined): Promise<OrderState> => {
    const order = id === undefined ? undefined : await history.getOrder(id as OrderId);
    if (order === undefined || order.userId !== userId) throw errorC(404, ORDER_NOT_FOUND);
    return order;
  };

  const marketOf = (order: OrderState): MarketSpec => {
    const market = catalogue.market(order.marketId);
    if (market === undefined)
      throw new Error(`order ${order.id} references unknown market ${order.marketId}`);
    return market;
  };

  /** Orders with their executions, in one store query per batch. */
  const render = async (orders: readonly OrderState[]) => {
    const trades = await history.tradesOfOrders(orders.map((o) => o.id));
    return orders.map((o) => serializeOrder(o, marketOf(o), catalogue, trades.get(o.id) ?? []));
  };
  return { ownOrder, marketOf, render };
}

export async function orderRoutes(base: FastifyInstance, deps: V1Deps): Promise<void> {
  const app = base.withTypeProvider<TypeBoxTypeProvider>();
  const { exchange } = deps;
  const { catalogue, history } = exchange;
  const { ownOrder, render } = orderReaders(exchange);

  app.post(
    '/orders',
    {
      config: config({ errorShape: 'D', auth: 'trade' }),
      // Validation is the Laravel-style pass below (every field at once, Laravel's texts); the
      // schema is kept for the OpenAPI document only, so it is not checked at all.
      validatorCompiler: documentOnly,
      schema: {
        tags: ['trading'],
        summary: 'Create an order',
        description:
          'With an `Idempotency-Key` header (1 to 255 printable ASCII characters, bare or as a quoted ' +
          'structured-field string), the order is placed at most once per user and key within 24 hours: ' +
          'a retry of the same order gets the original 201 with the same `Location` and places nothing; ' +
          'the same key with a different order gets 422 (shape D, field `Idempotency-Key`), as does a ' +
          'malformed key. A retry sent while the first request is still being processed waits for it ' +
          'and gets its answer. Only a created order is remembered: a refused request may be retried.\n\n' +
          'Limits that protect other users (422, shape D, on `volume`): a limit order that could rest (`GTC` or ' +
          '`GTD`, post-only included) is refused when the user already has `MAX_OPEN_ORDERS_PER_USER` open orders ' +
          'over all markets (a server setting, default 1,000; the message names it), even if it would have filled ' +
          'at once; and an order whose value at its limit price, floor(price × volume) in quote units, is below ' +
          "one unit of the quote asset's smallest decimal (`order_value_too_small`; market orders have no price " +
          'and are not measured).',
        security,
        headers: CreateOrderHeaders,
        body: CreateOrderBody,
        response: { 201: OrderCreated, 403: ErrorESchema, 422: Type.Union([ErrorDSchema, ErrorESchema]) },
      },
    },
    // Not an async function: the common order (no Idempotency-Key) is one promise, the
    // exchange's, and its answer is sent from that promise's reaction. An async handler added a
    // promise of its own, and returning the reply (a thenable) from it took further turns of the
    // microtask queue (Reply.then) before Fastify saw the handler settle. Refusals are thrown
    // synchronously (or reject), and Fastify sends both through the error handler alike.
    (request, reply) => {
      const input = validateCreateOrder(request.body, catalogue);
      const controls = validateOrderControls(request.body, input);
      const keyHeader = request.headers['idempotency-key'];
      const key = keyHeader === undefined ? undefined : parseIdempotencyKey(keyHeader);
      if (!input.ok || !controls.ok || key === null) {
        const errors = {
          ...(input.ok ? {} : input.errors.toRecord()),
          ...(controls.ok ? {} : controls.errors),
        };
        throw validationError(key === null ? { ...errors, [IDEMPOTENCY_KEY_FIELD]: [INVALID_KEY] } : errors);
      }
      const { userId } = caller(request);
      const command = placeOrderCommand(userId, input.value, controls.value);
      if (key === undefined) {
        return exchange
          .submit(command)
          .then((result) => sendCreated(reply, base.prefix, createdOrderId(result)));
      }
      return (async () => {
        const once = await exchange.submitOnce(
          command,
          idempotencyRequest(key, { ...input.value, controls: controls.value }),
        );
        if (once.kind === 'mismatch') throw validationError({ [IDEMPOTENCY_KEY_FIELD]: [KEY_REUSED] });
        // A replay answers exactly as the original did: 201, the same Location, the same body.
        return sendCreated(
          reply,
          base.prefix,
          once.kind === 'replayed' ? once.orderId : createdOrderId(once.result),
        );
      })();
    },
  );

  app.delete(
    '/orders/:order_id',
    {
      config: config({ errorShape: 'E', auth: 'trade' }),
      schema: {
        tags: ['trading'],
        summary: 'Cancel an open order',
        security,
        params: OrderIdParam,
        response: { 200: BareEnvelope, 400: ErrorESchema, 404: ErrorCSchema, 409: ErrorESchema },
      },
    },
    async (request, reply) => {
      const { userId, nonceRequired } = caller(request);
      const id = parseId(request.params.order_id);
      if (id === undefined) throw errorE(400, INVALID_REQUEST);
      // The signature covers the body, not the path: a nonce key's signed body must name the order.
      const bound = orderIdOfBody(request.body);
      if (nonceRequired ? bound !== id : bound !== ABSENT && bound !== id) throw errorE(400, INVALID_REQUEST);
      // The engine knows every open order and its owner: the common case needs no store read.
      const result = await exchange.submit({ kind: 'cancelOrder', userId, orderId: id as OrderId });
      if (!result.ok) {
        // Not open in the engine: unknown, another user's (both 404), or no longer open (409).
        const order = await ownOrder(userId, id);
        if (order.status !== 'open') throw orderNotOpen(order.status);
        throw rejectionToHttp(result.error);
      }
      return sendJson(reply, CANCELED_BODY);
    },
  );

  app.get(
    '/orders/:order_id',
    {
      config: config({ errorShape: 'E', auth: 'read' }),
      schema: {
        tags: ['trading'],
        summary: 'One order with its executions',
        security,
        params: OrderIdParam,
        response: { 200: Envelope(OrderSchema), 404: ErrorCSchema },
      },
    },
    async (request) => {
      const { userId } = caller(request);
      const order = await ownOrder(userId, parseId(request.params.order_id));
      const [record] = await render([order]);
      return envelope(MESSAGES.order, record!);
    },
  );

  const list =
    (status: OrderFilter['status'], message: string) =>
    async (request: FastifyRequest<{ Querystring: Static<typeof ListQuery> }>, reply: FastifyReply) => {
      const { userId } = caller(request);
      const market = optionalPairQuery(catalogue, request.query.pair);
      if (market === null) throw errorE(400, INVALID_REQUEST);
      const filter: OrderFilter =
        market === undefined ? { userId, status } : { userId, status, marketId: market.id };
      const page = pageRequest(request.query);
      if (page === undefined) {
        const batch = (beforeId: number | undefined, limit: number) =>
          history.listOrders({ ...filter, beforeId }, { limit, offset: 0 });
        return sendJsonStream(reply, await streamList(message, batch, (o) => o.id, render));
      }
      const total = await history.countOrders(filter);
      const orders = [...(await history.listOrders(filter, pageWindow(page)))];
      return {
        ...envelope(message, await render(orders)),
        meta: paginationMeta(page, total, orders.length, listPath(request, deps)),
      };
    };

  for (const [path, status, message, summary] of [
    ['/open-orders', 'open', MESSAGES.openOrders, 'Open orders, newest first'],
    [
      '/closed-orders',
      'done',
      MESSAGES.closedOrders,
      'Closed and canceled orders with their executions, newest first',
    ],
  ] as const) {
    app.get(
      path,
      {
        config: config({ errorShape: 'E', auth: 'read' }),
        schema: {
          tags: ['trading'],
          summary,
          security,
          querystring: ListQuery,
          response: { 200: PagedEnvelope(OrderSchema), 400: ErrorESchema, 422: ErrorESchema },
        },
      },
      list(status, message),
    );
  }
}
