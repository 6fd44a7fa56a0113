/**
 * A typed HTTP client for the interface: one method per endpoint, signed private requests, typed
 * errors. Self-contained (Node built-ins and the global fetch), so it can be used without the
 * server code.
 */
import { randomUUID } from 'node:crypto';
import { type ErrorBody, errorShape, OpenSpotApiError, OpenSpotTransportError } from './errors.js';
import { signRequest } from './sign.js';
import type {
  BareEnvelope,
  Candle,
  ChannelAuth,
  CreatedOrder,
  Envelope,
  HistoricalTrades,
  Interval,
  Market,
  Order,
  OrderBook,
  OrderType,
  PagedEnvelope,
  Side,
  Ticker,
  UserTrade,
  WalletEntry,
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

export interface CreateOrderParams {
  readonly pair: string;
  readonly direction: Side;
  readonly type: OrderType;
  /** Decimal string: amounts never travel as JSON numbers. */
  readonly volume: string;
  /** Required for limit orders. */
  readonly price?: string;
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

interface RequestSpec {
  readonly method: 'GET' | 'POST' | 'DELETE';
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
      body: JSON.stringify({
        order_direction: params.direction,
        order_type: params.type,
        pair: params.pair,
        volume: params.volume,
        ...(params.price === undefined ? {} : { price: params.price }),
        ...this.#nonceField(),
      }),
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
