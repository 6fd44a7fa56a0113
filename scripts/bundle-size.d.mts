// Types of scripts/bundle-size.mjs, for the bundle-size test.
export interface PageSize {
  readonly page: string;
  /** gzip bytes of the page's own JS and CSS. */
  readonly appBytes: number;
  /** gzip bytes of the chart library's chunk, when the page loads it. */
  readonly chartBytes: number;
  readonly files: string[];
}
export const PAGE_BUDGET_BYTES: number;
export function bundleSizes(webDir: string): PageSize[];
export function formatSizes(pages: readonly PageSize[]): string[];
