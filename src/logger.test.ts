/**
 * Logs as a person at a terminal sees them in development (readable lines), and as every other
 * reader gets them (JSON): the same process started on a terminal (util-linux `script` gives it
 * one) and on a pipe.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { test } from 'node:test';
import { wantsReadableLogs } from './logger.js';

const TSX = import.meta.resolve('tsx');
const LOGGER = import.meta.resolve('./logger.ts');
const PROGRAM = `import { createLogger } from ${JSON.stringify(LOGGER)};
createLogger('info').info({ url: 'http://127.0.0.1:8080', api_secret: 'S3CRET' }, 'OpenSpot is listening');`;
const SCRIPT = '/usr/bin/script';
const noScript = existsSync(SCRIPT) ? false : `no ${SCRIPT} (util-linux) to give the process a terminal`;
if (noScript) process.stderr.write(`\n*** logger terminal test skipped: ${noScript} ***\n\n`);

const run = (env: NodeJS.ProcessEnv, onTerminal: boolean): string => {
  const node = [process.execPath, '--import', TSX, '--input-type=module', '-e', PROGRAM];
  const quoted = node.map((a) => `'${a.replaceAll("'", `'\\''`)}'`).join(' ');
  return onTerminal
    ? execFileSync(SCRIPT, ['-qec', quoted, '/dev/null'], { env, encoding: 'utf8' })
    : execFileSync(node[0]!, node.slice(1), { env, encoding: 'utf8' });
};
const ENV = { ...process.env, NODE_ENV: '' };

test('on a terminal in development: readable lines, secrets still redacted', { skip: noScript }, () => {
  const text = run(ENV, true);
  assert.doesNotMatch(text, /"level":30/);
  assert.match(text, /INFO.*OpenSpot is listening/);
  assert.match(text, /url.*"http:\/\/127\.0\.0\.1:8080"/);
  assert.match(text, /api_secret.*"\[redacted\]"/);
  assert.doesNotMatch(text, /S3CRET/);
});

test('on a pipe, or in production even on a terminal: one JSON object per line', { skip: noScript }, () => {
  for (const text of [run(ENV, false), run({ ...ENV, NODE_ENV: 'production' }, true)]) {
    const line = JSON.parse(text.trim()) as Record<string, unknown>;
    assert.equal(line.level, 30);
    assert.equal(line.msg, 'OpenSpot is listening');
    assert.equal(line.api_secret, '[redacted]');
  }
});

test('wantsReadableLogs: a terminal, outside production', () => {
  assert.equal(wantsReadableLogs({ isTTY: true }, {}), true);
  assert.equal(wantsReadableLogs({ isTTY: true }, { NODE_ENV: 'production' }), false);
  assert.equal(wantsReadableLogs({ isTTY: false }, {}), false);
  assert.equal(wantsReadableLogs({}, {}), false);
});
