/**
 * A worker thread of bench/ws.ts holding a share of the client sockets (raw `ws`), so the clients
 * are spread over several event loops. Each socket subscribes like a Pusher client, answers the
 * server's `pusher:ping`, and for every data frame does the same small amount of work in both
 * phases: count it in a 100 ms bucket and, for a trade frame, read its qty tag and arrival time.
 *
 * Messages from the main thread: `report` → posts counts, trade arrivals and closes; `close` →
 * terminates the sockets and ends the worker.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { WebSocket } from 'ws';
import { absNow } from './measure.js';
import { connectAll, startsWith, watchEnd } from './ws-worker-support.js';

export interface ClientsConfig {
  /** ws:// address including the app path. */
  readonly url: string;
  readonly count: number;
  readonly channels: readonly string[];
  /** Wait for `subscription_succeeded` on every channel before reporting ready (real server only). */
  readonly awaitSubscriptions: boolean;
  /** Absolute ms that bucket 0 starts at. */
  readonly epoch: number;
  readonly buckets: number;
  /** Lots of the tag 0 trade: qty = (base + tag) lots. */
  readonly tagBase: number;
}

export interface ClientsReport {
  readonly buckets: Float64Array;
  readonly tags: Int32Array;
  readonly times: Float64Array;
  readonly closed: Record<string, number>;
  readonly other: number;
}

const config = workerData as ClientsConfig;
const port = parentPort!;

const UPDATE = Buffer.from('{"event":"update","channel":"');
const TRADE = Buffer.from('{"event":"update","channel":"trade.');
// Inside the frame, the payload is JSON text in a JSON string: its quotes are escaped.
// Global: one frame may carry several trades, each with its own tag.
const QTY = /\\"qty\\":\\"(\d+)\.(\d+)\\"/g;

const buckets = new Float64Array(config.buckets);
let tags = new Int32Array(1 << 16);
let times = new Float64Array(1 << 16);
let arrivals = 0;
let other = 0;
const closed: Record<string, number> = {};

function recordTrade(data: Buffer, now: number): void {
  for (const match of data.toString('latin1').matchAll(QTY)) recordTag(match, now);
}

function recordTag(match: RegExpMatchArray, now: number): void {
  if (arrivals === tags.length) {
    const moreTags = new Int32Array(tags.length * 2);
    moreTags.set(tags);
    tags = moreTags;
    const moreTimes = new Float64Array(times.length * 2);
    moreTimes.set(times);
    times = moreTimes;
  }
  tags[arrivals] = Number(match[1]! + match[2]!) - config.tagBase;
  times[arrivals] = now;
  arrivals += 1;
}

function connect(): Promise<WebSocket> {
  return new Promise((resolve, reject) => {
    const socket = new WebSocket(config.url, { perMessageDeflate: false });
    const pending = new Set(config.channels);
    let ready = false;
    const done = (): void => {
      if (ready) return;
      ready = true;
      resolve(socket);
    };
    socket.on('message', (raw: Buffer) => {
      const now = absNow();
      if (startsWith(raw, UPDATE)) {
        const bucket = Math.floor((now - config.epoch) / 100);
        if (bucket >= 0 && bucket < buckets.length) buckets[bucket]! += 1;
        if (startsWith(raw, TRADE)) recordTrade(raw, now);
        return;
      }
      const frame = JSON.parse(raw.toString()) as { event?: string; channel?: string };
      if (frame.event === 'pusher:ping') socket.send('{"event":"pusher:pong","data":{}}');
      else if (frame.event === 'pusher_internal:subscription_succeeded') {
        pending.delete(frame.channel ?? '');
        if (pending.size === 0) done();
      } else if (frame.event !== 'snapshot' && frame.event !== 'pusher:connection_established') other += 1;
    });
    socket.once('open', () => {
      for (const channel of config.channels)
        socket.send(JSON.stringify({ event: 'pusher:subscribe', data: { auth: '', channel } }));
      if (!config.awaitSubscriptions) done();
    });
    watchEnd(socket, closed, () => ready, reject);
  });
}

const { sockets, failed } = await connectAll(config.count, connect);
port.postMessage({ type: 'ready', connected: sockets.length, failed });

port.on('message', (message: { type: string }) => {
  if (message.type === 'report') {
    const report: ClientsReport = {
      buckets,
      tags: tags.slice(0, arrivals),
      times: times.slice(0, arrivals),
      closed,
      other,
    };
    port.postMessage({ type: 'report', report });
  } else if (message.type === 'close') {
    for (const socket of sockets) socket.terminate();
    port.close();
  }
});
