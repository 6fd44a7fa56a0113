/** `openspot chaos`: flags → faults, and the commands against a running venue. */
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { after, before, test } from 'node:test';
import { promisify } from 'node:util';
import { startTestVenue, type TestVenue } from '../testing/index.js';
import { describeChaos, faultsFromOptions } from './chaos.js';

const run = promisify(execFile);
const TSX = import.meta.resolve('tsx');
const CLI = join(import.meta.dirname, 'main.ts');

let venue: TestVenue;
before(async () => {
  venue = await startTestVenue();
});
after(async () => {
  await venue.close();
});

const cli = (...args: string[]) =>
  run(process.execPath, ['--import', TSX, CLI, '--url', venue.url, '--token', venue.admin.token, ...args]);

test('flags build one fault per kind, leaving defaults to the server', () => {
  assert.deepEqual(
    faultsFromOptions({ errorRate: 0.5, errorStatus: 429, latency: 100, drop: 0.1, count: 3 }),
    {
      latency: { ms: 100, count: 3 },
      errors: { rate: 0.5, status: 429, count: 3 },
      book_updates: { drop: 0.1, count: 3 },
    },
  );
  assert.deepEqual(
    faultsFromOptions({ faults: '{"ws_delay":{"ms":5}}', disconnectRate: 0.2, closeCode: 4201 }),
    {
      ws_delay: { ms: 5 },
      disconnects: { rate: 0.2, code: 4201 },
    },
  );
  assert.deepEqual(
    faultsFromOptions({ errorRate: 1, routes: 'POST /v1/orders, DELETE  /v1/orders/:order_id' }),
    {
      errors: { rate: 1, routes: ['POST /v1/orders', 'DELETE /v1/orders/:order_id'] },
    },
  );
  assert.throws(() => faultsFromOptions({ faults: '[1]' }), /JSON object/);
});

test('show describes each scope and fault on one line', () => {
  assert.equal(
    describeChaos({
      allowed: true,
      everyone: { errors: { rate: 1, status: 503 } },
      keys: { K: { latency: { ms: 5, jitter_ms: 0 } } },
    }),
    'everyone  errors  rate=1 status=503\nK  latency  ms=5 jitter_ms=0',
  );
  assert.equal(describeChaos({ allowed: true, everyone: {}, keys: {} }), 'no faults set');
});

test('set, show and clear against a running server, for one key', async () => {
  const key = venue.accounts[0]!.apiKey;
  await cli('chaos', 'set', '--key', key, '--error-rate', '1', '--count', '2');
  assert.deepEqual((await venue.chaos.state()).keys, {
    [key]: { errors: { rate: 1, status: 503, retry_after: 1, count: 2 } },
  });
  const shown = JSON.parse((await cli('--json', 'chaos', 'show')).stdout) as {
    keys: Record<string, unknown>;
  };
  assert.deepEqual(Object.keys(shown.keys), [key]);
  assert.match((await cli('chaos', 'show')).stdout, new RegExp(`^${key}  errors  rate=1 status=503`));
  await assert.rejects(venue.client().spotWallet(), /503/);
  // A value the server refuses: the CLI says which field, and fails.
  await assert.rejects(cli('chaos', 'set', '--drop', '2'), (error: { stderr: string; code: number }) => {
    assert.match(error.stderr, /faults\.book_updates\.drop/);
    assert.equal(error.code, 1);
    return true;
  });
  await cli('chaos', 'clear', '--key', key);
  assert.deepEqual(await venue.chaos.state(), { allowed: true, everyone: {}, keys: {} });
});

test('openspot test-venue --chaos starts a venue with the faults already set', async () => {
  const child = spawn(
    process.execPath,
    [
      '--import',
      TSX,
      CLI,
      '--json',
      'test-venue',
      '--chaos',
      '{"errors":{"rate":1,"status":429,"retry_after":3}}',
    ],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  try {
    const line = await new Promise<string>((resolve) =>
      createInterface({ input: child.stdout }).once('line', resolve),
    );
    const info = JSON.parse(line) as { base_url: string; admin: { url: string; token: string } };
    const answer = await fetch(`${info.base_url}/markets`);
    assert.equal(answer.status, 429);
    assert.equal(answer.headers.get('retry-after'), '3');
    const state = await fetch(`${info.admin.url}/chaos`, {
      headers: { authorization: `Bearer ${info.admin.token}` },
    });
    assert.deepEqual(((await state.json()) as { everyone: unknown }).everyone, {
      errors: { rate: 1, status: 429, retry_after: 3 },
    });
  } finally {
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGTERM');
    await exited;
  }
});
