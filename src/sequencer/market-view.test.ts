/**
 * The MarketView is kept from the committed feed alone: a view built from a snapshot and the
 * feed (every entry sent through its JSON encoding, as a gateway would receive it) equals the
 * server's own view and the engine after random order flow, and one started late from a later
 * snapshot catches up to the same state. A feed that no longer holds what is asked for says so.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import type {
  Amount,
  AssetCode,
  FeeRate,
  MarketId,
  Micros,
  OrderId,
  Price,
  UserId,
  Volume,
} from '../domain/types.js';
import type { Command } from '../engine/types.js';
import { INTERVALS } from '../market-data/candle.js';
import { asyncStore } from '../store/async-store.js';
import { SqliteStore } from '../store/sqlite/sqlite-store.js';
import { checksumOf, feedMarket } from '../ws/payloads.js';
import {
  decodeFeedEntry,
  encodeFeedEntry,
  type FeedBatch,
  type FeedMessage,
  InProcessFeed,
} from './committed-feed.js';
import { FeedGapError, followFeed, type MarketSnapshot, MarketView } from './market-view.js';
import { type LocalExchange, openExchange } from './sequencer.js';

const USERS = [1, 2, 3, 4] as UserId[];
const START = 1_700_000_000_000_000;

/** Through the wire format and back: what a gateway would get from the stream. */
const overTheWire = <T extends FeedMessage>(message: T): T =>
  (message.kind === 'gap' ? message : decodeFeedEntry(encodeFeedEntry(message))) as T;

const snapshotOverTheWire = (snapshot: MarketSnapshot): MarketSnapshot =>
  (
    decodeFeedEntry(encodeFeedEntry({ kind: 'reset', sequence: snapshot.sequence, snapshot })) as {
      snapshot: MarketSnapshot;
    }
  ).snapshot;

/** A view built from a snapshot, following the feed over the wire format. */
function follower(exchange: LocalExchange, snapshot: MarketSnapshot): { view: MarketView; stop: () => void } {
  const view = MarketView.fromSnapshot(snapshotOverTheWire(snapshot));
  const stop = exchange.feed.subscribe(view.sequence + 1, (message) => {
    if (message.kind === 'gap') throw new Error('unexpected gap');
    view.apply(overTheWire(message));
  });
  return { view, stop };
}

async function venue(): Promise<{
  exchange: LocalExchange;
  markets: MarketId[];
  advance: (s: number) => void;
}> {
  let now = START;
  const exchange = await openExchange({
    store: asyncStore(SqliteStore.open({ path: ':memory:' })),
    clock: () => now as Micros,
  });
  const asset = (code: string, decimals: number) =>
    exchange.submit({ kind: 'createAsset', code, name: code, type: 'crypto', decimals });
  await asset('BTC', 8);
  await asset('ETH', 8);
  await asset('EUR', 2);
  for (const base of ['BTC', 'ETH'])
    await exchange.submit({
      kind: 'createMarket',
      base: base as AssetCode,
      quote: 'EUR' as AssetCode,
      pairDecimals: 1,
      lotDecimals: 8,
      ordermin: 1 as Volume,
      makerFee: 10_000 as FeeRate,
      takerFee: 20_000 as FeeRate,
    });
  for (const userId of USERS)
    for (const code of ['BTC', 'ETH', 'EUR'])
      await exchange.submit({
        kind: 'deposit',
        userId,
        asset: code as AssetCode,
        amount: 1_000_000_000_000 as Amount,
      });
  const markets = exchange.catalogue.markets().map((m) => m.id);
  return { exchange, markets, advance: (seconds) => (now += seconds * 1_000_000) };
}

type Step =
  | {
      kind: 'place';
      user: number;
      market: number;
      side: 'buy' | 'sell';
      market_order: boolean;
      price: number;
      lots: number;
    }
  | { kind: 'cancel'; user: number; pick: number }
  | { kind: 'deposit'; user: number; amount: number };

