/**
 * `OpenSpot`, the ccxt exchange class (docs/ccxt.md): the REST methods of OpenSpotRest plus
 * ccxt's `watch*` methods over the venue's Pusher-protocol (v7) WebSocket, as ccxt's pro classes
 * extend its REST classes. It uses ccxt's own WebSocket client (`this.watch`, `this.client`,
 * futures, keepalive pings, reconnection by calling `watch*` again) and its order book and caches.
 *
 * The order book is kept exactly by the venue's `LocalBook` (decimal strings; the `sequence` of
 * every update checked, the top-10 `checksum` verified) and mirrored into ccxt's order book; a
 * gap or a checksum mismatch subscribes again, which makes the venue send a fresh snapshot.
 */
import {
  AuthenticationError,
  BadSymbol,
  type Dict,
  ExchangeError,
  type Int,
  type OHLCV,
  type Order,
  type OrderBook,
  PermissionDenied,
  RateLimitExceeded,
  type Str,
  type Ticker,
  type Trade,
} from 'ccxt';
import type { BookLevelText, BookMessage } from '../client/channels.js';
import { LocalBook } from '../client/local-book.js';
import { newArrayCache, newCacheBySymbolById, newCacheByTimestamp, type WatchCache } from './caches.js';
import { OpenSpotRest, orNone } from './rest.js';

/** What the class uses of ccxt's WebSocket client (ccxt/js/src/base/ws/Client.d.ts). */
interface PusherClient {
  readonly url: string;
  subscriptions: Dict;
  lastPong?: number;
  send(message: Dict): Promise<unknown>;
  resolve(result: unknown, messageHash: string): unknown;
  reject(error: Error, messageHash?: string): unknown;
  future(messageHash: string): Promise<unknown>;
  connect(backoffDelay?: number): Promise<unknown>;
}

/** A Pusher frame: `data` is the JSON text of the payload (W5). */
interface PusherFrame {
  readonly event?: string;
  readonly channel?: string;
  readonly data?: unknown;
}

const CHANNEL_PREFIXES = {
  book: 'order-book.',
  ticker: 'ticker-information.',
  trade: 'trade.',
  ohlc: 'ohlc.',
  executions: 'private-order-executed.',
} as const;

const subscribe = (channel: string, auth?: string): Dict => ({
  event: 'pusher:subscribe',
  data: auth === undefined ? { channel } : { channel, auth },
});

/** An update's side: `[]` (unchanged) or the one level that changed. */
const changedLevels = (side: unknown): readonly BookLevelText[] =>
  Array.isArray(side) ? (side as BookLevelText[]) : [side as BookLevelText];

export class OpenSpot extends OpenSpotRest {
  /** The exact copy of each book, by unified symbol. */
  readonly #books = new Map<string, LocalBook>();
  /** Socket ids of live connections (pusher:connection_established). */
  readonly #socketIds = new WeakMap<object, string>();
  /** Which message hashes wait on each channel, to reject them when the channel is refused. */
  readonly #channelHashes = new Map<string, Set<string>>();
  #orders: WatchCache<Order> | undefined;
  #myTrades: WatchCache<Trade> | undefined;

  override describe(): Dict {
    return this.deepExtend(super.describe(), {
      options: {
        tradesLimit: 1000,
        ordersLimit: 1000,
        OHLCVLimit: 1000,
        watchOrderBook: { checksum: true },
      },
      // pusher-js pings after 10 s of silence (the interface's client setting); the venue closes
      // a connection silent for 30 s + 30 s.
      streaming: { keepAlive: 10000 },
    });
  }

  /**
   * `urls.api.ws` when set (an origin, or a full `/app/<key>` address); else derived from the
   * REST base: same host and port, ws:// for http://, wss:// for https:// (W1).
   */
  wsUrl(): string {
    const api = this.urls.api as Dict;
    const configured = this.safeString(api, 'ws');
    const origin = configured ?? this.restBase().replace(/^http/, 'ws').replace(/\/v1$/, '');
    if (origin.includes('/app/')) return origin;
    const key = this.safeString(this.options, 'wsAppKey', 'openspot-key') as string;
    return `${origin.replace(/\/+$/, '')}/app/${encodeURIComponent(key)}?protocol=7&client=ccxt&version=${this.version}`;
  }

