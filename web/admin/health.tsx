/**
 * Health: /readyz, and the metrics' figures (GET /admin/v1/health) polled every few seconds.
 * Commit latency is shown for the last interval (the difference of two polls' histograms) and
 * since start; a sparkline keeps the last few minutes of p95 and of WebSocket connections.
 */
import type { ComponentChildren } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import { type Bucket, bucketDifference, histogramQuantile } from '../../src/admin/histogram.js';
import { type AdminClient, type Health, readiness } from './client.js';
import { Alert, Panel } from './ui.js';

const POLL_MS = 5000;
const FIRST_POLL_MS = 1000;
const KEEP = 60; // samples: 5 minutes

interface Sample {
  readonly at: number;
  readonly ready: { ready: boolean; status: string };
  readonly health: Health;
  /** Latency of the commits since the previous sample (null when none). */
  readonly window: {
    seconds: number;
    count: number;
    p50: number | null;
    p95: number | null;
    p99: number | null;
  } | null;
}

const buckets = (h: Health): Bucket[] => h.commits.buckets.map((b) => ({ le: b.le_ms, count: b.count }));

export function HealthView(props: { readonly client: AdminClient }) {
  const [samples, setSamples] = useState<readonly Sample[]>([]);
  const [error, setError] = useState<string | null>(null);
  const last = useRef<Sample | null>(null);

  useEffect(() => {
    let stopped = false;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const poll = async () => {
      try {
        const [ready, health] = await Promise.all([readiness(), props.client.get<Health>('/health')]);
        if (stopped) return;
        const previous = last.current;
        let window: Sample['window'] = null;
        if (previous !== null && health.commits.count >= previous.health.commits.count) {
          const diff = bucketDifference(buckets(health), buckets(previous.health));
          window = {
            seconds: Math.max(1, Math.round((Date.now() - previous.at) / 1000)),
            count: health.commits.count - previous.health.commits.count,
            p50: histogramQuantile(diff, 0.5),
            p95: histogramQuantile(diff, 0.95),
            p99: histogramQuantile(diff, 0.99),
          };
        }
        const sample: Sample = { at: Date.now(), ready, health, window };
        last.current = sample;
        setSamples((s) => [...s.slice(-(KEEP - 1)), sample]);
        setError(null);
      } catch (caught) {
        if (!stopped) setError(caught instanceof Error ? caught.message : String(caught));
      } finally {
        // The first interval is short, so the last-interval figures appear at once.
        if (!stopped) timer = setTimeout(poll, last.current?.window === null ? FIRST_POLL_MS : POLL_MS);
      }
    };
    void poll();
    return () => {
      stopped = true;
      clearTimeout(timer);
    };
  }, [props.client]);

  const current = samples.at(-1);
  if (current === undefined)
    return (
      <Panel title="Health">
        {error === null ? <p class="muted">Loading…</p> : <Alert kind="error">{error}</Alert>}
      </Panel>
    );
  const { health, ready, window } = current;
  const interval = window === null ? 'last interval' : `last ${window.seconds} s`;
  const c = health.commits;
  return (
    <div class="health-layout">
      {error !== null && <Alert kind="error">Last poll failed: {error}</Alert>}
      <div class="cards">
        <Card label="Readiness (/readyz)" tone={ready.ready ? 'ok' : 'bad'}>
          <span class="big">{ready.status}</span>
          <small class="muted">up {duration(health.uptime_seconds)}</small>
        </Card>
        <Card label={`Commit latency p95 (${interval})`} tone={toneOf(window?.p95 ?? null)}>
          <span class="big num">{ms(window?.p95 ?? null)}</span>
          <small class="muted">
            {window === null
              ? 'measuring…'
              : window.count === 0
                ? 'no commits in this interval'
                : `p50 ${ms(window.p50)} · p99 ${ms(window.p99)} · ${window.count} commits`}
          </small>
        </Card>
        <Card label="WebSocket connections" tone="plain">
          <span class="big num">{health.websocket.connections}</span>
          <small class="muted">{health.websocket.subscriptions} subscriptions</small>
        </Card>
        <Card label="Commit failures" tone={c.failures === 0 ? 'ok' : 'bad'}>
          <span class="big num">{c.failures}</span>
          <small class="muted">{c.count} commits since start</small>
        </Card>
      </div>
      <div class="detail-grid">
        <Panel title="Commit latency">
          <table class="rows compact">
            <thead>
              <tr>
                <th scope="col" />
                <th scope="col" class="num">
                  {interval}
                </th>
                <th scope="col" class="num">
                  since start
                </th>
              </tr>
            </thead>
            <tbody>
              <tr>
                <th scope="row">p50</th>
                <td class="num">{ms(window?.p50 ?? null)}</td>
                <td class="num">{ms(c.p50_ms)}</td>
              </tr>
              <tr>
                <th scope="row">p95</th>
                <td class="num">{ms(window?.p95 ?? null)}</td>
                <td class="num">{ms(c.p95_ms)}</td>
              </tr>
              <tr>
                <th scope="row">p99</th>
                <td class="num">{ms(window?.p99 ?? null)}</td>
                <td class="num">{ms(c.p99_ms)}</td>
              </tr>
              <tr>
                <th scope="row">mean</th>
                <td class="num muted">—</td>
                <td class="num">{ms(c.mean_ms)}</td>
              </tr>
              <tr>
                <th scope="row">commits</th>
                <td class="num">{window?.count ?? '—'}</td>
                <td class="num">{c.count}</td>
              </tr>
            </tbody>
          </table>
          <Sparkline
            label="p95 commit latency, last 5 minutes (ms)"
            values={samples.map((s) => s.window?.p95 ?? null)}
          />
          <p class="muted small">
            Estimated from the histogram buckets, as Prometheus's histogram_quantile does (interpolated inside
            a bucket).
          </p>
        </Panel>
        <Panel title="Connections and process">
          <dl class="pairs">
            <dt>WebSocket connections</dt>
            <dd class="num">{health.websocket.connections}</dd>
            <dt>subscriptions</dt>
            <dd class="num">{health.websocket.subscriptions}</dd>
            <dt>refused (per address)</dt>
            <dd class="num">{health.websocket.refused_per_ip}</dd>
            <dt>refused (upgrade rate)</dt>
            <dd class="num">{health.websocket.refused_upgrade_rate}</dd>
            <dt>engine events committed</dt>
            <dd class="num">{health.events}</dd>
            <dt>memory (RSS)</dt>
            <dd class="num">{mib(health.memory.rss_bytes)}</dd>
            <dt>heap used</dt>
            <dd class="num">{mib(health.memory.heap_used_bytes)}</dd>
          </dl>
          <Sparkline
            label="WebSocket connections, last 5 minutes"
            values={samples.map((s) => s.health.websocket.connections)}
          />
          <p class="muted small">
            Updated every {POLL_MS / 1000} s; the full set is at <code>GET /metrics</code> (Prometheus).
          </p>
        </Panel>
      </div>
    </div>
  );
}

