#!/usr/bin/env node
// Runs every *.test.ts under src/, test/ and examples/ with Node's own test runner (tsx compiles on the fly).
// Node 20's runner does not expand globs itself, so the files are collected here.
// `--server-suites`: only the files that start a real server through test/support/server-fixture.ts,
// or say `@server-suite` (with TEST_STORE=postgres, `npm run test:postgres` runs them on PostgreSQL).
import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

const roots = ['src', 'test', 'examples'];
const serverSuites = process.argv.includes('--server-suites');
const filter = process.argv.slice(2).filter((a) => a !== '--server-suites');
const files = [];
const walk = (dir) => {
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) walk(path);
    else if (name.endsWith('.test.ts') && (filter.length === 0 || filter.some((f) => path.includes(f))))
      files.push(path);
  }
};
for (const root of roots) {
  try {
    walk(root);
  } catch (error) {
    if (error.code !== 'ENOENT') throw error;
  }
}
files.sort();
if (serverSuites) {
  const starts = (path) => {
    const text = readFileSync(path, 'utf8');
    return text.includes('support/server-fixture') || text.includes('@server-suite');
  };
  files.splice(0, files.length, ...files.filter(starts));
}
// Budgets (scripts/test-budgets.mjs, loaded into every test process): each test its own, 120 s by
// default (TEST_TIMEOUT_MS), and a blocked event loop killed. `--test-timeout` is the last bound of
// a file as a whole (what Node 20 applies it to): one that finished its tests but does not exit
// (a handle left open) fails after 20 minutes instead of stalling the run.
const budgets = join(import.meta.dirname, 'test-budgets.mjs');
const fileBound = Number(process.env.TEST_FILE_TIMEOUT_MS ?? 20 * 60_000);
const result = spawnSync(
  process.execPath,
  [
    '--import',
    'tsx',
    '--import',
    pathToFileURL(budgets).href,
    '--test',
    `--test-timeout=${fileBound}`,
    '--test-reporter=spec',
    ...files,
  ],
  { stdio: 'inherit' },
);
process.exit(result.status ?? 1);
