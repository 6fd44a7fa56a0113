/**
 * Property-based fuzzing (fast-check) of the Pusher-protocol WebSocket server of the REAL server
 * (one `startTestServer()` for the file), with raw `ws` clients: invalid JSON, random JSON values,
 * unknown events with both prefixes, wrong types in `data` / `channel` / `auth`, huge channel
 * names, binary frames, text frames that are not UTF-8, oversized and fragmented frames,
 * subscribe floods, rapid subscribe/unsubscribe, many connections.
 *
 * Properties:
 *  - every frame gets exactly the answer docs/interface-decisions.md W gives it (each frame is followed by
 *    a `pusher:ping` whose `pusher:pong` marks the end of its answer): `pusher:error` 4301 for a
 *    rejected frame, `pusher:subscription_error` 404/401/403/429 for a refused subscription,
 *    `subscription_succeeded` (+ snapshot) for an accepted one, or a documented close code
 *    (4009, 1009, 4100, 1007);
 *  - the subscriptions the server holds for a connection are exactly the model's (counted through
 *    GET /metrics `openspot_ws_subscriptions`), never more than the per-connection limit, and
 *    `openspot_ws_connections` / `openspot_ws_subscriptions` return to their baseline once the
 *    fuzz clients are gone;
 *  - a well-behaved subscriber on `trade.BTCEUR` receives every trade made while the fuzzing goes
 *    on (trades are made during floods), and is never closed or sent an error;
 *  - the server stays up (GET /healthz 200 after every property).
 *
 * The server runs with WS_MAX_SUBSCRIPTIONS=24 and WS_MAX_CONNECTIONS=150 so that the limit, the
 * flood cut-off and the capacity refusal are reachable with the channels that exist, and without
 * rate limits (inputs are fuzzed, not throughput); frames use the default WS_MAX_FRAME_BYTES
 * (16384). Seeds are fixed and printed (FUZZ_SEED, FUZZ_RUNS as in
 * the HTTP fuzz file). Only 127.0.0.1 is contacted.
 */
import assert from 'node:assert/strict';
import { after, before, type TestContext, test } from 'node:test';
import fc from 'fast-check';
import { type RawData, WebSocket } from 'ws';
import { startTestServer, type TestServer, type Trader } from '../support/server-fixture.js';
import { APP_KEY, channelAuth, FrameLog, placeOrder, waitFor, wsUrl } from '../ws/helpers.js';
import { encode, fuzzParams, keepAlive, rawRequest, sleep } from './support.js';

const MAX_FRAME = 16_384;
const MAX_SUBSCRIPTIONS = 24;
const MAX_CONNECTIONS = 150;
const MAX_CHANNEL_NAME = 164;
const SHRINK = process.env.FUZZ_SHRINK === '1';

let t: TestServer;
let base: URL;
let url: string;
let maker: Trader;
let taker: Trader;
let watcher: FrameLog;
/** Trade ids made by this file; the watcher must receive every one of them. */
const tradesMade: number[] = [];
let publicChannels: string[];
let baseline: { connections: number; subscriptions: number };

// ---------------------------------------------------------------------------------------------
// Server-side counts, through the operator's metrics endpoint.

async function wsStats(): Promise<{ connections: number; subscriptions: number }> {
  const r = await fetch(`${t.url}/metrics`, { headers: { authorization: `Bearer ${t.server.adminToken}` } });
  assert.equal(r.status, 200);
  const text = await r.text();
  const read = (name: string) => {
    const match = new RegExp(`^${name} (\\d+)$`, 'm').exec(text);
    assert.ok(match, `${name} missing from /metrics`);
    return Number(match[1]);
  };
  return { connections: read('openspot_ws_connections'), subscriptions: read('openspot_ws_subscriptions') };
}

async function untilStats(expected: { connections: number; subscriptions: number }, what: string) {
  const deadline = Date.now() + 8000;
  let last = await wsStats();
  while (last.connections !== expected.connections || last.subscriptions !== expected.subscriptions) {
    if (Date.now() > deadline)
      assert.fail(`${what}: expected ${JSON.stringify(expected)}, server has ${JSON.stringify(last)}`);
    await sleep(5);
    last = await wsStats();
  }
}

async function assertHealthy(): Promise<void> {
  const r = await rawRequest(base, { method: 'GET', path: '/healthz', fresh: true });
  assert.equal(r.status, 200, `health: ${r.status} ${r.text}`);
}

/** One trade on BTC/EUR between the two traders; resolves with its id (from the taker's trades). */
async function makeTrade(): Promise<number> {
  const sell = await placeOrder(t, maker, { side: 'sell', type: 'limit', volume: '0.001', price: '30000' });
  assert.equal(sell.status, 201);
  const buy = await placeOrder(t, taker, { side: 'buy', type: 'limit', volume: '0.001', price: '30000' });
  assert.equal(buy.status, 201);
  const r = await fetch(`${t.url}/v1/orderbook?ticker_id=BTCEUR&depth=0`);
  assert.equal(r.status, 200);
  const trades = await t.server.exchange.store.listPublicTrades({
    marketId: t.server.exchange.catalogue.marketByName('BTCEUR')!.id,
    limit: 1,
  });
  const id = trades[0]!.id as number;
  tradesMade.push(id);
  return id;
}

/** The watcher received a trade update naming this trade id. */
async function watcherGot(tradeId: number): Promise<void> {
  await waitFor(
    () =>
      watcher
        .on('trade.BTCEUR')
        .some((m) => (m as { data: Array<{ trade_id: number }> }).data.some((d) => d.trade_id === tradeId)),
    `the watcher to receive trade ${tradeId}`,
    5000,
  );
}

