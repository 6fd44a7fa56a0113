/**
 * docs/bot-testing.md's Python fixture, run as shown (python3, `npx`), with the package's
 * `openspot` binary standing for this checkout's CLI from source. It must leave nothing behind:
 * neither when it ends as documented (stdin closed, exit 0) nor when the test process dies
 * without a chance to clean up (SIGKILL).
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { waitUntil } from '../support/polling.js';
import { groupMembers, PROC_SKIP, startInGroup, within } from '../support/process-group.js';

const ROOT = join(import.meta.dirname, '..', '..');
const CLI = join(ROOT, 'src', 'cli', 'main.ts');
const RUN_THE_TESTS = /^# \.\.\. run the bot's tests.*$/m;

const python = spawnSync('python3', ['--version']).status === 0;
const skip = PROC_SKIP || (python ? false : 'python3 is not installed');

/** The listing, with the CLI from source in place of the installed binary. */
function fixture(): string {
  const doc = readFileSync(join(ROOT, 'docs', 'bot-testing.md'), 'utf8');
  const listing = /```python\n([\s\S]*?)```/.exec(doc)?.[1];
  assert.ok(listing !== undefined, 'docs/bot-testing.md shows a Python fixture');
  assert.match(listing, /\["npx", "openspot", "test-venue", "--json"\]/);
  assert.match(listing, RUN_THE_TESTS);
  return listing.replace(
    '"npx", "openspot",',
    `"npx", "--", "node", "--import", "tsx", ${JSON.stringify(CLI)},`,
  );
}

async function refused(url: string): Promise<boolean> {
  try {
    await fetch(`${url}/healthz`, { signal: AbortSignal.timeout(2000) });
    return false;
  } catch {
    return true;
  }
}

async function runFixture(bodyOfTheTests: string) {
  const script = fixture().replace(RUN_THE_TESTS, bodyOfTheTests);
  const run = await startInGroup('python3', ['-c', script], {
    cwd: ROOT,
    env: { ...process.env, npm_config_update_notifier: 'false' },
    ready: /^http:\/\/\S+\n/m,
  });
  const url = /^(http:\/\/\S+)\n/m.exec(run.output())![1]!;
  return { run, url };
}

describe("docs/bot-testing.md's Python fixture leaves nothing behind", { skip }, () => {
  test('run as documented: the venue stops, every process exits 0', { timeout: 120_000 }, async (t) => {
    const { run, url } = await runFixture('print(venue["url"], flush=True)');
    t.after(() => run.kill());
    const { code, signal } = await within(60_000, 'the fixture did not finish', run.exited);
    assert.equal(code, 0, `the fixture ended with ${code ?? signal}:\n${run.output()}`);
    assert.deepEqual(groupMembers(run.child.pid!), [], 'a process of the fixture is still running');
    assert.ok(await refused(url), 'the venue still answers');
  });

  test('the test process killed outright: the venue stops by itself', { timeout: 120_000 }, async (t) => {
    const { run, url } = await runFixture(
      'print(venue["url"], flush=True)\nimport os, signal\nos.kill(os.getpid(), signal.SIGKILL)',
    );
    t.after(() => run.kill());
    const { signal } = await within(60_000, 'python did not die', run.exited);
    assert.equal(signal, 'SIGKILL');
    await waitUntil(() => groupMembers(run.child.pid!).length === 0, 'the venue and npx to exit', 30_000);
    assert.ok(await refused(url), 'the venue still answers');
  });
});
