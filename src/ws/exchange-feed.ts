/**
 * The exchange side of the channels: what each channel name means (a ChannelProvider for the
 * protocol layer) and the messages published for every committed batch.
 *
 * Market state comes from the MarketView (`exchange.view`), which the committed feed keeps; the
 * updates come from the committed feed itself (`exchange.feed`, delivered once the batch's
 * replies are written). Neither reads the live engine, and the public channels read nothing from
 * the store: the view holds books, tickers, current candles and recent trades. In this process the
 * view moves at the commit and the fan-out follows before the next batch is applied, so when a
 * batch is fanned out the view shows exactly the state after it (docs/architecture.md, interface
 * decision W13). Only the private executions channel reads the store (an order's earlier fills):
 * its messages are prepared after the batch is handed over, in batch order, and its snapshots are
 * checked against the commit mark (see src/ws/subscriptions.ts). Work is skipped for channels
 * nobody is subscribed to.
 */

import {
  joinedPair,
  type MarketId,
  type MarketSpec,
  type Micros,
  type OrderId,
  type UserId,
} from '../domain/types.js';
import type { OrderState, Trade } from '../engine/types.js';
import type { Candle } from '../market-data/candle.js';
import { type Clock, systemClock } from '../sequencer/clock.js';
import type { FeedBatch, FeedBookChanges } from '../sequencer/committed-feed.js';
import type { MarketView } from '../sequencer/market-view.js';
import type { Exchange } from '../sequencer/ports.js';
import { serializeOrder, serializeUserTrade } from '../wire/serializers.js';
import { type ChannelProvider, channelName, parseChannelName, type ResolvedChannel } from './channels.js';
import { CHECKSUM_DEPTH } from './crc32.js';
import { executionSteps } from './executions.js';
import { silentLogger, type WsLogger } from './logger.js';
import {
  bookSnapshotMessage,
  bookUpdateMessages,
  candleMessage,
  executionMessage,
  executionsSnapshotMessage,
  type FeedMarket,
  feedMarket,
  type MessageType,
  tickerMessage,
  tradeMessage,
} from './payloads.js';

/** Where the feed publishes; the RealtimeServer fits. */
export interface Publisher {
  publish(channel: string, event: string, data: unknown): number;
  subscriberCount(channel: string): number;
  /** Optional: publishes made inside `publishes` reach each connection in one write. */
  batch?<T>(publishes: () => T): T;
}

export interface FeedOptions {
  readonly exchange: Exchange;
  /** For the rolling 24 h ticker window. Default: the system clock. */
  readonly clock?: Clock;
  readonly logger?: WsLogger;
  /** Trades in a trade channel snapshot. Default 50 (Kraken's). */
  readonly snapshotTrades?: number;
  /** Open orders in an executions snapshot. Default 500; `truncated` says when there were more. */
  readonly snapshotOrders?: number;
}

/** The protocol event of each message equals its `type` (docs/interface-decisions.md, part W). */
const UPDATE_EVENT = 'update';

/** Shared lookups of the provider and the feed. */
class FeedContext {
  private readonly markets = new Map<MarketId, FeedMarket>();
  readonly clock: Clock;
  readonly logger: WsLogger;

  constructor(readonly options: FeedOptions) {
    this.clock = options.clock ?? systemClock();
    this.logger = options.logger ?? silentLogger;
  }

  get exchange(): Exchange {
    return this.options.exchange;
  }

  get view(): MarketView {
    return this.options.exchange.view;
  }

  /**
   * Market specs never change once created, so the formatting data is cached per spec: a
   * checkpoint restore replaces the engine (new spec objects, and an id may then name another
   * market), which the identity check notices.
   */
  market(id: MarketId): FeedMarket | undefined {
    const catalogue = this.view.catalogue;
    const spec = catalogue.market(id);
    let cached = this.markets.get(id);
    if (cached === undefined || cached.spec !== spec) {
      const quote = spec && catalogue.asset(spec.quote);
      if (spec === undefined || quote === undefined) return undefined;
      cached = feedMarket(spec, quote);
      this.markets.set(id, cached);
    }
    return cached;
  }

