#!/usr/bin/env node
// Runs every *.test.ts under src/, test/ and examples/ with Node's own test runner (tsx compiles on the fly).
// Node 20's runner does not expand globs itself, so the files are collected here.
import { spawnSync } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';

const roots = ['src', 'test', 'examples'];
const filter = process.argv.slice(2);
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
const result = spawnSync(process.execPath, ['--import', 'tsx', '--test', '--test-reporter=spec', ...files], {
  stdio: 'inherit',
});
process.exit(result.status ?? 1);