const stepArb: fc.Arbitrary<Step> = fc.oneof(
  {
    weight: 6,
    arbitrary: fc.record({
      kind: fc.constant('place' as const),
      user: fc.nat(3),
      market: fc.nat(1),
      side: fc.constantFrom('buy' as const, 'sell' as const),
      market_order: fc.boolean(),
      price: fc.integer({ min: 950, max: 1050 }),
      lots: fc.integer({ min: 1, max: 400_000_000 }),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({ kind: fc.constant('cancel' as const), user: fc.nat(3), pick: fc.nat(1000) }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant('deposit' as const),
      user: fc.nat(3),
      amount: fc.integer({ min: 1, max: 1_000_000 }),
    }),
  },
);

/** Chunks of steps submitted together (one batch each, mostly), with seconds between chunks. */
const flowArb = fc.array(
  fc.record({ steps: fc.array(stepArb, { minLength: 1, maxLength: 8 }), seconds: fc.nat(400) }),
  { minLength: 4, maxLength: 24 },
);

function command(step: Step, markets: readonly MarketId[], open: readonly OrderId[]): Command | undefined {
  const userId = USERS[step.user]!;
  switch (step.kind) {
    case 'place':
      return {
        kind: 'placeOrder',
        userId,
        marketId: markets[step.market]!,
        side: step.side,
        type: step.market_order ? 'market' : 'limit',
        price: (step.market_order ? 0 : step.price) as Price,
        volume: step.lots as Volume,
      };
    case 'cancel': {
      const orderId = open[step.pick % Math.max(1, open.length)];
      return orderId === undefined ? undefined : { kind: 'cancelOrder', userId, orderId };
    }
    case 'deposit':
      return { kind: 'deposit', userId, asset: 'EUR' as AssetCode, amount: step.amount as Amount };
  }
}

/** What a reader can see: books (with sequence and checksum), tickers, candles, trades, balances. */
function observed(view: MarketView, now: Micros) {
  const catalogue = view.catalogue;
  return {
    sequence: view.sequence,
    markets: catalogue.markets(),
    assets: catalogue.assets(),
    perMarket: catalogue.markets().map((spec) => {
      const book = view.book(spec.id, 0);
      return {
        book,
        checksum: checksumOf(feedMarket(spec, catalogue.asset(spec.quote)!), book),
        last: view.lastPrice(spec.id),
        today: view.statsToday(spec.id, now),
        rolling: view.stats24h(spec.id, now),
        candles: INTERVALS.map((interval) => view.currentCandle(spec.id, interval)),
        trades: view.recentTrades(spec.id, 50),
      };
    }),
    balances: USERS.map((userId) => view.balances(userId)),
  };
}

test('a view built from a snapshot and the feed equals the server’s view and the engine; a late one catches up', async () => {
  await fc.assert(
    fc.asyncProperty(flowArb, fc.nat(100), async (flow, lateAt) => {
      const { exchange, markets, advance } = await venue();
      const early = follower(exchange, exchange.view.snapshot());
      const open: OrderId[] = [];
      // Taken mid-flow; the view built from it subscribes only at the end, from the entries held.
      let lateSnapshot: MarketSnapshot | undefined;
      const lateChunk = lateAt % flow.length;
      for (const [index, chunk] of flow.entries()) {
        if (index === lateChunk) lateSnapshot = exchange.view.snapshot();
        advance(chunk.seconds);
        const commands = chunk.steps
          .map((step) => command(step, markets, open))
          .filter((c): c is Command => c !== undefined);
        const results = await Promise.all(commands.map((c) => exchange.submit(c)));
        for (const result of results)
          if (result.ok)
            for (const event of result.events) {
              if (event.type === 'orderAccepted') open.push(event.order.id);
              if (event.type === 'orderDone') open.splice(open.indexOf(event.order.id), 1);
            }
      }
      const late = follower(exchange, lateSnapshot!);
      const now = exchange.clock();
      const server = observed(exchange.view, now);
      assert.deepEqual(observed(early.view, now), server, 'the view from snapshot + feed');
      assert.deepEqual(observed(late.view, now), server, 'the view started late');
      assert.deepEqual(
        snapshotOverTheWire(early.view.snapshot()),
        snapshotOverTheWire(exchange.view.snapshot()),
      );
      // And the server's view is the committed state: the engine's books and balances, the
      // store's newest trade. (Statistics have no other copy to compare with: the exchange
      // answers them from this view.)
      for (const [i, spec] of exchange.catalogue.markets().entries()) {
        const [newest] = await exchange.history.listPublicTrades({ marketId: spec.id, limit: 1 });
        assert.equal(server.perMarket[i]!.last, newest?.price ?? null, 'last price');
      }
      await exchange.readCommitted(() => {
        for (const [i, spec] of exchange.catalogue.markets().entries())
          assert.deepEqual(server.perMarket[i]!.book, exchange.book(spec.id, 0), 'book and sequence');
        assert.deepEqual(
          server.balances,
          USERS.map((u) => exchange.balances(u)),
        );
      });
      early.stop();
      late.stop();
      await exchange.close();
    }),
    { numRuns: 12 },
  );
});

test('a view built at start from the store equals the engine after a restart', async () => {
  const store = asyncStore(SqliteStore.open({ path: ':memory:' }));
  let now = START;
  const exchange = await openExchange({ store, clock: () => now as Micros });
  await exchange.submit({ kind: 'createAsset', code: 'BTC', name: 'BTC', type: 'crypto', decimals: 8 });
  await exchange.submit({ kind: 'createAsset', code: 'EUR', name: 'EUR', type: 'fiat', decimals: 2 });
  await exchange.submit({
    kind: 'createMarket',
    base: 'BTC' as AssetCode,
    quote: 'EUR' as AssetCode,
    pairDecimals: 1,
    lotDecimals: 8,
    ordermin: 1 as Volume,
    makerFee: 0 as FeeRate,
    takerFee: 0 as FeeRate,
  });
  const id = exchange.catalogue.markets()[0]!.id;
  for (const userId of USERS.slice(0, 2)) {
    await exchange.submit({
      kind: 'deposit',
      userId,
      asset: 'EUR' as AssetCode,
      amount: 10_000_000 as Amount,
    });
    await exchange.submit({
      kind: 'deposit',
      userId,
      asset: 'BTC' as AssetCode,
      amount: 10_000_000_000 as Amount,
    });
  }
  const order = (userId: UserId, side: 'buy' | 'sell', price: number) =>
    exchange.submit({
      kind: 'placeOrder',
      userId,
      marketId: id,
      side,
      type: 'limit',
      price: price as Price,
      volume: 100_000_000 as Volume,
    });
  await order(USERS[0]!, 'sell', 1000);
  now += 90_000_000;
  await order(USERS[1]!, 'buy', 1000);
  await order(USERS[1]!, 'buy', 990);
  const before = observed(exchange.view, exchange.clock());
  await exchange.close();
  const again = await openExchange({ store, clock: () => now as Micros });
  const after = observed(again.view, again.clock());
  // A restart numbers the feed and the books afresh (docs/architecture.md); the state is the same.
  const { sequence: _a, perMarket: pa, ...restBefore } = before;
  const { sequence: _b, perMarket: pb, ...restAfter } = after;
  assert.deepEqual(restAfter, restBefore);
  assert.deepEqual(
    pb.map(({ book: { sequence: _s, ...levels }, ...rest }) => ({ levels, ...rest })),
    pa.map(({ book: { sequence: _s, ...levels }, ...rest }) => ({ levels, ...rest })),
  );
  await again.close();
});

test('a checkpoint restore reaches every view as a reset entry carrying the restored state', async () => {
  const { exchange, markets } = await venue();
  const place = (price: number) =>
    exchange.submit({
      kind: 'placeOrder',
      userId: USERS[0]!,
      marketId: markets[0]!,
      side: 'buy',
      type: 'limit',
      price: price as Price,
      // 0.01 BTC at 100 EUR: an order worth at least one cent (smaller ones are refused).
      volume: 1_000_000 as Volume,
    });
  await place(1000);
  await exchange.saveCheckpoint('one');
  const saved = exchange.view.book(markets[0]!, 0);
  const follow = follower(exchange, exchange.view.snapshot());
  const kinds: string[] = [];
  exchange.feed.subscribe(exchange.feed.head() + 1, (m) => kinds.push(m.kind));
  await place(1001);
  await exchange.restoreCheckpoint('one');
  assert.deepEqual(kinds, ['batch', 'reset']);
  const restored = exchange.view.book(markets[0]!, 0);
  assert.deepEqual(restored.bids, saved.bids);
  assert.equal(restored.sequence, saved.sequence + 2, 'one for the batch, one for the restore');
  assert.deepEqual(follow.view.snapshot(), exchange.view.snapshot());
  await exchange.readCommitted(() =>
    assert.deepEqual(exchange.view.book(markets[0]!, 0), exchange.book(markets[0]!, 0)),
  );
  await exchange.close();
});

const batch = (sequence: number): FeedBatch => ({
  kind: 'batch',
  sequence,
  events: [],
  books: [],
  candles: [],
  trades: [],
  balances: [],
});

test('a subscriber asking for entries the feed no longer holds gets a gap, never a silent skip', () => {
  const feed = new InProcessFeed(undefined, 2);
  for (let s = 1; s <= 5; s++) feed.publish(batch(s));
  const got: FeedMessage[] = [];
  feed.subscribe(2, (m) => got.push(m));
  assert.deepEqual(got, [{ kind: 'gap', requested: 2, oldest: 4 }]);
  feed.publish(batch(6));
  assert.equal(got.length, 1, 'a gap subscribes nothing');
  const fromHeld: number[] = [];
  feed.subscribe(5, (m) => fromHeld.push((m as FeedBatch).sequence));
  feed.publish(batch(7));
  assert.deepEqual(fromHeld, [5, 6, 7]);
  assert.throws(() => feed.subscribe(9, () => undefined), RangeError);
  assert.throws(() => feed.publish(batch(9)), RangeError, 'entries are continuous');
});

test('after-replies subscribers get a batch only once it is released, in order', () => {
  const feed = new InProcessFeed();
  const atCommit: number[] = [];
  const after: number[] = [];
  feed.subscribe(1, (m) => atCommit.push((m as FeedBatch).sequence));
  feed.subscribe(1, (m) => after.push((m as FeedBatch).sequence), { afterReplies: true });
  feed.publish(batch(1));
  feed.publish(batch(2));
  assert.deepEqual([atCommit, after], [[1, 2], []]);
  feed.release(2);
  assert.deepEqual(after, [1, 2]);
  assert.equal(feed.head({ afterReplies: true }), 2);
});

test('a view refuses an entry that skips one, and ignores one it already applied', () => {
  const view = MarketView.fromSnapshot({
    sequence: 3,
    assets: [],
    markets: [],
    books: [],
    lastPrices: [],
    candles: [],
    statsCandles: [],
    recentTrades: [],
    balances: [],
  });
  view.apply(batch(3));
  assert.equal(view.sequence, 3);
  assert.throws(() => view.apply(batch(5)), FeedGapError);
  view.apply(batch(4));
  assert.equal(view.sequence, 4);
  const feed = new InProcessFeed(undefined, 1);
  feed.publish(batch(1));
  feed.publish(batch(2));
  const errors: unknown[] = [];
  const stale = MarketView.fromSnapshot({ ...view.snapshot(), sequence: 0 });
  followFeed(stale, feed, { error: (obj) => errors.push(obj) });
  assert.equal(errors.length, 1, 'the gap is reported');
  assert.equal(stale.sequence, 0, 'and the view is left as it was');
});

test('entries keep their BigInts exactly through the wire format', () => {
  const candle = {
    marketId: 1 as MarketId,
    interval: 1 as const,
    start: 60,
    open: 1 as Price,
    high: 2 as Price,
    low: 1 as Price,
    close: 2 as Price,
    volume: 2n ** 70n + 1n,
    quoteVolume: 12345678901234567890n,
    notional: 0n,
    count: 2,
  };
  const entry: FeedBatch = { ...batch(1), candles: [candle] };
  assert.deepEqual(decodeFeedEntry(encodeFeedEntry(entry)), entry);
});
