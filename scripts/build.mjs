#!/usr/bin/env node
// The build (`npm run build`: tsc -p tsconfig.build.json, into dist/) as two npm scripts need it:
//   node scripts/build.mjs --if-available   `prepare`: build when TypeScript is installed, and skip
//                                           it when it is not (a production install leaves out
//                                           dev dependencies, so `tsc` does not exist there)
//   node scripts/build.mjs --for-start      `npm start`: build first in development; under
//                                           NODE_ENV=production run the build that is there (built
//                                           once, see docs/operations.md) and fail clearly if none
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';

const root = join(import.meta.dirname, '..');
const entry = join(root, 'dist', 'src', 'main.js');
const mode = process.argv[2];
const say = (line) => process.stderr.write(`openspot build: ${line}\n`);

function tscPath() {
  try {
    // TypeScript 7 exports no `bin/tsc` subpath: find the package, then its bin beside it.
    const manifest = createRequire(join(root, 'package.json')).resolve('typescript/package.json');
    const bin = join(dirname(manifest), 'bin', 'tsc');
    return existsSync(bin) ? bin : undefined;
  } catch {
    return undefined;
  }
}

if (mode === '--for-start' && process.env.NODE_ENV === 'production') {
  if (existsSync(entry)) process.exit(0);
  say(
    `${entry} does not exist. Build once before a production start: npm ci && npm run build && npm prune --omit=dev (docs/operations.md).`,
  );
  process.exit(1);
}

const tsc = tscPath();
if (tsc === undefined) {
  if (mode === '--if-available') {
    say(
      'TypeScript is not installed (dev dependencies left out): skipping the build. Run `npm run build` where they are installed.',
    );
    process.exit(0);
  }
  if (mode === '--for-start' && existsSync(entry)) {
    say('TypeScript is not installed: starting the existing build in dist/ without rebuilding it.');
    process.exit(0);
  }
  say('TypeScript is not installed: run `npm install` (with dev dependencies) first.');
  process.exit(1);
}
const result = spawnSync(process.execPath, [tsc, '-p', join(root, 'tsconfig.build.json')], {
  cwd: root,
  stdio: 'inherit',
});
process.exit(result.status ?? 1);