function Card(props: {
  readonly label: string;
  readonly tone: 'ok' | 'warn' | 'bad' | 'plain';
  readonly children: ComponentChildren;
}) {
  return (
    <div class={`card tone-${props.tone}`}>
      <span class="card-label">{props.label}</span>
      {props.children}
    </div>
  );
}

/** An inline SVG line of the last values (gaps where there is none); no library, no style attribute. */
function Sparkline(props: { readonly label: string; readonly values: readonly (number | null)[] }) {
  const width = 300;
  const height = 48;
  const present = props.values.filter((v): v is number => v !== null);
  const max = Math.max(...present, 0) || 1;
  const step = width / Math.max(KEEP - 1, 1);
  const offset = KEEP - props.values.length;
  let d = '';
  let pen = false;
  let end: { x: number; y: number } | null = null;
  for (const [i, v] of props.values.entries()) {
    if (v === null) {
      pen = false;
      continue;
    }
    const x = (offset + i) * step;
    const y = height - 2 - (v / max) * (height - 4);
    d += `${pen ? 'L' : 'M'}${x.toFixed(1)},${y.toFixed(1)}`;
    pen = true;
    end = i === props.values.length - 1 ? { x, y } : null;
  }
  return (
    <figure class="sparkline">
      <svg viewBox={`0 0 ${width} ${height}`} preserveAspectRatio="none" role="img" aria-label={props.label}>
        <path d={d} />
        {end !== null && <circle cx={end.x} cy={end.y} r="2.5" />}
      </svg>
      <figcaption class="muted small">
        {props.label}
        {present.length === 0 ? ': no data yet' : `; max ${Number.isInteger(max) ? max : max.toFixed(2)}`}
      </figcaption>
    </figure>
  );
}

const ms = (v: number | null): string =>
  v === null ? '—' : v < 1 ? `${v.toFixed(3)} ms` : `${v.toFixed(2)} ms`;
const mib = (bytes: number): string => `${(bytes / 1048576).toFixed(1)} MiB`;
const toneOf = (p95: number | null): 'ok' | 'warn' | 'bad' | 'plain' =>
  p95 === null ? 'plain' : p95 < 20 ? 'ok' : p95 < 100 ? 'warn' : 'bad';

function duration(seconds: number): string {
  const d = Math.floor(seconds / 86400);
  const h = Math.floor((seconds % 86400) / 3600);
  const m = Math.floor((seconds % 3600) / 60);
  if (d > 0) return `${d} d ${h} h`;
  if (h > 0) return `${h} h ${m} min`;
  return `${m} min ${seconds % 60} s`;
}
