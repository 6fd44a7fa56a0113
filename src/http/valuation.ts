/**
 * Valuing balances in the account currency (`balance_currency`, config BALANCE_CURRENCY) for the
 * wallet's `*_in_fiat` fields. Exact integer arithmetic with BigInt; results are rounded down
 * (a valuation never overstates what the holder could get).
 *
 * Rate source: the last trade price of a market pairing the asset with the valuation currency,
 * in either direction. An asset with no such market, or a market without trades, is valued at 0:
 * the field is documented as a decimal string, so there is no null to fall back to.
 */

import { POW10N } from '../domain/money.js';
import type { Amount, AssetSpec, MarketSpec, Price } from '../domain/types.js';

export interface ValuationSource {
  readonly catalogue: {
    asset(code: string): AssetSpec | undefined;
    markets(): readonly MarketSpec[];
  };
  lastPrice(marketId: MarketSpec['id']): Price | null;
}

export interface Valuation {
  /** The valuation currency's code (shown as `balance_currency`). */
  readonly currency: string;
  /** Its decimals, for formatting. */
  readonly decimals: number;
  /** The value of `amount` ledger units of `asset`, in ledger units of the valuation currency. */
  value(asset: AssetSpec, amount: Amount): bigint;
}

/** 10^e for a possibly negative exponent, as a fraction [numerator, denominator]. */
const pow10Fraction = (e: number): [bigint, bigint] => (e >= 0 ? [POW10N[e]!, 1n] : [1n, POW10N[-e]!]);

/**
 * A valuation at the current last prices. `currency` that is not an asset of the catalogue still
 * works (every other asset is then worth 0) with 2 decimals, so the wallet never fails over it.
 */
export function createValuation(source: ValuationSource, currency: string): Valuation {
  const target = source.catalogue.asset(currency);
  const decimals = target?.decimals ?? 2;
  return {
    currency,
    decimals,
    value(asset, amount) {
      if (amount === 0) return 0n;
      if (asset.code === currency) return BigInt(amount);
      if (target === undefined) return 0n;
      for (const market of source.catalogue.markets()) {
        const price =
          market.base === asset.code && market.quote === currency ? source.lastPrice(market.id) : null;
        if (price !== null && price > 0) {
          // amount·10^-ad base × price·10^-pd quote/base, in units of 10^-qd quote.
          const [num, den] = pow10Fraction(decimals - asset.decimals - market.pairDecimals);
          return (BigInt(amount) * BigInt(price) * num) / den;
        }
      }
      for (const market of source.catalogue.markets()) {
        const price =
          market.quote === asset.code && market.base === currency ? source.lastPrice(market.id) : null;
        if (price !== null && price > 0) {
          // amount·10^-ad quote ÷ (price·10^-pd quote/base), in units of 10^-bd base.
          const [num, den] = pow10Fraction(decimals + market.pairDecimals - asset.decimals);
          return (BigInt(amount) * num) / (BigInt(price) * den);
        }
      }
      return 0n;
    },
  };
}
