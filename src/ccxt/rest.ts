/**
 * The REST half of the ccxt class: ccxt's unified methods over the venue's signed `/v1` API
 * (docs/ccxt.md). Written the way ccxt writes its exchange classes — `describe()`, `sign()`,
 * `handleErrors()`, `parse*` into `safe*` with strings — so it behaves as any ccxt exchange.
 *
 * Amounts: ccxt's unified structures hold JS numbers by its convention (that is the caller's
 * side). On the wire every amount is a decimal string formatted by `amountToPrecision` /
 * `priceToPrecision` with the market's TICK_SIZE precision, so nothing like `1e-7` is ever sent.
 */

import { randomUUID } from 'node:crypto';
import {
  ArgumentsRequired,
  AuthenticationError,
  type Balances,
  type Dict,
  Exchange,
  type Int,
  InvalidOrder,
  type Market,
  type Num,
  type OHLCV,
  type Order,
  type OrderBook,
  type OrderRequest,
  type OrderSide,
  type OrderType,
  PermissionDenied,
  Precise,
  type Str,
  type Strings,
  type Ticker,
  type Tickers,
  type Trade,
  type TradingFees,
} from 'ccxt';
import { signRequest } from '../client/sign.js';
import { venueError } from './errors.js';

/** ccxt's TICK_SIZE counting mode (ccxt/js/src/base/functions/number.js). */
const TICK_SIZE = 4;

/** ccxt timeframes and the venue's intervals in minutes (Kraken's list). */
export const TIMEFRAMES: Readonly<Record<string, string>> = {
  '1m': '1',
  '5m': '5',
  '15m': '15',
  '30m': '30',
  '1h': '60',
  '4h': '240',
  '1d': '1440',
  '1w': '10080',
  '2w': '21600',
};

/** ccxt's unified params of conditional orders: mapped to the venue's fields, never passed through. */
const CONDITIONAL_PARAMS = [
  'triggerPrice',
  'stopPrice',
  'stopLossPrice',
  'takeProfitPrice',
  'trailingPercent',
  'trailingAmount',
  'trailingTriggerPrice',
];

/**
 * The venue's conditional order types as ccxt shows them (H246, Kraken's class does the same):
 * the form they trade in once triggered, with the trigger in triggerPrice and stopLossPrice or
 * takeProfitPrice.
 */
const CONDITIONAL_TYPES: Readonly<Record<string, 'market' | 'limit'>> = {
  'stop-loss': 'market',
  'take-profit': 'market',
  'trailing-stop': 'market',
  'stop-loss-limit': 'limit',
  'take-profit-limit': 'limit',
};

/** The venue's order statuses are ccxt's own words. */
const ORDER_STATUSES: Readonly<Record<string, string>> = {
  open: 'open',
  closed: 'closed',
  canceled: 'canceled',
};

/** A price field the venue shows as zero means "none yet" (no trade, empty book side). */
export const orNone = (value: string | undefined): string | undefined =>
  value === undefined || /^0+(\.0*)?$/.test(value) ? undefined : value;

/** `YYYY-MM-DD HH:MM:SS` (UTC, the venue's trade times) as ISO 8601. */
const utcText = (text: string | undefined): string | undefined =>
  text === undefined ? undefined : `${text.replace(' ', 'T')}Z`;

export interface OpenSpotRest {
  // The implicit API methods ccxt defines from `describe().api` (as its abstract/*.d.ts do).
  publicGetMarkets(params?: Dict): Promise<Dict>;
  publicGetTickers(params?: Dict): Promise<Dict[]>;
  publicGetOrderbook(params?: Dict): Promise<Dict[]>;
  publicGetOhlc(params?: Dict): Promise<Dict[]>;
  publicGetHistoricalTrades(params?: Dict): Promise<Dict>;
  privateGetAccount(params?: Dict): Promise<Dict>;
  privateGetFees(params?: Dict): Promise<Dict>;
  privateGetSpotWallet(params?: Dict): Promise<Dict>;
  privateGetOpenOrders(params?: Dict): Promise<Dict>;
  privateGetClosedOrders(params?: Dict): Promise<Dict>;
  privateGetOrdersOrderId(params?: Dict): Promise<Dict>;
  privateGetTrades(params?: Dict): Promise<Dict>;
  privatePostOrders(params?: Dict): Promise<Dict>;
  privateDeleteOrdersOrderId(params?: Dict): Promise<Dict>;
  privateDeleteOrders(params?: Dict): Promise<Dict>;
  privatePatchOrdersOrderId(params?: Dict): Promise<Dict>;
  privatePostOrdersBatch(params?: Dict): Promise<Dict>;
  privatePostBroadcastingAuth(params?: Dict): Promise<Dict>;
}

