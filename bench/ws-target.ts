/**
 * The server side of bench/ws.ts, run in its own process so that it never shares an event loop
 * with the clients or the order driver.
 *
 *   openspot  the real server (`startTestServer()`: HTTP /v1 + WebSocket on one port, SQLite in a
 *             fresh temp dir), two funded traders and resting depth on both sides of BTC/EUR.
 *             Prints one JSON line `{url, appKey, traders}` when ready.
 *   baseline  a bare `ws` WebSocketServer that broadcasts given frames to every connection at a
 *             given rate, with no protocol at all. Prints `{url}` when ready.
 *
 * Commands arrive as JSON lines on stdin: `{"cmd":"cpu"}` prints `{cpu}` (process.cpuUsage, µs);
 * `{"cmd":"broadcast", groups, rate, seconds}` (baseline) broadcasts, then prints `{done, sent, start, end}`;
 * `{"cmd":"exit"}` (or stdin closing) shuts down cleanly, so `--cpu-prof` can write its profile.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { WebSocketServer } from 'ws';
import { OpenSpotClient } from '../src/client/client.js';
import { loadConfig } from '../src/config/config.js';
import { startTestServer } from '../test/support/server-fixture.js';
import { absNow } from './measure.js';

const mode = process.argv[2];
const print = (value: unknown): void => {
  process.stdout.write(`${JSON.stringify(value)}\n`);
};
/** Absolute time in ms with sub-ms resolution, comparable across processes and threads. */

let shutdown: () => Promise<void> = async () => {};
let broadcast: (groups: string[][], rate: number, seconds: number) => void = () => {};

if (mode === 'baseline') {
  const http = createServer();
  const wss = new WebSocketServer({ server: http, perMessageDeflate: false });
  wss.on('connection', (socket) => socket.on('error', () => {}));
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  const { port } = http.address() as AddressInfo;
  broadcast = (groups, rate, seconds) => {
    // Each frame is encoded once and the same Buffer handed to every client: the best plain ws can do.
    const buffers = groups.map((group) => group.map((frame) => Buffer.from(frame)));
    // Group g of each round goes out at (round + g / groups) / rate: with [[maker book update],
    // [taker book update, trade]] that is the spacing of the real server's messages.
    const start = absNow();
    const end = start + seconds * 1000;
    const dueOf = (step: number): number => start + (step / buffers.length / rate) * 1000;
    let sent = 0;
    let step = 0;
    const tick = (): void => {
      const now = absNow();
      while (dueOf(step) <= now && dueOf(step) < end) {
        for (const buffer of buffers[step % buffers.length]!)
          for (const client of wss.clients) {
            client.send(buffer, { binary: false });
            sent += 1;
          }
        step += 1;
      }
      if (now < end) setTimeout(tick, Math.max(0, dueOf(step) - absNow()));
      else print({ done: true, sent, rounds: step / buffers.length, start, end: absNow() });
    };
    tick();
  };
  shutdown = async () => {
    for (const client of wss.clients) client.terminate();
    await new Promise<void>((resolve) => wss.close(() => resolve()));
    await new Promise<void>((resolve) => http.close(() => resolve()));
  };
  print({ url: `http://127.0.0.1:${port}` });
} else {
  const dir = mkdtempSync(join(tmpdir(), 'openspot-bench-ws-'));
  const env = {};
  const t = await startTestServer(env, dir);
  const funds = { EUR: '100000000', BTC: '10000' };
  const traders = [await t.trader(funds), await t.trader(funds)];
  // Resting depth on both sides, away from the price the driver trades at (30000), so book
  // messages carry a real top-10 checksum.
  const clients = traders.map(
    (trader) =>
      new OpenSpotClient({ baseUrl: `${t.url}/v1`, apiKey: trader.apiKey, apiSecret: trader.apiSecret }),
  );
  for (let i = 0; i < 50; i++) {
    const buy = i % 2 === 0;
    await clients[i % 2]!.createOrder({
      pair: 'BTC/EUR',
      direction: buy ? 'buy' : 'sell',
      type: 'limit',
      volume: '0.01',
      price: buy ? `${29_000 - i * 10}` : `${31_000 + i * 10}`,
    });
  }
  shutdown = async () => {
    await t.close();
    rmSync(dir, { recursive: true, force: true });
  };
  print({ url: t.url, appKey: loadConfig(env).ws.appKey, traders });
}

let exiting = false;
async function exit(): Promise<void> {
  if (exiting) return;
  exiting = true;
  await shutdown();
  // A normal exit, so that --cpu-prof writes its profile.
  process.exit(0);
}

const lines = createInterface({ input: process.stdin });
lines.on('line', (line) => {
  const command = JSON.parse(line) as { cmd: string; groups?: string[][]; rate?: number; seconds?: number };
  if (command.cmd === 'cpu') print({ cpu: process.cpuUsage() });
  else if (command.cmd === 'broadcast') broadcast(command.groups!, command.rate!, command.seconds!);
  else if (command.cmd === 'exit') void exit();
});
lines.on('close', () => void exit());
process.on('SIGTERM', () => void exit());
