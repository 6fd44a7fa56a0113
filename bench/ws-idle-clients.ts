/**
 * A worker thread of bench/gateway-size.ts holding a share of many idle WebSocket clients (raw
 * `ws`, no compression). Each socket waits for `pusher:connection_established`, answers the
 * server's `pusher:ping` (the only traffic of an idle venue) and otherwise does nothing: frames
 * are recognised by their first bytes, never parsed, so a book snapshot costs the client little.
 *
 * Messages from the main thread: `subscribe` {channels} → every socket subscribes and the worker
 * posts `subscribed` once the server confirmed all; `stats` → `stats` {pings, closed};
 * `close` → terminates the sockets, posts `closed` and ends.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { WebSocket } from 'ws';
import { connectAll, startsWith, watchEnd } from './ws-worker-support.js';

export interface IdleClientsConfig {
  /** ws:// address including the app path. */
  readonly url: string;
  readonly count: number;
}

export type IdleClientsMessage =
  | { readonly type: 'connected'; readonly connected: number; readonly failed: number }
  | { readonly type: 'subscribed'; readonly subscribed: number; readonly refused: number }
  | { readonly type: 'stats'; readonly pings: number; readonly closed: Record<string, number> }
  | { readonly type: 'closed' };

const config = workerData as IdleClientsConfig;
const port = parentPort!;

const prefix = (text: string): Buffer => Buffer.from(text);
const ESTABLISHED = prefix('{"event":"pusher:connection_established"');
const PING = prefix('{"event":"pusher:ping"');
const SUCCEEDED = prefix('{"event":"pusher_internal:subscription_succeeded"');
const SUBSCRIPTION_ERROR = prefix('{"event":"pusher:subscription_error"');
const PONG = '{"event":"pusher:pong","data":{}}';

let pings = 0;
const closed: Record<string, number> = {};
/** Answers still awaited to the current `subscribe` request, and what to do when none is left. */
let awaited = 0;
let refused = 0;
let onAnswered: (() => void) | undefined;
const answered = (ok: boolean): void => {
  if (!ok) refused += 1;
  awaited -= 1;
  if (awaited === 0) onAnswered?.();
};

function connect(): Promise<WebSocket> {
  return new Promise((resolve, reject) => {
    const socket = new WebSocket(config.url, { perMessageDeflate: false });
    let ready = false;
    socket.on('message', (raw: Buffer) => {
      if (startsWith(raw, PING)) {
        pings += 1;
        socket.send(PONG);
      } else if (startsWith(raw, SUCCEEDED)) answered(true);
      else if (startsWith(raw, SUBSCRIPTION_ERROR)) answered(false);
      else if (!ready && startsWith(raw, ESTABLISHED)) {
        ready = true;
        resolve(socket);
      }
    });
    watchEnd(socket, closed, () => ready, reject);
  });
}

const { sockets, failed } = await connectAll(config.count, connect);
const post = (message: IdleClientsMessage): void => port.postMessage(message);
post({ type: 'connected', connected: sockets.length, failed });

port.on('message', (message: { type: string; channels?: readonly string[] }) => {
  if (message.type === 'subscribe') {
    const channels = message.channels ?? [];
    awaited = sockets.length * channels.length;
    refused = 0;
    onAnswered = () =>
      post({ type: 'subscribed', subscribed: sockets.length * channels.length - refused, refused });
    if (awaited === 0) onAnswered();
    for (const socket of sockets)
      for (const channel of channels)
        socket.send(JSON.stringify({ event: 'pusher:subscribe', data: { auth: '', channel } }));
  } else if (message.type === 'stats') post({ type: 'stats', pings, closed: { ...closed } });
  else if (message.type === 'close') {
    for (const socket of sockets) socket.terminate();
    post({ type: 'closed' });
    port.close();
  }
});
