/**
 * The order controls' endpoints (issue 21), beside the original order routes of orders.ts:
 *
 *   GET    /orders/client/:client_order_id   the newest of the caller's orders with that id
 *   DELETE /orders/client/:client_order_id   cancel the caller's open order with that id
 *   DELETE /orders[?pair=]                   cancel all of the caller's open orders (of one market)
 *   POST   /orders/cancel-all-after          the dead man's switch
 *   POST   /orders/batch                     1 to 20 orders in one engine step
 *   PATCH  /orders/:order_id                 amend an open order in place
 *
 * Every write needs a trade-scoped key and is signed like every private request; a nonce key's
 * signed body names what the path or query names (as DELETE /orders/:order_id does), so one
 * signed body acts on one thing. Answers are sent once the command is committed.
 */
import { type Static, Type, type TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance } from 'fastify';
import type { Micros, OrderId, UserId } from '../../domain/types.js';
import {
  type CommandResult,
  MAX_BATCH_ORDERS,
  MAX_CANCEL_ALL_AFTER,
  type PlaceOrder,
  type PlaceResult,
} from '../../engine/types.js';
import { formatVolume } from '../../wire/serializers.js';
import { NO_EXPIRY, unixSeconds4 } from '../../wire/time.js';
import type { V1Deps } from '../context.js';
import { MESSAGES } from '../context.js';
import { errorC, errorE, INVALID_REQUEST, rule, summarize, validationError } from '../errors.js';
import { IDEMPOTENCY_KEY_FIELD } from '../idempotency-key.js';
import { clientOrderIdError, placeOrderCommand, validateOrderControls } from '../order-controls.js';
import { validateCreateOrder } from '../order-input.js';
import { isAbsent, optionalPairQuery, parseId, parsePositiveDecimal, resolvePair } from '../parse.js';
import { ORDER_NOT_FOUND, orderNotOpen, rejectionToHttp } from '../rejections.js';
import { caller } from '../request-state.js';
import { BareEnvelope, Envelope, ErrorCSchema, ErrorDSchema, ErrorESchema, OrderSchema } from '../schemas.js';
import {
  ABSENT,
  CANCELED_BODY,
  CreateOrderBody,
  documentOnly,
  orderIdOfBody,
  orderReaders,
} from './orders.js';
import type { V1RouteConfig } from './plugin.js';
import { envelope, sendJson } from './shared.js';

const security = [{ apiKey: [], apiSign: [] }];
const config = (c: V1RouteConfig) => c;

const ClientIdParam = Type.Object({
  client_order_id: Type.String({ description: "the client's order id: 1 to 36 of A-Z a-z 0-9 _ -" }),
});
const OrderIdParam = Type.Object({ order_id: Type.String({ description: 'numeric order id' }) });
const PairQuery = Type.Object({
  pair: Type.Optional(Type.String({ maxLength: 64, description: 'only this market: BTC/EUR or BTCEUR' })),
});

export const ORDER_CONTROL_MESSAGES = {
  ordersCanceled: 'Orders canceled successfully.',
  cancelAllAfter: 'Cancel-all-after set successfully.',
  batch: 'Batch processed successfully.',
  amended: 'Order amended successfully.',
} as const;

const AMENDED_BODY = Buffer.from(
  JSON.stringify({ success: true, message: ORDER_CONTROL_MESSAGES.amended, code: 200 }),
);

