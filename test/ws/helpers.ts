/**
 * Helpers for the WebSocket tests against the real server: the interface's request signature and
 * Kraken's book checksum written out independently of the server's code, signed HTTP calls, and a
 * raw `ws` client that records every frame. Test code only; every wait is bounded.
 */
import { createHash, createHmac } from 'node:crypto';
import { WebSocket } from 'ws';
import { loadConfig } from '../../src/config/config.js';
import type { TestServer, Trader } from '../support/server-fixture.js';

/** The environment the tests start the server with; the app key is read from the same config. */
export const SERVER_ENV: Record<string, string> = {};
export const APP_KEY = loadConfig(SERVER_ENV).ws.appKey;

/** base64(HMAC-SHA512(base64decode(secret), METHOD + hex(sha256(body or "{}")))). */
export function sign(method: string, body: string, secret: string): string {
  const digest = createHash('sha256')
    .update(body === '' ? '{}' : body)
    .digest('hex');
  return createHmac('sha512', Buffer.from(secret, 'base64'))
    .update(method.toUpperCase() + digest)
    .digest('base64');
}

export interface ApiResponse {
  readonly status: number;
  readonly location: string | null;
  readonly body: unknown;
}

/** A signed private request; `body` is sent exactly as given when it is a string. */
export async function api(
  t: TestServer,
  trader: Pick<Trader, 'apiKey' | 'apiSecret'>,
  method: string,
  path: string,
  body?: unknown,
): Promise<ApiResponse> {
  const text = body === undefined ? '' : typeof body === 'string' ? body : JSON.stringify(body);
  const response = await fetch(`${t.url}${path}`, {
    method,
    headers: {
      accept: 'application/json',
      ...(text === '' ? {} : { 'content-type': 'application/json' }),
      'x-api-key': trader.apiKey,
      'x-api-sign': sign(method, text, trader.apiSecret),
    },
    body: text === '' ? undefined : text,
    signal: AbortSignal.timeout(10_000),
  });
  const raw = await response.text();
  return {
    status: response.status,
    location: response.headers.get('location'),
    body: raw === '' ? null : (JSON.parse(raw) as unknown),
  };
}

export interface OrderInput {
  readonly side: 'buy' | 'sell';
  readonly type: 'limit' | 'market';
  readonly volume: string;
  readonly price?: string;
}

/** POST /v1/orders on BTC/EUR; returns the new order's id (from Location), or undefined when refused. */
export async function placeOrder(
  t: TestServer,
  trader: Trader,
  order: OrderInput,
): Promise<{ status: number; id: number | undefined }> {
  const body = {
    order_direction: order.side,
    order_type: order.type,
    pair: 'BTC/EUR',
    volume: order.volume,
    ...(order.price === undefined ? {} : { price: order.price }),
  };
  const response = await api(t, trader, 'POST', '/v1/orders', body);
  const match = /\/orders\/(\d+)$/.exec(response.location ?? '');
  return { status: response.status, id: match === null ? undefined : Number(match[1]) };
}

/**
 * The body pusher-js's authorizer sends to POST /broadcasting/auth, as the interface has it: the
 * socket id as a JSON number. The number is written from the id's text, so the bytes signed are the
 * bytes sent and no float conversion happens on this side.
 */
export const broadcastingAuthBody = (socketId: string, channelName: string): string =>
  `{"socket_id":${socketId},"channel_name":${JSON.stringify(channelName)}}`;

/** The `auth` string for a private channel, obtained from the server over HTTP. */
export async function channelAuth(
  t: TestServer,
  trader: Pick<Trader, 'apiKey' | 'apiSecret'>,
  socketId: string,
  channelName: string,
): Promise<ApiResponse> {
  return api(t, trader, 'POST', '/v1/broadcasting/auth', broadcastingAuthBody(socketId, channelName));
}

export const wsUrl = (t: TestServer): string =>
  `${t.url.replace(/^http/, 'ws')}/app/${APP_KEY}?protocol=7&client=js&version=8.6.0&flash=false`;

export const portOf = (t: TestServer): number => Number(new URL(t.url).port);

