// The pages stay small (issue 15: under 150 kB gzip without the chart library), measured on a
// real build: what a first visit downloads before anything is cached.
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { test } from 'node:test';
import { bundleSizes, formatSizes, PAGE_BUDGET_BYTES } from '../../scripts/bundle-size.mjs';
import { buildPages } from './harness.js';

test('each page is under 150 kB gzip without the chart library, which is its own file', () => {
  const out = buildPages();
  try {
    const pages = bundleSizes(out);
    process.stderr.write(`${formatSizes(pages).join('\n')}\n`);
    const terminal = pages.find((p) => p.page === 'terminal');
    assert.ok(terminal !== undefined, 'the terminal page is built');
    assert.ok(terminal.chartBytes > 0, 'the chart library is a separate chunk');
    for (const page of pages)
      assert.ok(page.appBytes < PAGE_BUDGET_BYTES, `${page.page}: ${page.appBytes} bytes gzip`);
  } finally {
    rmSync(out, { recursive: true, force: true });
  }
});
