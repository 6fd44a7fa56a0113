/**
 * The browser pages' build: one Vite multi-page build of web/terminal (the trading terminal, `/`)
 * and web/admin (the operator console, `/admin`), sharing web/shared. Output in dist/web:
 * `terminal/index.html`, `admin/index.html` and content-hashed files under `assets/`, which
 * src/http/pages.ts serves (the html with no-cache, the hashed files as immutable).
 *
 * No plugin: esbuild compiles TSX for Preact by itself (web/tsconfig.json: jsxImportSource).
 */
import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vite';

const web = fileURLToPath(new URL('.', import.meta.url));

export default defineConfig({
  root: web,
  base: '/',
  // web/public: files served at the root under their own names (favicon.svg).
  publicDir: 'public',
  logLevel: 'warn',
  esbuild: { jsx: 'automatic', jsxImportSource: 'preact' },
  build: {
    outDir: fileURLToPath(new URL('../dist/web', import.meta.url)),
    emptyOutDir: true,
    target: 'es2022',
    // No inline <script>: the CSP allows scripts from 'self' only, so even the module preload
    // polyfill must be a file (Vite would otherwise inline nothing for modules, but be explicit).
    modulePreload: { polyfill: false },
    assetsInlineLimit: 0,
    reportCompressedSize: false,
    chunkSizeWarningLimit: 400,
    rollupOptions: {
      input: {
        terminal: fileURLToPath(new URL('terminal/index.html', import.meta.url)),
        admin: fileURLToPath(new URL('admin/index.html', import.meta.url)),
      },
      output: {
        // The chart library in its own file: cached apart from the app, and counted apart in the
        // bundle-size report (scripts/build.mjs).
        manualChunks: (id) => (id.includes('node_modules/lightweight-charts') ? 'charts' : undefined),
      },
    },
  },
});
