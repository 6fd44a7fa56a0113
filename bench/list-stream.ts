/**
 * Another user's latency while the largest list is read in a loop (issue 24, item 8):
 *   node --import tsx bench/list-stream.ts [--orders N] [--seconds S] [--root DIR]
 *
 * Starts the server (src/main.ts, SQLite in a temporary DATA_DIR, simulator off, rate limits off)
 * as its own process, gives the demo account N closed orders (placed and cancelled, default
 * 20,000: closed orders and trades have no cap), then for S seconds (default 20) each:
 *   1. baseline: user B polls GET /v1/spot-wallet back to back, nothing else runs;
 *   2. under load: the same, while two clients read the demo account's whole
 *      GET /v1/closed-orders (unpaginated) in a loop.
 * The list readers run in a process of their own, so B's latencies are the server's, not the
 * bench's event loop parsing megabytes. `--root DIR` runs the server of another checkout (e.g.
 * `git archive <ref> src | tar -x -C DIR`, with DIR/node_modules linked to this one's).
 * Prints B's p50 / p99 / max in both phases and the list's size and read time.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { signRequest } from '../src/client/sign.js';

const arg = (name: string, fallback: number) => {
  const i = process.argv.indexOf(`--${name}`);
  return i < 0 ? fallback : Number(process.argv[i + 1]);
};
const ORDERS = arg('orders', 20_000);
const SECONDS = arg('seconds', 20);
const rootAt = process.argv.indexOf('--root');
const ROOT = rootAt < 0 ? join(import.meta.dirname, '..') : (process.argv[rootAt + 1] ?? '.');

interface Key {
  readonly api_key: string;
  readonly api_secret: string;
}

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const quantile = (sorted: readonly number[], q: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? Number.NaN;

async function main(): Promise<void> {
  const dataDir = mkdtempSync(join(tmpdir(), 'openspot-list-bench-'));
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const server = spawn(process.execPath, ['--import', 'tsx', join(ROOT, 'src', 'main.ts')], {
    env: {
      ...process.env,
      NODE_ENV: '',
      PORT: String(port),
      DATA_DIR: dataDir,
      SIMULATOR: 'off',
      DEMO: 'on',
      LOG_LEVEL: 'warn',
      SQLITE_SYNCHRONOUS: 'normal',
      RATE_LIMIT_IP_PER_SECOND: '0',
      RATE_LIMIT_KEY_PER_SECOND: '0',
    },
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  try {
    const credentials = join(dataDir, 'demo-credentials.json');
    while (!existsSync(credentials)) await sleep(200);
    await sleep(200);
    const demo = JSON.parse(readFileSync(credentials, 'utf8')) as Key;
    const token = readFileSync(join(dataDir, 'admin-token'), 'utf8').trim();
    const admin = async (path: string, body: unknown) => {
      const r = await fetch(`${url}/admin/v1${path}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
      return (await r.json()) as Record<string, unknown>;
    };
    const userB = await admin('/users', { email: 'b@example.com' });
    const keyB = (await admin(`/users/${userB.id}/api-keys`, { scopes: ['read'] })) as unknown as Key;

    const signed = (key: Key, method: string, path: string, body = '') =>
      fetch(`${url}${path}`, {
        method,
        headers: {
          'x-api-key': key.api_key,
          'x-api-sign': signRequest(method, body, key.api_secret),
          ...(body === '' ? {} : { 'content-type': 'application/json' }),
        },
        ...(body === '' ? {} : { body }),
      });

    // N closed orders for the demo account: placed far below the market, then cancelled.
    const started = Date.now();
    let next = 0;
    const order = JSON.stringify({
      order_direction: 'buy',
      order_type: 'limit',
      pair: 'BTC/EUR',
      volume: '0.001',
      price: '1000',
    });
    await Promise.all(
      Array.from({ length: 16 }, async () => {
        while (next < ORDERS) {
          next += 1;
          const placed = await signed(demo, 'POST', '/v1/orders', order);
          const id = placed.headers.get('location')?.split('/').pop();
          await placed.arrayBuffer();
          if (id === undefined) throw new Error(`order refused: ${placed.status}`);
          const body = '';
          await (await signed(demo, 'DELETE', `/v1/orders/${id}`, body)).arrayBuffer();
        }
      }),
    );
    process.stdout.write(`${ORDERS} closed orders in ${((Date.now() - started) / 1000).toFixed(0)} s\n`);

    const poll = async (until: number) => {
      const latencies: number[] = [];
      while (Date.now() < until) {
        const t0 = performance.now();
        const r = await signed(keyB, 'GET', '/v1/spot-wallet');
        await r.arrayBuffer();
        latencies.push(performance.now() - t0);
      }
      return latencies.sort((a, b) => a - b);
    };
    const report = (name: string, l: readonly number[]) =>
      process.stdout.write(
        `${name}: ${l.length} requests, p50 ${quantile(l, 0.5).toFixed(1)} ms, p99 ${quantile(l, 0.99).toFixed(1)} ms, max ${l[l.length - 1]!.toFixed(1)} ms\n`,
      );

    report('spot-wallet, alone', await poll(Date.now() + SECONDS * 1000));

    // A GET is signed over "{}" whatever the time: the readers' headers are computed once here.
    const listHeaders = { 'x-api-key': demo.api_key, 'x-api-sign': signRequest('GET', '', demo.api_secret) };
    const readerScript = `
      const [url, headers, seconds] = [process.argv[1], JSON.parse(process.argv[2]), Number(process.argv[3])];
      const until = Date.now() + seconds * 1000;
      const reads = [];
      const reader = async () => {
        while (Date.now() < until) {
          const t0 = performance.now();
          const body = await (await fetch(url, { headers })).arrayBuffer();
          reads.push({ bytes: body.byteLength, ms: performance.now() - t0 });
        }
      };
      await Promise.all([reader(), reader()]);
      process.stdout.write(JSON.stringify(reads));`;
    const readers = spawn(
      process.execPath,
      [
        '--input-type=module',
        '-e',
        readerScript,
        `${url}/v1/closed-orders`,
        JSON.stringify(listHeaders),
        String(SECONDS),
      ],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    );
    let readerOutput = '';
    readers.stdout.on('data', (chunk: Buffer) => {
      readerOutput += chunk.toString();
    });
    const readersDone = new Promise((resolve) => readers.once('exit', resolve));
    await sleep(500);
    const loaded = await poll(Date.now() + SECONDS * 1000 - 500);
    await readersDone;
    const reads = JSON.parse(readerOutput || '[]') as { bytes: number; ms: number }[];
    report(`spot-wallet, while /v1/closed-orders (${ORDERS} orders) is read in a loop`, loaded);
    const mean = reads.reduce((s, r) => s + r.ms, 0) / Math.max(1, reads.length);
    process.stdout.write(
      `closed-orders: ${reads.length} reads of ${((reads[0]?.bytes ?? 0) / 1e6).toFixed(1)} MB, ${(mean / 1000).toFixed(2)} s each on average\n`,
    );
  } finally {
    server.kill('SIGTERM');
    await new Promise((resolve) => server.once('exit', resolve));
    rmSync(dataDir, { recursive: true, force: true });
  }
}

await main();
