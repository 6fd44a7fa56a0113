/**
 * order-book.{pair} against the real exchange (in-memory store), property-tested: a client that
 * takes the snapshot and applies every update message ends with exactly the server's book, every
 * message's checksum matches the client's book right after it, and the sequence grows by one per
 * message, whatever the batches do (several levels per batch, both sides, sweeps, self-trades,
 * cancels, a level changed twice in one batch).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import type { BookMessage } from '../client/channels.js';
import { LocalBook } from '../client/local-book.js';
import type {
  Amount,
  AssetCode,
  FeeRate,
  MarketId,
  OrderId,
  Price,
  UserId,
  Volume,
} from '../domain/types.js';
import type { Command } from '../engine/types.js';
import { openExchange } from '../sequencer/sequencer.js';
import { asyncStore } from '../store/async-store.js';
import { SqliteStore } from '../store/sqlite/sqlite-store.js';
import { channelName } from './channels.js';
import { startExchangeFeed } from './exchange-feed.js';
import { bookSnapshotMessage, feedMarket } from './payloads.js';

const BTC = 'BTC' as AssetCode;
const EUR = 'EUR' as AssetCode;
const USERS = [1, 2, 3].map((u) => u as UserId);

async function market() {
  const store = SqliteStore.open({ path: ':memory:' });
  const exchange = await openExchange({ store: asyncStore(store) });
  const commands: Command[] = [
    { kind: 'createAsset', code: 'BTC', name: 'Bitcoin', type: 'crypto', decimals: 8 },
    { kind: 'createAsset', code: 'EUR', name: 'Euro', type: 'fiat', decimals: 2 },
    {
      kind: 'createMarket',
      base: BTC,
      quote: EUR,
      pairDecimals: 1,
      lotDecimals: 8,
      ordermin: 1 as Volume,
      makerFee: 100_000 as FeeRate,
      takerFee: 160_000 as FeeRate,
    },
    ...[...USERS, 4 as UserId].flatMap((userId): Command[] => [
      { kind: 'deposit', userId, asset: BTC, amount: 1_000_000_000_000 as Amount },
      { kind: 'deposit', userId, asset: EUR, amount: 1_000_000_000_000 as Amount },
    ]),
  ];
  for (const command of commands) assert.ok((await exchange.submit(command)).ok);
  const spec = exchange.catalogue.marketByName('BTCEUR')!;
  const m = feedMarket(spec, exchange.catalogue.asset('EUR')!);
  return {
    exchange,
    m,
    async close() {
      await exchange.close();
      store.close();
    },
  };
}

type Step =
  | {
      readonly kind: 'limit';
      readonly user: number;
      readonly side: 'buy' | 'sell';
      readonly tick: number;
      readonly lots: number;
    }
  | { readonly kind: 'market'; readonly user: number; readonly side: 'buy' | 'sell'; readonly lots: number }
  | { readonly kind: 'cancel'; readonly user: number; readonly pick: number };

const stepArb: fc.Arbitrary<Step> = fc.oneof(
  {
    weight: 6,
    arbitrary: fc.record({
      kind: fc.constant('limit' as const),
      user: fc.integer({ min: 0, max: 2 }),
      side: fc.constantFrom('buy' as const, 'sell' as const),
      // Prices from 998.0 to 1002.0, among and across the resting levels: levels are shared,
      // crossed and swept.
      tick: fc.integer({ min: -20, max: 20 }),
      lots: fc.integer({ min: 1, max: 5_000 }),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant('market' as const),
      user: fc.integer({ min: 0, max: 2 }),
      side: fc.constantFrom('buy' as const, 'sell' as const),
      lots: fc.integer({ min: 1, max: 20_000 }),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant('cancel' as const),
      user: fc.integer({ min: 0, max: 2 }),
      pick: fc.nat(),
    }),
  },
);

const restingOrder = (marketId: MarketId, side: 'buy' | 'sell', price: number): Command => ({
  kind: 'placeOrder',
  userId: 4 as UserId,
  marketId,
  side,
  type: 'limit',
  price: price as Price,
  volume: 1_000 as Volume,
});

const batchesArb = fc.array(fc.array(stepArb, { minLength: 1, maxLength: 8 }), {
  minLength: 1,
  maxLength: 25,
});

test('a client applying every order-book update to the snapshot ends with the server book, checksums verified', async () => {
  await fc.assert(
    fc.asyncProperty(batchesArb, fc.integer({ min: 0, max: 24 }), async (batches, subscribeAt) => {
      const x = await market();
      const messages: BookMessage[] = [];
      const channel = channelName.book(x.m.pair);
      const stop = startExchangeFeed({
        exchange: x.exchange,
        publisher: {
          publish(name, event, data) {
            assert.equal(name, channel);
            assert.equal(event, 'update');
            messages.push(data as BookMessage);
            return 1;
          },
          subscriberCount: (name) => (name === channel ? 1 : 0),
        },
      });
      const client = new LocalBook();
      const open = new Map<UserId, OrderId[]>(USERS.map((u) => [u, []]));
      const marketId = x.m.spec.id as MarketId;
      try {
        // A resting book deeper than the checksum's 10 levels per side (user 4 never trades in the
        // random steps, so only sweeps remove it): new best levels push levels out of the top 10
        // and removals bring them back.
        await Promise.all(
          Array.from({ length: 15 }, (_, i) => [
            x.exchange.submit(restingOrder(marketId, 'buy', 9_990 - i)),
            x.exchange.submit(restingOrder(marketId, 'sell', 10_010 + i)),
          ]).flat(),
        );
        for (const [i, batch] of batches.entries()) {
          if (i === subscribeAt) {
            // A subscription catches up first, so the snapshot's sequence is the one the next
            // update follows (what the channel provider does).
            x.exchange.publishCommitted();
            messages.length = 0;
            assert.deepEqual(
              client.apply(bookSnapshotMessage(x.m, x.exchange.book(marketId, 0)) as BookMessage),
              { status: 'ok' },
            );
          }
          // Submitted in one turn: one batch, one commit.
          await Promise.all(
            batch.map(async (step) => {
              const userId = USERS[step.user]!;
              const mine = open.get(userId)!;
              if (step.kind === 'cancel') {
                if (mine.length === 0) return;
                const [orderId] = mine.splice(step.pick % mine.length, 1);
                await x.exchange.submit({ kind: 'cancelOrder', userId, orderId: orderId! });
                return;
              }
              const result = await x.exchange.submit({
                kind: 'placeOrder',
                userId,
                marketId,
                side: step.side,
                type: step.kind,
                price: (step.kind === 'limit' ? 10_000 + step.tick : 0) as Price,
                volume: step.lots as Volume,
              });
              if (step.kind === 'limit' && result.ok)
                for (const event of result.events)
                  if (event.type === 'orderAccepted') mine.push(event.order.id);
            }),
          );
        }
        x.exchange.publishCommitted();
        if (!client.synced) {
          // Subscribed after the last batch: the snapshot alone.
          messages.length = 0;
          client.apply(bookSnapshotMessage(x.m, x.exchange.book(marketId, 0)) as BookMessage);
        }
        for (const [i, message] of messages.entries()) {
          assert.deepEqual(Array.isArray(message.data.bids), !Array.isArray(message.data.asks), 'one side');
          assert.deepEqual(client.apply(message), { status: 'ok' }, `message ${i}`);
        }
        const server = bookSnapshotMessage(x.m, x.exchange.book(marketId, 0));
        assert.equal(client.sequence, server.data.sequence);
        assert.deepEqual(client.bids(), server.data.bids);
        assert.deepEqual(client.asks(), server.data.asks);
      } finally {
        stop();
        await x.close();
      }
    }),
    { numRuns: 100 },
  );
});