// biome-ignore lint/suspicious/noUnsafeDeclarationMerging: ccxt's own pattern for its implicit API methods.
export class OpenSpotRest extends Exchange {
  override describe(): Dict {
    return this.deepExtend(super.describe(), {
      id: 'openspot',
      name: 'OpenSpot',
      countries: [],
      version: 'v1',
      // The venue's per-key default is 100 requests per second (docs/interface-decisions.md H35).
      rateLimit: 10,
      certified: false,
      pro: true,
      has: {
        CORS: undefined,
        spot: true,
        margin: false,
        swap: false,
        future: false,
        option: false,
        cancelOrder: true,
        createOrder: true,
        createMarketOrder: true,
        createLimitOrder: true,
        fetchBalance: true,
        fetchClosedOrders: true,
        fetchMarkets: true,
        fetchMyTrades: true,
        fetchOHLCV: true,
        fetchOpenOrders: true,
        fetchOrder: true,
        fetchOrderBook: true,
        fetchTicker: true,
        fetchTickers: true,
        fetchTrades: true,
        fetchTradingFee: true,
        fetchTradingFees: true,
        fetchCurrencies: false,
        fetchTime: false,
        // Order controls (H160-H167): time in force, post-only, client ids, cancel-all, amend, batches.
        cancelAllOrders: true,
        createOrders: true,
        editOrder: true,
        createPostOnlyOrder: true,
        // Conditional orders (H245): a trigger price is a stop-loss (stopLossPrice, triggerPrice,
        // stopPrice) or a take-profit (takeProfitPrice), at market or with a limit price; trailing
        // stops at market only, by a percentage or a distance, without an activation price.
        createStopOrder: true,
        createStopLimitOrder: true,
        createStopMarketOrder: true,
        createTriggerOrder: true,
        createStopLossOrder: true,
        createTakeProfitOrder: true,
        createTrailingAmountOrder: true,
        createTrailingPercentOrder: true,
        // Both prices on one order (an OCO-like pair) are two orders on this venue.
        createOrderWithTakeProfitAndStopLoss: false,
        fetchOrders: false,
        fetchDeposits: false,
        fetchWithdrawals: false,
        withdraw: false,
        ws: true,
        watchOrderBook: true,
        watchTicker: true,
        watchTickers: false,
        watchTrades: true,
        watchOHLCV: true,
        watchOrders: true,
        watchMyTrades: true,
        watchBalance: false,
      },
      timeframes: TIMEFRAMES,
      urls: {
        logo: undefined,
        api: { rest: 'http://127.0.0.1:8080/v1' },
        www: 'https://github.com/openspot',
        doc: ['docs/ccxt.md'],
      },
      api: {
        public: {
          get: ['markets', 'tickers', 'orderbook', 'ohlc', 'historical_trades'],
        },
        private: {
          get: [
            'account',
            'fees',
            'spot-wallet',
            'open-orders',
            'closed-orders',
            'orders/{order_id}',
            'trades',
          ],
          post: ['orders', 'orders/batch', 'broadcasting/auth'],
          patch: ['orders/{order_id}'],
          delete: ['orders/{order_id}', 'orders'],
        },
      },
      requiredCredentials: { apiKey: true, secret: true, uid: false },
      precisionMode: TICK_SIZE,
      options: {
        // The Pusher app key of the venue's WebSocket (WS_APP_KEY).
        wsAppKey: 'openspot-key',
        // Put an increasing `nonce` in every signed body: needed by keys created with
        // nonce_required; learned from GET /account when the class asks it for the user id.
        sendNonce: false,
      },
      exceptions: { exact: {}, broad: {} },
    });
  }

  /** The interface's base address, ending in /v1. */
  restBase(): string {
    const api = this.urls.api as Dict;
    return String(api.rest).replace(/\/+$/, '');
  }

  override sign(
    path: string,
    api: string = 'public',
    method: string = 'GET',
    params: Dict = {},
    headers: Dict | undefined = undefined,
    body: Str = undefined,
  ): Dict {
    let url = `${this.restBase()}/${this.implodeParams(path, params)}`;
    const query = this.omit(params, this.extractParams(path));
    const outgoing: Dict = { ...(headers ?? {}) };
    let payload = body;
    if (method === 'GET') {
      // Repeated keys (pairs[]) are sent once per value, as PHP clients do.
      const text = this.urlencodeWithArrayRepeat(query);
      if (text.length > 0) url += `?${text}`;
    } else if (Object.keys(query).length > 0 || this.safeBool(this.options, 'sendNonce', false)) {
      // DELETE /orders?pair= reads the pair from the query; the signed body repeats it (H164).
      if (method === 'DELETE' && Object.keys(query).length > 0) url += `?${this.urlencode(query)}`;
      const withNonce = this.safeBool(this.options, 'sendNonce', false)
        ? { ...query, nonce: this.nonce() }
        : query;
      payload = this.json(withNonce);
      outgoing['Content-Type'] = 'application/json';
    }
    if (api === 'private') {
      this.checkRequiredCredentials();
      outgoing['X-API-Key'] = this.apiKey;
      // The exact bytes sent are signed; GET and body-less requests sign "{}".
      outgoing['X-API-Sign'] = signRequest(method, payload ?? '', this.secret);
    }
    return { url, method, body: payload, headers: outgoing };
  }

