/**
 * The project's own sample trade file (examples/replay/btceur-sample-trades.csv, written by
 * scripts/make-sample-trades.ts): a seeded random walk in the format `openspot replay` reads.
 * No market's real data: made here, reproducible byte for byte from the seed.
 *
 * Integers only: prices in ticks of 0.1 EUR, volumes in lots of 10^-8 BTC, times in seconds.
 */
import { seededRandom } from './random.js';

export interface SampleOptions {
  readonly trades?: number;
  readonly seed?: number;
  /** Unix seconds of the first trade. Default 2025-01-01T00:00:00Z. */
  readonly start?: number;
  /** First price in ticks of 0.1. Default 600000 (60000.0). */
  readonly startTicks?: number;
}

const pad = (n: number, width: number) => String(n).padStart(width, '0');
const decimal = (units: number, decimals: number) => {
  const digits = pad(units, decimals + 1);
  return `${digits.slice(0, -decimals)}.${digits.slice(-decimals)}`;
};

/** The file's lines (without a header, like Kraken's downloads), each `timestamp,price,volume`. */
export function sampleTradeLines(options: SampleOptions = {}): string[] {
  const random = seededRandom(options.seed ?? 2025);
  const count = options.trades ?? 3000;
  let time = options.start ?? 1_735_689_600;
  let ticks = options.startTicks ?? 600_000;
  // A drift that changes now and then: calm stretches, a sell-off, a recovery.
  let drift = 0;
  const lines: string[] = [];
  for (let i = 0; i < count; i++) {
    if (i % 250 === 0) drift = random.int(-10, 10);
    // Bursts of trades a second apart, and quieter gaps of up to half a minute.
    time += random.chance(0.3) ? random.int(0, 1) : random.int(2, 30);
    ticks += drift + random.int(-40, 40);
    // Most trades are small; a few are large, as in a real book.
    const lots = random.chance(0.05) ? random.int(10_000_000, 150_000_000) : random.int(5_000, 2_000_000);
    lines.push(`${time},${decimal(ticks, 1)},${decimal(lots, 8)}`);
  }
  return lines;
}
