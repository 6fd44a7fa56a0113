/**
 * The Node.js version the README promises is one every installed package accepts: `npm install`
 * on it prints no EBADENGINE warning, and `engines` in package.json says the same version.
 */
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import semver from 'semver';

const ROOT = join(import.meta.dirname, '..', '..');
const readJson = (file: string) => JSON.parse(readFileSync(file, 'utf8')) as Record<string, unknown>;

/** "Node.js 20.19 or newer" in the README, as a full version: 20.19.0. */
function readmeNode(): string {
  const match = /Node\.js (\d+)\.(\d+) or newer/.exec(readFileSync(join(ROOT, 'README.md'), 'utf8'));
  assert.ok(match, 'the README names the oldest Node.js it supports ("Node.js X.Y or newer")');
  return `${match[1]}.${match[2]}.0`;
}

/** Every package.json under node_modules, nested ones included (what npm checks on install). */
function* installedPackages(dir: string): Generator<string> {
  if (!existsSync(dir)) return;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    if (!entry.isDirectory() && !entry.isSymbolicLink()) continue;
    if (entry.name.startsWith('.')) continue;
    const path = join(dir, entry.name);
    if (entry.name.startsWith('@')) {
      yield* installedPackages(path);
      continue;
    }
    if (existsSync(join(path, 'package.json'))) yield join(path, 'package.json');
    yield* installedPackages(join(path, 'node_modules'));
  }
}

test("package.json's engines is the README's Node.js", () => {
  const engines = (readJson(join(ROOT, 'package.json')).engines as { node: string }).node;
  assert.equal(semver.minVersion(engines)?.version, readmeNode());
});

test("every installed dependency accepts the README's Node.js (no EBADENGINE on npm install)", () => {
  const node = readmeNode();
  const refusing: string[] = [];
  let seen = 0;
  for (const file of installedPackages(join(ROOT, 'node_modules'))) {
    const manifest = readJson(file);
    seen += 1;
    const range = (manifest.engines as { node?: unknown } | undefined)?.node;
    if (typeof range !== 'string') continue;
    if (!semver.satisfies(node, range))
      refusing.push(`${manifest.name}@${manifest.version} wants node ${range}`);
  }
  assert.ok(seen > 100, `node_modules holds the installed tree (${seen} packages found)`);
  assert.deepEqual(refusing, [], `these refuse Node.js ${node}`);
});