const CancelAllBody = Type.Object({
  pair: Type.Optional(Type.String({ description: 'nonce keys: the same pair as the query, if any' })),
});
const CancelAllAfterBody = Type.Object({
  timeout: Type.Union([Type.Integer(), Type.String()], {
    description:
      'seconds, 0 to 86400 (an integer or its decimal text): every open order is canceled unless this is called ' +
      'again within that time; 0 disarms',
  }),
});
const BatchBody = Type.Object({
  orders: Type.Array(CreateOrderBody, {
    minItems: 1,
    maxItems: MAX_BATCH_ORDERS,
    description: 'the orders, placed in this order in one engine step, each accepted or refused on its own',
  }),
});
const AmendBody = Type.Object({
  price: Type.Optional(
    Type.String({ description: 'the new limit price (the order moves to the back of its level)' }),
  ),
  volume: Type.Optional(
    Type.String({
      description:
        'the new total volume, executed part included: lower keeps the queue place, higher moves to the back',
    }),
  ),
  client_order_id: Type.Optional(
    Type.Union([Type.String({ pattern: '^[A-Za-z0-9_-]{1,36}$' }), Type.Null()], {
      description: 'a new client order id; null removes it',
    }),
  ),
  trigger_price: Type.Optional(
    Type.String({
      description:
        'a waiting stop-loss or take-profit order (or their -limit types) only: the new trigger price; refused ' +
        'when the last trade price has reached it already (the order moves behind those waiting at that trigger)',
    }),
  ),
  order_id: Type.Optional(
    Type.Union([Type.Integer(), Type.String()], { description: 'nonce keys: the same id as the path' }),
  ),
});

const BatchItem = Type.Union([
  Type.Object({ success: Type.Literal(true), id: Type.Integer(), location: Type.String() }),
  Type.Object({
    success: Type.Literal(false),
    message: Type.String(),
    errors: Type.Record(Type.String(), Type.Array(Type.String())),
  }),
]);
type BatchItemRecord = Static<typeof BatchItem>;

const fieldsOf = (body: unknown): Readonly<Record<string, unknown>> =>
  typeof body === 'object' && body !== null && !Array.isArray(body) ? (body as Record<string, unknown>) : {};

/** The Unix-seconds-with-4-decimals text of a switch deadline ("0.0000" when disarmed). */
const triggerTimeText = (micros: number): string =>
  micros === 0 ? NO_EXPIRY : unixSeconds4(micros as Micros);

/** How many orders a cancel-all canceled: its `orderDone` events (each order ends once). */
const canceledCount = (result: CommandResult): number =>
  result.ok ? result.events.filter((e) => e.type === 'orderDone').length : 0;

/** A batch item's refusal, in shape D's fields. */
function refusedItem(errors: Readonly<Record<string, readonly string[]>>): BatchItemRecord {
  const copy = Object.fromEntries(Object.entries(errors).map(([k, v]) => [k, [...v]]));
  return { success: false, message: summarize(Object.values(copy).flat()), errors: copy };
}

/** `timeout` of cancel-all-after: whole seconds from 0 to 86,400, a JSON integer or its digits. */
function timeoutSeconds(value: unknown): { seconds: number } | { message: string } {
  if (isAbsent(value)) return { message: rule.required('timeout') };
  const text =
    typeof value === 'number' ? String(value) : typeof value === 'string' ? value.trim() : undefined;
  if (text === undefined || !/^[0-9]{1,12}$/.test(text)) return { message: rule.integer('timeout') };
  const seconds = Number(text);
  const max = MAX_CANCEL_ALL_AFTER / 1_000_000;
  if (seconds > max) return { message: rule.max('timeout', String(max)) };
  return { seconds };
}

