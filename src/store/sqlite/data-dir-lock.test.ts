import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { test } from 'node:test';
import { DataDirInUseError, lockDataDir } from './data-dir-lock.js';

const LOCK_MODULE = new URL('./data-dir-lock.ts', import.meta.url).href;

/** Another process holding `dir`'s lock, once it says so. */
async function holder(dir: string) {
  const child = spawn(
    process.execPath,
    [
      '--import',
      'tsx',
      '--input-type=module',
      '-e',
      `const { lockDataDir } = await import(${JSON.stringify(LOCK_MODULE)});
       lockDataDir(${JSON.stringify(dir)});
       console.log('locked');
       setInterval(() => {}, 1000);`,
    ],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  await new Promise<void>((resolve, reject) => {
    createInterface({ input: child.stdout! }).once('line', () => resolve());
    child.once('exit', (code) => reject(new Error(`the holder exited with ${code}`)));
  });
  return child;
}

test('a second process is refused the data directory, naming the holder; the lock dies with its holder', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'openspot-data-dir-lock-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const other = await holder(dir);
  t.after(() => other.kill('SIGKILL'));

  assert.throws(
    () => lockDataDir(dir),
    (error: Error) =>
      error instanceof DataDirInUseError &&
      error.message.includes(`(pid ${other.pid})`) &&
      error.message.includes(dir),
  );

  // SIGKILL: no chance to clean anything up, and yet nothing stale is left to clear by hand.
  const exited = new Promise((resolve) => other.once('exit', resolve));
  other.kill('SIGKILL');
  await exited;
  const lock = lockDataDir(dir);
  lock.release();
});

test('within one process the directory is taken once, and free again after release', (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'openspot-data-dir-lock-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const lock = lockDataDir(dir);
  assert.throws(() => lockDataDir(dir), DataDirInUseError);
  lock.release();
  lockDataDir(dir).release();
});
