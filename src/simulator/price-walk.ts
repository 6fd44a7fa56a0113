/**
 * The simulator's reference price: an integer number of ticks (10^-pairDecimals of the quote
 * asset) doing a bounded, mean-reverting random walk around a centre. Only the decision to step
 * up or down uses a float; the price itself is always a whole number of ticks.
 */
import type { Random } from './random.js';

export interface PriceWalk {
  /** Current price in ticks. */
  readonly ticks: bigint;
  /** Moves the price by zero, one or two steps and returns the new price. */
  step(): bigint;
}

export interface PriceWalkOptions {
  /** The centre, in ticks (the configured reference price). */
  readonly center: bigint;
  /** Where to start (e.g. the last traded price); clamped into the band. Default: the centre. */
  readonly start?: bigint;
  /** Half-width of the band in parts per ten thousand of the centre. Default 1000 (±10 %). */
  readonly bandBp?: bigint;
  /** Step size in parts per ten thousand of the centre, at least one tick. Default 5 (0.05 %). */
  readonly stepBp?: bigint;
}

const max = (a: bigint, b: bigint): bigint => (a > b ? a : b);
const min = (a: bigint, b: bigint): bigint => (a < b ? a : b);

export function priceWalk(random: Random, options: PriceWalkOptions): PriceWalk {
  const center = max(options.center, 1n);
  const band = max((center * (options.bandBp ?? 1000n)) / 10_000n, 1n);
  const stepSize = max((center * (options.stepBp ?? 5n)) / 10_000n, 1n);
  const low = max(center - band, 1n);
  const high = center + band;
  let ticks = min(max(options.start ?? center, low), high);
  return {
    get ticks() {
      return ticks;
    },
    step() {
      // Pull back towards the centre: the further out, the likelier the step goes home.
      const offset = Number(ticks - center) / Number(band);
      const pUp = Math.min(0.9, Math.max(0.1, 0.5 - 0.4 * offset));
      const steps = BigInt(random.int(0, 2));
      ticks += (random.chance(pUp) ? 1n : -1n) * steps * stepSize;
      ticks = min(max(ticks, low), high);
      return ticks;
    },
  };
}