// ---------------------------------------------------------------------------------------------
// A raw fuzz client: records every frame and the close code.

interface Received {
  readonly raw: string;
  readonly binary: boolean;
  readonly frame: { event?: unknown; channel?: unknown; data?: unknown } | undefined;
}

class FuzzClient {
  readonly received: Received[] = [];
  closeCode: number | undefined;
  socketId = '';
  private readonly socket: WebSocket;
  /** Woken on every frame and on close: waits are event-driven, not polled. */
  private readonly waiters = new Set<() => void>();
  private syncs = 0;

  private constructor(socket: WebSocket) {
    this.socket = socket;
    socket.on('message', (data: RawData, isBinary: boolean) => {
      const raw = Buffer.isBuffer(data) ? data.toString('utf8') : String(data);
      let frame: Received['frame'];
      try {
        frame = JSON.parse(raw) as Received['frame'];
      } catch {
        frame = undefined;
      }
      this.received.push({ raw, binary: isBinary, frame });
      this.wake();
    });
    socket.on('close', (code) => {
      this.closeCode = code;
      this.wake();
    });
    socket.on('error', () => {});
  }

  private wake(): void {
    for (const waiter of [...this.waiters]) waiter();
  }

  /** Resolves once `condition` holds (checked now and after every frame or close). */
  until(condition: () => boolean, what: string, timeoutMs = 5000): Promise<void> {
    if (condition()) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const check = () => {
        if (!condition()) return;
        clearTimeout(timer);
        this.waiters.delete(check);
        resolve();
      };
      const timer = setTimeout(() => {
        this.waiters.delete(check);
        const last = this.received.slice(-5).map((r) => r.raw.slice(0, 200));
        reject(new Error(`timed out waiting for ${what}; last frames ${JSON.stringify(last)}`));
      }, timeoutMs);
      this.waiters.add(check);
    });
  }

  static async open(): Promise<FuzzClient> {
    const client = new FuzzClient(new WebSocket(url));
    await client.until(
      () => client.received.length > 0 || client.closeCode !== undefined,
      'connection_established',
    );
    const first = client.received[0]?.frame;
    assert.equal(first?.event, 'pusher:connection_established', JSON.stringify(client.received));
    client.socketId = (JSON.parse(String(first?.data)) as { socket_id: string }).socket_id;
    return client;
  }

  get open(): boolean {
    return this.closeCode === undefined && this.socket.readyState === WebSocket.OPEN;
  }

  send(payload: string | Buffer, binary = false, fin = true): void {
    if (this.socket.readyState === WebSocket.OPEN) this.socket.send(payload, { binary, fin });
  }

  /**
   * Marks the end of the answer to what was sent before: subscribes to a channel that cannot
   * exist (`fuzz-sync.<n>`, refused with 404 before any limit is counted) and waits for that
   * refusal (or the close). Returns the frames received from `from` up to the marker, and removes
   * the marker from the log.
   */
  async sync(from: number, timeoutMs = 5000): Promise<Received[]> {
    this.syncs += 1;
    const channel = `fuzz-sync.${this.syncs}`;
    const isMarker = (r: Received) =>
      r.frame?.event === 'pusher:subscription_error' && r.frame.channel === channel;
    this.send(JSON.stringify({ event: 'pusher:subscribe', data: { channel } }));
    await this.until(
      () => this.closeCode !== undefined || this.received.some(isMarker),
      `sync ${channel}`,
      timeoutMs,
    );
    const at = this.received.findIndex(isMarker);
    const answer = this.received.slice(from, at === -1 ? undefined : at);
    if (at !== -1) this.received.splice(at, 1);
    return answer;
  }

  async waitClosed(timeoutMs = 5000): Promise<number> {
    await this.until(() => this.closeCode !== undefined, 'the close', timeoutMs);
    return this.closeCode!;
  }

  close(): void {
    this.socket.terminate();
  }

  closeGracefully(): void {
    this.socket.close(1000, 'bye');
  }
}

// ---------------------------------------------------------------------------------------------
// The model: what the server must answer to each frame (docs/interface-decisions.md W6 and 8).

type Expect =
  | { readonly kind: 'error'; readonly code: number }
  | { readonly kind: 'subscribed'; readonly channel: string }
  | { readonly kind: 'refused'; readonly channel: string; readonly status: number }
  | { readonly kind: 'flood' }
  | { readonly kind: 'nothing' }
  | { readonly kind: 'pong' }
  | { readonly kind: 'closed'; readonly code: number };

interface ConnectionModel {
  readonly channels: Set<string>;
  refusedOverLimit: number;
}

const PRIVATE = /^private-order-executed\.([1-9]\d{0,14})$/;

function subscribeVerdict(
  model: ConnectionModel,
  channel: string,
  authValid: boolean,
  auth: unknown,
): Expect {
  const known =
    channel.length <= MAX_CHANNEL_NAME && (publicChannels.includes(channel) || PRIVATE.test(channel));
  if (!known) return { kind: 'refused', channel, status: 404 };
  if (PRIVATE.test(channel)) {
    if (typeof auth !== 'string' || auth === '') return { kind: 'refused', channel, status: 401 };
    if (!authValid) return { kind: 'refused', channel, status: 403 };
  }
  if (model.channels.has(channel) || model.channels.size < MAX_SUBSCRIPTIONS) {
    model.channels.add(channel);
    return { kind: 'subscribed', channel };
  }
  model.refusedOverLimit += 1;
  if (model.refusedOverLimit > MAX_SUBSCRIPTIONS) return { kind: 'flood' };
  return { kind: 'refused', channel, status: 429 };
}

