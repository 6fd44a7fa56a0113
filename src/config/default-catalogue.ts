/**
 * The catalogue a fresh data directory starts with, in the admin API's own input shape, so an
 * operator's CATALOGUE_FILE (same JSON shape) and this default go through one validation path.
 * Precisions follow Kraken's for the same pairs.
 */
export interface CatalogueFile {
  readonly assets: ReadonlyArray<{ code: string; name: string; type: 'crypto' | 'fiat'; decimals: number }>;
  readonly markets: ReadonlyArray<{
    base: string;
    quote: string;
    pair_decimals: number;
    lot_decimals: number;
    ordermin: string;
    maker_fee?: string;
    taker_fee?: string;
  }>;
}

export const DEFAULT_CATALOGUE: CatalogueFile = {
  assets: [
    { code: 'EUR', name: 'Euro', type: 'fiat', decimals: 4 },
    { code: 'USD', name: 'US Dollar', type: 'fiat', decimals: 4 },
    { code: 'BTC', name: 'Bitcoin', type: 'crypto', decimals: 10 },
    { code: 'ETH', name: 'Ethereum', type: 'crypto', decimals: 10 },
    { code: 'USDT', name: 'Tether USD', type: 'crypto', decimals: 8 },
  ],
  markets: [
    { base: 'BTC', quote: 'EUR', pair_decimals: 1, lot_decimals: 8, ordermin: '0.00005' },
    { base: 'ETH', quote: 'EUR', pair_decimals: 2, lot_decimals: 8, ordermin: '0.002' },
    { base: 'BTC', quote: 'USD', pair_decimals: 1, lot_decimals: 8, ordermin: '0.00005' },
    { base: 'ETH', quote: 'BTC', pair_decimals: 5, lot_decimals: 8, ordermin: '0.002' },
    { base: 'USDT', quote: 'EUR', pair_decimals: 4, lot_decimals: 2, ordermin: '5' },
  ],
};
