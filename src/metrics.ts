/**
 * Prometheus metrics (prom-client). Collected at the adapters' edges so the engine and the
 * sequencer stay free of instrumentation: the store is wrapped to time commits, committed
 * batches are counted through `onCommitted`, HTTP through Fastify hooks, WebSocket on scrape.
 */
import type { FastifyInstance } from 'fastify';
import { Counter, collectDefaultMetrics, Gauge, type Metric, Registry } from 'prom-client';
import { bearerMatches } from './admin/admin-token.js';
import { type Bucket, histogramQuantile } from './admin/histogram.js';
import type { AdminHealth } from './admin/schemas.js';
import { PlainHistogram, RequestHistogram } from './metrics-request-histogram.js';
import type { Exchange } from './sequencer/ports.js';
import type { CommitLog } from './store/ports.js';
import type { CommitBatch } from './store/store.js';

export class Metrics {
  readonly registry = new Registry();
  // Observed once per group commit, which under load is every few orders: kept without
  // prom-client's per-observation work, rendering as its Histogram would.
  // (Registered here, in the order prom-client's did: GET /metrics lists the metrics as registered.)
  private readonly commitSeconds = this.registered(
    new PlainHistogram(
      'openspot_commit_duration_seconds',
      'Duration of one group commit (one store transaction, fsync included)',
      [0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 1],
    ),
  );
  private readonly batchEvents = this.registered(
    new PlainHistogram(
      'openspot_commit_batch_events',
      'Engine events written by one group commit',
      [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 5000],
    ),
  );
  private readonly commitFailures = new Counter({
    name: 'openspot_commit_failures_total',
    help: 'Group commits that failed (the batch was refused with 503)',
    registers: [this.registry],
  });
  /** Committed events by type, counted by watchExchange; the counter copies them in when read. */
  private readonly eventTotals = new Map<string, number>();
  private readonly events = eventCounter(this.registry, this.eventTotals);
  private readonly httpSeconds = new RequestHistogram(
    'openspot_http_request_duration_seconds',
    'HTTP request duration by route and status',
    [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.5],
  );

  constructor() {
    // The registry only reads name, help, type, aggregator, get() and reset() of a metric.
    this.registry.registerMetric(this.httpSeconds as unknown as Metric);
    collectDefaultMetrics({ register: this.registry, prefix: 'openspot_' });
  }

  /** A metric of our own in the registry (which reads its name, help, type, aggregator, get() and reset()). */
  private registered<M extends PlainHistogram>(metric: M): M {
    this.registry.registerMetric(metric as unknown as Metric);
    return metric;
  }

  /**
   * The same store, with each commit timed (until its promise settles) and counted: any adapter
   * of the asynchronous ports (src/store/ports.ts).
   */
  instrumentStore<S extends Pick<CommitLog, 'commit'>>(store: S): S {
    const { commitSeconds, batchEvents, commitFailures } = this;
    const commit = (batch: CommitBatch): Promise<void> => {
      const started = performance.now();
      let committed: Promise<void>;
      try {
        committed = store.commit(batch);
      } catch (error) {
        committed = Promise.reject(error);
      }
      return committed.then(
        () => {
          commitSeconds.observe((performance.now() - started) / 1000);
          batchEvents.observe(batch.events.length);
        },
        (error: unknown) => {
          commitSeconds.observe((performance.now() - started) / 1000);
          commitFailures.inc();
          throw error;
        },
      );
    };
    // Bound once per method, not on every access: signed requests read the store through this
    // proxy (the API key record) on every call.
    const bound = new Map<PropertyKey, unknown>([['commit', commit]]);
    return new Proxy(store, {
      get(target, property, receiver) {
        const known = bound.get(property);
        if (known !== undefined) return known;
        const value: unknown = Reflect.get(target, property, receiver);
        if (typeof value !== 'function') return value;
        // Bound to the real store: its methods may use private fields a proxy does not carry.
        const method: unknown = value.bind(target);
        bound.set(property, method);
        return method;
      },
    });
  }

  watchExchange(exchange: Exchange): void {
    // Counted in a plain map: a labelled inc validates and hashes its labels, too dear on the
    // commit path (once per type per batch, which under load is every few orders).
    const totals = this.eventTotals;
    exchange.onCommitted((batch) => {
      for (const event of batch.events) totals.set(event.type, (totals.get(event.type) ?? 0) + 1);
    });
  }

  private readonly wsRefused = new Counter({
    name: 'openspot_ws_connections_refused_total',
    help: 'WebSocket connections refused by a per-address limit (per_ip: too many open, upgrade_rate: too many new)',
    labelNames: ['reason'] as const,
    registers: [this.registry],
  });

  /** One connection refused by a per-address limit (src/ws/ip-admission.ts). */
  wsConnectionRefused(reason: 'per_ip' | 'upgrade_rate'): void {
    this.wsRefused.inc({ reason });
  }

  private readonly httpRefused = new Counter({
    name: 'openspot_http_connections_refused_total',
    help: 'HTTP connections refused because their address already had HTTP_MAX_CONNECTIONS_PER_IP open',
    registers: [this.registry],
  });

  httpConnectionRefused(): void {
    this.httpRefused.inc();
  }

  private wsConnections: Gauge | undefined;
  private wsSubscriptions: Gauge | undefined;
  private readonly rateLimitFallbacks = new Counter({
    name: 'openspot_rate_limit_local_fallback_total',
    help: 'Per-key rate limit checks decided by this process alone because the shared store (Redis) could not answer',
    registers: [this.registry],
  });
  private readonly chaosFaults = new Counter({
    name: 'openspot_chaos_faults_total',
    help: 'Faults injected for rehearsal (docs/chaos.md), by fault',
    labelNames: ['fault'] as const,
    registers: [this.registry],
  });