/** One fuzzed client frame, and how to compute what it must get. */
interface Frame {
  readonly label: string;
  /** Text to send, or bytes (a text frame of those bytes unless `binary`). */
  readonly payload: string | Buffer;
  readonly binary: boolean;
  /** Split into this many fragments (continuation frames). */
  readonly fragments: number;
  /** For subscribe/unsubscribe frames: what the server reads out of it. */
  readonly action?:
    | {
        readonly op: 'subscribe';
        readonly channel: string;
        readonly auth: unknown;
        readonly validAuth?: boolean;
      }
    | { readonly op: 'unsubscribe'; readonly channel: string };
  /** For everything else: the fixed expectation. */
  readonly fixed?: Expect;
}

const size = (payload: string | Buffer) =>
  typeof payload === 'string' ? Buffer.byteLength(payload) : payload.length;

function expectationOf(frame: Frame, model: ConnectionModel): Expect {
  const bytes = size(frame.payload);
  if (bytes > 2 * MAX_FRAME) return { kind: 'closed', code: 1009 };
  if (bytes > MAX_FRAME) return { kind: 'closed', code: 4009 };
  if (frame.binary) return { kind: 'error', code: 4301 };
  if (frame.fixed !== undefined) return frame.fixed;
  const action = frame.action!;
  if (action.op === 'unsubscribe') {
    model.channels.delete(action.channel);
    return { kind: 'nothing' };
  }
  return subscribeVerdict(model, action.channel, action.validAuth === true, action.auth);
}

