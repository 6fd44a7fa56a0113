/**
 * The HTTP request-duration histogram (labels method, route, status), kept without prom-client's
 * per-observation work (label validation, sorting and hashing the label object, a closure per
 * call): each request costs one string concatenation and a map lookup. It is registered in the
 * prom-client registry like any metric and renders exactly as a prom-client Histogram with the
 * same observations would (the test compares the two).
 */
interface Series {
  readonly labels: { method: string; route: string; status: string };
  /** Observations per bucket (not cumulative), in bucket order. */
  readonly counts: number[];
  sum: number;
  count: number;
}

interface Value {
  readonly labels: Record<string, string | number>;
  readonly value: number;
  readonly metricName: string;
}

export class RequestHistogram {
  readonly type = 'histogram';
  readonly aggregator = 'sum';
  readonly #series = new Map<string, Series>();

  constructor(
    readonly name: string,
    readonly help: string,
    private readonly buckets: readonly number[],
  ) {}

  observe(method: string, route: string, status: number, seconds: number): void {
    const key = `${method} ${status} ${route}`;
    let series = this.#series.get(key);
    if (series === undefined) {
      series = {
        labels: { method, route, status: String(status) },
        counts: this.buckets.map(() => 0),
        sum: 0,
        count: 0,
      };
      this.#series.set(key, series);
    }
    let i = 0;
    while (i < this.buckets.length && seconds > this.buckets[i]!) i++;
    if (i < this.buckets.length) series.counts[i]! += 1;
    series.sum += seconds;
    series.count += 1;
  }

  /** prom-client's Metric.get(): the registry renders what this returns. */
  get(): { name: string; help: string; type: string; values: Value[]; aggregator: string } {
    const values: Value[] = [];
    for (const series of this.#series.values()) {
      let cumulative = 0;
      this.buckets.forEach((le, i) => {
        cumulative += series.counts[i]!;
        values.push({
          labels: { le, ...series.labels },
          value: cumulative,
          metricName: `${this.name}_bucket`,
        });
      });
      values.push({
        labels: { le: '+Inf', ...series.labels },
        value: series.count,
        metricName: `${this.name}_bucket`,
      });
      values.push({ labels: { ...series.labels }, value: series.sum, metricName: `${this.name}_sum` });
      values.push({ labels: { ...series.labels }, value: series.count, metricName: `${this.name}_count` });
    }
    return { name: this.name, help: this.help, type: this.type, values, aggregator: this.aggregator };
  }

  reset(): void {
    this.#series.clear();
  }
}

/**
 * A histogram without labels (the commit timings), kept the same way: prom-client's observe
 * builds a label object, validates and hashes it on every call, and its timer allocates two
 * closures and two hrtime arrays. Renders exactly as an unlabelled prom-client Histogram with the
 * same observations (present with zeros from the start, absent after reset() until observed).
 */
export class PlainHistogram {
  readonly type = 'histogram';
  readonly aggregator = 'sum';
  #counts: number[] | undefined;
  #sum = 0;
  #count = 0;

  constructor(
    readonly name: string,
    readonly help: string,
    private readonly buckets: readonly number[],
  ) {
    this.#counts = buckets.map(() => 0);
  }

  observe(value: number): void {
    this.#counts ??= this.buckets.map(() => 0);
    let i = 0;
    while (i < this.buckets.length && value > this.buckets[i]!) i++;
    if (i < this.buckets.length) this.#counts[i]! += 1;
    this.#sum += value;
    this.#count += 1;
  }

  /** prom-client's Metric.get(): the registry renders what this returns. */
  get(): { name: string; help: string; type: string; values: Value[]; aggregator: string } {
    const values: Value[] = [];
    const counts = this.#counts;
    if (counts !== undefined) {
      let cumulative = 0;
      this.buckets.forEach((le, i) => {
        cumulative += counts[i]!;
        values.push({ labels: { le }, value: cumulative, metricName: `${this.name}_bucket` });
      });
      values.push({ labels: { le: '+Inf' }, value: this.#count, metricName: `${this.name}_bucket` });
      values.push({ labels: {}, value: this.#sum, metricName: `${this.name}_sum` });
      values.push({ labels: {}, value: this.#count, metricName: `${this.name}_count` });
    }
    return { name: this.name, help: this.help, type: this.type, values, aggregator: this.aggregator };
  }

  reset(): void {
    this.#counts = undefined;
    this.#sum = 0;
    this.#count = 0;
  }
}
