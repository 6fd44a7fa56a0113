/**
 * A typed HTTP client for the interface: one method per endpoint, signed private requests, typed
 * errors. Self-contained (Node built-ins and the global fetch), so it can be used without the
 * server code.
 */
import { randomUUID } from 'node:crypto';
import { type ErrorBody, errorShape, OpenSpotApiError, OpenSpotTransportError } from './errors.js';
import { signRequest } from './sign.js';
import {
  type BareEnvelope,
  type BatchResult,
  type CancelAllAfter,
  type CanceledCount,
  type Candle,
  type ChannelAuth,
  CLIENT_ORDER_ID,
  type CreatedOrder,
  type Envelope,
  type HistoricalTrades,
  type Interval,
  type Market,
  type Order,
  type OrderBook,
  type OrderType,
  type PagedEnvelope,
  type SelfTradePrevention,
  type Side,
  type Ticker,
  type TimeInForce,
  type UserTrade,
  type WalletEntry,
} from './types.js';

export interface ClientOptions {
  /** The interface's `{base_url}`, ending in `/v1`, e.g. `http://127.0.0.1:8080/v1`. */
  readonly baseUrl: string;
  readonly apiKey?: string;
  /** Base64 API secret; needed for private endpoints. */
  readonly apiSecret?: string;
  /** Replaces the global fetch (tests, proxies, instrumentation). */
  readonly fetch?: typeof fetch;
  /** Per-request timeout. Default 30 s. */
  readonly timeoutMs?: number;
  /**
   * How many times createOrder resends an order whose answer was lost (no answer, a timeout,
   * 429, 500, 502, 503, 504), with the same Idempotency-Key and body, so the server places it at
   * most once (with nonces on, each resend is re-signed with a fresh nonce). Default 2; 0 turns
   * retries off.
   */
  readonly orderRetries?: number;
  /** First wait before a retry, doubled each time; a Retry-After header takes precedence. Default 250 ms. */
  readonly retryDelayMs?: number;
  /**
   * For keys created with `nonce_required`: every signed request with a body carries a `nonce`,
   * and DELETE /orders/:id sends the signed body `{"nonce": …, "order_id": id}` instead of none.
   * `true`: microsecond timestamps, strictly increasing within this client; or your own source of
   * strictly increasing decimal strings. Off by default (the interface's plain requests).
   */
  readonly nonce?: boolean | (() => string);
}

/** Strictly increasing microsecond timestamps as decimal text (larger than any earlier run's). */
export function timestampNonces(): () => string {
  let last = 0n;
  return () => {
    const now = BigInt(Date.now()) * 1000n;
    last = now > last ? now : last + 1n;
    return last.toString();
  };
}

/** One order's fields, as `POST /orders` and each item of `POST /orders/batch` take them. */
export interface OrderParams {
  readonly pair: string;
  readonly direction: Side;
  readonly type: OrderType;
  /** Decimal string: amounts never travel as JSON numbers. */
  readonly volume: string;
  /** The limit price: required for `limit`, `stop-loss-limit` and `take-profit-limit`, refused otherwise. */
  readonly price?: string;
  /**
   * Decimal string: the last trade price that fires a `stop-loss`, `take-profit` or one of their
   * `-limit` variants (required for those four, refused for the others).
   */
  readonly triggerPrice?: string;
  /**
   * A `trailing-stop`'s distance from the best price since placement: an absolute price
   * distance (`"150.5"`) or a percentage (`"2.5%"`, 0.01 % to 50 %). Required for that type only.
   */
  readonly trailingOffset?: string;
  /** Default GTC. `GTD` needs `expireTime`. */
  readonly timeInForce?: TimeInForce;
  /** Unix seconds (a whole number or a decimal string) at which a GTD order is canceled. */
  readonly expireTime?: number | string;
  /** Never take liquidity: an order that would trade on arrival is canceled instead (limit, GTC or GTD). */
  readonly postOnly?: boolean;
  /** Your own id for the order (1 to 36 of `[A-Za-z0-9_-]`), unique among your open orders. */
  readonly clientOrderId?: string;
  /** Self-trade prevention; the server's default is `cancel-oldest`. */
  readonly stp?: SelfTradePrevention;
}

export interface CreateOrderParams extends OrderParams {
  /**
   * The order's Idempotency-Key (1 to 255 printable ASCII characters). Default: a new random
   * UUID per call. Pass your own to retry across calls or processes (keep it with the order
   * until you know its fate); the server keeps it for 24 hours.
   */
  readonly idempotencyKey?: string;
}

