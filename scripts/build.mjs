#!/usr/bin/env node
// The build: the server (tsc -p tsconfig.build.json, into dist/) and the browser pages (Vite,
// web/vite.config.ts, into dist/web; their gzip sizes are printed). As npm scripts need it:
//   node scripts/build.mjs                  `npm run build`: both; fails when a tool is missing
//   node scripts/build.mjs --if-available   `prepare`: build when TypeScript and Vite are
//                                           installed, and skip when they are not (a production
//                                           install leaves out dev dependencies)
//   node scripts/build.mjs --for-start      `npm start`: build first in development; under
//                                           NODE_ENV=production run the build that is there (built
//                                           once, see docs/operations.md) and fail clearly if none
//   node scripts/build.mjs --web-only [--out-dir DIR]   only the pages (the browser tests build
//                                           into their own directory this way)
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { bundleSizes, formatSizes } from './bundle-size.mjs';

const root = join(import.meta.dirname, '..');
const entry = join(root, 'dist', 'src', 'main.js');
const webEntry = join(root, 'dist', 'web', 'terminal', 'index.html');
const args = process.argv.slice(2);
const mode = args.find((a) => a.startsWith('--') && a !== '--out-dir');
const outDirAt = args.indexOf('--out-dir');
const webOut = outDirAt >= 0 ? resolve(args[outDirAt + 1]) : join(root, 'dist', 'web');
const say = (line) => process.stderr.write(`openspot build: ${line}\n`);

/** The bin of an installed package (`typescript/bin/tsc`), or undefined when it is not installed. */
function binPath(pkg, bin) {
  try {
    // TypeScript 7 exports no `bin/tsc` subpath: find the package, then its bin beside it.
    const manifest = createRequire(join(root, 'package.json')).resolve(`${pkg}/package.json`);
    const path = join(dirname(manifest), bin);
    return existsSync(path) ? path : undefined;
  } catch {
    return undefined;
  }
}

function run(bin, binArgs) {
  const result = spawnSync(process.execPath, [bin, ...binArgs], { cwd: root, stdio: 'inherit' });
  if (result.status !== 0) process.exit(result.status ?? 1);
}

function buildWeb(vite) {
  run(vite, ['build', '--config', join(root, 'web', 'vite.config.ts'), '--outDir', webOut, '--manifest']);
  for (const line of formatSizes(bundleSizes(webOut))) say(`pages: ${line}`);
}

if (mode === '--for-start' && process.env.NODE_ENV === 'production') {
  if (!existsSync(entry)) {
    say(
      `${entry} does not exist. Build once before a production start: npm ci && npm run build && npm prune --omit=dev (docs/operations.md).`,
    );
    process.exit(1);
  }
  if (!existsSync(webEntry))
    say(`${webEntry} does not exist: the API works, the web pages answer 503 until \`npm run build\`.`);
  process.exit(0);
}

const tsc = binPath('typescript', join('bin', 'tsc'));
const vite = binPath('vite', join('bin', 'vite.js'));

if (mode === '--web-only') {
  if (vite === undefined) {
    say('Vite is not installed: run `npm install` (with dev dependencies) first.');
    process.exit(1);
  }
  buildWeb(vite);
  process.exit(0);
}

if (tsc === undefined || vite === undefined) {
  const missing = tsc === undefined ? 'TypeScript' : 'Vite';
  if (mode === '--if-available') {
    say(
      `${missing} is not installed (dev dependencies left out): skipping the build. Run \`npm run build\` where they are installed.`,
    );
    process.exit(0);
  }
  if (mode === '--for-start' && existsSync(entry)) {
    say(`${missing} is not installed: starting the existing build in dist/ without rebuilding it.`);
    process.exit(0);
  }
  say(`${missing} is not installed: run \`npm install\` (with dev dependencies) first.`);
  process.exit(1);
}
run(tsc, ['-p', join(root, 'tsconfig.build.json')]);
buildWeb(vite);