  private readonly clusterRefused = new Counter({
    name: 'openspot_cluster_messages_refused_total',
    help: 'Cluster messages refused or set aside (docs/cluster.md, "What the engine and gateways trust"), by message (command, batch) and reason',
    labelNames: ['message', 'reason'] as const,
    registers: [this.registry],
  });

  /** A command or batch from NATS that was not taken: unverified, an operator command, unreadable, a replay. */
  clusterMessageRefused(message: 'command' | 'batch', reason: string): void {
    this.clusterRefused.inc({ message, reason });
  }

  /** One injected fault (src/chaos). */
  rateLimitFallback(): void {
    this.rateLimitFallbacks.inc();
  }

  chaosFault(fault: string): void {
    this.chaosFaults.inc({ fault });
  }

  watchRealtime(stats: () => { connections: number; subscriptions: number }): void {
    this.wsConnections = new Gauge({
      name: 'openspot_ws_connections',
      help: 'Open WebSocket connections',
      registers: [this.registry],
      collect() {
        this.set(stats().connections);
      },
    });
    this.wsSubscriptions = new Gauge({
      name: 'openspot_ws_subscriptions',
      help: 'WebSocket channel subscriptions',
      registers: [this.registry],
      collect() {
        this.set(stats().subscriptions);
      },
    });
  }

  /**
   * The figures the operator console shows (GET /admin/v1/health), read from this registry: the
   * same values GET /metrics exposes, so the two never disagree.
   */
  async summary(): Promise<Omit<AdminHealth, 'status'>> {
    const commits = await this.commitSeconds.get();
    const buckets: Bucket[] = [];
    let sum = 0;
    for (const v of commits.values) {
      if (v.metricName?.endsWith('_bucket')) {
        const le = v.labels.le;
        buckets.push({ le: le === '+Inf' || le === undefined ? null : Number(le) * 1000, count: v.value });
      } else if (v.metricName?.endsWith('_sum')) sum = v.value;
    }
    const count = buckets.at(-1)?.count ?? 0;
    const quantile = (q: number) => round(histogramQuantile(buckets, q));
    const single = async (metric: Gauge | Counter | undefined, labels: Record<string, string> = {}) => {
      if (metric === undefined) return 0;
      const values = (await metric.get()).values;
      const found = values.find((v) => Object.entries(labels).every(([k, l]) => v.labels[k] === l));
      return found?.value ?? 0;
    };
    const events = (await this.events.get()).values.reduce((total, v) => total + v.value, 0);
    const memory = process.memoryUsage();
    return {
      uptime_seconds: Math.round(process.uptime()),
      commits: {
        count,
        failures: await single(this.commitFailures),
        mean_ms: count === 0 ? null : round((sum * 1000) / count),
        p50_ms: quantile(0.5),
        p95_ms: quantile(0.95),
        p99_ms: quantile(0.99),
        buckets: buckets.map((b) => ({ le_ms: b.le, count: b.count })),
      },
      websocket: {
        connections: await single(this.wsConnections),
        subscriptions: await single(this.wsSubscriptions),
        refused_per_ip: await single(this.wsRefused, { reason: 'per_ip' }),
        refused_upgrade_rate: await single(this.wsRefused, { reason: 'upgrade_rate' }),
      },
      events,
      memory: { rss_bytes: memory.rss, heap_used_bytes: memory.heapUsed },
    };
  }

  /**
   * HTTP timing for every route, and `GET /metrics` behind the admin token. `front` (the
   * PublicFront) reports the requests it answers without Fastify: counted the same way.
   */
  mount(
    app: FastifyInstance,
    adminToken: string,
    front?: { observeWith(observe: (route: string, seconds: number) => void): void },
  ): void {
    front?.observeWith((route, seconds) => this.httpSeconds.observe('GET', route, 200, seconds));
    // A callback hook, not an async one: no promise per request for a synchronous observation.
    app.addHook('onResponse', (request, reply, done) => {
      this.httpSeconds.observe(
        request.method,
        request.routeOptions.url ?? 'unknown',
        reply.statusCode,
        reply.elapsedTime / 1000,
      );
      done();
    });
    app.get('/metrics', { schema: { hide: true } }, async (request, reply) => {
      if (!bearerMatches(request.headers.authorization, adminToken)) {
        return reply.code(401).header('WWW-Authenticate', 'Bearer').send({ error: 'Unauthorized' });
      }
      return reply.type(this.registry.contentType).send(await this.registry.metrics());
    });
  }
}

/**
 * `openspot_engine_events_total`, read from `totals` when scraped: rebuilt from the totals on
 * every read, in the order the types were first counted (the order its incs used to add them).
 */
function eventCounter(registry: Registry, totals: ReadonlyMap<string, number>): Counter<'type'> {
  return new Counter({
    name: 'openspot_engine_events_total',
    help: 'Committed engine events by type (orderAccepted, trade, orderDone, deposited, ...)',
    labelNames: ['type'],
    registers: [registry],
    collect() {
      this.reset();
      for (const [type, n] of totals) this.inc({ type }, n);
    },
  });
}

/** Milliseconds to 3 decimals (microseconds): enough for a display, stable in JSON. */
const round = (ms: number | null): number | null => (ms === null ? null : Math.round(ms * 1000) / 1000);