export interface PageParams {
  readonly pageSize?: number;
  readonly page?: number;
}

type QueryValue = string | number | readonly string[] | undefined;

/** Query text with the interface's exact parameter names (`page-size`, `pairs[]`). */
function queryString(query: Readonly<Record<string, QueryValue>>): string {
  const parts: string[] = [];
  for (const [name, value] of Object.entries(query)) {
    if (value === undefined) continue;
    const values = typeof value === 'object' ? value : [String(value)];
    // The names are fixed ASCII; `[]` stays literal, as PHP-style servers expect it.
    for (const v of values) parts.push(`${name}=${encodeURIComponent(v)}`);
  }
  return parts.length === 0 ? '' : `?${parts.join('&')}`;
}

const ORDER_LOCATION = /\/orders\/(\d+)\/?$/;

/**
 * An order's body with the interface's names, in the order it lists them. A field left out stays
 * out of the body, so an order that uses no new control is sent byte for byte as before.
 */
export function orderBody(params: OrderParams): Record<string, unknown> {
  const optional = {
    price: params.price,
    trigger_price: params.triggerPrice,
    trailing_offset: params.trailingOffset,
    time_in_force: params.timeInForce,
    expire_time: params.expireTime,
    post_only: params.postOnly,
    client_order_id: params.clientOrderId,
    stp: params.stp,
  };
  return {
    order_direction: params.direction,
    order_type: params.type,
    pair: params.pair,
    volume: params.volume,
    ...Object.fromEntries(Object.entries(optional).filter(([, value]) => value !== undefined)),
  };
}

/** The changes `amend` can make; `volume` is the new total, the executed part included. */
export interface AmendParams {
  /** A new limit price (a limit order, or the limit of a `-limit` type). */
  readonly price?: string;
  /** A new trigger price, for a stop or take-profit order still waiting (not a trailing stop). */
  readonly triggerPrice?: string;
  readonly volume?: string;
  /** A new client order id; `null` removes it. */
  readonly clientOrderId?: string | null;
}

interface RequestSpec {
  readonly method: 'GET' | 'POST' | 'DELETE' | 'PATCH';
  readonly path: string;
  readonly query?: Readonly<Record<string, QueryValue>>;
  /** The serialized body: signed and sent as this exact string. */
  readonly body?: string;
  readonly signed: boolean;
  readonly headers?: Readonly<Record<string, string>>;
}

/** Statuses after which the order's fate is unknown or it was not processed: safe to resend under its key. */
const RETRY_STATUSES = new Set([429, 500, 502, 503, 504]);
/** A Retry-After longer than this is not waited for: the error goes to the caller. */
const MAX_RETRY_WAIT_MS = 30_000;

interface RawResponse {
  readonly status: number;
  readonly headers: Headers;
  readonly data: unknown;
}

export class OpenSpotClient {
  readonly baseUrl: string;
  readonly #apiKey: string | undefined;
  readonly #apiSecret: string | undefined;
  readonly #fetch: typeof fetch;
  readonly #timeoutMs: number;
  readonly #orderRetries: number;
  readonly #retryDelayMs: number;
  readonly #nonce: (() => string) | undefined;

  constructor(options: ClientOptions) {
    this.baseUrl = options.baseUrl.replace(/\/+$/, '');
    this.#apiKey = options.apiKey;
    this.#apiSecret = options.apiSecret;
    this.#fetch = options.fetch ?? globalThis.fetch;
    this.#timeoutMs = options.timeoutMs ?? 30_000;
    this.#orderRetries = options.orderRetries ?? 2;
    this.#retryDelayMs = options.retryDelayMs ?? 250;
    const { nonce } = options;
    this.#nonce = nonce === true ? timestampNonces() : typeof nonce === 'function' ? nonce : undefined;
  }

