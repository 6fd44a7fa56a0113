/**
 * A standby's warm-up while it waits for the writer lock. A process that has never run the order
 * path runs its first commands in V8's interpreter, many times slower than once optimised: after
 * a takeover, the burst of commands the gateways resend at once (every request the dead engine
 * left unanswered) was the slowest part of the failover on a busy machine. So the standby first
 * runs the same code — the cluster codec, the MAC, the sequencer and the engine matching crossing
 * and resting orders — on a throwaway venue of its own in memory (SQLite `:memory:`: nothing is
 * written anywhere, nothing is published). The functions V8 optimised are the ones the real venue
 * runs once the lock is taken.
 */
import type { Amount, AssetCode, FeeRate, MarketId, Price, UserId, Volume } from '../domain/types.js';
import type { Command } from '../engine/types.js';
import type { PlaceOrder } from '../sequencer/ports.js';
import { openExchange } from '../sequencer/sequencer.js';
import { asyncStore } from '../store/async-store.js';
import { SqliteStore } from '../store/sqlite/sqlite-store.js';
import { ClusterKey } from './cluster-key.js';
import {
  type BatchEntry,
  commandReplyText,
  decodeCommandMessage,
  decodeCommandReplies,
  type EncodedRequest,
  encodeCommandBatch,
  encodeCommandReplies,
  encodeRequestPart,
  receiptText,
} from './codec.js';
import { commandMacFields } from './command-client.js';

/** Orders placed by default: enough for V8 to optimise the hot functions (a few hundred ms). */
export const WARM_UP_ORDERS = 3_000;
const PER_BATCH = 50;

/** Runs the order path `orders` times on a venue of its own in memory; resolves when done. */
export async function warmUp(orders = WARM_UP_ORDERS): Promise<void> {
  const exchange = await openExchange({ store: asyncStore(SqliteStore.open({ path: ':memory:' })) });
  try {
    const key = ClusterKey.random();
    const setup: Command[] = [
      { kind: 'createAsset', code: 'BTC', name: 'Bitcoin', type: 'crypto', decimals: 8 },
      { kind: 'createAsset', code: 'EUR', name: 'Euro', type: 'fiat', decimals: 2 },
      {
        kind: 'createMarket',
        base: 'BTC' as AssetCode,
        quote: 'EUR' as AssetCode,
        pairDecimals: 1,
        lotDecimals: 8,
        ordermin: 1 as Volume,
        makerFee: 1_000 as FeeRate,
        takerFee: 2_000 as FeeRate,
      },
    ];
    for (const command of setup) await exchange.submit(command);
    const marketId = exchange.catalogue.markets()[0]!.id as MarketId;
    for (const userId of [1, 2, 3, 4] as UserId[]) {
      await exchange.submit({ kind: 'deposit', userId, asset: 'EUR' as AssetCode, amount: 1e12 as Amount });
      await exchange.submit({ kind: 'deposit', userId, asset: 'BTC' as AssetCode, amount: 1e12 as Amount });
    }
    for (let sent = 0; sent < orders; sent += PER_BATCH) {
      const entries: BatchEntry<EncodedRequest>[] = [];
      for (let i = sent; i < Math.min(orders, sent + PER_BATCH); i++) {
        // Crossing and resting orders on a few levels around 30,000.0 EUR, from four users.
        const order: PlaceOrder = {
          kind: 'placeOrder',
          userId: ((i % 4) + 1) as UserId,
          marketId,
          side: i % 2 === 0 ? 'buy' : 'sell',
          type: 'limit',
          price: (300_000 + ((i * 7) % 11) - 5) as Price,
          volume: (1_000_000 + (i % 5) * 100_000) as Volume,
        };
        entries.push({
          id: String(i).padStart(22, 'w'),
          request: encodeRequestPart({ op: 'submit', command: order }),
        });
      }
      // What a gateway and the command service do with a batch of commands and its replies.
      const body = encodeCommandBatch(entries);
      const fields = commandMacFields('openspot.warm-up', 'w'.repeat(22), '0');
      key.verify('command', fields, body, key.mac('command', fields, body));
      const message = decodeCommandMessage(body);
      if (message.kind !== 'commands') continue;
      const texts = await Promise.all(
        message.entries.map(async ({ request }) => {
          const result = await exchange.submit(request.command);
          const text = commandReplyText({ kind: 'result', result });
          receiptText(text);
          return text;
        }),
      );
      decodeCommandReplies(encodeCommandReplies(texts), texts.length);
    }
  } finally {
    await exchange.close();
  }
}
