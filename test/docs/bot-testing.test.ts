/**
 * docs/bot-testing.md shows the example bot and its test in full: each listing that starts with
 * `// examples/<file>` must be that file, as a user would write it (package imports, no header).
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';

const ROOT = join(import.meta.dirname, '../..');
const PACKAGE_PATHS: ReadonlyArray<readonly [string, string]> = [
  ['../../src/client/index.js', 'openspot/client'],
  ['../../src/client/realtime.js', 'openspot/client/realtime'],
  ['../../src/testing/index.js', 'openspot/testing'],
];

/** The file as the documentation shows it: without its header comment, importing the package. */
function asDocumented(source: string): string {
  let text = source.replace(/^\/\*\*[\s\S]*?\*\/\n/, '');
  for (const [local, published] of PACKAGE_PATHS) text = text.replaceAll(`'${local}'`, `'${published}'`);
  return text.replace(/^(import .*;) \/\/ .*$/gm, '$1').trim();
}

test('the listings of docs/bot-testing.md are the example files', () => {
  const doc = readFileSync(join(ROOT, 'docs/bot-testing.md'), 'utf8');
  const listings = [...doc.matchAll(/```ts\n\/\/ (examples\/\S+)\n([\s\S]*?)```/g)];
  assert.equal(listings.length, 4);
  for (const [, file, body] of listings) {
    const source = readFileSync(join(ROOT, file!), 'utf8');
    assert.equal(body!.trim(), asDocumented(source), `${file} differs from its listing`);
  }
});