  /** The `nonce` member to add to a body: none unless nonces are on. */
  #nonceField(): { nonce?: string } {
    return this.#nonce === undefined ? {} : { nonce: this.#nonce() };
  }

  /** True when private endpoints can be called. */
  get hasCredentials(): boolean {
    return Boolean(this.#apiKey && this.#apiSecret);
  }

  // --- public ---------------------------------------------------------------------------------

  async markets(pair?: string): Promise<Envelope<Record<string, Market>>> {
    return this.#json({ method: 'GET', path: '/markets', query: { pair }, signed: false });
  }

  async tickers(tickerId?: string): Promise<Ticker[]> {
    return this.#json({ method: 'GET', path: '/tickers', query: { ticker_id: tickerId }, signed: false });
  }

  async ohlc(params: { tickerId: string; interval?: Interval; since?: number | string }): Promise<Candle[]> {
    const query = { ticker_id: params.tickerId, interval: params.interval, since: params.since };
    return this.#json({ method: 'GET', path: '/ohlc', query, signed: false });
  }

  async orderbook(params: { tickerId: string; depth?: number }): Promise<OrderBook[]> {
    const query = { ticker_id: params.tickerId, depth: params.depth };
    return this.#json({ method: 'GET', path: '/orderbook', query, signed: false });
  }

  async historicalTrades(params: {
    tickerId: string;
    type?: Side;
    limit?: number;
    startTime?: number | string;
  }): Promise<HistoricalTrades> {
    const query = {
      ticker_id: params.tickerId,
      type: params.type,
      limit: params.limit,
      start_time: params.startTime,
    };
    return this.#json({ method: 'GET', path: '/historical_trades', query, signed: false });
  }

  // --- private --------------------------------------------------------------------------------

  async spotWallet(): Promise<Envelope<WalletEntry[]>> {
    return this.#json({ method: 'GET', path: '/spot-wallet', signed: true });
  }

  /** Deprecated by the interface; same data as spotWallet(). */
  async tradeWallet(): Promise<Envelope<WalletEntry[]>> {
    return this.#json({ method: 'GET', path: '/trade-wallet', signed: true });
  }

  /**
   * Places an order. The answer carries no order record; the id comes from the Location header.
   * Sent with an Idempotency-Key and resent under it when the answer is lost (see orderRetries):
   * a retry of an order the server already placed gets the original answer, not a second order.
   */
  async createOrder(params: CreateOrderParams): Promise<CreatedOrder> {
    const headers = { 'idempotency-key': params.idempotencyKey ?? randomUUID() };
    // Built per attempt: with nonces on, a resent body with the first attempt's nonce would be
    // refused (422 Invalid Nonce) once the server has seen it, so every attempt is re-signed with
    // a fresh nonce under the same key; the server matches a retry by the order, not the bytes.
    // Key order as the interface lists the fields; the server hashes the bytes, so any order
    // would do as long as the sent string is the signed one.
    const attempt = (): RequestSpec => ({
      method: 'POST',
      path: '/orders',
      body: JSON.stringify({ ...orderBody(params), ...this.#nonceField() }),
      signed: true,
      headers,
    });
    const response = await this.#withRetries(attempt);
    const match = ORDER_LOCATION.exec(response.headers.get('location') ?? '');
    return { id: match === null ? undefined : Number(match[1]), envelope: response.data as BareEnvelope };
  }

  /**
   * Cancels an order. Without nonces the request has no body, as the interface shows it — its
   * signature is then valid for any order id (docs/security.md). With nonces the signed body
   * names the nonce and the order, so a captured request cancels nothing else and only once.
   */
  async cancelOrder(id: number): Promise<BareEnvelope> {
    const path = `/orders/${orderPath(id)}`;
    const body =
      this.#nonce === undefined ? undefined : JSON.stringify({ ...this.#nonceField(), order_id: id });
    return this.#json({ method: 'DELETE', path, body, signed: true });
  }

  async order(id: number): Promise<Envelope<Order>> {
    return this.#json({ method: 'GET', path: `/orders/${orderPath(id)}`, signed: true });
  }

  /** The newest of your orders placed with this `client_order_id` (open or not). */
  async getByClientOrderId(clientOrderId: string): Promise<Envelope<Order>> {
    return this.#json({ method: 'GET', path: clientOrderPath(clientOrderId), signed: true });
  }

  /** Cancels your open order with this `client_order_id`; with nonces, the signed body names it. */
  async cancelByClientOrderId(clientOrderId: string): Promise<BareEnvelope> {
    const path = clientOrderPath(clientOrderId);
    const body =
      this.#nonce === undefined
        ? undefined
        : JSON.stringify({ ...this.#nonceField(), client_order_id: clientOrderId });
    return this.#json({ method: 'DELETE', path, body, signed: true });
  }

  /**
   * Cancels all your open orders, or those of one market. With nonces the signed body carries
   * the nonce (and the market, so the signature covers what is canceled).
   */
  async cancelAll(params: { pair?: string } = {}): Promise<Envelope<CanceledCount>> {
    const body =
      this.#nonce === undefined
        ? undefined
        : JSON.stringify({
            ...this.#nonceField(),
            ...(params.pair === undefined ? {} : { pair: params.pair }),
          });
    return this.#json({
      method: 'DELETE',
      path: '/orders',
      query: { pair: params.pair },
      body,
      signed: true,
    });
  }

  /**
   * The dead man's switch: unless called again within `timeoutSeconds` (0 to 86,400), every open
   * order of yours is canceled. Each call moves the deadline; 0 disarms it. Call it well within the
   * timeout (e.g. every 15 s with 60), as a late call after it fired does not bring orders back.
   */
  async cancelAllAfter(timeoutSeconds: number): Promise<Envelope<CancelAllAfter>> {
    const body = JSON.stringify({ timeout: timeoutSeconds, ...this.#nonceField() });
    return this.#json({ method: 'POST', path: '/orders/cancel-all-after', body, signed: true });
  }

  /**
   * Places 1 to 20 orders in one engine step, in the order given; each is placed or refused on
   * its own, and the answer has one result per order in the same order. Not retried: a batch has
   * no Idempotency-Key, so after a lost answer look the orders up (by `clientOrderId`) instead.
   */
  async placeBatch(orders: readonly OrderParams[]): Promise<Envelope<BatchResult[]>> {
    const body = JSON.stringify({ orders: orders.map(orderBody), ...this.#nonceField() });
    return this.#json({ method: 'POST', path: '/orders/batch', body, signed: true });
  }

  /**
   * Changes an open order in place. A lower volume keeps its place in the queue; a new price or a
   * higher volume moves it to the back of its level. A waiting stop or take-profit order may get
   * a new trigger price (behind the orders already waiting at that trigger).
   */
  async amend(id: number, changes: AmendParams): Promise<BareEnvelope> {
    const path = `/orders/${orderPath(id)}`;
    const body = JSON.stringify({
      ...(changes.price === undefined ? {} : { price: changes.price }),
      ...(changes.triggerPrice === undefined ? {} : { trigger_price: changes.triggerPrice }),
      ...(changes.volume === undefined ? {} : { volume: changes.volume }),
      ...(changes.clientOrderId === undefined ? {} : { client_order_id: changes.clientOrderId }),
      // As for cancels: a nonce key's signed body names the order, so it changes nothing else.
      ...(this.#nonce === undefined ? {} : { ...this.#nonceField(), order_id: id }),
    });
    return this.#json({ method: 'PATCH', path, body, signed: true });
  }

  async openOrders(params: { pair?: string } & PageParams = {}): Promise<PagedEnvelope<Order>> {
    return this.#json({ method: 'GET', path: '/open-orders', query: orderQuery(params), signed: true });
  }

  async closedOrders(params: { pair?: string } & PageParams = {}): Promise<PagedEnvelope<Order>> {
    return this.#json({ method: 'GET', path: '/closed-orders', query: orderQuery(params), signed: true });
  }

  async trades(params: { pairs?: readonly string[] } & PageParams = {}): Promise<PagedEnvelope<UserTrade>> {
    const query = { 'pairs[]': params.pairs, 'page-size': params.pageSize, page: params.page };
    return this.#json({ method: 'GET', path: '/trades', query, signed: true });
  }

  async trade(id: number): Promise<Envelope<UserTrade>> {
    return this.#json({ method: 'GET', path: `/trades/${orderPath(id)}`, signed: true });
  }

  /**
   * The `auth` token for subscribing this socket to a private channel. `socket_id` is a JSON
   * number in the interface; it is written from the id's own digits (`123.4567`), never through a
   * float, so the server reads back exactly the id the WebSocket gave.
   */
  async broadcastingAuth(socketId: string, channelName: string): Promise<ChannelAuth> {
    if (!/^\d+\.\d+$/.test(socketId)) throw new TypeError(`not a socket id: ${socketId}`);
    const nonce = this.#nonceField().nonce;
    const body = `{"socket_id":${socketId},"channel_name":${JSON.stringify(channelName)}${nonce === undefined ? '' : `,"nonce":${JSON.stringify(nonce)}`}}`;
    return this.#json({ method: 'POST', path: '/broadcasting/auth', body, signed: true });
  }

  // --- transport ------------------------------------------------------------------------------

  async #json<T>(spec: RequestSpec): Promise<T> {
    // The one place where a parsed body becomes a typed record: the server's schemas are the
    // contract, and re-validating every field here would duplicate them.
    return (await this.#send(spec)).data as T;
  }

  /**
   * #send, resent after a lost answer (safe only for a request the server deduplicates). `next`
   * builds each attempt's request, so an attempt can carry a fresh nonce.
   */
  async #withRetries(next: () => RequestSpec): Promise<RawResponse> {
    for (let attempt = 0; ; attempt++) {
      try {
        return await this.#send(next());
      } catch (error) {
        const lost =
          error instanceof OpenSpotTransportError ||
          (error instanceof OpenSpotApiError && RETRY_STATUSES.has(error.status));
        const waitMs =
          error instanceof OpenSpotApiError && error.retryAfter !== undefined
            ? error.retryAfter * 1000
            : this.#retryDelayMs * 2 ** attempt;
        if (!lost || attempt >= this.#orderRetries || waitMs > MAX_RETRY_WAIT_MS) throw error;
        await new Promise((resolve) => setTimeout(resolve, waitMs));
      }
    }
  }

  async #send(spec: RequestSpec): Promise<RawResponse> {
    const headers: Record<string, string> = { accept: 'application/json', ...spec.headers };
    if (spec.body !== undefined) headers['content-type'] = 'application/json';
    if (spec.signed) {
      if (this.#apiKey === undefined || this.#apiSecret === undefined || this.#apiKey === '')
        throw new TypeError(`${spec.method} ${spec.path} needs an API key and secret`);
      headers['x-api-key'] = this.#apiKey;
      headers['x-api-sign'] = signRequest(spec.method, spec.body ?? '', this.#apiSecret);
    }
    const url = `${this.baseUrl}${spec.path}${queryString(spec.query ?? {})}`;
    let response: Response;
    let text: string;
    try {
      response = await this.#fetch(url, {
        method: spec.method,
        headers,
        body: spec.body,
        signal: AbortSignal.timeout(this.#timeoutMs),
      });
      text = await response.text();
    } catch (error) {
      // fetch says only "fetch failed"; the reason (ECONNREFUSED, a timeout) is in its cause.
      const cause =
        error instanceof Error ? (error.cause as { code?: unknown } | undefined)?.code : undefined;
      const reason = `${error instanceof Error ? error.message : String(error)}${typeof cause === 'string' ? ` (${cause})` : ''}`;
      throw new OpenSpotTransportError(`${spec.method} ${url}: ${reason}`, { cause: error });
    }
    const parsed = parseJson(text);
    if (!response.ok) {
      const body =
        parsed.ok && errorShape(parsed.value) !== undefined ? (parsed.value as ErrorBody) : undefined;
      throw new OpenSpotApiError(response.status, body, text, retryAfter(response.headers));
    }
    if (!parsed.ok)
      throw new OpenSpotTransportError(`${spec.method} ${url}: answer ${response.status} is not JSON`);
    return { status: response.status, headers: response.headers, data: parsed.value };
  }
}

/** Ids go into paths; anything but a positive integer is a caller bug, not a server question. */
function orderPath(id: number): string {
  if (!Number.isSafeInteger(id) || id < 1) throw new TypeError(`not a record id: ${id}`);
  return String(id);
}

/** A client order id goes into a path: one that the server could never have stored is a caller bug. */
function clientOrderPath(clientOrderId: string): string {
  if (!CLIENT_ORDER_ID.test(clientOrderId)) throw new TypeError(`not a client order id: ${clientOrderId}`);
  return `/orders/client/${clientOrderId}`;
}

const orderQuery = (params: { pair?: string } & PageParams) => ({
  pair: params.pair,
  'page-size': params.pageSize,
  page: params.page,
});

function parseJson(text: string): { ok: true; value: unknown } | { ok: false } {
  if (text === '') return { ok: true, value: undefined };
  try {
    return { ok: true, value: JSON.parse(text) as unknown };
  } catch {
    return { ok: false };
  }
}

function retryAfter(headers: Headers): number | undefined {
  const value = headers.get('retry-after');
  if (value === null || !/^\d+$/.test(value.trim())) return undefined;
  return Number(value.trim());
}
