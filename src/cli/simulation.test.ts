/** `openspot replay` and `openspot simulate` on the command line: what a mistake prints, before anything starts. */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';

const TSX = import.meta.resolve('tsx');
const CLI = join(import.meta.dirname, 'main.ts');

function run(args: string[], env: Record<string, string> = {}) {
  const result = spawnSync(process.execPath, ['--import', TSX, CLI, ...args], {
    encoding: 'utf8',
    env: { ...process.env, LOG_LEVEL: 'silent', PORT: '0', ...env },
    timeout: 30_000,
  });
  return { status: result.status, stderr: result.stderr, stdout: result.stdout };
}

test('replay: a bad option or file is refused at once, naming the option or the line', () => {
  const dir = mkdtempSync(join(tmpdir(), 'openspot-cli-replay-'));
  try {
    const file = join(dir, 'trades.csv');
    writeFileSync(file, '1735689600,60000.0,0.1\n1735689601,60000.0\n');
    const speed = run(['replay', '--trades', file, '--speed', '0']);
    assert.notEqual(speed.status, 0);
    assert.match(speed.stderr, /--speed must be a whole number from 1 to 1000, got "0"/);
    assert.match(run(['replay', '--trades', file, '--speed', '1001']).stderr, /from 1 to 1000/);
    assert.match(
      run(['replay', '--trades', file, '--pair', 'BTCEUR']).stderr,
      /--pair must be a pair such as BTC\/EUR/,
    );
    assert.match(run(['replay']).stderr, /required option '--trades <file>'/);
    const bad = run(['replay', '--trades', file], { DATA_DIR: join(dir, 'data') });
    assert.equal(bad.status, 1);
    assert.match(bad.stderr, /trades\.csv:2: expected 3 columns, timestamp,price,volume, found 2/);
    const missing = run(['replay', '--trades', join(dir, 'nope.csv')]);
    assert.match(missing.stderr, /cannot read the trade file .*nope\.csv: no such file/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('simulate: refuses a venue that exists, and days outside 1 to 31', () => {
  const dir = mkdtempSync(join(tmpdir(), 'openspot-cli-simulate-'));
  try {
    mkdirSync(join(dir, 'venue'));
    writeFileSync(join(dir, 'venue', 'openspot.db'), '');
    const refused = run(['--data-dir', join(dir, 'venue'), 'simulate', '--days', '1']);
    assert.equal(refused.status, 1);
    assert.match(refused.stderr, /already holds a venue \(openspot\.db\): simulate fills only a new one/);
    assert.match(run(['simulate', '--days', '32']).stderr, /--days must be a whole number from 1 to 31/);
    const postgres = run(['--data-dir', join(dir, 'empty'), 'simulate', '--days', '1'], {
      DATABASE_URL: 'postgres://postgres@127.0.0.1:5432/venue',
    });
    assert.equal(postgres.status, 1);
    assert.match(postgres.stderr, /simulate fills a new SQLite venue in DATA_DIR, and DATABASE_URL is set/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
