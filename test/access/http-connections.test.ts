/**
 * HTTP slowloris: half-sent requests from one address hold at most HTTP_MAX_CONNECTIONS_PER_IP
 * connections, other addresses are served meanwhile, and headers that do not arrive within
 * HTTP_HEADERS_TIMEOUT get 408 and free their connection. WebSockets are not counted here.
 */
import assert from 'node:assert/strict';
import { connect, type Socket } from 'node:net';
import { describe, test } from 'node:test';
import { WebSocket } from 'ws';
import { ConfigError, loadConfig } from '../../src/config/config.js';
import { startTestServer } from '../support/server-fixture.js';
import { wsUrl } from '../ws/helpers.js';

interface Held {
  readonly socket: Socket;
  /** Everything the server sent, once it closed the connection. */
  readonly closed: Promise<{ text: string; at: number }>;
}

/** A connection from `localAddress` that sends part of a request's headers and never the rest. */
async function halfSent(url: string, localAddress: string): Promise<Held> {
  const { hostname, port } = new URL(url);
  const socket = connect({ host: hostname, port: Number(port), localAddress });
  await new Promise<void>((resolve, reject) => {
    socket.once('connect', resolve);
    socket.once('error', reject);
  });
  socket.write('GET /v1/markets HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ');
  let text = '';
  socket.on('data', (chunk: Buffer) => {
    text += chunk.toString('latin1');
  });
  socket.on('error', () => {});
  const closed = new Promise<{ text: string; at: number }>((resolve) =>
    socket.once('close', () => resolve({ text, at: Date.now() })),
  );
  return { socket, closed };
}

/** A complete GET from `localAddress` on its own connection: the status line, or the error. */
async function status(url: string, localAddress: string): Promise<string> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve) => {
    const socket = connect({ host: hostname, port: Number(port), localAddress }, () =>
      socket.write('GET /v1/markets HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n'),
    );
    let text = '';
    socket.on('data', (chunk: Buffer) => {
      text += chunk.toString('latin1');
    });
    socket.on('error', (error) => resolve(`error ${(error as NodeJS.ErrnoException).code}`));
    socket.on('close', () => resolve(text.split('\r\n', 1)[0] ?? ''));
  });
}

describe('HTTP connections per address and the header timeout', { timeout: 60_000 }, () => {
  test('an address over its cap is refused at once; others are served; late headers get 408', async (t) => {
    const server = await startTestServer({ HTTP_MAX_CONNECTIONS_PER_IP: '4', HTTP_HEADERS_TIMEOUT: '2' });
    t.after(() => server.close());
    const attacker = '127.0.0.2';
    const held: Held[] = [];
    for (let i = 0; i < 4; i++) held.push(await halfSent(server.url, attacker));
    const started = Date.now();

    const refused = await status(server.url, attacker);
    assert.equal(refused, 'HTTP/1.1 429 Too Many Requests');
    assert.ok(Date.now() - started < 1500, 'refused at once, not after a timeout');
    assert.equal(await status(server.url, '127.0.0.3'), 'HTTP/1.1 200 OK', 'another address is served');

    const ends = await Promise.all(held.map((h) => h.closed));
    for (const end of ends) {
      assert.match(end.text, /^HTTP\/1\.1 408 Request Timeout\r\n/);
      assert.match(end.text, /\{"error":"Request Timeout"\}$/);
      // Two seconds after the headers began, checked every second: well before Node's 60 s.
      assert.ok(end.at - started < 5000, `closed after ${end.at - started} ms`);
    }
    assert.equal(await status(server.url, attacker), 'HTTP/1.1 200 OK', 'the freed slots serve again');
    const metrics = await fetch(`${server.url}/metrics`, {
      headers: { authorization: `Bearer ${server.server.adminToken}` },
    });
    assert.match(await metrics.text(), /^openspot_http_connections_refused_total 1$/m);
  });

  test('WebSocket connections leave the HTTP count: their own per-address limit applies', async (t) => {
    const server = await startTestServer({
      HTTP_MAX_CONNECTIONS_PER_IP: '2',
      WS_MAX_CONNECTIONS_PER_IP: '0',
    });
    t.after(() => server.close());
    const sockets: WebSocket[] = [];
    for (let i = 0; i < 4; i++) {
      const ws = new WebSocket(wsUrl(server));
      await new Promise((resolve, reject) => {
        ws.once('message', resolve);
        ws.once('error', reject);
      });
      sockets.push(ws);
    }
    assert.equal(await status(server.url, '127.0.0.1'), 'HTTP/1.1 200 OK');
    for (const ws of sockets) ws.terminate();
  });

  test('configuration: defaults, 0 turns the cap off, bad values stop the start', () => {
    assert.deepEqual(loadConfig({}).httpConnections, { maxPerIp: 256, headersTimeoutSeconds: 10 });
    assert.equal(loadConfig({ HTTP_MAX_CONNECTIONS_PER_IP: '0' }).httpConnections.maxPerIp, 0);
    assert.throws(() => loadConfig({ HTTP_HEADERS_TIMEOUT: '0' }), ConfigError);
    assert.throws(() => loadConfig({ HTTP_MAX_CONNECTIONS_PER_IP: 'many' }), /HTTP_MAX_CONNECTIONS_PER_IP/);
  });
});
