/**
 * A new user's first minute: the server started with no configuration in an empty directory (as
 * `npm start` does, minus the build) must, within 10 seconds, have written demo credentials that
 * work, and show simulator trades, a two-sided book and ticker updates over WebSocket.
 */
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { after, before, test } from 'node:test';
import { WebSocket } from 'ws';
import { signRequest } from '../../src/client/sign.js';

const MAIN = join(import.meta.dirname, '../../src/main.ts');
const TSX = import.meta.resolve('tsx');
let dir: string;
let child: ChildProcess;
let url: string;
let startedAt: number;
const logLines: string[] = [];

before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'openspot-first-start-'));
  // No configuration at all, but PORT=0 so the test cannot collide with a running server.
  const env = { PATH: process.env.PATH ?? '', HOME: dir, PORT: '0' };
  startedAt = Date.now();
  child = spawn(process.execPath, ['--import', TSX, MAIN], {
    cwd: dir,
    env,
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('the server did not start within 20 s')), 20_000);
    createInterface({ input: child.stdout! }).on('line', (line) => {
      logLines.push(line);
      const entry = JSON.parse(line) as { msg?: string; url?: string };
      if (entry.msg === 'OpenSpot is listening' && entry.url !== undefined) {
        clearTimeout(timer);
        resolve(entry.url);
      }
    });
    child.on('exit', (code) => reject(new Error(`the server exited with ${code}`)));
  });
});

after(() => {
  child.kill('SIGTERM');
  rmSync(dir, { recursive: true, force: true });
});

async function eventually<T>(
  what: string,
  probe: () => Promise<T | undefined>,
  deadline: number,
): Promise<T> {
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) assert.fail(`${what} did not happen within 10 s of the server listening`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

test('within 10 seconds: demo credentials, trades, a two-sided book, ticker updates over WebSocket', async () => {
  const deadline = Date.now() + 10_000;
  const credentialsFile = join(dir, 'data', 'demo-credentials.json');
  const credentials = await eventually(
    'demo credentials',
    async () =>
      existsSync(credentialsFile)
        ? (JSON.parse(readFileSync(credentialsFile, 'utf8')) as {
            api_key: string;
            api_secret: string;
            url: string;
            ws_app_key: string;
            ws_host: string;
            ws_port: number;
            ws_tls: boolean;
          })
        : undefined,
    deadline,
  );
  assert.equal(statSync(credentialsFile).mode & 0o777, 0o600);
  assert.equal(credentials.url, `${url}/v1`);
  // Everything a pusher-js client needs is in the file too (wsHost, wsPort, forceTLS, the key).
  const listening = new URL(url);
  assert.equal(credentials.ws_app_key, 'openspot-key');
  assert.equal(credentials.ws_host, listening.hostname);
  assert.equal(credentials.ws_port, Number(listening.port));
  assert.equal(credentials.ws_tls, false);

  const wallet = await fetch(`${url}/v1/spot-wallet`, {
    headers: {
      'x-api-key': credentials.api_key,
      'x-api-sign': signRequest('GET', '', credentials.api_secret),
    },
  });
  assert.equal(wallet.status, 200);
  const funded = ((await wallet.json()) as { data: { balance: { balance_total: string } }[] }).data;
  assert.ok(
    funded.every((entry) => Number(entry.balance.balance_total.replace('.', '')) > 0),
    'funded in every asset',
  );

  const socket = new WebSocket(
    `ws://${credentials.ws_host}:${credentials.ws_port}/app/${credentials.ws_app_key}?protocol=7&client=js&version=8.4.0&flash=false`,
  );
  const tickerUpdate = new Promise<unknown>((resolve) => {
    socket.on('message', (raw) => {
      const frame = JSON.parse(String(raw)) as { event: string; data?: string };
      if (frame.event === 'pusher:connection_established') {
        socket.send(
          JSON.stringify({
            event: 'pusher:subscribe',
            data: { auth: '', channel: 'ticker-information.BTCEUR' },
          }),
        );
      }
      if (frame.event === 'update' && typeof frame.data === 'string') resolve(JSON.parse(frame.data));
    });
  });

  const trades = await eventually(
    'trades in /v1/historical_trades',
    async () => {
      const body = (await (await fetch(`${url}/v1/historical_trades?ticker_id=BTC/EUR`)).json()) as {
        buy: unknown[];
        sell: unknown[];
      };
      return body.buy.length + body.sell.length > 0 ? body : undefined;
    },
    deadline,
  );
  assert.ok(trades.buy.length + trades.sell.length > 0);

  const [book] = await eventually(
    'a two-sided book',
    async () => {
      const body = (await (await fetch(`${url}/v1/orderbook?ticker_id=BTC/EUR`)).json()) as {
        bids: unknown[];
        asks: unknown[];
      }[];
      return body[0] !== undefined && body[0].bids.length > 0 && body[0].asks.length > 0 ? body : undefined;
    },
    deadline,
  );
  assert.ok(book !== undefined);

  const update = (await Promise.race([
    tickerUpdate,
    new Promise((_, reject) =>
      setTimeout(() => reject(new Error('no ticker update within 10 s')), Math.max(0, deadline - Date.now())),
    ),
  ])) as { channel: string; data: { symbol: string }[] };
  socket.close();
  assert.equal(update.channel, 'ticker');
  assert.equal(update.data[0]?.symbol, 'BTC/EUR');
  assert.ok(Date.now() - startedAt < 30_000);
});

test('the demo secret is written to its file, never to the log', async () => {
  const credentialsFile = join(dir, 'data', 'demo-credentials.json');
  const { api_secret } = JSON.parse(readFileSync(credentialsFile, 'utf8')) as { api_secret: string };
  assert.ok(api_secret.length > 0);
  const created = logLines.find((line) => line.includes('demo account created'));
  assert.ok(created !== undefined, 'the log says the demo account was created');
  assert.ok(created.includes('demo-credentials.json'), 'and where its credentials are');
  for (const line of logLines) assert.ok(!line.includes(api_secret), `the log shows the secret: ${line}`);
});