  /** Microseconds: strictly increasing across restarts, as nonce-required keys want. */
  override nonce(): number {
    return this.microseconds();
  }

  override handleErrors(
    code: number,
    _reason: string,
    _url: string,
    method: string,
    responseHeaders: Dict,
    _responseBody: string,
    response: unknown,
    _requestHeaders: unknown,
    _requestBody: unknown,
  ): undefined {
    if (code >= 200 && code < 300) {
      // POST /orders answers the new order's address in Location, not in the body (H14): kept
      // on this response object, read by createOrder (last_response_headers is shared by
      // concurrent requests).
      const location = this.safeString(responseHeaders, 'Location');
      if (method === 'POST' && location !== undefined && typeof response === 'object' && response !== null)
        (response as Dict).location = location;
      return undefined;
    }
    throw venueError(code, response, this.id);
  }

  // ---------------------------------------------------------------------------------------------
  // Markets

  override async fetchMarkets(params: Dict = {}): Promise<Market[]> {
    const response = await this.publicGetMarkets(params);
    const data = this.safeDict(response, 'data', {}) ?? {};
    // Fees are per market and private: with credentials, ask the venue rather than guess. A key
    // that may not read them (no `read` scope, a wrong secret) leaves them unknown: markets are
    // public, and the key's own trouble shows on the private call that needs it.
    let fees: Dict = {};
    if (this.checkRequiredCredentials(false)) {
      try {
        fees = this.safeDict(await this.privateGetFees(), 'data', {}) ?? {};
      } catch (error) {
        if (!(error instanceof PermissionDenied || error instanceof AuthenticationError)) throw error;
      }
    }
    return Object.values(data).map((market) =>
      this.parseMarket({ ...(market as Dict), fees: fees[(market as Dict).altname] }),
    );
  }

  override parseMarket(market: Dict): Market {
    const id = this.safeString(market, 'altname') as string;
    const baseId = this.safeString(market, 'base') as string;
    const quoteId = this.safeString(market, 'quote') as string;
    const base = this.safeCurrencyCode(baseId);
    const quote = this.safeCurrencyCode(quoteId);
    const fees = this.safeDict(market, 'fees');
    return this.safeMarketStructure({
      id,
      symbol: `${base}/${quote}`,
      base,
      quote,
      settle: undefined,
      baseId,
      quoteId,
      settleId: undefined,
      type: 'spot',
      spot: true,
      margin: false,
      swap: false,
      future: false,
      option: false,
      active: true,
      contract: false,
      linear: undefined,
      inverse: undefined,
      taker: this.safeNumber(fees, 'taker_fee'),
      maker: this.safeNumber(fees, 'maker_fee'),
      percentage: true,
      tierBased: false,
      contractSize: undefined,
      expiry: undefined,
      expiryDatetime: undefined,
      strike: undefined,
      optionType: undefined,
      precision: {
        amount: this.parseNumber(this.parsePrecision(this.safeString(market, 'lotDecimals'))),
        price: this.parseNumber(this.parsePrecision(this.safeString(market, 'pairDecimals'))),
      },
      limits: {
        leverage: { min: undefined, max: undefined },
        amount: { min: this.safeNumber(market, 'ordermin'), max: undefined },
        price: { min: undefined, max: undefined },
        cost: { min: undefined, max: undefined },
      },
      created: undefined,
      info: market,
    });
  }

  /** The user id and settings of the key (GET /v1/account); sets `uid` and `sendNonce`. */
  async fetchAccount(params: Dict = {}): Promise<Dict> {
    const response = await this.privateGetAccount(params);
    const data = this.safeDict(response, 'data', {}) ?? {};
    this.uid = this.safeString(data, 'user_id') as string;
    this.options.sendNonce = this.safeBool(data, 'nonce_required', false);
    return data;
  }

