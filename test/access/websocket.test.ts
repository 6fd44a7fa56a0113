/**
 * WebSocket access control over the real server: the app secret, private-channel tokens and
 * revocation, per-address connection limits.
 */
import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { WebSocket } from 'ws';
import { ConfigError, loadConfig } from '../../src/config/config.js';
import { Pusher } from '../../src/ws/test-support.js';
import { startTestServer, type TestServer } from '../support/server-fixture.js';
import { APP_KEY, channelAuth, FrameLog, waitFor, wsUrl } from '../ws/helpers.js';
import { call, createKey, limitOrder, sleep } from './support.js';

const authWith = (secret: string, socketId: string, channel: string) =>
  `${APP_KEY}:${createHmac('sha256', secret).update(`${socketId}:${channel}`).digest('hex')}`;

describe('the WebSocket app secret', { timeout: 60_000 }, () => {
  test('in production without WS_APP_SECRET, a token signed with the old public default opens nothing', async (t) => {
    const server = await startTestServer({ NODE_ENV: 'production' });
    t.after(() => server.close());
    const victim = await server.trader();
    const channel = `private-order-executed.${victim.userId}`;
    const { log, socketId } = await FrameLog.open(wsUrl(server));
    t.after(() => log.close());
    log.subscribe(channel, authWith('openspot-secret', socketId, channel));
    const answer = await log.next(
      (f) => f.channel === channel && f.event.startsWith('pusher') && f.event !== 'pusher:ping',
    );
    assert.equal(answer.event, 'pusher:subscription_error', JSON.stringify(answer));
  });

  test('when unset it is generated, kept 0600 in DATA_DIR/ws-app-secret, and reused after a restart', async (t) => {
    const dir = mkdtempSync(join(tmpdir(), 'openspot-ws-secret-'));
    t.after(() => rmSync(dir, { recursive: true, force: true }));
    const file = join(dir, 'ws-app-secret');
    const signedBy = async () => {
      const server = await startTestServer({ NODE_ENV: 'production' }, dir);
      try {
        const trader = await server.trader();
        const channel = `private-order-executed.${trader.userId}`;
        const { log, socketId } = await FrameLog.open(wsUrl(server));
        try {
          const r = await channelAuth(server, trader, socketId, channel);
          assert.equal(r.status, 200, JSON.stringify(r.body));
          const secret = readFileSync(file, 'utf8').trim();
          assert.equal((r.body as { auth: string }).auth, authWith(secret, socketId, channel));
          return secret;
        } finally {
          log.close();
        }
      } finally {
        await server.close();
      }
    };
    const first = await signedBy();
    assert.equal((statSync(file).mode & 0o777).toString(8), '600');
    assert.notEqual(first, 'openspot-secret');
    assert.equal(await signedBy(), first);
  });
});