  ticker(m: FeedMarket, type: MessageType): ReturnType<typeof tickerMessage> {
    const id = m.spec.id;
    const view = this.view;
    const top = view.book(id, 1);
    return tickerMessage(m, type, {
      stats: view.stats24h(id, this.clock()),
      last: view.lastPrice(id),
      bestBid: top.bids[0],
      bestAsk: top.asks[0],
    });
  }
}

// ---------------------------------------------------------------------------------------------
// Channel provider: names → meaning, and the snapshot sent after subscribing.

/**
 * Per exchange, the execution messages still being prepared (their orders and trades read from
 * the store), chained in batch order: what a new executions subscriber waits for.
 */
const executionsInFlight = new WeakMap<Exchange, { settled: Promise<void> | undefined; count: number }>();

export function createExchangeChannels(options: FeedOptions): ChannelProvider {
  const context = new FeedContext(options);
  const { exchange } = options;
  const snapshotTrades = options.snapshotTrades ?? 50;
  const snapshotOrders = options.snapshotOrders ?? 500;

  function resolve(channel: string): ResolvedChannel | undefined {
    const parsed = parseChannelName(channel);
    if (parsed === undefined) return undefined;
    if (parsed.kind === 'executions') return { kind: 'executions', userId: parsed.userId };
    const market = context.view.catalogue.marketByName(parsed.pair);
    // Only the joined spelling names a channel (one name, one set of subscribers).
    if (market === undefined || joinedPair(market) !== parsed.pair) return undefined;
    return parsed.kind === 'ohlc'
      ? { kind: 'ohlc', marketId: market.id, interval: parsed.interval }
      : { kind: parsed.kind, marketId: market.id };
  }

  function candleSnapshot(m: FeedMarket, resolved: ResolvedChannel): unknown {
    const candle = context.view.currentCandle(m.spec.id, resolved.interval!);
    if (candle === undefined) return undefined;
    return candleMessage(m, 'snapshot', candle, lastTradeTimeIn(m.spec.id, candle));
  }

  /** The time of the candle's last trade: the market's last trade, when it falls inside the candle. */
  function lastTradeTimeIn(marketId: MarketId, candle: Candle): Micros {
    const last = context.view.lastTrade(marketId);
    const begin = candle.start * 1_000_000;
    return (last !== undefined && last.time >= begin ? last.time : begin) as Micros;
  }

  function tradeSnapshot(m: FeedMarket): unknown {
    if (snapshotTrades <= context.view.recentTradesCapacity)
      return tradeMessage(m, 'snapshot', context.view.recentTrades(m.spec.id, snapshotTrades));
    // More than the view keeps (a configuration beyond its memory): from the history.
    return exchange.history
      .listPublicTrades({ marketId: m.spec.id, limit: snapshotTrades })
      .then((recent) => tradeMessage(m, 'snapshot', recent.reverse()));
  }

  async function executionsSnapshot(userId: UserId): Promise<unknown> {
    const page = [
      ...(await exchange.history.listOrders(
        { userId, status: 'open' },
        { limit: snapshotOrders + 1, offset: 0 },
      )),
    ];
    const orders = page.slice(0, snapshotOrders);
    const trades = await exchange.history.tradesOfOrders(orders.map((o) => o.id));
    const serialized: unknown[] = [];
    for (const order of orders) {
      const catalogue = context.view.catalogue;
      const market = catalogue.market(order.marketId);
      if (market === undefined) continue;
      serialized.push(serializeOrder(order, market, catalogue, trades.get(order.id) ?? []));
    }
    return executionsSnapshotMessage(serialized, page.length > snapshotOrders);
  }

  return {
    resolve,
    catchUp: () => {
      exchange.publishCommitted();
      // Execution messages of published batches may still be read from the store: wait for them.
      return executionsInFlight.get(exchange)?.settled;
    },
    commitMark: () => exchange.commitMark(),
    // No `betweenCommits`: nothing here reads the engine. During a step every batch committed
    // before it is fanned out already (the sequencer publishes them before it applies the next),
    // so the view and the updates still to come agree at any moment; a snapshot taken during a
    // commit shows the state before it, and that batch's updates follow.
    snapshot(_channel, resolved) {
      if (resolved.kind === 'executions') return executionsSnapshot(resolved.userId!);
      const m = context.market(resolved.marketId!);
      if (m === undefined) return undefined;
      switch (resolved.kind) {
        case 'book':
          return bookSnapshotMessage(m, context.view.book(m.spec.id, 0));
        case 'ticker':
          return context.ticker(m, 'snapshot');
        case 'trade':
          return tradeSnapshot(m);
        case 'ohlc':
          return candleSnapshot(m, resolved);
      }
    },
  };
}