  override async fetchTradingFees(params: Dict = {}): Promise<TradingFees> {
    await this.loadMarkets();
    const response = await this.privateGetFees(params);
    const data = this.safeDict(response, 'data', {}) ?? {};
    const result: TradingFees = {};
    for (const [id, fee] of Object.entries(data)) {
      const market = this.safeMarket(id);
      result[market.symbol] = {
        info: fee,
        symbol: market.symbol,
        maker: this.safeNumber(fee, 'maker_fee'),
        taker: this.safeNumber(fee, 'taker_fee'),
        percentage: true,
        tierBased: false,
      };
    }
    return result;
  }

  override async fetchTradingFee(symbol: string, params: Dict = {}): Promise<TradingFees[string]> {
    const fees = await this.fetchTradingFees(params);
    return fees[this.symbol(symbol)] as TradingFees[string];
  }

  // ---------------------------------------------------------------------------------------------
  // Market data

  override async fetchTicker(symbol: string, params: Dict = {}): Promise<Ticker> {
    await this.loadMarkets();
    const market = this.market(symbol);
    const response = await this.publicGetTickers(this.extend({ ticker_id: market.symbol }, params));
    return this.parseTicker(response[0] ?? {}, market);
  }

  override async fetchTickers(symbols: Strings = undefined, params: Dict = {}): Promise<Tickers> {
    await this.loadMarkets();
    const response = await this.publicGetTickers(params);
    return this.filterByArrayTickers(this.parseTickers(response), 'symbol', this.marketSymbols(symbols));
  }

  /** GET /tickers: today since 00:00 UTC (H27); a zero price means none exists. */
  override parseTicker(ticker: Dict, market: Market = undefined): Ticker {
    const symbol = this.safeSymbol(this.safeString(ticker, 'ticker_id'), market, '/');
    const last = orNone(this.safeString(ticker, 'last_price'));
    return this.safeTicker(
      {
        symbol,
        high: orNone(this.safeString(ticker, 'high')),
        low: orNone(this.safeString(ticker, 'low')),
        bid: orNone(this.safeString(ticker, 'bid')),
        ask: orNone(this.safeString(ticker, 'ask')),
        close: last,
        last,
        baseVolume: this.safeString(ticker, 'base_volume'),
        quoteVolume: this.safeString(ticker, 'target_volume'),
        info: ticker,
      },
      market,
    );
  }

  override async fetchOrderBook(
    symbol: string,
    limit: Int = undefined,
    params: Dict = {},
  ): Promise<OrderBook> {
    await this.loadMarkets();
    const market = this.market(symbol);
    // `depth` counts both sides; ccxt's limit is per side. 0 is the whole book.
    const request: Dict = { ticker_id: market.symbol, depth: limit === undefined ? 0 : limit * 2 };
    const response = await this.publicGetOrderbook(this.extend(request, params));
    const book = response[0] ?? {};
    return this.parseOrderBook(book, market.symbol, this.safeTimestamp(book, 'timestamp'));
  }

  override async fetchOHLCV(
    symbol: string,
    timeframe = '1m',
    since: Int = undefined,
    limit: Int = undefined,
    params: Dict = {},
  ): Promise<OHLCV[]> {
    await this.loadMarkets();
    const market = this.market(symbol);
    const request: Dict = {
      ticker_id: market.symbol,
      interval: this.safeString(this.timeframes, timeframe, timeframe),
    };
    // ccxt's since is inclusive (ms); the venue's is exclusive (s), and pages forward (H190).
    if (since !== undefined) request.since = Math.ceil(since / 1000) - 1;
    if (limit !== undefined) request.limit = Math.min(limit, 720);
    const response = await this.publicGetOhlc(this.extend(request, params));
    return this.parseOHLCVs(response, market, timeframe, since, limit);
  }

  override parseOHLCV(ohlcv: Dict, _market: Market = undefined): OHLCV {
    return [
      this.safeTimestamp(ohlcv, 'time') as number,
      this.safeNumber(ohlcv, 'open') as number,
      this.safeNumber(ohlcv, 'high') as number,
      this.safeNumber(ohlcv, 'low') as number,
      this.safeNumber(ohlcv, 'close') as number,
      this.safeNumber(ohlcv, 'volume') as number,
    ];
  }

  override async fetchTrades(
    symbol: string,
    since: Int = undefined,
    limit: Int = undefined,
    params: Dict = {},
  ): Promise<Trade[]> {
    await this.loadMarkets();
    const market = this.market(symbol);
    const request: Dict = { ticker_id: market.symbol };
    // start_time is inclusive and pages forward (H191); `limit` counts per side.
    if (since !== undefined) request.start_time = Math.floor(since / 1000);
    if (limit !== undefined) request.limit = Math.min(limit, 1000);
    const response = await this.publicGetHistoricalTrades(this.extend(request, params));
    const trades = [
      ...(this.safeList(response, 'buy', []) ?? []),
      ...(this.safeList(response, 'sell', []) ?? []),
    ];
    // Both sides merged: oldest first, then the first (with since) or last `limit`.
    const parsed = this.sortBy2(this.parseTrades(trades, market), 'timestamp', 'id');
    return this.filterBySinceLimit(parsed, since, limit, 'timestamp', since === undefined) as Trade[];
  }