describe('private channel tokens and revocation', { timeout: 60_000 }, () => {
  let t: TestServer;
  before(async () => {
    t = await startTestServer();
  });
  after(async () => {
    await t.close();
  });

  test('after revocation, re-sending the subscribe frame with the old auth is refused and no event flows', async () => {
    const trader = await t.trader();
    const other = await createKey(t, trader.userId, {});
    const channel = `private-order-executed.${trader.userId}`;
    const { log, socketId } = await FrameLog.open(wsUrl(t));
    const canary = await FrameLog.open(wsUrl(t));
    try {
      const r = await channelAuth(t, trader, socketId, channel);
      assert.equal(r.status, 200, JSON.stringify(r.body));
      const frame = { event: 'pusher:subscribe', data: { auth: (r.body as { auth: string }).auth, channel } };
      log.send(frame);
      await log.next((f) => f.event === 'pusher_internal:subscription_succeeded' && f.channel === channel);
      assert.equal((await t.admin('DELETE', `/api-keys/${trader.apiKey}`)).status, 200);
      await log.next((f) => f.event === 'pusher:subscription_error' && f.channel === channel);
      const errorsBefore = log.frames.filter((f) => f.event === 'pusher:subscription_error').length;

      log.send(frame);
      await waitFor(
        () => log.frames.filter((f) => f.event === 'pusher:subscription_error').length > errorsBefore,
        'a second subscription_error',
      );
      const refusal = log.frames.filter((f) => f.event === 'pusher:subscription_error').at(-1)!;
      assert.equal(refusal.channel, channel);
      assert.equal((refusal.data as { status: number }).status, 403);
      assert.equal(
        log.frames.filter((f) => f.event === 'pusher_internal:subscription_succeeded').length,
        1,
        'no second subscription_succeeded',
      );

      // The user's other key still works: its events reach a connection it authorized, not this one.
      const canaryAuth = await channelAuth(t, other, canary.socketId, channel);
      canary.log.subscribe(channel, (canaryAuth.body as { auth: string }).auth);
      await canary.log.next((f) => f.event === 'pusher_internal:subscription_succeeded');
      const seen = log.frames.length;
      assert.equal((await call(t, other, 'POST', '/v1/orders', limitOrder('20000'))).status, 201);
      await canary.log.next((f) => f.channel === channel && f.event === 'update');
      await sleep(100);
      assert.deepEqual(
        log.frames.slice(seen).filter((f) => f.channel === channel),
        [],
        'no event of the channel reached the revoked connection',
      );
    } finally {
      log.close();
      canary.log.close();
    }
  });

  test('a token is refused for a socket id that is not connected to this server (403)', async () => {
    const trader = await t.trader();
    const channel = `private-order-executed.${trader.userId}`;
    const r = await channelAuth(t, trader, '999999.123457', channel);
    assert.equal(r.status, 403);
    assert.deepEqual(r.body, { error: 'Access Denied' });
  });

  test('a token obtained for one connection does not open the channel on another', async () => {
    const trader = await t.trader();
    const channel = `private-order-executed.${trader.userId}`;
    const first = await FrameLog.open(wsUrl(t));
    const second = await FrameLog.open(wsUrl(t));
    try {
      const r = await channelAuth(t, trader, first.socketId, channel);
      second.log.subscribe(channel, (r.body as { auth: string }).auth);
      const answer = await second.log.next((f) => f.channel === channel);
      assert.equal(answer.event, 'pusher:subscription_error');
    } finally {
      first.log.close();
      second.log.close();
    }
  });
});

/** Outcome of one WebSocket connection attempt: established, refused after the handshake, or HTTP status. */
type Attempt = { outcome: 'open' | 'refused' | 'http' | 'failed'; code?: number; socket?: WebSocket };

async function attempt(url: string, headers: Record<string, string> = {}): Promise<Attempt> {
  return new Promise((resolve) => {
    const socket = new WebSocket(url, { headers, handshakeTimeout: 10_000 });
    // Every path ends in a resolution (the first one counts), so no test can wait for ever.
    const timer = setTimeout(() => {
      socket.terminate();
      resolve({ outcome: 'failed' });
    }, 15_000);
    const done = (result: Attempt) => {
      clearTimeout(timer);
      resolve(result);
    };
    socket.on('error', () => done({ outcome: 'failed' }));
    socket.on('close', (code) => done({ outcome: 'failed', code }));
    socket.on('unexpected-response', (_request, response) => {
      done({ outcome: 'http', code: response.statusCode });
      socket.terminate();
    });
    socket.on('message', (raw) => {
      const frame = JSON.parse(String(raw)) as { event: string; data: unknown };
      if (frame.event === 'pusher:connection_established') done({ outcome: 'open', socket });
      if (frame.event === 'pusher:error') {
        const data = (typeof frame.data === 'string' ? JSON.parse(frame.data) : frame.data) as {
          code: number;
        };
        done({ outcome: 'refused', code: data.code });
      }
    });
  });
}

