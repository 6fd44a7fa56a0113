// The pages' bundle sizes from Vite's manifest (dist/web/.vite/manifest.json): for each page, the
// gzip size of every JS and CSS file it loads (its entry and the chunks it imports statically),
// with the chart library's chunk (`charts`) counted apart. gzip level 9, what nginx's and most
// CDNs' precompressed files use; Fastify itself sends them uncompressed (docs/operations.md).
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';

/** Budget for a page without the chart library (issue 15): 150 kB gzip. */
export const PAGE_BUDGET_BYTES = 150 * 1000;

/**
 * @param {string} webDir  dist/web (or another outDir of web/vite.config.ts)
 * @returns {{page: string, appBytes: number, chartBytes: number, files: string[]}[]}
 */
export function bundleSizes(webDir) {
  const manifest = JSON.parse(readFileSync(join(webDir, '.vite', 'manifest.json'), 'utf8'));
  const gz = (file) => gzipSync(readFileSync(join(webDir, file)), { level: 9 }).length;
  const pages = [];
  for (const [key, entry] of Object.entries(manifest)) {
    if (entry.isEntry !== true) continue;
    const seen = new Set();
    const files = new Set();
    const visit = (id) => {
      if (seen.has(id)) return;
      seen.add(id);
      const chunk = manifest[id];
      if (chunk === undefined) return;
      files.add(chunk.file);
      for (const css of chunk.css ?? []) files.add(css);
      for (const next of chunk.imports ?? []) visit(next);
    };
    visit(key);
    let appBytes = 0;
    let chartBytes = 0;
    for (const file of files) {
      if (/(^|\/)charts-[^/]*\.js$/.test(file)) chartBytes += gz(file);
      else appBytes += gz(file);
    }
    pages.push({ page: entry.name ?? key, appBytes, chartBytes, files: [...files].sort() });
  }
  return pages.sort((a, b) => a.page.localeCompare(b.page));
}

/** One line per page, e.g. `terminal: 31.2 kB gzip (+ charts 47.9 kB)`. */
export function formatSizes(pages) {
  const kb = (bytes) => `${(bytes / 1000).toFixed(1)} kB`;
  return pages.map(
    (p) =>
      `${p.page}: ${kb(p.appBytes)} gzip${p.chartBytes > 0 ? ` (+ chart library ${kb(p.chartBytes)})` : ''}` +
      `, budget ${kb(PAGE_BUDGET_BYTES)} without the chart library`,
  );
}