// ---------------------------------------------------------------------------------------------
// Feed: committed batches → update messages.

/** Consecutive trades of the same taker order: one trade message each. */
function groupByTaker(trades: readonly Trade[]): Trade[][] {
  const groups: Trade[][] = [];
  for (const trade of trades) {
    const current = groups[groups.length - 1];
    if (current !== undefined && current[0]!.takerOrderId === trade.takerOrderId) current.push(trade);
    else groups.push([trade]);
  }
  return groups;
}

/** Best bid and ask with their quantities, to tell whether the ticker changed. */
const topKey = (view: ReturnType<MarketView['book']>): string =>
  `${view.bids[0]?.join() ?? ''}/${view.asks[0]?.join() ?? ''}`;

/**
 * Follows the committed feed (each batch once its replies are written) and publishes every
 * channel's updates. Returns the function that stops it.
 */
export function startExchangeFeed(options: FeedOptions & { readonly publisher: Publisher }): () => void {
  const context = new FeedContext(options);
  const { exchange, publisher } = options;
  /** Last top of book seen per market while someone watched its ticker. */
  const lastTop = new Map<MarketId, string>();

  const watched = (channel: string): boolean => publisher.subscriberCount(channel) > 0;

  function publishBook(m: FeedMarket, update: FeedBookChanges): void {
    const channel = channelName.book(m.pair);
    if (!watched(channel)) return;
    // The book after the batch, deep enough to rebuild the top 10 between its messages.
    const after = context.view.book(m.spec.id, CHECKSUM_DEPTH + update.changes.length);
    if (after.sequence !== update.sequence)
      context.logger.warn(
        { market: m.symbol, batch: update.sequence, book: after.sequence },
        'book moved past the batch: checksums describe the newer book',
      );
    for (const message of bookUpdateMessages(m, update.changes, after))
      publisher.publish(channel, UPDATE_EVENT, message);
  }

  function publishTicker(m: FeedMarket, traded: boolean): void {
    const channel = channelName.ticker(m.pair);
    if (!watched(channel)) {
      lastTop.delete(m.spec.id);
      return;
    }
    const key = topKey(context.view.book(m.spec.id, 1));
    if (!traded && lastTop.get(m.spec.id) === key) return;
    lastTop.set(m.spec.id, key);
    publisher.publish(channel, UPDATE_EVENT, context.ticker(m, 'update'));
  }

  function publishTrades(m: FeedMarket, trades: readonly Trade[]): void {
    const channel = channelName.trade(m.pair);
    if (!watched(channel)) return;
    for (const group of groupByTaker(trades))
      publisher.publish(channel, UPDATE_EVENT, tradeMessage(m, 'update', group));
  }

  function publishCandles(candles: readonly Candle[], trades: ReadonlyMap<MarketId, readonly Trade[]>): void {
    for (const candle of candles) {
      const m = context.market(candle.marketId);
      if (m === undefined) continue;
      const channel = channelName.ohlc(m.pair, candle.interval);
      if (!watched(channel)) continue;
      const list = trades.get(candle.marketId);
      const updatedAt = list?.[list.length - 1]?.time ?? context.clock();
      publisher.publish(channel, UPDATE_EVENT, candleMessage(m, 'update', candle, updatedAt));
    }
  }

  /**
   * The execution messages of a batch need orders and trades from the store (an order's earlier
   * fills). Who watches is decided now, with the batch; the reads follow, and the messages are
   * sent in batch order, one batch after the other. A new executions subscriber waits until they
   * are sent (catchUp), so it never gets a message its snapshot already holds.
   */
  function publishExecutions(batch: FeedBatch): void {
    const watchers = new Set<UserId>();
    const isWatched = (userId: UserId): boolean => {
      if (watchers.has(userId)) return true;
      if (!watched(channelName.executions(userId))) return false;
      watchers.add(userId);
      return true;
    };
    // A dry run records what the steps need from the store (and who watches); no read yet.
    const orderIds = new Set<OrderId>();
    const endedIds = new Set<OrderId>();
    executionSteps(batch.events, isWatched, {
      order: (id) => {
        orderIds.add(id);
        return undefined;
      },
      tradesOfOrders: (ids) => {
        for (const id of ids) endedIds.add(id);
        return new Map();
      },
    });
    if (watchers.size === 0) return;
    const job = async (): Promise<void> => {
      const [orders, trades] = await Promise.all([
        Promise.all([...orderIds].map((id) => exchange.history.getOrder(id))),
        endedIds.size > 0 ? exchange.history.tradesOfOrders([...endedIds]) : new Map<OrderId, Trade[]>(),
      ]);
      const byId = new Map<OrderId, OrderState>();
      for (const order of orders) if (order !== undefined) byId.set(order.id, order);
      const steps = executionSteps(batch.events, (userId) => watchers.has(userId), {
        order: (id) => byId.get(id),
        tradesOfOrders: () => trades,
      });
      if (publisher.batch === undefined) sendExecutions(steps);
      else publisher.batch(() => sendExecutions(steps));
    };
    const state = executionsInFlight.get(exchange) ?? { settled: undefined, count: 0 };
    executionsInFlight.set(exchange, state);
    state.count += 1;
    const settled = (state.settled ?? Promise.resolve())
      .then(job)
      .catch((error: unknown) => context.logger.error({ err: error }, 'publishing executions failed'))
      .finally(() => {
        state.count -= 1;
        if (state.count === 0) state.settled = undefined;
      });
    state.settled = settled;
  }

  function sendExecutions(steps: ReturnType<typeof executionSteps>): void {
    for (const step of steps) {
      const catalogue = context.view.catalogue;
      const market: MarketSpec | undefined = catalogue.market(step.order.marketId);
      if (market === undefined) continue;
      const order = serializeOrder(step.order, market, catalogue, step.orderTrades);
      const trades =
        step.execution === undefined ? [] : [serializeUserTrade(step.execution, market, catalogue)];
      publisher.publish(
        channelName.executions(step.userId),
        UPDATE_EVENT,
        executionMessage(step.event, order, trades, step.reason),
      );
    }
  }

  function onBatch(batch: FeedBatch): void {
    const books = new Map<MarketId, FeedBookChanges>();
    for (const update of batch.books) books.set(update.marketId, update);
    const trades = new Map<MarketId, readonly Trade[]>();
    for (const entry of batch.trades) trades.set(entry.marketId, entry.trades);
    const markets = new Set<MarketId>([...books.keys(), ...trades.keys()]);
    for (const id of markets) {
      const m = context.market(id);
      if (m === undefined) continue;
      const book = books.get(id);
      if (book !== undefined) publishBook(m, book);
      const marketTrades = trades.get(id);
      if (marketTrades !== undefined) publishTrades(m, marketTrades);
      publishTicker(m, marketTrades !== undefined);
    }
    publishCandles(batch.candles, trades);
    publishExecutions(batch);
  }

  const { feed } = exchange;
  return feed.subscribe(
    feed.head({ afterReplies: true }) + 1,
    (message) => {
      if (message.kind === 'gap') {
        // Cannot happen in this process (the feed holds what was not delivered yet); a gateway
        // that sees one must re-snapshot its subscribers rather than publish past the hole.
        context.logger.error({ requested: message.requested, oldest: message.oldest }, 'feed gap');
        return;
      }
      // A reset (checkpoint restore) closes every connection (see mount.ts): nothing to send.
      if (message.kind === 'reset') return;
      const batch = message;
      try {
        // One write per connection for everything this batch sends it (book, trade, ticker, …).
        if (publisher.batch === undefined) onBatch(batch);
        else publisher.batch(() => onBatch(batch));
      } catch (error) {
        // The exchange has already committed; a publishing failure must not reach it.
        context.logger.error({ err: error }, 'publishing a committed batch failed');
      }
    },
    { afterReplies: true },
  );
}