/** Resolves when `condition` holds, polling; rejects with `what` after `timeoutMs`. */
export async function waitFor(condition: () => boolean, what: string, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

// Kraken's book checksum (CRC-32 of the top 10 levels), independent of src/ws/crc32.ts.

const CRC_TABLE = (() => {
  const table = new Uint32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    table[n] = c >>> 0;
  }
  return table;
})();

function crc32(text: string): number {
  let crc = 0xffffffff;
  for (const byte of Buffer.from(text, 'ascii')) crc = CRC_TABLE[(crc ^ byte) & 0xff]! ^ (crc >>> 8);
  return (crc ^ 0xffffffff) >>> 0;
}

const checksumPart = (decimal: string): string => decimal.replace('.', '').replace(/^0+/, '');

export type Level = readonly [price: string, qty: string];

/** Asks low→high then bids high→low, top 10 each, point removed and leading zeros stripped. */
export function krakenChecksum(bids: readonly Level[], asks: readonly Level[]): number {
  let text = '';
  for (const [price, qty] of asks.slice(0, 10)) text += checksumPart(price) + checksumPart(qty);
  for (const [price, qty] of bids.slice(0, 10)) text += checksumPart(price) + checksumPart(qty);
  return crc32(text);
}

/** A decimal string as an integer of units at `decimals` places (exact). */
export function units(decimal: string, decimals: number): bigint {
  const [whole, fraction = ''] = decimal.split('.');
  return BigInt(whole! + fraction.padEnd(decimals, '0').slice(0, decimals));
}

/** Integer units back to a decimal string with exactly `decimals` places. */
export function decimal(value: bigint, decimals: number): string {
  const negative = value < 0n;
  const digits = (negative ? -value : value).toString().padStart(decimals + 1, '0');
  const text = decimals === 0 ? digits : `${digits.slice(0, -decimals)}.${digits.slice(-decimals)}`;
  return negative ? `-${text}` : text;
}

// A raw client that records every frame, parsing the `data` of data frames.

export interface Frame {
  readonly event: string;
  readonly channel?: string;
  readonly data?: unknown;
}

export class FrameLog {
  readonly frames: Frame[] = [];
  closed = false;

  private constructor(readonly socket: WebSocket) {
    socket.on('message', (raw) => {
      const frame = JSON.parse(String(raw)) as { event: string; channel?: string; data?: unknown };
      // Data and established frames carry `data` as JSON text (canonical Pusher).
      const data = typeof frame.data === 'string' ? (JSON.parse(frame.data) as unknown) : frame.data;
      this.frames.push({ ...frame, data });
    });
    socket.on('close', () => {
      this.closed = true;
    });
    socket.on('error', () => {});
  }

  /** Connects and waits for `pusher:connection_established`. */
  static async open(url: string): Promise<{ log: FrameLog; socketId: string }> {
    const log = new FrameLog(new WebSocket(url));
    const established = await log.next((f) => f.event === 'pusher:connection_established');
    return { log, socketId: (established.data as { socket_id: string }).socket_id };
  }

  send(message: unknown): void {
    this.socket.send(JSON.stringify(message));
  }

  subscribe(channel: string, auth = '', prefix = 'pusher:'): void {
    this.send({ event: `${prefix}subscribe`, data: { auth, channel } });
  }

  /** The first recorded frame matching, waiting for it (bounded); it stays in the log. */
  async next(predicate: (frame: Frame) => boolean, timeoutMs = 5000): Promise<Frame> {
    let found: Frame | undefined;
    await waitFor(
      () => {
        found = this.frames.find(predicate);
        return found !== undefined || this.closed;
      },
      'a matching frame',
      timeoutMs,
    );
    if (found === undefined)
      throw new Error(`socket closed; frames: ${JSON.stringify(this.frames).slice(0, 600)}`);
    return found;
  }

  /** Data frames (`data` parsed) of one channel and event, in arrival order. */
  on(channel: string, event = 'update'): unknown[] {
    return this.frames.filter((f) => f.channel === channel && f.event === event).map((f) => f.data);
  }

  close(): void {
    this.socket.terminate();
  }
}
