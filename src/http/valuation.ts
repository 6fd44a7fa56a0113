/**
 * Valuing balances in the account currency (`balance_currency`, config BALANCE_CURRENCY) for the
 * wallet's `*_in_fiat` fields. Exact integer arithmetic with BigInt; results are rounded down
 * (a valuation never overstates what the holder could get).
 *
 * Rate source: the last trade price of a market pairing the asset with the valuation currency, in
 * either direction; failing that, a path through one intermediate asset (USD -> BTC -> EUR: the
 * BTC/USD and BTC/EUR last prices), the first such asset in catalogue order. An asset with no
 * such path, or whose markets never traded, is valued at 0: the field is a decimal string, so
 * there is no null to fall back to.
 */

import { POW10N } from '../domain/money.js';
import type { Amount, AssetSpec, MarketSpec, Price } from '../domain/types.js';

export interface ValuationSource {
  readonly catalogue: {
    asset(code: string): AssetSpec | undefined;
    assets(): readonly AssetSpec[];
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

/** A conversion rate as an exact fraction: target units per source unit = num / den. */
interface Rate {
  readonly num: bigint;
  readonly den: bigint;
}

/** 10^e for a possibly negative exponent, as a fraction. */
const pow10Rate = (e: number): Rate =>
  e >= 0 ? { num: POW10N[e]!, den: 1n } : { num: 1n, den: POW10N[-e]! };

/** The rate from `from` to `to` through one market with a last price, in either direction. */
function marketRate(source: ValuationSource, from: AssetSpec, to: AssetSpec): Rate | undefined {
  for (const market of source.catalogue.markets()) {
    const direct = market.base === from.code && market.quote === to.code;
    const inverse = market.base === to.code && market.quote === from.code;
    if (!direct && !inverse) continue;
    const price = source.lastPrice(market.id);
    if (price === null || price <= 0) continue;
    if (direct) {
      // amount·10^-fd base × price·10^-pd quote/base, in units of 10^-td quote.
      const scale = pow10Rate(to.decimals - from.decimals - market.pairDecimals);
      return { num: BigInt(price) * scale.num, den: scale.den };
    }
    // amount·10^-fd quote ÷ (price·10^-pd quote/base), in units of 10^-td base.
    const scale = pow10Rate(to.decimals + market.pairDecimals - from.decimals);
    return { num: scale.num, den: BigInt(price) * scale.den };
  }
  return undefined;
}

function rateTo(
  source: ValuationSource,
  from: AssetSpec,
  to: AssetSpec,
  assets: readonly AssetSpec[],
): Rate | undefined {
  const direct = marketRate(source, from, to);
  if (direct !== undefined) return direct;
  for (const via of assets) {
    if (via.code === from.code || via.code === to.code) continue;
    const first = marketRate(source, from, via);
    const second = first === undefined ? undefined : marketRate(source, via, to);
    if (first !== undefined && second !== undefined)
      return { num: first.num * second.num, den: first.den * second.den };
  }
  return undefined;
}

/**
 * A valuation at the current last prices. `currency` that is not an asset of the catalogue still
 * works (every other asset is then worth 0) with 2 decimals, so the wallet never fails over it.
 * Rates are worked out once per asset and valuation (one wallet answer), then reused.
 */
export function createValuation(source: ValuationSource, currency: string): Valuation {
  const target = source.catalogue.asset(currency);
  const decimals = target?.decimals ?? 2;
  const assets = source.catalogue.assets();
  const rates = new Map<string, Rate | undefined>();
  return {
    currency,
    decimals,
    value(asset, amount) {
      if (amount === 0) return 0n;
      if (asset.code === currency) return BigInt(amount);
      if (target === undefined) return 0n;
      if (!rates.has(asset.code)) rates.set(asset.code, rateTo(source, asset, target, assets));
      const rate = rates.get(asset.code);
      return rate === undefined ? 0n : (BigInt(amount) * rate.num) / rate.den;
    },
  };
}