  /** A public trade (GET /historical_trades), a user trade (GET /trades) or a WebSocket trade. */
  override parseTrade(trade: Dict, market: Market = undefined): Trade {
    // Public trades: Unix seconds; user trades and executions: `YYYY-MM-DD HH:MM:SS` UTC (H20);
    // WebSocket trades: RFC 3339.
    const text = this.safeString(trade, 'timestamp');
    const timestamp =
      text === undefined
        ? this.safeTimestamp(trade, 'trade_timestamp')
        : this.parse8601(text.includes('T') ? text : utcText(text));
    const pair = this.safeString2(trade, 'pair', 'symbol');
    const symbol = this.safeSymbol(pair?.replace('/', ''), market);
    const fee = this.safeDict(trade, 'fee');
    const price = this.safeDict(trade, 'price');
    return this.safeTrade(
      {
        id: this.safeString2(trade, 'trade_id', 'id'),
        order: this.safeString(trade, 'order_id'),
        info: trade,
        timestamp,
        datetime: this.iso8601(timestamp),
        symbol,
        type: this.safeString2(trade, 'order_type', 'ord_type'),
        side: this.safeString2(trade, 'type', 'side'),
        takerOrMaker: undefined,
        price: price !== undefined ? this.safeString(price, 'amount') : this.safeString(trade, 'price'),
        amount:
          this.safeString(this.safeDict(trade, 'volume'), 'amount') ??
          this.safeString2(trade, 'base_volume', 'qty'),
        cost:
          this.safeString(this.safeDict(trade, 'cost'), 'amount') ?? this.safeString(trade, 'target_volume'),
        fee:
          fee === undefined
            ? undefined
            : {
                cost: this.safeString(fee, 'amount'),
                currency: this.safeCurrencyCode(this.safeString(fee, 'currency')),
              },
      },
      market,
    );
  }

  // ---------------------------------------------------------------------------------------------
  // Account

  override async fetchBalance(params: Dict = {}): Promise<Balances> {
    await this.loadMarkets();
    const response = await this.privateGetSpotWallet(params);
    return this.parseBalance(response);
  }

  /** `balance_total` = available + held by open orders; `balance_pending` = the held part (H31). */
  override parseBalance(response: Dict): Balances {
    const result: Dict = { info: response, timestamp: undefined, datetime: undefined };
    for (const entry of this.safeList(response, 'data', []) ?? []) {
      const total = this.safeString(this.safeDict(entry, 'balance'), 'balance_total');
      const used = this.safeString(this.safeDict(entry, 'pending'), 'balance_pending');
      result[this.safeCurrencyCode(this.safeString(entry, 'asset_id')) as string] = {
        total,
        used,
        free: total === undefined || used === undefined ? undefined : this.stringSub(total, used),
      };
    }
    return this.safeBalance(result);
  }

  // ---------------------------------------------------------------------------------------------
  // Orders

  override async createOrder(
    symbol: string,
    type: OrderType,
    side: OrderSide,
    amount: number,
    price: Num = undefined,
    params: Dict = {},
  ): Promise<Order> {
    await this.loadMarkets();
    const market = this.market(symbol);
    const request = this.orderRequest(symbol, type, side, amount, price, params);
    // One key per call, kept across ccxt's own retries (maxRetriesOnFailure re-signs the same
    // request): a retried placement gets the original answer and places nothing (H37).
    const key = this.safeString(params, 'idempotencyKey') ?? randomUUID();
    // The implicit privatePostOrders takes no headers: the same request, through ccxt's request().
    const response: Dict = await this.request('orders', 'private', 'POST', request, {
      'Idempotency-Key': key,
    });
    const id = this.safeString(response, 'location')?.split('/').pop();
    return this.orderAfter(id, market, { symbol: market.symbol, type, side, amount, price, status: 'open' });
  }

