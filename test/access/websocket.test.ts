/**
 * WebSocket access control over the real server: the app secret, private-channel tokens and
 * revocation, per-address connection limits.
 */
import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { startTestServer } from '../support/server-fixture.js';
import { APP_KEY, channelAuth, FrameLog, wsUrl } from '../ws/helpers.js';

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
