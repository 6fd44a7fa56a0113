/**
 * WebSocket access control over the real server: the app secret, private-channel tokens and
 * revocation, per-address connection limits.
 */
import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { startTestServer, type TestServer } from '../support/server-fixture.js';
import { APP_KEY, channelAuth, FrameLog, waitFor, wsUrl } from '../ws/helpers.js';
import { call, createKey, limitOrder, sleep } from './support.js';

const authWith = (secret: string, socketId: string, channel: string) =>
  `${APP_KEY}:${createHmac('sha256', secret).update(`${socketId}:${channel}`).digest('hex')}`;

describe('the WebSocket app secret', () => {
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

describe('private channel tokens and revocation', () => {
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