  /**
   * The body of one order: the five fields of the interface, then ccxt's unified controls mapped
   * to the venue's (H160): `timeInForce` (GTC, IOC, FOK, GTD with `expireTime` in ms; `PO` is
   * post-only), `postOnly`, `clientOrderId`. Other params pass through as venue fields.
   */
  protected orderRequest(
    symbol: string,
    type: OrderType,
    side: OrderSide,
    amount: number,
    price: Num,
    params: Dict,
  ): Dict {
    const market = this.market(symbol);
    const conditional = this.conditionalFields(type, price, params);
    const request: Dict = {
      pair: market.symbol,
      order_direction: side,
      order_type: conditional?.order_type ?? type,
      volume: this.amountToPrecision(market.symbol, amount),
    };
    // `limit`, or a venue type name given as is (`stop-loss-limit`, `take-profit-limit`).
    if (type === 'limit' || type.endsWith('-limit')) {
      if (price === undefined)
        throw new ArgumentsRequired(`${this.id} createOrder() requires a price for a limit order`);
      request.price = this.priceToPrecision(market.symbol, price);
    }
    if (conditional?.trigger_price !== undefined)
      request.trigger_price = this.priceToPrecision(market.symbol, conditional.trigger_price);
    if (conditional?.trailing_offset !== undefined) request.trailing_offset = conditional.trailing_offset;
    let timeInForce = this.safeStringUpper(params, 'timeInForce');
    let postOnly = this.safeBool(params, 'postOnly', false) as boolean;
    if (timeInForce === 'PO') {
      postOnly = true;
      timeInForce = undefined;
    }
    if (timeInForce !== undefined) request.time_in_force = timeInForce;
    if (postOnly) request.post_only = true;
    const clientOrderId = this.safeString(params, 'clientOrderId');
    if (clientOrderId !== undefined) request.client_order_id = clientOrderId;
    const expireTime = this.safeInteger(params, 'expireTime');
    if (expireTime !== undefined) request.expire_time = String(Math.floor(expireTime / 1000));
    return this.extend(
      request,
      this.omit(params, [
        'timeInForce',
        'postOnly',
        'clientOrderId',
        'expireTime',
        'idempotencyKey',
        ...CONDITIONAL_PARAMS,
      ]),
    );
  }

  /**
   * ccxt's unified trigger params as the venue's conditional order (H245), or undefined for a
   * plain order. `stopLossPrice`, and `triggerPrice` / `stopPrice` (ccxt's createStopOrder,
   * createStopLimitOrder, createTriggerOrder), make a stop-loss; `takeProfitPrice` a take-profit;
   * with `type` `limit` and a price, their `-limit` variants. `trailingPercent` (`2.5` or `"2.5%"`)
   * or `trailingAmount` (a price distance) make a trailing stop, which trades at market only.
   */
  protected conditionalFields(
    type: OrderType,
    price: Num,
    params: Dict,
  ): { order_type: string; trigger_price?: string; trailing_offset?: string } | undefined {
    const stopLoss = this.safeStringN(params, ['stopLossPrice', 'triggerPrice', 'stopPrice']);
    const takeProfit = this.safeString(params, 'takeProfitPrice');
    const trailingPercent = this.safeString(params, 'trailingPercent');
    const trailingAmount = this.safeString(params, 'trailingAmount');
    const given = [stopLoss, takeProfit, trailingPercent, trailingAmount].filter((v) => v !== undefined);
    if (given.length === 0) return undefined;
    if (given.length > 1)
      throw new InvalidOrder(
        `${this.id} createOrder() takes one of stopLossPrice (or triggerPrice), takeProfitPrice, trailingPercent and trailingAmount: one order waits for one trigger`,
      );
    const limit = type === 'limit';
    if (limit && price === undefined)
      throw new ArgumentsRequired(`${this.id} createOrder() requires a price for a limit order`);
    if (trailingPercent !== undefined || trailingAmount !== undefined) {
      if (limit)
        throw new InvalidOrder(
          `${this.id} a trailing stop trades at market once triggered: use type 'market'`,
        );
      if (this.safeString(params, 'trailingTriggerPrice') !== undefined)
        throw new InvalidOrder(
          `${this.id} trailing stops follow the best price from placement: trailingTriggerPrice is not supported`,
        );
      const offset =
        trailingPercent !== undefined ? `${trailingPercent.replace(/%$/, '')}%` : (trailingAmount as string);
      return { order_type: 'trailing-stop', trailing_offset: offset };
    }
    const base = stopLoss !== undefined ? 'stop-loss' : 'take-profit';
    return { order_type: limit ? `${base}-limit` : base, trigger_price: stopLoss ?? takeProfit };
  }

