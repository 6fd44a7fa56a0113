import assert from 'node:assert/strict';
import { test } from 'node:test';
import { signChannelAuth, verifyChannelAuth } from './channel-auth.js';
import { channelName, parseChannelName } from './channels.js';
import { connectionEstablishedFrame, dataFrame, parseClientFrame, subscriptionErrorFrame } from './frames.js';
import { isSocketId, nextSocketId } from './socket-id.js';

test('socket ids: Pusher format, unique, and unchanged by a trip through a JSON number', () => {
  const seen = new Set<string>();
  for (let i = 0; i < 20_000; i += 1) {
    const id = nextSocketId();
    assert.ok(isSocketId(id), id);
    assert.equal(String(JSON.parse(`{"socket_id":${id}}`).socket_id), id);
    assert.ok(id.replace('.', '').length <= 13, id);
    assert.ok(!seen.has(id));
    seen.add(id);
  }
});

test('parseClientFrame: both prefixes, data as object or JSON text, auth only when non-empty', () => {
  assert.deepEqual(
    parseClientFrame('{"event":"pusher:subscribe","data":{"auth":"","channel":"trade.BTCEUR"}}'),
    {
      kind: 'subscribe',
      channel: 'trade.BTCEUR',
      auth: undefined,
    },
  );
  assert.deepEqual(
    parseClientFrame(
      '{"event":"channelservice:subscribe","data":"{\\"channel\\":\\"c\\",\\"auth\\":\\"k:s\\"}"}',
    ),
    { kind: 'subscribe', channel: 'c', auth: 'k:s' },
  );
  assert.deepEqual(parseClientFrame('{"event":"channelservice:unsubscribe","data":{"channel":"c"}}'), {
    kind: 'unsubscribe',
    channel: 'c',
  });
  assert.deepEqual(parseClientFrame('{"event":"pusher:ping","data":{}}'), { kind: 'ping' });
  assert.deepEqual(parseClientFrame('{"event":"pusher:pong"}'), { kind: 'pong' });
  assert.deepEqual(parseClientFrame('{"event":"client-x","channel":"c"}'), {
    kind: 'clientEvent',
    event: 'client-x',
  });
  assert.deepEqual(parseClientFrame('{"event":"other:subscribe"}'), {
    kind: 'unknown',
    event: 'other:subscribe',
  });
  for (const bad of ['', '{', '[]', '"x"', '{"event":1}', '{"event":"pusher:subscribe","data":[]}'])
    assert.equal(parseClientFrame(bad).kind, 'invalid', bad);
});

test('server frames: connection data and message data are JSON strings, refusals objects', () => {
  assert.equal(
    connectionEstablishedFrame('1.2', 30),
    '{"event":"pusher:connection_established","data":"{\\"socket_id\\":\\"1.2\\",\\"activity_timeout\\":30}"}',
  );
  assert.equal(
    dataFrame('trade.X', 'update', { a: '1.0' }),
    '{"event":"update","channel":"trade.X","data":"{\\"a\\":\\"1.0\\"}"}',
  );
  assert.deepEqual(JSON.parse(subscriptionErrorFrame('c', { type: 'AuthError', error: 'no', status: 403 })), {
    event: 'pusher:subscription_error',
    channel: 'c',
    data: { type: 'AuthError', error: 'no', status: 403 },
  });
});

test('channel auth: the Pusher signature, bound to socket and channel', () => {
  // Pusher's documented example: key 278d425bdf160c739803, secret 7ad3773142a6692b25b8.
  const auth = signChannelAuth('278d425bdf160c739803', '7ad3773142a6692b25b8', '1234.1234', 'private-foobar');
  assert.equal(auth, '278d425bdf160c739803:58df8b0c36d6982b82c3ecf6b4662e34fe8c25bba48f5369f135bf843651c3a4');
  assert.ok(
    verifyChannelAuth('278d425bdf160c739803', '7ad3773142a6692b25b8', '1234.1234', 'private-foobar', auth),
  );
  assert.ok(
    !verifyChannelAuth('278d425bdf160c739803', '7ad3773142a6692b25b8', '1234.1235', 'private-foobar', auth),
  );
  assert.ok(
    !verifyChannelAuth('278d425bdf160c739803', '7ad3773142a6692b25b8', '1234.1234', 'private-foobaz', auth),
  );
  assert.ok(
    !verifyChannelAuth(
      '278d425bdf160c739803',
      '7ad3773142a6692b25b8',
      '1234.1234',
      'private-foobar',
      'short',
    ),
  );
});

test('channel names: the interface names parse back, other spellings do not', () => {
  assert.deepEqual(parseChannelName(channelName.ticker('BTCEUR')), { kind: 'ticker', pair: 'BTCEUR' });
  assert.deepEqual(parseChannelName(channelName.ohlc('BTCEUR', 21600)), {
    kind: 'ohlc',
    pair: 'BTCEUR',
    interval: 21600,
  });
  assert.deepEqual(parseChannelName(channelName.trade('BTCEUR')), { kind: 'trade', pair: 'BTCEUR' });
  assert.deepEqual(parseChannelName(channelName.book('BTCEUR')), { kind: 'book', pair: 'BTCEUR' });
  assert.deepEqual(parseChannelName(channelName.executions(42)), { kind: 'executions', userId: 42 });
  for (const name of [
    'ohlc.BTCEUR.2',
    'ohlc.BTCEUR.01',
    'trade.BTC/EUR',
    'trade.',
    'private-order-executed.0',
    'private-order-executed.007',
    'order-executed.7',
    'ticker-information.BTCEUR.x',
  ])
    assert.equal(parseChannelName(name), undefined, name);
});