export async function orderControlRoutes(base: FastifyInstance, deps: V1Deps): Promise<void> {
  const app = base.withTypeProvider<TypeBoxTypeProvider>();
  const { exchange } = deps;
  const { catalogue, history } = exchange;
  const { ownOrder, marketOf, render } = orderReaders(exchange);
  const location = (id: OrderId) => `${base.prefix}/orders/${id}`;

  /** The caller's newest order with this client id, or the 404 an unknown one gets. */
  const byClientId = async (userId: UserId, clientOrderId: string) => {
    const order =
      clientOrderIdError(clientOrderId) === undefined
        ? await history.findOrderByClientId(userId, clientOrderId)
        : undefined;
    if (order === undefined) throw errorC(404, ORDER_NOT_FOUND);
    return order;
  };

  app.get(
    '/orders/client/:client_order_id',
    {
      config: config({ errorShape: 'E', auth: 'read' }),
      schema: {
        tags: ['trading'],
        summary: 'The newest of your orders with this client order id, with its executions',
        description:
          'Answers as GET /orders/{order_id} does; 404 (shape C) when none of your orders has that id.',
        security,
        params: ClientIdParam,
        response: { 200: Envelope(OrderSchema), 404: ErrorCSchema },
      },
    },
    async (request) => {
      const { userId } = caller(request);
      const order = await byClientId(userId, request.params.client_order_id);
      const [record] = await render([order]);
      return envelope(MESSAGES.order, record!);
    },
  );

  app.delete(
    '/orders/client/:client_order_id',
    {
      config: config({ errorShape: 'E', auth: 'trade' }),
      schema: {
        tags: ['trading'],
        summary: 'Cancel your open order with this client order id',
        description:
          'As DELETE /orders/{order_id}. A nonce key signs a body naming the same `client_order_id` as the path.',
        security,
        params: ClientIdParam,
        response: { 200: BareEnvelope, 400: ErrorESchema, 404: ErrorCSchema, 409: ErrorESchema },
      },
    },
    async (request, reply) => {
      const { userId, nonceRequired } = caller(request);
      const clientOrderId = request.params.client_order_id;
      const fields = fieldsOf(request.body);
      const bound = Object.hasOwn(fields, 'client_order_id') ? fields.client_order_id : ABSENT;
      if (nonceRequired ? bound !== clientOrderId : bound !== ABSENT && bound !== clientOrderId)
        throw errorE(400, INVALID_REQUEST);
      if (clientOrderIdError(clientOrderId) !== undefined) throw errorC(404, ORDER_NOT_FOUND);
      const result = await exchange.submit({ kind: 'cancelClientOrder', userId, clientOrderId });
      if (!result.ok) {
        // No open order with that id: an ended one is 409, none at all 404 (as for an order id).
        const order = await byClientId(userId, clientOrderId);
        if (order.status !== 'open') throw orderNotOpen(order.status);
        throw rejectionToHttp(result.error);
      }
      return sendJson(reply, CANCELED_BODY);
    },
  );

  app.delete(
    '/orders',
    {
      config: config({ errorShape: 'E', auth: 'trade' }),
      schema: {
        tags: ['trading'],
        summary: 'Cancel all your open orders, or those of one market',
        description:
          'Answers `data: {"canceled": n}`, the number of orders canceled (0 when none was open). A nonce key signs ' +
          'a body carrying its nonce and, with `?pair=`, the same `pair`.',
        security,
        querystring: PairQuery,
        body: CancelAllBody,
        response: {
          200: Envelope(Type.Object({ canceled: Type.Integer() })),
          400: ErrorESchema,
        },
      },
      validatorCompiler: documentOnly,
    },
    async (request) => {
      const { userId, nonceRequired } = caller(request);
      const market = optionalPairQuery(catalogue, request.query.pair);
      if (market === null) throw errorE(400, INVALID_REQUEST);
      const fields = fieldsOf(request.body);
      const bound = Object.hasOwn(fields, 'pair') ? resolvePair(catalogue, fields.pair) : ABSENT;
      const boundOk = bound === ABSENT ? !nonceRequired || market === undefined : bound === market;
      if (!boundOk) throw errorE(400, INVALID_REQUEST);
      const result = await exchange.submit(
        market === undefined
          ? { kind: 'cancelAllOrders', userId }
          : { kind: 'cancelAllOrders', userId, marketId: market.id },
      );
      if (!result.ok) throw rejectionToHttp(result.error);
      return envelope(ORDER_CONTROL_MESSAGES.ordersCanceled, { canceled: canceledCount(result) });
    },
  );

  app.post(
    '/orders/cancel-all-after',
    {
      config: config({ errorShape: 'D', auth: 'trade' }),
      schema: {
        tags: ['trading'],
        summary: "The dead man's switch: cancel all your open orders unless called again in time",
        description:
          'Each call moves the deadline to now + `timeout` seconds; `timeout: 0` disarms. When the deadline passes ' +
          'every open order of yours is canceled (within a second; the deadline survives restarts and failovers) ' +
          'and the switch stays disarmed until the next non-zero call. Answers `trigger_time`, Unix seconds with 4 ' +
          'decimals ("0.0000" when disarmed).',
        security,
        body: CancelAllAfterBody,
        response: {
          200: Envelope(Type.Object({ trigger_time: Type.String() })),
          422: Type.Union([ErrorDSchema, ErrorESchema]),
        },
      },
      validatorCompiler: documentOnly,
    },
    async (request) => {
      const { userId } = caller(request);
      const timeout = timeoutSeconds(fieldsOf(request.body).timeout);
      if ('message' in timeout) throw validationError({ timeout: [timeout.message] });
      const result = await exchange.submit({
        kind: 'cancelAllAfter',
        userId,
        timeout: (timeout.seconds * 1_000_000) as Micros,
      });
      if (!result.ok) throw rejectionToHttp(result.error);
      const set = result.events.find((e) => e.type === 'cancelAllAfterSet' && e.userId === userId);
      const triggerTime = set?.type === 'cancelAllAfterSet' ? set.triggerTime : 0;
      return envelope(ORDER_CONTROL_MESSAGES.cancelAllAfter, { trigger_time: triggerTimeText(triggerTime) });
    },
  );

  app.post(
    '/orders/batch',
    {
      config: config({ errorShape: 'D', auth: 'trade' }),
      schema: {
        tags: ['trading'],
        summary: 'Place 1 to 20 orders in one engine step',
        description:
          'Each order is a POST /orders body and is accepted or refused on its own, in the order given. `data` has ' +
          'one item per order: `{"success": true, "id": n, "location": "/v1/orders/n"}` or `{"success": false, ' +
          '"message": …, "errors": {field: [texts]}}`. More than 20 orders (or none) is a 422 that places nothing. ' +
          'An Idempotency-Key header is refused (422): retry safety per order is POST /orders.',
        security,
        body: BatchBody,
        response: { 200: Envelope(Type.Array(BatchItem)), 422: Type.Union([ErrorDSchema, ErrorESchema]) },
      },
      validatorCompiler: documentOnly,
    },
    async (request) => {
      const { userId } = caller(request);
      if (request.headers['idempotency-key'] !== undefined)
        throw validationError({
          [IDEMPOTENCY_KEY_FIELD]: ['The Idempotency-Key header is not supported on this endpoint.'],
        });
      const orders = fieldsOf(request.body).orders;
      if (isAbsent(orders) || (Array.isArray(orders) && orders.length === 0))
        throw validationError({ orders: [rule.required('orders')] });
      if (!Array.isArray(orders)) throw validationError({ orders: [rule.array('orders')] });
      if (orders.length > MAX_BATCH_ORDERS)
        throw validationError({
          orders: [`The orders field must not have more than ${MAX_BATCH_ORDERS} items.`],
        });
      const items: (BatchItemRecord | undefined)[] = [];
      const commands: PlaceOrder[] = [];
      for (const body of orders) {
        const input = validateCreateOrder(body, catalogue);
        const controls = validateOrderControls(body, input);
        if (input.ok && controls.ok) {
          commands.push(placeOrderCommand(userId, input.value, controls.value));
          items.push(undefined);
        } else {
          items.push(
            refusedItem({
              ...(input.ok ? {} : input.errors.toRecord()),
              ...(controls.ok ? {} : controls.errors),
            }),
          );
        }
      }
      let placed: readonly PlaceResult[] = [];
      if (commands.length > 0) {
        const result = await exchange.submit({ kind: 'placeOrders', orders: commands });
        if (!result.ok) throw rejectionToHttp(result.error);
        placed = result.results ?? [];
        if (placed.length !== commands.length)
          throw new Error('placeOrders answered another number of results');
      }
      let next = 0;
      const data = items.map((item): BatchItemRecord => {
        if (item !== undefined) return item;
        const outcome = placed[next++]!;
        if (!outcome.ok) {
          const http = rejectionToHttp(outcome.error);
          const errors = (http.body as { errors?: Record<string, string[]> }).errors;
          return refusedItem(errors ?? { order: [outcome.error.message] });
        }
        return { success: true, id: outcome.orderId, location: location(outcome.orderId) };
      });
      return envelope(ORDER_CONTROL_MESSAGES.batch, data);
    },
  );

  app.patch(
    '/orders/:order_id',
    {
      config: config({ errorShape: 'D', auth: 'trade' }),
      schema: {
        tags: ['trading'],
        summary: 'Amend an open order in place',
        description:
          '`volume` is the new total volume, executed part included. Lowering it keeps the queue place; a new price ' +
          'or a higher volume moves the order to the back of its new level (a new price that crosses trades at once, ' +
          'as a taker; refused for a post-only order). The reservation is adjusted exactly: an amend that needs more ' +
          'funds than are available, a volume at or below what has executed, or a value at the new price and volume ' +
          "below one unit of the quote asset's smallest decimal, is a 422. A waiting stop-loss or " +
          'take-profit order (and their -limit types) may also move its `trigger_price`; a trailing stop may not ' +
          '(its trigger follows the market). A nonce key signs a body naming the same `order_id` as the path.',
        security,
        params: OrderIdParam,
        body: AmendBody,
        response: {
          200: BareEnvelope,
          400: ErrorESchema,
          404: ErrorCSchema,
          409: ErrorESchema,
          422: Type.Union([ErrorDSchema, ErrorESchema]),
        },
      },
      validatorCompiler: documentOnly,
    },
    async (request, reply) => {
      const { userId, nonceRequired } = caller(request);
      const id = parseId(request.params.order_id);
      if (id === undefined) throw errorC(404, ORDER_NOT_FOUND);
      const bound = orderIdOfBody(request.body);
      if (nonceRequired ? bound !== id : bound !== ABSENT && bound !== id) throw errorE(400, INVALID_REQUEST);
      const order = await ownOrder(userId, id);
      if (order.status !== 'open') throw orderNotOpen(order.status);
      const market = marketOf(order);
      const fields = fieldsOf(request.body);
      const errors: Record<string, string[]> = {};
      let price: number | undefined;
      let volume: number | undefined;
      let clientOrderId: string | null | undefined;
      let triggerPrice: number | undefined;
      if (!isAbsent(fields.price)) {
        const parsed = parsePositiveDecimal(fields.price, 'price', market.pairDecimals);
        if (parsed.ok) price = parsed.value;
        else errors.price = [parsed.message];
      }
      if (!isAbsent(fields.volume)) {
        const parsed = parsePositiveDecimal(fields.volume, 'volume', market.lotDecimals);
        if (!parsed.ok) errors.volume = [parsed.message];
        else if (parsed.value < market.ordermin)
          errors.volume = [rule.min('volume', formatVolume(market, market.ordermin))];
        else volume = parsed.value;
      }
      if (fields.client_order_id === null) clientOrderId = null;
      else if (!isAbsent(fields.client_order_id)) {
        const message = clientOrderIdError(fields.client_order_id);
        if (message === undefined) clientOrderId = fields.client_order_id as string;
        else errors.client_order_id = [message];
      }
      if (!isAbsent(fields.trigger_price)) {
        // Whether this order has a trigger to move is the engine's check (invalid_trigger_price).
        const parsed = parsePositiveDecimal(fields.trigger_price, 'trigger_price', market.pairDecimals);
        if (parsed.ok) triggerPrice = parsed.value;
        else errors.trigger_price = [parsed.message];
      }
      if (Object.keys(errors).length > 0) throw validationError(errors);
      if (
        price === undefined &&
        volume === undefined &&
        clientOrderId === undefined &&
        triggerPrice === undefined
      )
        throw validationError({
          volume: ['One of price, volume, client order id or trigger price is required.'],
        });
      const result = await exchange.submit({
        kind: 'amendOrder',
        userId,
        orderId: id as OrderId,
        ...(price === undefined ? {} : { price: price as PlaceOrder['price'] }),
        ...(volume === undefined ? {} : { volume: volume as PlaceOrder['volume'] }),
        ...(clientOrderId === undefined ? {} : { clientOrderId }),
        ...(triggerPrice === undefined ? {} : { triggerPrice: triggerPrice as PlaceOrder['price'] }),
      });
      if (!result.ok) {
        if (result.error.code === 'order_not_found' || result.error.code === 'order_not_open') {
          // It ended between the read and the amend.
          const now = await ownOrder(userId, id);
          if (now.status !== 'open') throw orderNotOpen(now.status);
        }
        throw rejectionToHttp(result.error);
      }
      reply.header('location', location(id as OrderId));
      return sendJson(reply, AMENDED_BODY);
    },
  );
}