  /** POST /orders/batch (H166): each order placed or refused on its own, in one engine step. */
  override async createOrders(orders: OrderRequest[], params: Dict = {}): Promise<Order[]> {
    await this.loadMarkets();
    const bodies = orders.map((o) =>
      this.orderRequest(o.symbol, o.type, o.side, o.amount as number, o.price, o.params ?? {}),
    );
    const response = await this.privatePostOrdersBatch(this.extend({ orders: bodies }, params));
    const results = this.safeList(response, 'data', []) ?? [];
    const answered: Order[] = [];
    for (const [i, item] of results.entries()) {
      const wanted = orders[i];
      const market = wanted === undefined ? undefined : this.market(wanted.symbol);
      if (this.safeBool(item, 'success') === true) {
        answered.push(
          await this.orderAfter(this.safeString(item, 'id'), market, { ...wanted, status: 'open' }),
        );
      } else {
        // ccxt's convention for an order of a batch that the exchange refused.
        answered.push(this.safeOrder({ info: item, status: 'rejected', symbol: market?.symbol }, market));
      }
    }
    return answered;
  }

  /** PATCH /orders/:id (H167): a new price and/or a new total amount; answers the amended order. */
  override async editOrder(
    id: string,
    symbol: string,
    _type: OrderType,
    _side: OrderSide,
    amount: Num = undefined,
    price: Num = undefined,
    params: Dict = {},
  ): Promise<Order> {
    await this.loadMarkets();
    const market = this.market(symbol);
    const request: Dict = { order_id: id };
    if (amount !== undefined) request.volume = this.amountToPrecision(market.symbol, amount);
    if (price !== undefined) request.price = this.priceToPrecision(market.symbol, price);
    // A waiting stop or take-profit may move its trigger (H245).
    const trigger = this.safeStringN(params, [
      'triggerPrice',
      'stopPrice',
      'stopLossPrice',
      'takeProfitPrice',
    ]);
    if (trigger !== undefined) request.trigger_price = this.priceToPrecision(market.symbol, trigger);
    const clientOrderId = this.safeString(params, 'clientOrderId');
    if (clientOrderId !== undefined) request.client_order_id = clientOrderId;
    await this.privatePatchOrdersOrderId(
      this.extend(request, this.omit(params, ['clientOrderId', ...CONDITIONAL_PARAMS])),
    );
    return this.orderAfter(id, market, { id, symbol: market.symbol, status: 'open' });
  }

  /** DELETE /orders[?pair=] (H164): the venue answers how many it canceled, not which. */
  override async cancelAllOrders(symbol: Str = undefined, params: Dict = {}): Promise<Order[]> {
    await this.loadMarkets();
    const request: Dict = symbol === undefined ? {} : { pair: this.market(symbol).symbol };
    const response = await this.privateDeleteOrders(this.extend(request, params));
    return [this.safeOrder({ info: response })];
  }

  override async cancelOrder(id: string, symbol: Str = undefined, params: Dict = {}): Promise<Order> {
    await this.loadMarkets();
    await this.privateDeleteOrdersOrderId(this.extend({ order_id: id }, params));
    return this.orderAfter(id, symbol === undefined ? undefined : this.market(symbol), {
      status: 'canceled',
    });
  }

  /**
   * The order as the venue has it after a placement or cancellation (one GET), so a market
   * order's fills show at once; if that read fails the change still happened, and what is known
   * is answered rather than an error a bot would take for a failed placement.
   */
  private async orderAfter(id: string | undefined, market: Market | undefined, known: Dict): Promise<Order> {
    if (id !== undefined) {
      try {
        return await this.fetchOrder(id);
      } catch {
        // fall through
      }
    }
    return this.safeOrder({ ...known, id, info: {} }, market);
  }

  override async fetchOrder(id: string, _symbol: Str = undefined, params: Dict = {}): Promise<Order> {
    await this.loadMarkets();
    const response = await this.privateGetOrdersOrderId(this.extend({ order_id: id }, params));
    return this.parseOrder(this.safeDict(response, 'data', {}) ?? {});
  }

  override async fetchOpenOrders(
    symbol: Str = undefined,
    since: Int = undefined,
    limit: Int = undefined,
    params: Dict = {},
  ): Promise<Order[]> {
    return this.fetchOrderList('open', symbol, since, limit, params);
  }

  override async fetchClosedOrders(
    symbol: Str = undefined,
    since: Int = undefined,
    limit: Int = undefined,
    params: Dict = {},
  ): Promise<Order[]> {
    return this.fetchOrderList('closed', symbol, since, limit, params);
  }

  private async fetchOrderList(
    which: 'open' | 'closed',
    symbol: Str,
    since: Int,
    limit: Int,
    params: Dict,
  ): Promise<Order[]> {
    await this.loadMarkets();
    const market = symbol === undefined ? undefined : this.market(symbol);
    const request: Dict = market === undefined ? {} : { pair: market.symbol };
    const query = this.extend(request, params);
    const response =
      which === 'open' ? await this.privateGetOpenOrders(query) : await this.privateGetClosedOrders(query);
    return this.parseOrders(this.safeList(response, 'data', []) ?? [], market, since, limit);
  }

