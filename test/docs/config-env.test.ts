/**
 * Every environment variable the server's configuration reads (src/config/config.ts) is
 * documented: in the README's configuration table or in docs/operations.md. And every variable
 * the README's table lists is one the server reads, so the table never promises a setting that
 * does nothing.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';

const ROOT = join(import.meta.dirname, '../..');
const read = (path: string) => readFileSync(join(ROOT, path), 'utf8');

/** Names read as `env.NAME`, `env['NAME']`, or or passed as `(env, 'NAME'[, 'BURST_NAME']` to the helpers. */
function variablesRead(source: string): Set<string> {
  const names = new Set<string>();
  for (const m of source.matchAll(/\benv(?:\.|\[')([A-Z][A-Z0-9_]+)/g)) names.add(m[1]!);
  for (const m of source.matchAll(/\(env, '([A-Z][A-Z0-9_]+)'(?:, '([A-Z][A-Z0-9_]+)')?/g)) {
    names.add(m[1]!);
    if (m[2] !== undefined) names.add(m[2]);
  }
  return names;
}

/** The backquoted variable names in the first column of the README's configuration table. */
function readmeTable(readme: string): Set<string> {
  const section = readme.split('## Configuration (environment variables)')[1]?.split('\n## ')[0] ?? '';
  const names = new Set<string>();
  for (const line of section.split('\n')) {
    const first = /^\|([^|]*)\|/.exec(line)?.[1] ?? '';
    for (const m of first.matchAll(/`([A-Z][A-Z0-9_]+)`/g)) names.add(m[1]!);
  }
  return names;
}

test('every environment variable config.ts reads is documented, and the README table lists no other', () => {
  const config = read('src/config/config.ts');
  const readme = read('README.md');
  const operations = read('docs/operations.md');
  const readByConfig = variablesRead(config);
  assert.ok(
    readByConfig.has('PORT') && readByConfig.has('WS_UPGRADE_BURST_PER_IP'),
    'the scan finds the names',
  );

  const documented = new Set(
    [...readme.matchAll(/`([A-Z][A-Z0-9_]+)`/g), ...operations.matchAll(/`([A-Z][A-Z0-9_]+)/g)].map(
      (m) => m[1]!,
    ),
  );
  const missing = [...readByConfig].filter((name) => !documented.has(name));
  assert.deepEqual(missing, [], 'read by src/config/config.ts but documented nowhere');

  // SECRETS_KEY is read where the key is opened (src/auth/vault.ts), not through Config alone;
  // the cluster's settings (NATS, CLUSTER_KEY, ENGINE_PORT, the stream) by `openspot engine|gateway`.
  const sources =
    config +
    read('src/auth/vault.ts') +
    read('src/cluster/settings.ts') +
    read('src/cluster/cluster-key.ts') +
    read('src/cluster/main.ts');
  const table = readmeTable(readme);
  assert.ok(table.size > 20, 'the scan finds the table');
  const unknown = [...table].filter((name) => !variablesRead(sources).has(name));
  assert.deepEqual(unknown, [], 'listed in the README table but read by no configuration code');
});
