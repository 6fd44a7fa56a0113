import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Histogram, type Metric, Registry } from 'prom-client';
import { PlainHistogram, RequestHistogram } from './metrics-request-histogram.js';

const BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.5];

test('renders exactly as a prom-client Histogram given the same observations', async () => {
  const reference = new Registry();
  const histogram = new Histogram({
    name: 'x_seconds',
    help: 'h',
    labelNames: ['method', 'route', 'status'],
    buckets: BUCKETS,
    registers: [reference],
  });
  const ours = new Registry();
  const fast = new RequestHistogram('x_seconds', 'h', BUCKETS);
  ours.registerMetric(fast as unknown as Metric);
  const observations: Array<[string, string, number, number]> = [
    ['GET', '/v1/tickers', 200, 0.0004],
    ['GET', '/v1/tickers', 200, 0.003],
    ['POST', '/v1/orders', 201, 0.012],
    ['POST', '/v1/orders', 422, 0.0009],
    ['GET', '/v1/tickers', 200, 0.7],
    ['DELETE', '/v1/orders/:order_id', 200, 0.001],
  ];
  for (const [method, route, status, seconds] of observations) {
    histogram.observe({ method, route, status: String(status) }, seconds);
    fast.observe(method, route, status, seconds);
  }
  assert.equal(await ours.metrics(), await reference.metrics());
  fast.reset();
  histogram.reset();
  assert.equal(await ours.metrics(), await reference.metrics());
});

test('PlainHistogram renders exactly as an unlabelled prom-client Histogram, before, after and across reset', async () => {
  const buckets = [0.0005, 0.001, 0.002, 0.005, 0.01];
  const reference = new Registry();
  const histogram = new Histogram({ name: 'y_seconds', help: 'h', buckets, registers: [reference] });
  const ours = new Registry();
  const plain = new PlainHistogram('y_seconds', 'h', buckets);
  ours.registerMetric(plain as unknown as Metric);
  assert.equal(await ours.metrics(), await reference.metrics());
  for (const seconds of [0.0004, 0.0005, 0.003, 0.01, 0.7, 0]) {
    histogram.observe(seconds);
    plain.observe(seconds);
  }
  assert.equal(await ours.metrics(), await reference.metrics());
  // What Metrics.summary() reads of the commit histogram's values.
  const read = (values: ReadonlyArray<{ labels: object; value: number; metricName?: string }>) =>
    values.map(({ labels, value, metricName }) => ({ labels, value, metricName }));
  assert.deepEqual(read(plain.get().values), read((await histogram.get()).values));
  histogram.reset();
  plain.reset();
  assert.equal(await ours.metrics(), await reference.metrics());
  histogram.observe(0.002);
  plain.observe(0.002);
  assert.equal(await ours.metrics(), await reference.metrics());
});
