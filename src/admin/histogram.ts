/**
 * Quantiles from a cumulative histogram, as Prometheus's histogram_quantile estimates them:
 * linear interpolation inside the bucket the rank falls in (the first bucket starts at 0); a rank
 * in the +Inf bucket answers the highest finite bound. Used by GET /admin/v1/health, and by the
 * operator console on the difference of two polls (the latency of the interval between them).
 * No imports: the console's bundle includes this file as it is.
 */

/** One bucket: its upper bound (null = +Inf) and the cumulative count of observations ≤ it. */
export interface Bucket {
  readonly le: number | null;
  readonly count: number;
}

export function histogramQuantile(buckets: readonly Bucket[], q: number): number | null {
  const total = buckets.at(-1)?.count ?? 0;
  if (total === 0) return null;
  const rank = q * total;
  let lower = 0;
  let below = 0;
  for (const bucket of buckets) {
    if (bucket.count >= rank) {
      if (bucket.le === null) return lower;
      const inBucket = bucket.count - below;
      return inBucket === 0 ? bucket.le : lower + ((bucket.le - lower) * (rank - below)) / inBucket;
    }
    if (bucket.le !== null) lower = bucket.le;
    below = bucket.count;
  }
  return lower;
}

/** The buckets of the observations made between two snapshots of the same histogram. */
export function bucketDifference(later: readonly Bucket[], earlier: readonly Bucket[]): Bucket[] {
  return later.map((b, i) => ({ le: b.le, count: b.count - (earlier[i]?.count ?? 0) }));
}
