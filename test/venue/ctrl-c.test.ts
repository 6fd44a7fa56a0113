/**
 * Ctrl-C in a terminal: SIGINT to the whole process group of `openspot serve`, `test-venue`,
 * `engine` and `gateway` (`npm start`: test/venue/npm-start.test.ts). The first signal starts the
 * clean shutdown; a second one while it runs (a wrapper's forwarded copy, a second Ctrl-C) is
 * ignored. Each process then exits 0 having said so, leaves nothing of its group running, and an
 * SQLite store leaves no -wal or -shm file (the last commit was checkpointed and the store closed).
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, type TestContext, test } from 'node:test';
import { clusterEnv, clusterSkipReason } from '../support/cluster.js';
import { LOCAL_VENUE_ENV } from '../support/local-venue-env.js';
import {
  type GroupProcess,
  groupMembers,
  interruptGroup,
  PROC_SKIP,
  startInGroup,
  within,
} from '../support/process-group.js';

const ROOT = join(import.meta.dirname, '..', '..');
const CLI = ['--import', 'tsx', 'src/cli/main.ts'];

/** `openspot <args>` from this checkout, in a group of its own, once `ready` shows in its output. */
async function openspot(
  t: TestContext,
  args: readonly string[],
  env: Record<string, string>,
  ready: RegExp,
): Promise<GroupProcess> {
  const started = await startInGroup(process.execPath, [...CLI, ...args], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '', LOG_LEVEL: 'info', ...env },
    ready,
  });
  t.after(() => started.kill());
  return started;
}

/** Ctrl-C on the group; then a clean exit (0, `said` in the output) and nothing of the group left. */
async function ctrlC(started: GroupProcess, said?: RegExp): Promise<void> {
  const pgid = started.child.pid!;
  await interruptGroup(pgid);
  const { code, signal } = await within(20_000, 'no exit after Ctrl-C', started.exited);
  assert.equal(code, 0, `exited with ${code ?? signal} after Ctrl-C:\n${started.output()}`);
  if (said !== undefined) assert.match(started.output(), said);
  assert.deepEqual(groupMembers(pgid), [], 'nothing of the process group is left running');
}

const sqliteLeftovers = (dataDir: string) => readdirSync(dataDir).filter((name) => /-(wal|shm)$/.test(name));

describe('Ctrl-C stops each long-running command cleanly', { skip: PROC_SKIP }, () => {
  test('openspot serve', { timeout: 60_000 }, async (t) => {
    const dataDir = mkdtempSync(join(tmpdir(), 'openspot-ctrl-c-'));
    t.after(() => rmSync(dataDir, { recursive: true, force: true }));
    const server = await openspot(
      t,
      ['serve'],
      { ...LOCAL_VENUE_ENV, PORT: '0', DATA_DIR: dataDir },
      /OpenSpot is listening/,
    );
    await ctrlC(server, /"msg":"stopped cleanly"/);
    assert.deepEqual(sqliteLeftovers(dataDir), [], 'the store was closed: no -wal or -shm file left');
  });

  test('openspot test-venue', { timeout: 60_000 }, async (t) => {
    const venue = await openspot(t, ['--json', 'test-venue'], {}, /^\{"url":/);
    await ctrlC(venue);
  });

  const skip = clusterSkipReason('Ctrl-C of openspot engine and gateway');
  test('openspot engine and openspot gateway', { timeout: 90_000, skip: skip ?? false }, async (t) => {
    const env = await clusterEnv(t);
    const engine = await openspot(
      t,
      ['engine'],
      { ...env, ENGINE_PORT: '0' },
      /OpenSpot engine is listening/,
    );
    const gateway = await openspot(t, ['gateway'], { ...env, PORT: '0' }, /OpenSpot gateway is listening/);
    await ctrlC(gateway, /"msg":"stopped cleanly"/);
    await ctrlC(engine, /"msg":"stopped cleanly"/);
  });
});
