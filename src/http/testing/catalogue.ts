/** A small fixed catalogue for unit tests of the HTTP layer (no engine involved). */

import type { AssetCode, AssetSpec, FeeRate, MarketId, MarketSpec, Volume } from '../../domain/types.js';
import type { Catalogue } from '../../sequencer/ports.js';

export const asset = (code: string, name: string, type: AssetSpec['type'], decimals: number): AssetSpec => ({
  code: code as AssetCode,
  name,
  type,
  decimals,
});

export const BTC = asset('BTC', 'Bitcoin', 'crypto', 8);
/** Ether at 12 decimals: the most the money module allows (MAX_DECIMALS). */
export const ETH = asset('ETH', 'Ether', 'crypto', 12);
export const EUR = asset('EUR', 'Euro', 'fiat', 2);
export const USDT = asset('USDT', 'Tether', 'crypto', 6);

export const market = (
  id: number,
  base: AssetSpec,
  quote: AssetSpec,
  pairDecimals: number,
  lotDecimals: number,
  ordermin: number,
): MarketSpec => ({
  id: id as MarketId,
  base: base.code,
  quote: quote.code,
  pairDecimals,
  lotDecimals,
  ordermin: ordermin as Volume,
  makerFee: 100_000 as FeeRate,
  takerFee: 160_000 as FeeRate,
});

/** BTC/EUR like Kraken's XBTEUR: prices to 0.1 EUR, volumes to 1e-8 BTC, minimum 0.0001 BTC. */
export const BTCEUR = market(1, BTC, EUR, 1, 8, 10_000);
/** ETH/BTC: prices to 1e-5 BTC, volumes to 1e-4 ETH. */
export const ETHBTC = market(2, ETH, BTC, 5, 4, 100);
/** EUR/USDT: an inverse market for valuation tests. */
export const EURUSDT = market(3, EUR, USDT, 4, 2, 100);

export function fixedCatalogue(
  assets: readonly AssetSpec[] = [BTC, ETH, EUR, USDT],
  markets: readonly MarketSpec[] = [BTCEUR, ETHBTC, EURUSDT],
): Catalogue {
  return {
    assets: () => assets,
    asset: (code) => assets.find((a) => a.code === code),
    markets: () => markets,
    market: (id) => markets.find((m) => m.id === id),
    marketByName: (name) =>
      markets.find((m) => `${m.base}${m.quote}` === name || `${m.base}/${m.quote}` === name),
  };
}