  /**
   * ccxt's client for the venue. A plain ws:// address (a local test venue) needs ccxt's HTTP
   * agent, which ccxt loads only on request; wss:// needs nothing.
   */
  async #client(): Promise<PusherClient> {
    const url = this.wsUrl();
    if (url.startsWith('ws://')) await this.loadHttpProxyAgent();
    return this.client(url) as unknown as PusherClient;
  }

  async #watchChannel(channel: string, messageHash: string, message: Dict | undefined): Promise<unknown> {
    await this.#client();
    const hashes = this.#channelHashes.get(channel) ?? new Set<string>();
    this.#channelHashes.set(channel, hashes);
    hashes.add(messageHash);
    return this.watch(this.wsUrl(), messageHash, message, channel);
  }

  // ---------------------------------------------------------------------------------------------
  // Public channels

  override async watchOrderBook(
    symbol: string,
    limit: Int = undefined,
    params: Dict = {},
  ): Promise<OrderBook> {
    await this.loadMarkets();
    const market = this.market(symbol);
    const channel = `${CHANNEL_PREFIXES.book}${market.id}`;
    const orderbook = (await this.#watchChannel(
      channel,
      `orderbook:${market.symbol}`,
      this.extend(subscribe(channel), params),
    )) as OrderBook & { limit(): OrderBook };
    return limit === undefined ? orderbook.limit() : this.#top(orderbook, limit);
  }

  #top(orderbook: OrderBook, limit: number): OrderBook {
    return { ...orderbook, bids: orderbook.bids.slice(0, limit), asks: orderbook.asks.slice(0, limit) };
  }

  override async watchTicker(symbol: string, params: Dict = {}): Promise<Ticker> {
    await this.loadMarkets();
    const market = this.market(symbol);
    const channel = `${CHANNEL_PREFIXES.ticker}${market.id}`;
    return (await this.#watchChannel(
      channel,
      `ticker:${market.symbol}`,
      this.extend(subscribe(channel), params),
    )) as Ticker;
  }

  override async watchTrades(
    symbol: string,
    since: Int = undefined,
    limit: Int = undefined,
    params: Dict = {},
  ): Promise<Trade[]> {
    await this.loadMarkets();
    const market = this.market(symbol);
    const channel = `${CHANNEL_PREFIXES.trade}${market.id}`;
    const trades = (await this.#watchChannel(
      channel,
      `trades:${market.symbol}`,
      this.extend(subscribe(channel), params),
    )) as WatchCache<Trade>;
    const count = this.newUpdates ? trades.getLimit(market.symbol, limit) : limit;
    return this.filterBySinceLimit(trades, since, count, 'timestamp', true) as Trade[];
  }

  override async watchOHLCV(
    symbol: string,
    timeframe = '1m',
    since: Int = undefined,
    limit: Int = undefined,
    params: Dict = {},
  ): Promise<OHLCV[]> {
    await this.loadMarkets();
    const market = this.market(symbol);
    const interval = this.safeString(this.timeframes, timeframe);
    if (interval === undefined)
      throw new BadSymbol(`${this.id} watchOHLCV() does not support timeframe ${timeframe}`);
    const channel = `${CHANNEL_PREFIXES.ohlc}${market.id}.${interval}`;
    const candles = (await this.#watchChannel(
      channel,
      `ohlcv:${market.symbol}:${timeframe}`,
      this.extend(subscribe(channel), params),
    )) as WatchCache<OHLCV>;
    const count = this.newUpdates ? candles.getLimit(market.symbol, limit) : limit;
    return this.filterBySinceLimit(candles, since, count, 0, true) as OHLCV[];
  }

  // ---------------------------------------------------------------------------------------------
  // The private channel: private-order-executed.{userId}, authorised by POST /broadcasting/auth

  override async watchOrders(
    symbol: Str = undefined,
    since: Int = undefined,
    limit: Int = undefined,
    params: Dict = {},
  ): Promise<Order[]> {
    await this.loadMarkets();
    const market = symbol === undefined ? undefined : this.market(symbol);
    const { channel, message } = await this.#privateSubscription(params);
    const hash = market === undefined ? 'orders' : `orders:${market.symbol}`;
    const orders = (await this.#watchChannel(channel, hash, message)) as WatchCache<Order>;
    const count = this.newUpdates ? orders.getLimit(market?.symbol, limit) : limit;
    return this.filterBySymbolSinceLimit(orders, market?.symbol, since, count, true) as Order[];
  }

  override async watchMyTrades(
    symbol: Str = undefined,
    since: Int = undefined,
    limit: Int = undefined,
    params: Dict = {},
  ): Promise<Trade[]> {
    await this.loadMarkets();
    const market = symbol === undefined ? undefined : this.market(symbol);
    const { channel, message } = await this.#privateSubscription(params);
    const hash = market === undefined ? 'myTrades' : `myTrades:${market.symbol}`;
    const trades = (await this.#watchChannel(channel, hash, message)) as WatchCache<Trade>;
    const count = this.newUpdates ? trades.getLimit(market?.symbol, limit) : limit;
    return this.filterBySymbolSinceLimit(trades, market?.symbol, since, count, true) as Trade[];
  }

  /**
   * The private channel and, when this connection has not subscribed it yet, the subscribe frame
   * with its token. The user id is `uid`, or asked of the venue (GET /v1/account).
   */
  async #privateSubscription(params: Dict): Promise<{ channel: string; message: Dict | undefined }> {
    this.checkRequiredCredentials();
    if (this.uid === undefined || this.uid === '') await this.fetchAccount();
    const channel = `${CHANNEL_PREFIXES.executions}${this.uid}`;
    const client = await this.#client();
    if (client.subscriptions[channel] !== undefined) return { channel, message: undefined };
    const socketId = await this.#socketId(client);
    const response = await this.privatePostBroadcastingAuth({ socket_id: socketId, channel_name: channel });
    return { channel, message: this.extend(subscribe(channel, this.safeString(response, 'auth')), params) };
  }

  /** The connection's socket id, from its first frame (W2). */
  async #socketId(client: PusherClient): Promise<string> {
    const known = this.#socketIds.get(client);
    if (known !== undefined) return known;
    const established = client.future('pusher:connection_established');
    await client.connect(0);
    return (this.#socketIds.get(client) ?? (await established)) as string;
  }

  // ---------------------------------------------------------------------------------------------
  // Frames

  override ping(_client: unknown): Dict {
    return { event: 'pusher:ping', data: {} };
  }

  override handleMessage(raw: unknown, frame: PusherFrame): void {
    const client = raw as PusherClient;
    const data = typeof frame.data === 'string' ? safeJson(frame.data) : frame.data;
    const channel = frame.channel ?? '';
    switch (frame.event) {
      case 'pusher:connection_established': {
        const socketId = this.safeString(data as Dict, 'socket_id') as string;
        this.#socketIds.set(client, socketId);
        client.resolve(socketId, 'pusher:connection_established');
        return;
      }
      case 'pusher:ping':
        // The venue pings a silent connection and closes it without an answer (W9).
        client.send({ event: 'pusher:pong', data: {} }).catch(() => undefined);
        return;
      case 'pusher:pong':
        client.lastPong = this.milliseconds();
        return;
      case 'pusher:subscription_error':
        this.#refused(client, channel, data as Dict);
        return;
      case 'pusher:error':
        client.reject(new ExchangeError(`${this.id} ${JSON.stringify(data)}`));
        return;
      case 'snapshot':
      case 'update':
        this.#dispatch(client, channel, frame.event, data as Dict);
        return;
      default:
        // pusher_internal:subscription_succeeded and anything new: nothing to do.
        return;
    }
  }

  #dispatch(client: PusherClient, channel: string, type: 'snapshot' | 'update', payload: Dict): void {
    if (channel.startsWith(CHANNEL_PREFIXES.book)) this.#handleBook(client, channel, payload);
    else if (channel.startsWith(CHANNEL_PREFIXES.ticker)) this.#handleTicker(client, channel, payload);
    else if (channel.startsWith(CHANNEL_PREFIXES.trade)) this.#handleTrades(client, channel, type, payload);
    else if (channel.startsWith(CHANNEL_PREFIXES.ohlc)) this.#handleCandle(client, channel, payload);
    else if (channel.startsWith(CHANNEL_PREFIXES.executions)) this.#handleExecutions(client, type, payload);
  }

  /** A refused subscription (W6): its waiting calls fail with the matching ccxt error. */
  #refused(client: PusherClient, channel: string, data: Dict): void {
    const status = this.safeInteger(data, 'status');
    const text = `${this.id} ${channel} ${JSON.stringify(data)}`;
    const error =
      status === 401
        ? new AuthenticationError(text)
        : status === 403
          ? new PermissionDenied(text)
          : status === 429
            ? new RateLimitExceeded(text)
            : status === 404
              ? new BadSymbol(text)
              : new ExchangeError(text);
    delete client.subscriptions[channel];
    for (const hash of this.#channelHashes.get(channel) ?? []) client.reject(error, hash);
  }

  #marketOf(channel: string, prefix: string) {
    return this.safeMarket(channel.slice(prefix.length).split('.')[0]);
  }

  #handleBook(client: PusherClient, channel: string, payload: Dict): void {
    const market = this.#marketOf(channel, CHANNEL_PREFIXES.book);
    const symbol = market.symbol;
    let book = this.#books.get(symbol);
    if (book === undefined) {
      const verifyChecksum = this.safeBool(this.safeDict(this.options, 'watchOrderBook'), 'checksum', true);
      book = new LocalBook({ verifyChecksum });
      this.#books.set(symbol, book);
    }
    const message = payload as unknown as BookMessage;
    const result = book.apply(message);
    if (result.status === 'stale' || result.status === 'awaiting-snapshot') return;
    if (result.status === 'gap' || result.status === 'checksum') {
      // The copy is dropped; subscribing again makes the venue send a fresh snapshot (W6).
      delete this.orderbooks[symbol];
      client.send(subscribe(channel)).catch((error: Error) => client.reject(error, `orderbook:${symbol}`));
      return;
    }
    let orderbook = this.orderbooks[symbol];
    if (message.type === 'snapshot' || orderbook === undefined) {
      orderbook = this.orderBook({});
      for (const level of book.bids()) orderbook.bids.storeArray(this.#level(level));
      for (const level of book.asks()) orderbook.asks.storeArray(this.#level(level));
      this.orderbooks[symbol] = orderbook;
    } else {
      for (const level of changedLevels(message.data.bids)) orderbook.bids.storeArray(this.#level(level));
      for (const level of changedLevels(message.data.asks)) orderbook.asks.storeArray(this.#level(level));
    }
    orderbook.symbol = symbol;
    orderbook.nonce = book.sequence;
    client.resolve(orderbook, `orderbook:${symbol}`);
  }

  #level(level: BookLevelText): [number, number] {
    return [this.parseNumber(level.price), this.parseNumber(level.qty)];
  }

  #handleTicker(client: PusherClient, channel: string, payload: Dict): void {
    const market = this.#marketOf(channel, CHANNEL_PREFIXES.ticker);
    const item = this.safeDict(this.safeList(payload, 'data', []), 0, {}) ?? {};
    const last = orNone(this.safeString(item, 'last'));
    // Rolling 24 hours (W16), unlike GET /tickers (since 00:00 UTC).
    const ticker = this.safeTicker(
      {
        symbol: market.symbol,
        high: orNone(this.safeString(item, 'high')),
        low: orNone(this.safeString(item, 'low')),
        bid: orNone(this.safeString(item, 'bid')),
        bidVolume: this.safeString(item, 'bid_qty'),
        ask: orNone(this.safeString(item, 'ask')),
        askVolume: this.safeString(item, 'ask_qty'),
        vwap: orNone(this.safeString(item, 'vwap')),
        close: last,
        last,
        change: this.safeString(item, 'change'),
        percentage: this.safeString(item, 'change_pct'),
        baseVolume: this.safeString(item, 'volume'),
        info: item,
      },
      market,
    );
    this.tickers[market.symbol] = ticker;
    client.resolve(ticker, `ticker:${market.symbol}`);
  }

  #handleTrades(client: PusherClient, channel: string, type: 'snapshot' | 'update', payload: Dict): void {
    const market = this.#marketOf(channel, CHANNEL_PREFIXES.trade);
    // A snapshot (after subscribing, or again after a reconnection) replaces what was kept.
    let trades = this.trades[market.symbol] as WatchCache<Trade> | undefined;
    if (trades === undefined || type === 'snapshot') {
      trades = newArrayCache<Trade>(this.safeInteger(this.options, 'tradesLimit', 1000) as number);
      this.trades[market.symbol] = trades as unknown as (typeof this.trades)[string];
    }
    for (const item of this.safeList(payload, 'data', []) ?? [])
      trades.append(this.parseTrade({ ...(item as Dict), symbol: market.id }, market));
    client.resolve(trades, `trades:${market.symbol}`);
  }

  #handleCandle(client: PusherClient, channel: string, payload: Dict): void {
    const market = this.#marketOf(channel, CHANNEL_PREFIXES.ohlc);
    const interval = channel.split('.').pop() as string;
    const timeframe = this.findTimeframe(interval) as string;
    const data = payload.data;
    const items: Dict[] = Array.isArray(data)
      ? data
      : data === undefined || data === null
        ? []
        : [data as Dict];
    this.ohlcvs[market.symbol] ??= {};
    const bySymbol = this.ohlcvs[market.symbol] as Dict;
    let candles = bySymbol[timeframe] as WatchCache<OHLCV> | undefined;
    if (candles === undefined) {
      candles = newCacheByTimestamp<OHLCV>(this.safeInteger(this.options, 'OHLCVLimit', 1000) as number);
      bySymbol[timeframe] = candles;
    }
    for (const item of items) {
      candles.append([
        this.parse8601(this.safeString(item, 'interval_begin')) as number,
        this.safeNumber(item, 'open') as number,
        this.safeNumber(item, 'high') as number,
        this.safeNumber(item, 'low') as number,
        this.safeNumber(item, 'close') as number,
        this.safeNumber(item, 'volume') as number,
      ]);
    }
    if (items.length > 0) client.resolve(candles, `ohlcv:${market.symbol}:${timeframe}`);
  }

  /** Executions (W19): the snapshot's open orders, then each change of an order and its fills. */
  #handleExecutions(client: PusherClient, type: 'snapshot' | 'update', payload: Dict): void {
    const data = this.safeDict(payload, 'data', {}) ?? {};
    const limit = this.safeInteger(this.options, 'ordersLimit', 1000) as number;
    this.#orders ??= newCacheBySymbolById<Order>(limit);
    const orders = this.#orders;
    const touched = new Set<string>();
    // An update's `order.trades` holds only that message's execution: the running totals
    // (volume_executed, cost, fee) are the order's; its full list is one fetchOrder away.
    const records =
      type === 'snapshot' ? (this.safeList(data, 'orders', []) ?? []) : [this.safeDict(data, 'order')];
    for (const record of records) {
      if (record === undefined) continue;
      const order = this.parseOrder({ ...(record as Dict), trades: [] });
      orders.append(order);
      if (order.symbol !== undefined) touched.add(order.symbol);
    }
    if (records.length > 0) {
      client.resolve(orders, 'orders');
      for (const symbol of touched) client.resolve(orders, `orders:${symbol}`);
    }
    const fills = type === 'update' ? (this.safeList(data, 'trades', []) ?? []) : [];
    if (fills.length === 0) return;
    this.#myTrades ??= newArrayCache<Trade>(this.safeInteger(this.options, 'tradesLimit', 1000) as number);
    const myTrades = this.#myTrades;
    const symbols = new Set<string>();
    for (const fill of fills) {
      const trade = this.parseTrade(fill as Dict);
      myTrades.append(trade);
      symbols.add(trade.symbol as string);
    }
    client.resolve(myTrades, 'myTrades');
    for (const symbol of symbols) client.resolve(myTrades, `myTrades:${symbol}`);
  }
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