/** A raw upgrade request that never answers the server's close frame (its socket lingers). */
function silentUpgrade(port: number): Promise<{ status: string; socket: Socket }> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => {
      socket.write(
        `GET /app/${APP_KEY}?protocol=7 HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n` +
          'Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n',
      );
    });
    socket.setTimeout(10_000, () => socket.destroy(new Error('no answer to the upgrade request')));
    socket.on('error', reject);
    socket.on('close', () => reject(new Error('closed without an answer')));
    socket.once('data', (chunk: Buffer) =>
      resolve({ status: chunk.toString('latin1').split('\r\n', 1)[0]!, socket }),
    );
  });
}

describe('WebSocket connections per address', { timeout: 60_000 }, () => {
  test('a per-IP cap: over it the handshake ends with pusher:error 4100, other addresses are not affected', async (t) => {
    const server = await startTestServer({
      WS_MAX_CONNECTIONS_PER_IP: '3',
      WS_UPGRADES_PER_SECOND_PER_IP: '0',
      TRUST_PROXY: 'true',
    });
    t.after(() => server.close());
    const url = wsUrl(server);
    const from = (ip: string) => ({ 'x-forwarded-for': ip });
    const open = [];
    for (let i = 0; i < 3; i++) open.push(await attempt(url, from('203.0.113.1')));
    assert.deepEqual(
      open.map((a) => a.outcome),
      ['open', 'open', 'open'],
    );
    assert.deepEqual(await attempt(url, from('203.0.113.1')), { outcome: 'refused', code: 4100 });
    const elsewhere = await attempt(url, from('203.0.113.2'));
    assert.equal(elsewhere.outcome, 'open', 'X-Forwarded-For names the client, as for HTTP (TRUST_PROXY)');
    open[0]!.socket!.close();
    await sleep(100);
    const again = await attempt(url, from('203.0.113.1'));
    assert.equal(again.outcome, 'open', 'a closed connection frees its slot');
    const metrics = await fetch(`${server.url}/metrics`, {
      headers: { authorization: `Bearer ${server.server.adminToken}` },
    });
    assert.match(await metrics.text(), /^openspot_ws_connections_refused_total\{reason="per_ip"\} 1$/m);
    for (const a of [...open, elsewhere, again]) a.socket?.terminate();
  });

  test('pusher-js refused for the cap backs off (no tight loop) and connects once a slot is free', async (t) => {
    const server = await startTestServer({
      WS_MAX_CONNECTIONS_PER_IP: '1',
      WS_UPGRADES_PER_SECOND_PER_IP: '0',
    });
    t.after(() => server.close());
    const holder = await attempt(wsUrl(server));
    assert.equal(holder.outcome, 'open');
    const pusher = new Pusher(APP_KEY, {
      cluster: 'eu',
      wsHost: '127.0.0.1',
      wsPort: Number(new URL(server.url).port),
      forceTLS: false,
      enabledTransports: ['ws'],
      enableStats: false,
    });
    try {
      await pusherBacksOff(server, pusher, holder);
    } finally {
      // Before the server closes: a pusher-js client still connecting then keeps timers alive.
      pusher.disconnect();
    }
  });

  async function pusherBacksOff(server: TestServer, pusher: Pusher, holder: Attempt): Promise<void> {
    await sleep(1500);
    const refused = async () => {
      const text = await (
        await fetch(`${server.url}/metrics`, {
          headers: { authorization: `Bearer ${server.server.adminToken}` },
        })
      ).text();
      return Number(/^openspot_ws_connections_refused_total\{reason="per_ip"\} (\d+)$/m.exec(text)?.[1] ?? 0);
    };
    const attempts = await refused();
    assert.ok(attempts >= 1 && attempts <= 3, `${attempts} attempts in 1.5 s: one per second`);
    assert.notEqual(pusher.connection.state, 'connected');
    holder.socket!.terminate();
    await waitFor(() => pusher.connection.state === 'connected', 'pusher-js to connect', 5000);
  }

  test('an upgrade rate per IP: beyond the burst 4100, then again after the refill', async (t) => {
    const server = await startTestServer({
      WS_MAX_CONNECTIONS_PER_IP: '0',
      WS_UPGRADES_PER_SECOND_PER_IP: '2',
      WS_UPGRADE_BURST_PER_IP: '3',
    });
    t.after(() => server.close());
    const url = wsUrl(server);
    const outcomes = [];
    for (let i = 0; i < 4; i++) {
      const a = await attempt(url);
      outcomes.push(a.outcome);
      a.socket?.terminate();
    }
    assert.deepEqual(outcomes, ['open', 'open', 'open', 'refused']);
    await sleep(600);
    const later = await attempt(url);
    assert.equal(later.outcome, 'open');
    later.socket?.terminate();
  });

  test('a client that ignores refusals gets HTTP 429 before any handshake', async (t) => {
    const sockets: Socket[] = [];
    // Registered first so it runs first: the server's close would otherwise wait for these.
    t.after(() => {
      for (const s of sockets) s.destroy();
    });
    const server = await startTestServer({
      WS_MAX_CONNECTIONS_PER_IP: '1',
      WS_UPGRADES_PER_SECOND_PER_IP: '0',
    });
    t.after(() => server.close());
    const port = Number(new URL(server.url).port);
    const statuses = [];
    for (let i = 0; i < 13; i++) {
      const { status, socket } = await silentUpgrade(port);
      sockets.push(socket);
      statuses.push(status);
    }
    // One accepted, then refusals held open by the client (it never answers the close frame) up
    // to a bound, then 429 without upgrading.
    assert.equal(statuses.filter((s) => s.includes(' 101 ')).length, 11, statuses.join());
    assert.match(statuses.at(-1)!, /^HTTP\/1\.1 429 /);
    assert.match(statuses.at(-2)!, /^HTTP\/1\.1 429 /);
  });

  test('the reported attack: 300 parallel connections from one address hold at most the cap', async (t) => {
    const server = await startTestServer({
      WS_MAX_CONNECTIONS_PER_IP: '100',
      WS_UPGRADES_PER_SECOND_PER_IP: '20',
    });
    t.after(() => server.close());
    const url = wsUrl(server);
    const started = performance.now();
    const results = await Promise.all(Array.from({ length: 300 }, () => attempt(url)));
    const seconds = (performance.now() - started) / 1000;
    const open = results.filter((r) => r.outcome === 'open');
    const allowed = Math.min(100, 40 + Math.ceil(20 * seconds));
    assert.ok(open.length <= allowed, `${open.length} opened in ${seconds} s: burst 40, then 20/s`);
    assert.ok(results.every((r) => r.outcome !== 'open' || r.socket !== undefined));
    assert.ok(
      results.filter((r) => r.outcome !== 'open').every((r) => r.code === 4100 || r.code === 429),
      JSON.stringify(results.filter((r) => r.outcome !== 'open').slice(0, 3)),
    );
    for (const r of open) r.socket!.terminate();
    assert.equal((await fetch(`${server.url}/healthz`)).status, 200);
  });

  test('configuration: defaults, 0 disables, bad values name the variable', () => {
    const config = loadConfig({});
    assert.equal(config.ws.maxConnectionsPerIp, 100);
    assert.equal(config.ws.upgradesPerSecondPerIp, 20);
    assert.equal(config.ws.upgradeBurstPerIp, 40);
    const off = loadConfig({ WS_MAX_CONNECTIONS_PER_IP: '0', WS_UPGRADES_PER_SECOND_PER_IP: '0' });
    assert.equal(off.ws.maxConnectionsPerIp, 0);
    assert.equal(off.ws.upgradesPerSecondPerIp, 0);
    for (const name of [
      'WS_MAX_CONNECTIONS_PER_IP',
      'WS_UPGRADES_PER_SECOND_PER_IP',
      'WS_UPGRADE_BURST_PER_IP',
    ]) {
      assert.throws(
        () => loadConfig({ [name]: '-1' }),
        (error: unknown) => error instanceof ConfigError && error.message.includes(name),
      );
    }
  });
});
