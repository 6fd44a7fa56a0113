/**
 * The order form's 25/50/75/100 % buttons: a volume that spends that share of the AVAILABLE
 * balance (what open orders do not hold). Exact, in bigint units, and always rounded down, so a
 * button never proposes more than can be paid.
 */
import { decimalsOf, formatUnits, parseUnits, subtractDecimal } from '../shared/decimal.js';

export const SIZE_PERCENTS = [25, 50, 75, 100] as const;

/**
 * Room left on a buy for the fee, in basis points: a buy reserves its cost plus the fee, and the
 * interface publishes no fee rate. 0.5 % is above the default catalogue's highest (0.26 %) and
 * Kraken's highest taker fee (0.40 %). A market with a higher fee gets "Insufficient funds" at
 * 100 %, shown under the volume.
 */
export const BUY_FEE_ALLOWANCE_BPS = 50n;

/** The wallet's available amount of an asset: total − pending (held by open orders), exactly. */
export function availableOf(entry: {
  readonly balance: { readonly balance_total: string };
  readonly pending: { readonly balance_pending: string };
}): string {
  return subtractDecimal(entry.balance.balance_total, entry.pending.balance_pending);
}

/**
 * The volume, at `lotDecimals`, of a sell of `percent` % of the available base asset, or of a buy
 * spending `percent` % of the available quote asset at `price` (with the fee allowance).
 * Undefined for a buy without a usable price.
 */
export function volumeForPercent(params: {
  readonly side: 'buy' | 'sell';
  readonly percent: number;
  /** Available balance of the asset the order spends (base to sell, quote to buy). */
  readonly available: string;
  readonly price: string | undefined;
  readonly lotDecimals: number;
}): string | undefined {
  const { side, available, lotDecimals } = params;
  const percent = BigInt(params.percent);
  const ad = decimalsOf(available);
  const funds = available.startsWith('-') ? 0n : parseUnits(available, ad);
  const lot = 10n ** BigInt(lotDecimals);
  if (side === 'sell') return formatUnits((funds * percent * lot) / (100n * 10n ** BigInt(ad)), lotDecimals);
  const price = params.price ?? '';
  if (!/^\d+(\.\d+)?$/.test(price)) return undefined;
  const pd = decimalsOf(price);
  const priceUnits = parseUnits(price, pd);
  if (priceUnits === 0n) return undefined;
  // volume = funds × percent / 100 / price / (1 + allowance), all in integers.
  const numerator = funds * percent * lot * 10n ** BigInt(pd) * 10_000n;
  const denominator = 100n * 10n ** BigInt(ad) * priceUnits * (10_000n + BUY_FEE_ALLOWANCE_BPS);
  return formatUnits(numerator / denominator, lotDecimals);
}