/** Checks the frames received in answer to one client frame; returns a problem or undefined. */
function checkAnswer(
  expect: Expect,
  answer: Received[],
  client: FuzzClient,
  model: ConnectionModel,
): string | undefined {
  // Updates may arrive at any time on channels the connection holds; they answer nothing.
  const relevant = answer.filter(
    (r) =>
      !(
        r.frame?.event === 'update' &&
        typeof r.frame.channel === 'string' &&
        model.channels.has(r.frame.channel)
      ),
  );
  for (const r of answer) {
    if (r.binary) return `a binary frame from the server: ${r.raw.slice(0, 200)}`;
    if (r.frame === undefined) return `a frame that is not JSON: ${r.raw.slice(0, 200)}`;
  }
  const events = relevant.map((r) => r.frame!.event);
  const one = (event: string) => relevant.length === 1 && events[0] === event;
  switch (expect.kind) {
    case 'nothing':
      return relevant.length === 0 && client.closeCode === undefined ? undefined : 'expected no answer';
    case 'pong':
      return one('pusher:pong') && client.closeCode === undefined ? undefined : 'expected pusher:pong';
    case 'error': {
      const data = relevant[0]?.frame?.data as { code?: unknown; message?: unknown } | undefined;
      if (!one('pusher:error') || data?.code !== expect.code || typeof data.message !== 'string')
        return `expected pusher:error ${expect.code}`;
      return client.closeCode === undefined ? undefined : `closed with ${client.closeCode}`;
    }
    case 'refused': {
      const frame = relevant[0]?.frame;
      const data = frame?.data as { type?: unknown; error?: unknown; status?: unknown } | undefined;
      const type = expect.status === 429 ? 'LimitReached' : 'AuthError';
      if (
        !one('pusher:subscription_error') ||
        frame?.channel !== expect.channel ||
        data?.status !== expect.status ||
        data.type !== type ||
        typeof data.error !== 'string'
      )
        return `expected subscription_error ${expect.status}`;
      return client.closeCode === undefined ? undefined : `closed with ${client.closeCode}`;
    }
    case 'subscribed': {
      const [ok, ...rest] = relevant;
      if (
        ok?.frame?.event !== 'pusher_internal:subscription_succeeded' ||
        ok.frame.channel !== expect.channel
      )
        return 'expected subscription_succeeded';
      if (ok.frame.data !== '{}') return 'subscription_succeeded data is not "{}"';
      if (rest.length > 1) return 'more than one snapshot';
      const snap = rest[0]?.frame;
      if (snap !== undefined) {
        if (snap.event !== 'snapshot' || snap.channel !== expect.channel || typeof snap.data !== 'string')
          return `unexpected ${JSON.stringify(snap).slice(0, 200)}`;
        const payload = JSON.parse(snap.data) as { type?: unknown };
        if (payload.type !== 'snapshot') return 'snapshot payload type';
      }
      return client.closeCode === undefined ? undefined : `closed with ${client.closeCode}`;
    }
    case 'flood': {
      const data = relevant[0]?.frame?.data as { code?: unknown } | undefined;
      if (!one('pusher:error') || data?.code !== 4100)
        return 'expected pusher:error 4100 before the flood close';
      return client.closeCode === 4100 ? undefined : `expected close 4100, got ${client.closeCode}`;
    }
    case 'closed': {
      if (client.closeCode !== expect.code) return `expected close ${expect.code}, got ${client.closeCode}`;
      if (expect.code === 4009) {
        const data = relevant[0]?.frame?.data as { code?: unknown } | undefined;
        if (!one('pusher:error') || data?.code !== 4009) return 'expected pusher:error 4009 before the close';
      } else if (relevant.length > 0) return `unexpected frames before close ${expect.code}`;
      return undefined;
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Arbitraries.

const PREFIXES = ['pusher:', 'channelservice:'] as const;
const KNOWN_EVENTS = new Set(['subscribe', 'unsubscribe', 'ping', 'pong']);

const channelArb = (): fc.Arbitrary<string> =>
  fc.oneof(
    { weight: 5, arbitrary: fc.constantFrom(...publicChannels) },
    {
      weight: 3,
      arbitrary: fc.constantFrom(
        'trade.BTC/EUR',
        'trade.btceur',
        'trade.BTCEUR ',
        ' trade.BTCEUR',
        'trade.XXXYYY',
        'ohlc.BTCEUR.01',
        'ohlc.BTCEUR.2',
        'ohlc.BTCEUR.1.0',
        'ohlc.BTCEUR',
        'order-book.',
        'ticker-information.BTCEUR.1',
        'private-order-executed.0',
        'private-order-executed.01',
        'private-order-executed.1',
        'private-order-executed.99999999999999999',
        'presence-trade.BTCEUR',
        'private-trade.BTCEUR',
        'client-x',
        '__proto__',
        'constructor',
        '*',
        'trade.*',
        `trade.${'A'.repeat(40)}`,
        `${'x'.repeat(MAX_CHANNEL_NAME)}`,
        `${'x'.repeat(MAX_CHANNEL_NAME + 1)}`,
        'x'.repeat(15_000),
        'trade.BTCEUR\u0000',
        'trade.BTCÉUR',
        '\ud800',
      ),
    },
    {
      weight: 1,
      arbitrary: fc.integer({ min: 1, max: 9_999_999 }).map((n) => `private-order-executed.${n}`),
    },
    { weight: 2, arbitrary: fc.string({ unit: 'binary', maxLength: 30 }) },
  );

const nonString = fc.oneof(
  fc.constantFrom(null, true, false, 0, -1, 1.5, 1e308, [], {}, ['trade.BTCEUR'], {
    channel: 'trade.BTCEUR',
  }),
  fc.jsonValue({ maxDepth: 2 }).filter((v) => typeof v !== 'string'),
);

function frameArb(): fc.Arbitrary<Frame> {
  const text = (label: string, payload: string, fixed?: Expect): Frame => ({
    label,
    payload,
    binary: false,
    fragments: 1,
    ...(fixed === undefined ? {} : { fixed }),
  });
  const rejected: Expect = { kind: 'error', code: 4301 };
  const prefix = fc.constantFrom(...PREFIXES);
  const subscribe = fc
    .record({
      prefix,
      channel: channelArb(),
      auth: fc.oneof(
        { weight: 4, arbitrary: fc.constant(undefined) },
        {
          weight: 2,
          arbitrary: fc.constantFrom('', `${APP_KEY}:${'0'.repeat(64)}`, `${APP_KEY}:zz`, 'x'.repeat(20_000)),
        },
        { weight: 1, arbitrary: fc.string({ maxLength: 20 }) },
        { weight: 1, arbitrary: nonString },
      ),
      dataAsString: fc.boolean(),
      extra: fc.option(
        fc.dictionary(fc.string({ maxLength: 6 }), fc.jsonValue({ maxDepth: 1 }), { maxKeys: 3 }),
      ),
    })
    .map(({ prefix: p, channel, auth, dataAsString, extra }): Frame => {
      const data = { ...(extra ?? {}), channel, ...(auth === undefined ? {} : { auth }) };
      // The channel in `data` wins over an extra key of the same name (written last).
      const payload = JSON.stringify({
        event: `${p}subscribe`,
        data: dataAsString ? JSON.stringify(data) : data,
      });
      if (channel.length === 0) return text('subscribe, empty channel', payload, rejected);
      return {
        label: 'subscribe',
        payload,
        binary: false,
        fragments: 1,
        action: { op: 'subscribe', channel, auth },
      };
    });
  const unsubscribe = fc.tuple(prefix, channelArb()).map(([p, channel]): Frame => {
    const payload = JSON.stringify({ event: `${p}unsubscribe`, data: { channel } });
    if (channel.length === 0) return text('unsubscribe, empty channel', payload, rejected);
    return {
      label: 'unsubscribe',
      payload,
      binary: false,
      fragments: 1,
      action: { op: 'unsubscribe', channel },
    };
  });
  const wrongTypes = fc
    .record({
      prefix,
      op: fc.constantFrom('subscribe', 'unsubscribe'),
      data: fc.oneof(
        nonString.filter(
          (v) => !(typeof v === 'object' && v !== null && !Array.isArray(v) && 'channel' in v),
        ),
        fc.constantFrom('not json', '{"channel":', '[1]', '"trade.BTCEUR"', 'null'),
        nonString.map((channel) => ({ channel })),
        fc.constant({ channel: '' }),
        fc.constant({ Channel: 'trade.BTCEUR' }),
        fc.constant(JSON.parse('{"__proto__":{"channel":"trade.BTCEUR"}}') as unknown),
      ),
    })
    .map(({ prefix: p, op, data }) =>
      text(
        `${op} with data ${JSON.stringify(data)?.slice(0, 40)}`,
        JSON.stringify({ event: `${p}${op}`, data }),
        rejected,
      ),
    );
  const unknownEvent = fc
    .tuple(
      fc.constantFrom(
        'pusher:',
        'channelservice:',
        'pusher_internal:',
        'client-',
        '',
        'PUSHER:',
        'channelservice',
      ),
      fc.oneof(
        fc.constantFrom(
          'signin',
          'foo',
          'SUBSCRIBE',
          'subscribe ',
          'subscription_succeeded',
          'error',
          'connection_established',
        ),
        fc.string({ maxLength: 20 }),
        fc.constant('e'.repeat(5000)),
      ),
    )
    .filter(([p, e]) => !((p === 'pusher:' || p === 'channelservice:') && KNOWN_EVENTS.has(e)))
    .map(([p, e]) =>
      text(`event ${p}${e.slice(0, 20)}`, JSON.stringify({ event: `${p}${e}`, data: {} }), rejected),
    );
  const notAnObject = fc
    .oneof(
      fc
        .jsonValue({ maxDepth: 3 })
        .filter(
          (v) =>
            typeof v !== 'object' ||
            v === null ||
            Array.isArray(v) ||
            typeof (v as { event?: unknown }).event !== 'string',
        ),
      fc.constantFrom(
        { event: 1 },
        { event: null },
        { event: ['pusher:ping'] },
        { Event: 'pusher:ping' },
        {},
      ),
    )
    .map((v) => text('not a frame object', JSON.stringify(v), rejected));
  const invalidJson = fc
    .oneof(
      fc.constantFrom(
        '',
        '{',
        '{"event":',
        "{'event':'pusher:ping'}",
        'pusher:ping',
        '{"event":"pusher:ping"}}',
        'NaN',
        '\ufeff',
      ),
      fc.string({ maxLength: 40 }).filter((s) => {
        try {
          JSON.parse(s);
          return false;
        } catch {
          return true;
        }
      }),
    )
    .map((s) => text('invalid JSON', s, rejected));
  const deep = fc
    .integer({ min: 100, max: 5000 })
    .map((n) =>
      text(`nesting ${n}`, `{"event":"pusher:subscribe","data":${'['.repeat(n)}${']'.repeat(n)}}`, rejected),
    );
  const ping = prefix.map((p) =>
    text('ping', JSON.stringify({ event: `${p}ping`, data: {} }), { kind: 'pong' }),
  );
  const pong = prefix.map((p) => text('pong', JSON.stringify({ event: `${p}pong` }), { kind: 'nothing' }));
  const binary = fc
    .uint8Array({ maxLength: 64 })
    .map((a): Frame => ({ label: 'binary', payload: Buffer.from(a), binary: true, fragments: 1 }));
  const notUtf8 = fc
    .constantFrom([0xff], [0xc3, 0x28], [0xed, 0xa0, 0x80], [0xf8, 0x88, 0x80, 0x80, 0x80])
    .map(
      (bad): Frame => ({
        label: 'text frame that is not UTF-8',
        payload: Buffer.concat([
          Buffer.from('{"event":"pusher:ping","x":"'),
          Buffer.from(bad),
          Buffer.from('"}'),
        ]),
        binary: false,
        fragments: 1,
        fixed: { kind: 'closed', code: 1007 },
      }),
    );
  const oversized = fc
    .tuple(
      fc.oneof(
        fc.integer({ min: MAX_FRAME + 1, max: 2 * MAX_FRAME }),
        fc.integer({ min: 2 * MAX_FRAME + 1, max: 4 * MAX_FRAME }),
        fc.constant(MAX_FRAME),
      ),
      fc.boolean(),
      fc.integer({ min: 1, max: 4 }),
    )
    .map(([n, isBinary, fragments]): Frame => {
      const prefixText = '{"event":"pusher:subscribe","data":{"channel":"';
      // Exactly at the limit: read like any frame (a 404 for that channel name, 4301 if binary).
      const channel = 'x'.repeat(n - prefixText.length - 3);
      const payload = `${prefixText}${channel}"}}`;
      return {
        label: `${n} bytes${isBinary ? ', binary' : ''} in ${fragments} fragments`,
        payload: isBinary ? Buffer.from(payload) : payload,
        binary: isBinary,
        fragments,
        action: { op: 'subscribe', channel, auth: undefined },
      };
    });
  const fragmentedSubscribe = fc
    .tuple(fc.constantFrom(...publicChannels), fc.integer({ min: 2, max: 5 }))
    .map(
      ([channel, fragments]): Frame => ({
        label: `subscribe in ${fragments} fragments`,
        payload: JSON.stringify({ event: 'pusher:subscribe', data: { channel } }),
        binary: false,
        fragments,
        action: { op: 'subscribe', channel, auth: undefined },
      }),
    );
  return fc.oneof(
    { weight: 8, arbitrary: subscribe },
    { weight: 3, arbitrary: unsubscribe },
    { weight: 3, arbitrary: wrongTypes },
    { weight: 3, arbitrary: unknownEvent },
    { weight: 2, arbitrary: notAnObject },
    { weight: 2, arbitrary: invalidJson },
    { weight: 1, arbitrary: deep },
    { weight: 1, arbitrary: ping },
    { weight: 1, arbitrary: pong },
    { weight: 2, arbitrary: binary },
    { weight: 1, arbitrary: notUtf8 },
    { weight: 1, arbitrary: oversized },
    { weight: 1, arbitrary: fragmentedSubscribe },
  );
}

function sendFrame(client: FuzzClient, frame: Frame): void {
  const bytes = typeof frame.payload === 'string' ? Buffer.from(frame.payload) : frame.payload;
  if (frame.fragments <= 1) {
    client.send(typeof frame.payload === 'string' ? frame.payload : bytes, frame.binary);
    return;
  }
  const step = Math.ceil(bytes.length / frame.fragments);
  for (let i = 0; i < frame.fragments; i++) {
    const part = bytes.subarray(i * step, (i + 1) * step);
    client.send(part, frame.binary, i === frame.fragments - 1);
  }
}

// ---------------------------------------------------------------------------------------------

before(async () => {
  t = await startTestServer({
    WS_MAX_SUBSCRIPTIONS: String(MAX_SUBSCRIPTIONS),
    WS_MAX_CONNECTIONS: String(MAX_CONNECTIONS),
    WS_MAX_FRAME_BYTES: String(MAX_FRAME),
    // Inputs are fuzzed here, not throughput: the per-connection frame rate limit and the HTTP
    // rate limits (docs/security.md, tested in test/access) are off.
    WS_MAX_FRAMES_PER_SECOND: '0',
    RATE_LIMIT_IP_PER_SECOND: '0',
    RATE_LIMIT_KEY_PER_SECOND: '0',
  });
  base = new URL(t.url);
  assert.equal(base.hostname, '127.0.0.1');
  url = wsUrl(t);
  maker = await t.trader({ BTC: '100', EUR: '10' });
  taker = await t.trader({ EUR: '10000000' });
  const intervals = [1, 5, 15, 30, 60, 240, 1440, 10080, 21600];
  publicChannels = t.server.exchange.catalogue.markets().flatMap((m) => {
    const pair = `${m.base}${m.quote}`;
    return [
      `ticker-information.${pair}`,
      `trade.${pair}`,
      `order-book.${pair}`,
      ...intervals.map((i) => `ohlc.${pair}.${i}`),
    ];
  });
  assert.ok(publicChannels.length > MAX_SUBSCRIPTIONS, 'enough channels to reach the limit');
  ({ log: watcher } = await FrameLog.open(url));
  watcher.subscribe('trade.BTCEUR');
  await watcher.next((f) => f.event === 'pusher_internal:subscription_succeeded');
  await watcherGot(await makeTrade());
  baseline = await wsStats();
  assert.deepEqual(baseline, { connections: 1, subscriptions: 1 });
});

after(async () => {
  watcher?.close();
  keepAlive.destroy();
  await t?.close();
});

async function runProperty<T>(
  tc: TestContext,
  name: string,
  offset: number,
  runs: number,
  arb: fc.Arbitrary<T>,
  body: (value: T) => Promise<void>,
): Promise<void> {
  const params = fuzzParams(offset, runs);
  tc.diagnostic(`${name}: seed ${params.seed}, ${params.numRuns} runs`);
  await fc.assert(fc.asyncProperty(arb, body), { ...params, endOnFailure: !SHRINK });
  await untilStats(baseline, `${name}: connections and subscriptions back to baseline`);
  await watcherGot(await makeTrade());
  await assertHealthy();
}

test('random frames, one at a time: each gets exactly its documented answer', async (tc) => {
  let withPrivate = 0;
  const kinds = new Map<string, number>();
  await runProperty(
    tc,
    'random frames',
    200,
    400,
    fc.record({ frames: fc.array(frameArb(), { minLength: 1, maxLength: 8 }), privateFirst: fc.boolean() }),
    async ({ frames, privateFirst }) => {
      const client = await FuzzClient.open();
      const model: ConnectionModel = { channels: new Set(), refusedOverLimit: 0 };
      try {
        const script: Frame[] = [...frames];
        if (privateFirst) {
          // A real channel authorization for this socket: the one private subscription that succeeds.
          const channel = `private-order-executed.${taker.userId}`;
          const r = await channelAuth(t, taker, client.socketId, channel);
          assert.equal(r.status, 200, JSON.stringify(r.body));
          const auth = (r.body as { auth: string }).auth;
          script.unshift({
            label: 'private subscribe with a valid auth',
            payload: JSON.stringify({ event: 'channelservice:subscribe', data: { channel, auth } }),
            binary: false,
            fragments: 1,
            action: { op: 'subscribe', channel, auth, validAuth: true },
          });
          withPrivate += 1;
        }
        let from = client.received.length;
        for (const [i, frame] of script.entries()) {
          const expect = expectationOf(frame, model);
          const kind =
            expect.kind === 'closed'
              ? `close ${expect.code}`
              : expect.kind === 'error'
                ? `error ${expect.code}`
                : expect.kind === 'refused'
                  ? `refused ${expect.status}`
                  : expect.kind;
          kinds.set(kind, (kinds.get(kind) ?? 0) + 1);
          sendFrame(client, frame);
          const answer = expect.kind === 'closed' || expect.kind === 'flood' ? [] : await client.sync(from);
          if (expect.kind === 'closed' || expect.kind === 'flood') {
            await client.waitClosed();
            answer.push(...client.received.slice(from));
          }
          const problem = checkAnswer(expect, answer, client, model);
          assert.equal(
            problem,
            undefined,
            `frame ${i} (${frame.label}): ${problem}; sent ${String(frame.payload).slice(0, 300)}; got ${JSON.stringify(answer.map((a) => a.raw.slice(0, 200)))} close ${client.closeCode}`,
          );
          if (!client.open) break;
          from = client.received.length;
        }
        if (client.open) {
          // The server holds exactly the model's subscriptions for this connection.
          await untilStats(
            {
              connections: baseline.connections + 1,
              subscriptions: baseline.subscriptions + model.channels.size,
            },
            'subscriptions of the fuzz connection',
          );
        }
      } finally {
        client.close();
      }
    },
  );
  tc.diagnostic(`random frames: ${withPrivate} runs subscribed a private channel with a valid auth`);
  tc.diagnostic(`random frames: expected answers ${JSON.stringify(Object.fromEntries([...kinds].sort()))}`);
});

test('subscribe floods: hundreds of subscribes at once are each answered, bounded, then cut off', async (tc) => {
  await runProperty(
    tc,
    'subscribe floods',
    201,
    24,
    fc.record({
      channels: fc.array(channelArb(), { minLength: 100, maxLength: 600 }),
      prefix: fc.constantFrom(...PREFIXES),
      tradeDuring: fc.boolean(),
    }),
    async ({ channels, prefix, tradeDuring }) => {
      const client = await FuzzClient.open();
      const model: ConnectionModel = { channels: new Set(), refusedOverLimit: 0 };
      try {
        const expected: Expect[] = [];
        const from = client.received.length;
        const trade = tradeDuring ? makeTrade() : undefined;
        for (const channel of channels) {
          const frame = JSON.stringify({ event: `${prefix}subscribe`, data: { channel } });
          if (channel === '') expected.push({ kind: 'error', code: 4301 });
          else if (Buffer.byteLength(frame) > MAX_FRAME) expected.push({ kind: 'closed', code: 4009 });
          else expected.push(subscribeVerdict(model, channel, false, undefined));
          client.send(frame);
          const last = expected.at(-1)!;
          if (last.kind === 'flood' || last.kind === 'closed') break;
        }
        const ended = expected.at(-1)!;
        if (ended.kind === 'flood' || ended.kind === 'closed') await client.waitClosed();
        else await client.sync(from, 10_000);
        if (trade !== undefined) await watcherGot(await trade);
        // Match answers to subscribes in order (updates on held channels may be interleaved).
        const answers = client.received.slice(from).filter((r) => r.frame?.event !== 'update');
        let i = 0;
        for (const [n, expect] of expected.entries()) {
          const group: Received[] = [];
          if (expect.kind === 'closed' && expect.code === 1009) break;
          group.push(answers[i++]!);
          if (expect.kind === 'subscribed' && answers[i]?.frame?.event === 'snapshot')
            group.push(answers[i++]!);
          const lastOne = n === expected.length - 1;
          const problem = checkAnswer(
            expect,
            group.filter((g) => g !== undefined),
            lastOne ? client : ({ closeCode: undefined } as FuzzClient),
            model,
          );
          assert.equal(
            problem,
            undefined,
            `subscribe ${n} (${channels[n]?.slice(0, 60)}): ${problem}; got ${JSON.stringify(group.map((g) => g?.raw.slice(0, 200)))}`,
          );
        }
        assert.equal(
          i,
          answers.length,
          `unanswered or extra frames: ${JSON.stringify(answers.slice(i, i + 3).map((a) => a.raw.slice(0, 200)))}`,
        );
        assert.ok(model.channels.size <= MAX_SUBSCRIPTIONS);
        if (client.open) {
          await untilStats(
            {
              connections: baseline.connections + 1,
              subscriptions: baseline.subscriptions + model.channels.size,
            },
            'subscriptions after the flood',
          );
        }
      } finally {
        client.close();
      }
    },
  );
});

test('rapid subscribe/unsubscribe: the server ends with exactly the subscriptions the client holds', async (tc) => {
  const small = () =>
    fc.constantFrom(...publicChannels.slice(0, 30), 'trade.NOPE', 'private-order-executed.1');
  await runProperty(
    tc,
    'subscribe/unsubscribe',
    202,
    60,
    fc.array(fc.tuple(fc.boolean(), small(), fc.constantFrom(...PREFIXES)), {
      minLength: 10,
      maxLength: 200,
    }),
    async (ops) => {
      const client = await FuzzClient.open();
      const model: ConnectionModel = { channels: new Set(), refusedOverLimit: 0 };
      try {
        let flooded = false;
        for (const [sub, channel, prefix] of ops) {
          client.send(
            JSON.stringify({ event: `${prefix}${sub ? 'subscribe' : 'unsubscribe'}`, data: { channel } }),
          );
          if (sub) flooded = subscribeVerdict(model, channel, false, undefined).kind === 'flood';
          else model.channels.delete(channel);
          if (flooded) break;
        }
        if (flooded) {
          assert.equal(await client.waitClosed(), 4100);
        } else {
          await client.sync(0, 10_000);
          assert.equal(client.closeCode, undefined);
          await untilStats(
            {
              connections: baseline.connections + 1,
              subscriptions: baseline.subscriptions + model.channels.size,
            },
            'subscriptions after subscribe/unsubscribe',
          );
        }
      } finally {
        client.close();
      }
    },
  );
});

test('many connections at once: over capacity is refused with 4100, everything is released afterwards', async (tc) => {
  await runProperty(
    tc,
    'many connections',
    203,
    4,
    fc.record({
      count: fc.integer({ min: 60, max: 200 }),
      behaviour: fc.array(fc.constantFrom('subscribe', 'garbage', 'oversize', 'idle', 'flood'), {
        minLength: 200,
        maxLength: 200,
      }),
      graceful: fc.array(fc.boolean(), { minLength: 200, maxLength: 200 }),
    }),
    async ({ count, behaviour, graceful }) => {
      const sockets: WebSocket[] = [];
      const closes: Array<Promise<{ code: number; errorFrame: unknown }>> = [];
      for (let i = 0; i < count; i++) {
        const socket = new WebSocket(url);
        sockets.push(socket);
        let errorFrame: unknown;
        closes.push(
          new Promise((resolve) => {
            socket.on('error', () => {});
            socket.on('message', (raw) => {
              const frame = JSON.parse(String(raw)) as { event: string; data: unknown };
              if (frame.event === 'pusher:error') errorFrame ??= frame.data;
              if (frame.event !== 'pusher:connection_established') return;
              switch (behaviour[i]) {
                case 'subscribe':
                  for (const channel of publicChannels.slice(i % 10, (i % 10) + 5))
                    socket.send(JSON.stringify({ event: 'pusher:subscribe', data: { channel } }));
                  break;
                case 'garbage':
                  socket.send('{nope');
                  socket.send(Buffer.from([1, 2, 3]));
                  break;
                case 'oversize':
                  socket.send('x'.repeat(MAX_FRAME + 1));
                  break;
                case 'flood':
                  for (const channel of publicChannels)
                    socket.send(JSON.stringify({ event: 'channelservice:subscribe', data: { channel } }));
                  break;
              }
            });
            socket.on('close', (code) => resolve({ code, errorFrame }));
          }),
        );
      }
      const trade = makeTrade();
      await waitFor(
        () => sockets.every((s) => s.readyState !== WebSocket.CONNECTING),
        'every connection to open or be refused',
        10_000,
      );
      await sleep(50);
      const open = sockets.filter((s) => s.readyState === WebSocket.OPEN).length;
      assert.ok(open <= MAX_CONNECTIONS, `${open} open connections, over the limit`);
      await watcherGot(await trade);
      sockets.forEach((s, i) => {
        if (graceful[i]) s.close(1000);
        else s.terminate();
      });
      const results = await Promise.all(closes);
      for (const [i, r] of results.entries()) {
        const allowed = [1000, 1005, 1006, 4009, 4100];
        assert.ok(allowed.includes(r.code), `connection ${i} closed with ${r.code}`);
        if (r.code === 4100 || r.code === 4009) {
          assert.equal((r.errorFrame as { code?: unknown } | undefined)?.code, r.code, `connection ${i}`);
        }
      }
      if (count + baseline.connections > MAX_CONNECTIONS) {
        assert.ok(
          results.some((r) => r.code === 4100),
          'some connections were refused for capacity',
        );
      }
    },
  );
});

test('a client that floods and does not read is cut off (4100) instead of buffering without bound', async () => {
  const client = await FuzzClient.open();
  // Stop reading: every answer now piles up in the kernel, then in the server's socket buffer.
  const raw = (client as unknown as { socket: { _socket: { pause(): void; resume(): void } } }).socket
    ._socket;
  raw.pause();
  const frame = JSON.stringify({ event: 'pusher:subscribe', data: { channel: 'z'.repeat(MAX_FRAME - 60) } });
  assert.ok(Buffer.byteLength(frame) <= MAX_FRAME);
  // ~16 KiB answered with ~16 KiB each: far more than WS_MAX_BUFFERED_BYTES (4 MiB) plus what
  // the kernel holds on both sides.
  for (let i = 0; i < 1500; i++) client.send(frame);
  const trade = makeTrade();
  await sleep(500);
  raw.resume();
  assert.equal(await client.waitClosed(10_000), 4100);
  await watcherGot(await trade);
  await untilStats(baseline, 'after the slow consumer');
  await assertHealthy();
});

test('a wrong app key is refused with 4001, an upgrade on another path with HTTP 404', async (tc) => {
  const params = fuzzParams(204, 40);
  tc.diagnostic(`wrong keys and paths: seed ${params.seed}, ${params.numRuns} runs`);
  const key = fc.oneof(
    fc.constantFrom(
      '',
      `${APP_KEY}x`,
      APP_KEY.toUpperCase(),
      '%zz',
      '%00',
      encode(`${APP_KEY}\u0000`),
      'x'.repeat(3000),
    ),
    fc.string({ unit: 'binary', minLength: 1, maxLength: 20 }).map(encode),
  );
  await fc.assert(
    fc.asyncProperty(key, fc.boolean(), async (k, otherPath) => {
      fc.pre(k !== APP_KEY && k !== encode(APP_KEY));
      const target = otherPath
        ? `${t.url.replace('http', 'ws')}/v1/markets?k=${k}`
        : `${t.url.replace('http', 'ws')}/app/${k}`;
      const socket = new WebSocket(target);
      const outcome = await new Promise<{ code?: number; status?: number; error?: unknown }>((resolve) => {
        let error: unknown;
        socket.on('message', (raw) => {
          const frame = JSON.parse(String(raw)) as { event: string; data: unknown };
          if (frame.event === 'pusher:error') error = frame.data;
        });
        socket.on('unexpected-response', (_req, res) => {
          resolve({ status: res.statusCode });
          socket.terminate();
        });
        socket.on('close', (code) => resolve({ code, error }));
        socket.on('error', () => {});
      });
      if (otherPath || k === '') assert.equal(outcome.status, 404, JSON.stringify(outcome));
      else {
        assert.equal(outcome.code, 4001, `${k}: ${JSON.stringify(outcome)}`);
        assert.equal((outcome.error as { code?: unknown }).code, 4001);
      }
    }),
    { ...params, endOnFailure: !SHRINK },
  );
  await untilStats(baseline, 'after the refused connections');
  await assertHealthy();
});

test('the well-behaved subscriber got every trade, never an error, and is still connected', async () => {
  await watcherGot(await makeTrade());
  for (const id of tradesMade) await watcherGot(id);
  assert.equal(watcher.closed, false);
  const errors = watcher.frames.filter(
    (f) => f.event === 'pusher:error' || f.event === 'pusher:subscription_error',
  );
  assert.deepEqual(errors, []);
  await untilStats(baseline, 'final');
  await assertHealthy();
  const other = await rawRequest(base, { method: 'GET', path: `/app/${encode(APP_KEY)}x`, fresh: true });
  assert.ok(other.status < 500);
});
