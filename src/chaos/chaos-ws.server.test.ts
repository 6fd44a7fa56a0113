/** WebSocket faults against a running venue, seen through pusher-js and the client's LocalBook. */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { BookApplyResult, LocalBook } from '../client/local-book.js';
import { connectRealtime, type Realtime } from '../client/realtime.js';
import { startTestVenue, type TestVenue } from '../testing/index.js';

let venue: TestVenue;
const open: Realtime[] = [];

before(async () => {
  venue = await startTestVenue({ accounts: 2 });
});
after(async () => {
  for (const realtime of open) realtime.disconnect();
  await venue.close();
});

async function realtimeFor(account?: number): Promise<Realtime> {
  const realtime = connectRealtime({
    wsHost: venue.ws.wsHost,
    wsPort: venue.ws.wsPort,
    appKey: venue.ws.key,
    ...(account === undefined ? {} : { client: venue.client(account) }),
  });
  open.push(realtime);
  await realtime.connected();
  return realtime;
}

async function eventually(
  what: string,
  condition: () => boolean | Promise<boolean>,
  ms = 5000,
): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await condition())) {
    if (Date.now() > deadline) assert.fail(`${what} did not happen within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

async function metric(fault: string): Promise<number> {
  const text = await (
    await fetch(`${venue.url}/metrics`, { headers: { authorization: `Bearer ${venue.admin.token}` } })
  ).text();
  const line = text.split('\n').find((l) => l.startsWith(`openspot_chaos_faults_total{fault="${fault}"}`));
  return line === undefined ? 0 : Number(line.split(' ').at(-1));
}

/** The local copy equals the REST order book. */
async function matchesRest(book: LocalBook): Promise<boolean> {
  const [rest] = await venue.client().orderbook({ tickerId: 'BTC/EUR', depth: 0 });
  const levels = (side: readonly { price: string; qty: string }[]) => side.map((l) => [l.price, l.qty]);
  return (
    book.synced &&
    JSON.stringify(levels(book.bids())) === JSON.stringify(rest?.bids) &&
    JSON.stringify(levels(book.asks())) === JSON.stringify(rest?.asks)
  );
}

test('a dropped book update: the LocalBook sees the gap, resubscribes, and equals the REST book again', async () => {
  const realtime = await realtimeFor();
  const results: BookApplyResult['status'][] = [];
  const { book, ready } = realtime.localBook('BTC/EUR', (_book, result) => results.push(result.status));
  await ready;
  await eventually('first snapshot', () => book.synced);
  const before = await metric('book_drop');
  await venue.chaos.set({ book_updates: { drop: 1, count: 1 } });
  await venue.admin.placeRestingOrder({ pair: 'BTC/EUR', direction: 'buy', price: '40000.0', volume: '0.5' });
  // The copy cannot know yet: the loss shows with the next update.
  await venue.admin.placeRestingOrder({
    pair: 'BTC/EUR',
    direction: 'sell',
    price: '60000.0',
    volume: '0.5',
  });
  await eventually('resynchronised', () => results.includes('gap') && matchesRest(book));
  assert.equal((await metric('book_drop')) - before, 1);
  assert.deepEqual((await venue.chaos.state()).everyone, {});
  realtime.disconnect();
});

test('a duplicated book update is ignored: no resubscription', async () => {
  const realtime = await realtimeFor();
  const results: BookApplyResult['status'][] = [];
  const { book, ready } = realtime.localBook('BTC/EUR', (_book, result) => results.push(result.status));
  await ready;
  await eventually('first snapshot', () => book.synced);
  await venue.chaos.set({ book_updates: { duplicate: 1, count: 1 } });
  await venue.admin.placeRestingOrder({ pair: 'BTC/EUR', direction: 'buy', price: '40001.0', volume: '0.5' });
  await eventually('stale duplicate seen', () => results.includes('stale'));
  assert.deepEqual(
    results.filter((r) => r !== 'ok'),
    ['stale'],
  );
  assert.equal(await matchesRest(book), true);
  realtime.disconnect();
});

test('a forced disconnect of one key: its connection reconnects and resubscribes, the others stay', async () => {
  const keyed = await realtimeFor(1);
  const anonymous = await realtimeFor();
  const account = venue.accounts[1]!;
  const executions = keyed.executions(account.userId, () => undefined);
  await executions.ready;
  const states: string[] = [];
  const otherStates: string[] = [];
  keyed.pusher.connection.bind('state_change', ({ current }: { current: string }) => states.push(current));
  anonymous.pusher.connection.bind('state_change', ({ current }: { current: string }) =>
    otherStates.push(current),
  );
  await venue.chaos.set({ disconnects: { rate: 1, code: 4200, count: 1 } }, { apiKey: account.apiKey });
  await eventually('reconnected', () => states.includes('connected'), 5000);
  assert.notEqual(states[0], 'connected');
  assert.deepEqual(otherStates, []);
  assert.equal(await metric('disconnect'), 1);
  // pusher-js subscribed again on the new connection.
  await eventually(
    'resubscribed',
    () => keyed.pusher.channel(`private-order-executed.${account.userId}`)?.subscribed === true,
  );
});

test('WebSocket delay: the snapshot of a new subscription arrives late', async () => {
  const realtime = await realtimeFor();
  await venue.chaos.set({ ws_delay: { ms: 300 } });
  try {
    const start = performance.now();
    let arrived = 0;
    realtime.ticker('BTC/EUR', () => {
      arrived ||= performance.now();
    });
    await eventually('ticker snapshot', () => arrived > 0);
    assert.ok(arrived - start >= 290, `${arrived - start} ms`);
  } finally {
    await venue.chaos.clear();
  }
});