  /** The GET /orders/:id record (H19–H23). */
  override parseOrder(order: Dict, market: Market = undefined): Order {
    const pair = this.safeDict(order, 'asset_pair');
    const resolved = this.safeMarket(
      this.safeString(order, 'pair'),
      market ?? (pair && this.safeMarket(this.safeString(pair, 'name'))),
    );
    const venueType = this.safeString(order, 'order_type') ?? '';
    const formOnTrigger = this.safeString(CONDITIONAL_TYPES, venueType);
    const type = formOnTrigger ?? venueType;
    const amount = this.safeString(this.safeDict(order, 'volume'), 'amount');
    const filled = this.safeString(this.safeDict(order, 'volume_executed'), 'amount');
    const cost = this.safeString(this.safeDict(order, 'cost'), 'amount') ?? '0';
    const fee = this.safeDict(order, 'fee');
    const description = this.safeDict(order, 'description');
    const closeTime = this.safeTimestamp(order, 'close_time');
    // A market order's `price` is the average of its executions (H21); a limit order's, its limit;
    // a conditional order's, its trigger (a trailing stop's current one; none before a first trade).
    const shown = this.safeString(this.safeDict(order, 'price'), 'amount');
    const triggerPrice =
      formOnTrigger === undefined || shown === undefined || !this.stringGt(shown, '0') ? undefined : shown;
    const executions = this.safeList(order, 'trades', []) ?? [];
    return this.safeOrder(
      {
        id: this.safeString(order, 'id'),
        clientOrderId: this.safeString(order, 'client_order_id'),
        info: order,
        timestamp: this.safeTimestamp(order, 'open_time'),
        datetime: this.iso8601(this.safeTimestamp(order, 'open_time')),
        lastTradeTimestamp: undefined,
        lastUpdateTimestamp: closeTime,
        status: this.safeString(ORDER_STATUSES, this.safeString(order, 'status') ?? ''),
        symbol: resolved.symbol,
        type,
        // Shown only when not the default (H163): GTC for a limit order; a market order is IOC.
        // A conditional order rests until canceled, whatever it trades as once triggered.
        timeInForce:
          this.safeString(order, 'time_in_force') ??
          (type === 'market' && formOnTrigger === undefined ? 'IOC' : 'GTC'),
        postOnly: this.safeBool(order, 'post_only', false),
        side: this.safeString(order, 'type'),
        // The limit price: a conditional `-limit` order's is its limit_price (Kraken's price2).
        price:
          formOnTrigger !== undefined
            ? this.safeString(this.safeDict(order, 'limit_price'), 'amount')
            : type === 'limit'
              ? this.safeString(description, 'price')
              : undefined,
        average:
          filled !== undefined && this.stringGt(filled, '0')
            ? venueType === 'market'
              ? shown
              : undefined
            : undefined,
        triggerPrice,
        stopLossPrice: venueType.startsWith('stop-loss') ? triggerPrice : undefined,
        takeProfitPrice: venueType.startsWith('take-profit') ? triggerPrice : undefined,
        amount,
        filled,
        remaining: amount === undefined || filled === undefined ? undefined : this.stringSub(amount, filled),
        cost,
        fee:
          fee === undefined
            ? undefined
            : {
                cost: this.safeNumber(fee, 'amount'),
                currency: this.safeCurrencyCode(this.safeString(fee, 'currency')),
              },
        trades: executions.map((execution) =>
          this.parseTrade(
            { ...(execution as Dict), pair: resolved.id, order_id: this.safeString(order, 'id') },
            resolved,
          ),
        ),
      },
      resolved,
    );
  }

  override async fetchMyTrades(
    symbol: Str = undefined,
    since: Int = undefined,
    limit: Int = undefined,
    params: Dict = {},
  ): Promise<Trade[]> {
    await this.loadMarkets();
    const market = symbol === undefined ? undefined : this.market(symbol);
    const request: Dict = market === undefined ? {} : { 'pairs[]': [market.symbol] };
    const response = await this.privateGetTrades(this.extend(request, params));
    return this.parseTrades(this.safeList(response, 'data', []) ?? [], market, since, limit);
  }

  // ---------------------------------------------------------------------------------------------
  // Exact decimal helpers (ccxt's Precise, on strings)

  protected stringSub(a: string, b: string): string {
    return Precise.stringSub(a, b) as string;
  }

  protected stringGt(a: string, b: string): boolean {
    return Precise.stringGt(a, b);
  }
}
