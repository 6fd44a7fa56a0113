/**
 * What a newcomer copies from the README works: every file it cites is in the repository, the
 * `simulate` line does not aim at the directory `npm start` already filled, and the admin
 * commands act on the user just created, not on an id that belongs to the demo account.
 */
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';

const ROOT = join(import.meta.dirname, '..', '..');
const README = readFileSync(join(ROOT, 'README.md'), 'utf8');
const shellLines = [...README.matchAll(/```sh\n([\s\S]*?)```/g)].flatMap((m) => m[1]!.split('\n'));

test('every repository file the README cites exists', () => {
  const cited = [...README.matchAll(/`((?:docs|examples|scripts|deploy|shared|src|test)\/[\w./-]+)`/g)].map(
    (m) => m[1]!,
  );
  assert.ok(cited.length > 10, `${cited.length} paths cited`);
  const missing = cited.filter((path) => !existsSync(join(ROOT, path)));
  assert.deepEqual(missing, []);
  assert.ok(cited.includes('docs/spot-trading-interface.md'), 'the interface document is cited, in docs/');
});

test("the README's simulate line writes a new directory, not npm start's ./data", () => {
  const simulate = shellLines.filter((line) => /openspot simulate\b/.test(line));
  assert.ok(simulate.length > 0);
  for (const line of simulate) {
    const dir = /--data-dir\s+(\S+)/.exec(line)?.[1];
    assert.ok(dir !== undefined, line);
    assert.notEqual(dir.replace(/\/+$/, ''), './data', line);
  }
});

test('admin commands act on the user created just before, not on a guessed id', () => {
  const guessed = shellLines.filter((line) =>
    /openspot (?:keys create|deposit|withdraw|users balances) \d/.test(line),
  );
  assert.deepEqual(guessed, [], 'in development ids 1 to 6 are the demo and simulator accounts');
  const created = shellLines.find((line) => /openspot .*users create/.test(line));
  const variable = created === undefined ? undefined : /^(\w+)=\$\(/.exec(created)?.[1];
  assert.ok(variable, `the created id is kept: ${created}`);
  assert.ok(shellLines.some((line) => line.includes(`keys create "$${variable}"`)));
});
