/**
 * How the ccxt class is packaged: ccxt is an optional peer dependency that only `openspot/ccxt`
 * loads, and the ccxt the tests run with is one the peer range declares supported.
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { test } from 'node:test';
import { version } from 'ccxt';

const ROOT = join(import.meta.dirname, '../..');
const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
  exports: Record<string, unknown>;
  peerDependencies?: Record<string, string>;
  peerDependenciesMeta?: Record<string, { optional?: boolean }>;
  devDependencies?: Record<string, string>;
  dependencies?: Record<string, string>;
};

const parts = (v: string) =>
  v
    .replace(/^[\^~]/, '')
    .split('.')
    .map(Number);

test('ccxt is an optional peer dependency and a dev dependency, never a dependency of the server', () => {
  assert.ok(pkg.peerDependencies?.ccxt, 'peer range');
  assert.equal(pkg.peerDependenciesMeta?.ccxt?.optional, true);
  assert.ok(pkg.devDependencies?.ccxt, 'dev dependency for the tests');
  assert.equal(pkg.dependencies?.ccxt, undefined);
  assert.deepEqual(pkg.exports['./ccxt'], {
    types: './dist/src/ccxt/index.d.ts',
    default: './dist/src/ccxt/index.js',
  });
});

test('the installed ccxt is within the supported peer range (caret: same major, at least the minimum)', () => {
  const range = pkg.peerDependencies?.ccxt ?? '';
  assert.match(range, /^\^\d+\.\d+\.\d+$/);
  const [major, minor, patch] = parts(range);
  const [iMajor, iMinor, iPatch] = parts(version);
  assert.equal(iMajor, major, `ccxt ${version} outside ${range}`);
  assert.ok(
    iMinor! > minor! || (iMinor === minor && iPatch! >= patch!),
    `ccxt ${version} older than ${range}`,
  );
});

test('no module outside src/ccxt imports ccxt: the server never loads it', () => {
  const offenders: string[] = [];
  const walk = (dir: string) => {
    for (const name of readdirSync(dir)) {
      const path = join(dir, name);
      if (statSync(path).isDirectory()) {
        if (path !== join(ROOT, 'src/ccxt')) walk(path);
      } else if (
        name.endsWith('.ts') &&
        /from ['"]ccxt['"]|import\(['"]ccxt['"]\)/.test(readFileSync(path, 'utf8'))
      )
        offenders.push(relative(ROOT, path));
    }
  };
  walk(join(ROOT, 'src'));
  assert.deepEqual(offenders, []);
});
