/** The venue the sequencer tests start from. Test code only. */
import type { Amount, AssetCode, FeeRate, MarketId, UserId, Volume } from '../domain/types.js';
import type { FeedBookChanges } from './committed-feed.js';
import type { CommittedBatch } from './ports.js';
import type { LocalExchange } from './sequencer.js';

export const BTC = 'BTC' as AssetCode;
export const EUR = 'EUR' as AssetCode;
export const ALICE = 1 as UserId;

/** BTC/EUR (price to 0.1, volume to 1e-8, no fees) and 1,000,000.00 EUR for Alice; the market's id. */
export async function seedBtcEur(exchange: LocalExchange): Promise<MarketId> {
  await exchange.submit({ kind: 'createAsset', code: BTC, name: 'Bitcoin', type: 'crypto', decimals: 8 });
  await exchange.submit({ kind: 'createAsset', code: EUR, name: 'Euro', type: 'fiat', decimals: 2 });
  await exchange.submit({
    kind: 'createMarket',
    base: BTC,
    quote: EUR,
    pairDecimals: 1,
    lotDecimals: 8,
    ordermin: 1 as Volume,
    makerFee: 0 as FeeRate,
    takerFee: 0 as FeeRate,
  });
  await exchange.submit({ kind: 'deposit', userId: ALICE, asset: EUR, amount: 100_000_000 as Amount });
  return exchange.catalogue.marketByName('BTC/EUR')!.id;
}

/** A committed batch's level changes for one market (undefined when its book did not change). */
export function bookOf(batch: CommittedBatch, marketId: MarketId): FeedBookChanges | undefined {
  return batch.books.find((book) => book.marketId === marketId);
}
