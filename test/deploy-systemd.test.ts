/**
 * The example systemd units and environment files (deploy/systemd, docs/deployment.md): the units
 * are the ones the cluster tests start their processes from (test/support/cluster.ts, test/support/systemd-unit.ts), so here
 * they are checked as files: each runs a command the CLI knows, each names an environment file
 * with an example, every variable of the examples is one the processes read (and every variable
 * they read is in an example or known not to apply to them), the examples' values pass the
 * configuration's own checks, and `systemd-analyze verify` accepts the units when it is installed.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import {
  chmodSync,
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { ClusterKey } from '../src/cluster/cluster-key.js';
import { clusterSettings } from '../src/cluster/settings.js';
import { loadConfig } from '../src/config/config.js';
import { DEFAULT_CATALOGUE } from '../src/config/default-catalogue.js';
import {
  CLI_COMMANDS,
  INSTALLED_BINARY,
  parseUnit,
  SYSTEMD_DIR,
  UNIT_FOR,
  type UnitCommand,
  unitCommand,
  unitWords,
} from './support/systemd-unit.js';

const units = readdirSync(SYSTEMD_DIR).filter((name) => name.endsWith('.service'));
const examples = readdirSync(SYSTEMD_DIR).filter((name) => name.endsWith('.env.example'));

/** NAME=value lines of an example, commented-out ones (`#NAME=default`) included. */
function exampleVariables(name: string): { name: string; value: string; set: boolean }[] {
  const variables = [];
  for (const line of readFileSync(join(SYSTEMD_DIR, name), 'utf8').split('\n')) {
    const match = /^(#?)([A-Z][A-Z0-9_]*)=(.*)$/.exec(line);
    if (match !== null) variables.push({ name: match[2]!, value: match[3]!, set: match[1] === '' });
  }
  return variables;
}

/** The names `read` asks for when given an environment that records every look-up. */
function namesRead(read: (env: NodeJS.ProcessEnv) => unknown): Set<string> {
  const names = new Set<string>();
  const recorder = new Proxy({} as NodeJS.ProcessEnv, {
    get: (_target, key) => {
      if (typeof key === 'string') names.add(key);
      return undefined;
    },
  });
  read(recorder);
  return names;
}

/**
 * Every variable `openspot engine` / `openspot gateway` reads: the configuration (loadConfig), the
 * cluster settings (NATS, stream, subjects), and what src/cluster/main.ts reads itself (ENGINE_PORT).
 */
function variablesRead(): Set<string> {
  const names = new Set([
    ...namesRead((env) => loadConfig(env)),
    ...namesRead((env) => clusterSettings(env)),
    ...namesRead((env) => {
      try {
        ClusterKey.fromEnvOrFile('/nonexistent', env, true);
      } catch {
        // Only the names it reads matter here.
      }
    }),
  ]);
  const main = readFileSync(new URL('../src/cluster/main.ts', import.meta.url), 'utf8');
  for (const match of main.matchAll(/process\.env\.([A-Z][A-Z0-9_]*)/g)) names.add(match[1]!);
  return names;
}

/**
 * Read by the shared configuration but of no use to a cluster process: the simulator and the demo
 * account run only in `openspot serve`, SQLite is not used (PostgreSQL is), the operator console
 * page is not served by either, NODE_ENV is set by the units themselves.
 */
const NOT_FOR_CLUSTER = new Set([
  'SIMULATOR',
  'SIMULATOR_RATE',
  'SIMULATOR_SEED',
  'SIMULATOR_REPLAY_FILE',
  'SIMULATOR_REPLAY_SPEED',
  'SIMULATOR_REPLAY_PAIR',
  'DEMO',
  'SQLITE_SYNCHRONOUS',
  'SQLITE_JOURNAL_BATCHES',
  'ADMIN_UI',
  'NODE_ENV',
]);

describe('deploy/systemd units', () => {
  test('there is a unit for each cluster command line the tests start, and each runs it', () => {
    assert.deepEqual(units.sort(), Object.values(UNIT_FOR).sort());
    for (const [args, unit] of Object.entries(UNIT_FOR)) {
      const parsed = unitCommand(args.split(' '));
      assert.equal(parsed.unit, unit);
      assert.deepEqual(parsed.args, args.split(' '));
      // Production settings, exercised by every cluster test that starts the unit.
      assert.equal(parsed.environment.NODE_ENV, 'production', unit);
    }
  });

  test("the starter's list of cluster commands is the CLI's own (src/cli/main.ts)", () => {
    for (const [command, options] of Object.entries(CLI_COMMANDS)) {
      const help = spawnSync(process.execPath, ['--import', 'tsx', 'src/cli/main.ts', command, '--help'], {
        cwd: fileURLToPath(new URL('..', import.meta.url)),
        encoding: 'utf8',
      });
      assert.equal(help.status, 0, `openspot ${command} --help: ${help.stderr}`);
      assert.match(help.stdout, new RegExp(`^Usage: openspot ${command} `, 'm'));
      const listed = [...help.stdout.matchAll(/^\s+(--[a-z-]+)/gm)]
        .map((m) => m[1])
        .filter((o) => o !== '--help');
      assert.deepEqual(listed, [...options], `openspot ${command}: options`);
    }
  });

  test('each unit reads an environment file that has an example here', () => {
    for (const unit of units) {
      const { environmentFiles } = parseUnit(readFileSync(join(SYSTEMD_DIR, unit), 'utf8'), unit);
      assert.equal(environmentFiles.length, 1, unit);
      const example = `${basename(environmentFiles[0]!)}.example`;
      assert.ok(
        examples.includes(example),
        `${unit}: no deploy/systemd/${example} for ${environmentFiles[0]}`,
      );
    }
  });

  test('a unit the CLI would not run the same way is refused, loudly', () => {
    const unit = (exec: string, extra = '') =>
      `[Unit]\nDescription=x\n[Service]\n${extra}ExecStart=${exec}\n`;
    assert.deepEqual(parseUnit(unit(`${INSTALLED_BINARY} engine --standby`), 'ok').args, [
      'engine',
      '--standby',
    ]);
    assert.throws(
      () => parseUnit(unit(`${INSTALLED_BINARY} serve`), 'u'),
      /not a cluster command the CLI knows/,
    );
    assert.throws(
      () => parseUnit(unit(`${INSTALLED_BINARY} engine --standbye`), 'u'),
      /takes no option --standbye/,
    );
    assert.throws(() => parseUnit(unit(`${INSTALLED_BINARY} gateway --standby`), 'u'), /takes no option/);
    assert.throws(() => parseUnit(unit('/usr/local/bin/openspot gateway'), 'u'), /not the installed CLI/);
    assert.throws(() => parseUnit(unit(`-${INSTALLED_BINARY} gateway`), 'u'), /not the installed CLI/);
    assert.throws(() => parseUnit(unit(`${INSTALLED_BINARY} $MODE`), 'u'), /not supported/);
    assert.throws(() => parseUnit('[Service]\nType=simple\n', 'u'), /exactly one ExecStart/);
    assert.throws(() => unitCommand(['serve']), /no unit in deploy\/systemd starts `openspot serve`/);
    assert.throws(
      () => unitCommand(['engine'], 'openspot-engine-standby.service'),
      /runs `openspot engine --standby`, the test asked for `openspot engine`/,
    );
    const withEnvironment: UnitCommand = parseUnit(
      unit(`${INSTALLED_BINARY} \\\n  gateway`, 'Environment="A=b c" D=e\nEnvironment=A=f\n'),
      'u',
    );
    assert.deepEqual(withEnvironment.args, ['gateway']);
    assert.deepEqual(withEnvironment.environment, { A: 'f', D: 'e' });
    assert.deepEqual(unitWords(`a "b c" 'd e' f\\ g`, 'w'), ['a', 'b c', 'd e', 'f g']);
  });

  test('every variable of the example environment files is one the processes read, and the reverse', () => {
    const read = variablesRead();
    const listed = new Set<string>();
    for (const example of examples)
      for (const variable of exampleVariables(example)) {
        assert.ok(
          read.has(variable.name),
          `${example}: ${variable.name} is not read by openspot engine/gateway`,
        );
        assert.ok(
          !NOT_FOR_CLUSTER.has(variable.name),
          `${example}: ${variable.name} has no effect on a cluster process`,
        );
        listed.add(variable.name);
      }
    const missing = [...read].filter((name) => !listed.has(name) && !NOT_FOR_CLUSTER.has(name));
    assert.deepEqual(missing, [], 'variables the processes read that no example lists');
    // The engine's own port is the engine's alone; PORT is the gateway's.
    assert.ok(exampleVariables('engine.env.example').some((v) => v.name === 'ENGINE_PORT'));
    assert.ok(!exampleVariables('engine.env.example').some((v) => v.name === 'PORT'));
    assert.ok(!exampleVariables('gateway.env.example').some((v) => v.name === 'ENGINE_PORT'));
  });

  test("the examples' values, set and commented-out defaults alike, pass the configuration's checks once their secrets are real", (t) => {
    // What an operator must replace: production refuses each example secret as it stands.
    const dir = mkdtempSync(join(tmpdir(), 'openspot-examples-'));
    t.after(() => rmSync(dir, { recursive: true, force: true }));
    const catalogue = join(dir, 'catalogue.json');
    writeFileSync(catalogue, JSON.stringify(DEFAULT_CATALOGUE));
    const REAL: Record<string, string> = {
      ADMIN_TOKEN: 'an-admin-token-of-our-own-1234',
      WS_APP_SECRET: 'a-ws-secret-of-our-own-1234',
      SECRETS_KEY: Buffer.alloc(32, 7).toString('base64'),
    };
    for (const example of examples) {
      const env: Record<string, string> = { NODE_ENV: 'production' };
      for (const variable of exampleVariables(example))
        if (variable.value !== '') env[variable.name] = variable.value;
      assert.throws(
        () => loadConfig(env),
        (error: Error) =>
          Object.keys(REAL)
            .filter((name) => env[name] !== undefined)
            .every((name) => error.message.includes(name)) && error.message.includes('DATABASE_URL'),
        `${example}: production starts with the example secrets`,
      );
      for (const name of Object.keys(REAL)) if (env[name] !== undefined) env[name] = REAL[name]!;
      // The catalogue is read at start: the example's path stands for one that exists.
      if (env.CATALOGUE_FILE !== undefined) env.CATALOGUE_FILE = catalogue;
      env.DATABASE_URL = env.DATABASE_URL!.replace('change-me', 'a-password-of-our-own');
      assert.doesNotThrow(() => loadConfig(env), example);
      assert.doesNotThrow(() => clusterSettings(env), example);
    }
  });

  test('systemd-analyze verify accepts the units', (t) => {
    const found = spawnSync('systemd-analyze', ['--version'], { encoding: 'utf8' });
    if (found.error !== undefined || found.status !== 0) {
      t.skip('systemd-analyze is not installed: the units were not verified by systemd');
      process.stdout.write('# systemd-analyze is not installed: deploy/systemd units not verified\n');
      return;
    }
    // A root of our own: the units installed where systemd looks, the system's own units (targets
    // the units refer to) beside them, and a stand-in executable for the installed CLI, which
    // `verify` requires to exist.
    const root = mkdtempSync(join(tmpdir(), 'openspot-systemd-'));
    t.after(() => rmSync(root, { recursive: true, force: true }));
    const systemUnits = ['/usr/lib/systemd/system', '/lib/systemd/system'].find((dir) => existsSync(dir));
    if (systemUnits !== undefined)
      cpSync(systemUnits, join(root, 'usr/lib/systemd/system'), { recursive: true, verbatimSymlinks: true });
    mkdirSync(join(root, 'etc/systemd/system'), { recursive: true });
    mkdirSync(join(root, 'usr/bin'), { recursive: true });
    writeFileSync(join(root, INSTALLED_BINARY), '#!/bin/sh\n');
    chmodSync(join(root, INSTALLED_BINARY), 0o755);
    for (const unit of units) cpSync(join(SYSTEMD_DIR, unit), join(root, 'etc/systemd/system', unit));
    const result = spawnSync(
      'systemd-analyze',
      ['verify', '--man=no', '--generators=no', `--root=${root}`, ...units],
      { encoding: 'utf8' },
    );
    // Unknown keys and bad values are only warnings (exit 0): any output at all fails the test.
    assert.equal(result.status, 0, result.stderr + result.stdout);
    assert.equal((result.stderr + result.stdout).trim(), '', 'systemd-analyze verify printed warnings');
    // And the check can fail: without the stand-in binary, verify refuses the units.
    rmSync(join(root, INSTALLED_BINARY));
    const missing = spawnSync(
      'systemd-analyze',
      ['verify', '--man=no', '--generators=no', `--root=${root}`, units[0]!],
      {
        encoding: 'utf8',
      },
    );
    assert.notEqual(missing.status, 0);
    assert.match(missing.stderr, /is not executable/);
  });
});
