/** Latency quantiles the operator sees, from histogram buckets. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { bucketDifference, histogramQuantile } from './histogram.js';

const buckets = [
  { le: 1, count: 50 },
  { le: 2, count: 90 },
  { le: 5, count: 100 },
  { le: null, count: 100 },
];

test('quantiles interpolate inside the bucket the rank falls in, like histogram_quantile', () => {
  assert.equal(histogramQuantile(buckets, 0.5), 1);
  assert.equal(histogramQuantile(buckets, 0.25), 0.5);
  assert.equal(histogramQuantile(buckets, 0.7), 1.5);
  assert.equal(histogramQuantile(buckets, 0.95), 3.5);
});

test('no observations give no quantile; a rank in +Inf gives the highest finite bound', () => {
  assert.equal(
    histogramQuantile(
      [
        { le: 1, count: 0 },
        { le: null, count: 0 },
      ],
      0.5,
    ),
    null,
  );
  assert.equal(
    histogramQuantile(
      [
        { le: 1, count: 1 },
        { le: null, count: 10 },
      ],
      0.99,
    ),
    1,
  );
});

test('the difference of two snapshots holds only the observations made between them', () => {
  const earlier = [
    { le: 1, count: 50 },
    { le: 2, count: 50 },
    { le: 5, count: 50 },
    { le: null, count: 50 },
  ];
  const window = bucketDifference(buckets, earlier);
  assert.deepEqual(
    window.map((b) => b.count),
    [0, 40, 50, 50],
  );
  assert.equal(histogramQuantile(window, 0.5), 1 + 25 / 40);
});
