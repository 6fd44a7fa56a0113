/**
 * The published package as a user gets it: `npm pack` ships only what the `files` list names
 * (the build, the docs, the deploy examples, no tests, benches or CI), and the tarball installed
 * in a new project gives a working `openspot` command and every export.
 *
 * Offline-safe: the install uses npm's cache only (`--offline`, filled by the project's own
 * install), then `--prefer-offline`; only if both fail is the install check skipped, with a
 * visible message. The pack uses the existing dist/ (`node scripts/build.mjs` refreshes it).
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';

const ROOT = join(import.meta.dirname, '..');
const NPM = process.platform === 'win32' ? 'npm.cmd' : 'npm';
const built = existsSync(join(ROOT, 'dist', 'src', 'cli', 'main.js'));
if (!built)
  process.stderr.write('\n*** npm pack test skipped: no dist/ (run node scripts/build.mjs) ***\n\n');

interface Packed {
  readonly filename: string;
  readonly entryCount: number;
  readonly unpackedSize: number;
  readonly files: readonly { readonly path: string }[];
}

const run = (command: string, args: readonly string[], cwd: string) =>
  spawnSync(command, args, {
    cwd,
    encoding: 'utf8',
    env: { ...process.env, NODE_ENV: '' },
    timeout: 240_000,
  });

describe('the npm package', { skip: built ? false : 'no dist/', timeout: 600_000 }, () => {
  let work: string;
  let packed: Packed;
  before(() => {
    work = mkdtempSync(join(tmpdir(), 'openspot-pack-'));
    // --ignore-scripts: `prepare` would rebuild dist/ (minutes on a busy machine) for nothing.
    const result = run(NPM, ['pack', '--json', '--ignore-scripts', '--pack-destination', work], ROOT);
    assert.equal(result.status, 0, result.stderr);
    packed = (JSON.parse(result.stdout) as Packed[])[0]!;
  });
  after(() => rmSync(work, { recursive: true, force: true }));

  test('ships the build, docs and deploy examples, and nothing of the development tree', () => {
    const paths = packed.files.map((f) => f.path);
    for (const needed of [
      'package.json',
      'README.md',
      'dist/src/cli/main.js',
      'dist/src/index.js',
      'dist/src/client/index.d.ts',
      'dist/src/testing/index.js',
      'dist/web/terminal/index.html',
      'docs/spot-trading-interface.md',
      'deploy/nginx.conf',
      'scripts/sign.mjs',
    ])
      assert.ok(paths.includes(needed), needed);
    // Tests ship only as the examples' own (docs/bot-testing.md shows them to bot developers).
    const stray = paths.filter(
      (p) =>
        /^(test|bench|src|web|\.ci|coverage|test-output)\/|^tsconfig|^biome/.test(p) ||
        (/\.test\.(js|ts)$/.test(p) && !p.startsWith('examples/')),
    );
    assert.deepEqual(stray, []);
    assert.ok(packed.entryCount < 700, `${packed.entryCount} files`);
  });

  test('installs into a new project: the openspot command runs and every export loads', (t) => {
    const project = join(work, 'project');
    run('mkdir', ['-p', project], work);
    writeFileSync(
      join(project, 'package.json'),
      JSON.stringify({ name: 'pack-check', private: true, type: 'module' }),
    );
    const tarball = join(work, packed.filename);
    // --ignore-scripts: better-sqlite3 would compile its addon when no prebuilt one can be
    // fetched (minutes); its JavaScript loads the addon only when a database is opened.
    const base = ['install', '--no-audit', '--no-fund', '--omit=dev', '--ignore-scripts', tarball];
    let install = run(NPM, [...base, '--offline'], project);
    if (install.status !== 0) install = run(NPM, [...base, '--prefer-offline'], project);
    if (install.status !== 0) {
      const reason = `npm could not install the tarball offline or online: ${install.stderr.split('\n').slice(-4).join(' ')}`;
      process.stderr.write(`\n*** npm pack install check skipped: ${reason} ***\n\n`);
      t.skip(reason);
      return;
    }
    const help = run(join(project, 'node_modules', '.bin', 'openspot'), ['--help'], project);
    assert.equal(help.status, 0, help.stderr);
    assert.match(help.stdout, /Usage: openspot/);
    for (const command of ['serve', 'test-venue', 'simulate', 'checkpoint'])
      assert.match(help.stdout, new RegExp(`\\b${command}\\b`));

    const check = `
      const root = await import('openspot');
      const client = await import('openspot/client');
      const realtime = await import('openspot/client/realtime');
      const testing = await import('openspot/testing');
      console.log(JSON.stringify({
        root: typeof root.startServer, engine: typeof root.Engine,
        client: typeof client.OpenSpotClient, realtime: Object.keys(realtime).length,
        testing: typeof testing.startTestVenue,
      }));`;
    const loaded = run(process.execPath, ['--input-type=module', '-e', check], project);
    assert.equal(loaded.status, 0, loaded.stderr);
    assert.deepEqual(JSON.parse(loaded.stdout), {
      root: 'function',
      engine: 'function',
      client: 'function',
      realtime: JSON.parse(loaded.stdout).realtime,
      testing: 'function',
    });
    assert.ok(
      (JSON.parse(loaded.stdout) as { realtime: number }).realtime > 0,
      'openspot/client/realtime exports',
    );
  });
});
