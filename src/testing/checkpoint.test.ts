/**
 * Checkpoints, restore and reset of the test venue, as a bot developer uses them: every balance,
 * book and history comes back as saved, keys keep working, WebSocket clients resynchronise.
 */
import assert from 'node:assert/strict';
import { existsSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { ExecutionsSnapshot } from '../client/channels.js';
import type { OpenSpotClient } from '../client/client.js';
import { type BookSubscription, connectRealtime } from '../client/realtime.js';
import { startTestVenue, type TestVenue, TestVenueError } from './index.js';

async function eventually<T>(what: string, probe: () => T | undefined | Promise<T | undefined>): Promise<T> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) assert.fail(`${what} did not happen within 10 s`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

/** What a bot can read of the venue through the public and private API. */
async function observe(venue: TestVenue, clients: readonly OpenSpotClient[]) {
  const pub = venue.client(0);
  const [book] = await pub.orderbook({ tickerId: 'BTC/EUR', depth: 0 });
  const tickers = await pub.tickers();
  const perAccount = [];
  for (const client of clients) {
    perAccount.push({
      wallet: (await client.spotWallet()).data,
      open: (await client.openOrders()).data,
      closed: (await client.closedOrders()).data,
      trades: (await client.trades()).data,
    });
  }
  return {
    bids: book?.bids,
    asks: book?.asks,
    last: tickers.map((t) => [t.ticker_id, t.last_price, t.base_volume]),
    candles: await pub.ohlc({ tickerId: 'BTC/EUR', interval: 1 }),
    perAccount,
  };
}

describe('test venue checkpoints (in memory)', () => {
  let venue: TestVenue;
  before(async () => {
    venue = await startTestVenue({ accounts: 2 });
  });
  after(() => venue.close());

  test('a restore brings back every balance, book and history; keys keep working; the ledger holds', async () => {
    const [alice, bob] = [venue.client(0), venue.client(1)];
    await venue.admin.placeRestingOrder({
      pair: 'BTC/EUR',
      direction: 'sell',
      price: '60000',
      volume: '0.5',
    });
    await venue.admin.placeRestingOrder({ pair: 'BTC/EUR', direction: 'buy', price: '59000', volume: '0.5' });
    await alice.createOrder({ pair: 'BTC/EUR', direction: 'buy', type: 'market', volume: '0.1' });
    await bob.createOrder({
      pair: 'BTC/EUR',
      direction: 'buy',
      type: 'limit',
      price: '58000',
      volume: '0.2',
    });
    const saved = await observe(venue, [alice, bob]);
    const checkpoint = await venue.checkpoint('before');
    assert.equal(checkpoint.name, 'before');
    assert.equal(checkpoint.replaced, false);
    const sequenceAtSave = venue.server.exchange.book(1 as never, 0).sequence;

    // Everything changes: trades, cancels, deposits, a new account with its own key.
    await bob.createOrder({ pair: 'BTC/EUR', direction: 'sell', type: 'market', volume: '0.3' });
    await alice.createOrder({
      pair: 'BTC/EUR',
      direction: 'sell',
      type: 'limit',
      price: '61000',
      volume: '1',
    });
    await venue.admin.deposit(venue.accounts[0]!, 'EUR', '1234.5');
    const late = await venue.admin.createAccount({ name: 'late', balances: { EUR: '10' } });
    const changed = await observe(venue, [alice, bob]);
    assert.notDeepEqual(changed, saved);
    const sequenceBefore = venue.server.exchange.book(1 as never, 0).sequence;
    assert.ok(sequenceBefore > sequenceAtSave);

    const ledger = await venue.restore('before');
    assert.equal(ledger.ok, true);
    assert.deepEqual(await observe(venue, [alice, bob]), saved);
    assert.equal((await venue.admin.ledgerCheck()).ok, true);
    // The book's sequence goes on (plus one), never back to the saved value.
    assert.equal(venue.server.exchange.book(1 as never, 0).sequence, sequenceBefore + 1);
    // Credentials are not state: the account created after the checkpoint still signs requests;
    // its deposit was after the checkpoint, so it holds nothing now.
    const lateWallet = (await venue.client(late).spotWallet()).data;
    assert.ok(lateWallet.every((w) => Number(w.balance.balance_total) === 0));
    // And trading goes on from the restored state.
    const created = await alice.createOrder({
      pair: 'BTC/EUR',
      direction: 'sell',
      type: 'market',
      volume: '0.1',
    });
    assert.ok(created.id !== undefined);
    assert.equal((await venue.admin.ledgerCheck()).ok, true);
  });

  test('WebSocket clients are disconnected and resynchronise on the restored book', async () => {
    await venue.admin.placeRestingOrder({ pair: 'ETH/EUR', direction: 'sell', price: '3000', volume: '1' });
    await venue.checkpoint('eth');
    const realtime = connectRealtime({
      wsHost: venue.ws.wsHost,
      wsPort: venue.ws.wsPort,
      appKey: venue.ws.key,
      client: venue.client(0),
    });
    let book: BookSubscription | undefined;
    try {
      await realtime.connected();
      const states: string[] = [];
      realtime.pusher.connection.bind('state_change', (s: { current: string }) => states.push(s.current));
      book = realtime.localBook('ETH/EUR');
      await book.ready;
      const local = book.book;
      await eventually('the snapshot', () => (local.asks().length === 1 ? true : undefined));
      // The private channel too: its snapshot after the restore lists the restored open orders.
      const snapshots: ExecutionsSnapshot[] = [];
      const executions = realtime.executions(venue.accounts[0]!.userId, (message) => {
        if (message.type === 'snapshot') snapshots.push(message.data);
      });
      await executions.ready;
      await eventually('the executions snapshot', () => (snapshots.length === 1 ? true : undefined));
      const placed = await venue
        .client(0)
        .createOrder({ pair: 'ETH/EUR', direction: 'buy', type: 'limit', price: '2000', volume: '1' });
      await venue.admin.placeRestingOrder({ pair: 'ETH/EUR', direction: 'sell', price: '2990', volume: '2' });
      await eventually('the update', () => (local.asks().length === 2 ? true : undefined));
      const sequenceBefore = local.sequence ?? 0;

      await venue.restore('eth');
      await eventually('a new executions snapshot', () => (snapshots.length === 2 ? true : undefined));
      assert.ok(!snapshots[1]!.orders.some((o) => o.id === placed.id), 'the rolled-back order is gone');
      await eventually('the restored book', () =>
        local.synced && local.asks().length === 1 && (local.sequence ?? 0) > sequenceBefore
          ? true
          : undefined,
      );
      assert.deepEqual(
        local.asks().map((l) => l.price),
        ['3000.00'],
      );
      // The server closed the connection (4200) and pusher-js reconnected by itself.
      assert.ok(states.includes('connecting') || states.includes('unavailable'), states.join(','));
      assert.equal(realtime.pusher.connection.state, 'connected');
    } finally {
      book?.unsubscribe();
      realtime.disconnect();
    }
  });

  test('reset returns to the state right after start: the catalogue and the accounts as funded', async () => {
    const alice = venue.client(0);
    const fresh = await venue.reset();
    assert.equal(fresh.ok, true);
    const [book] = await alice.orderbook({ tickerId: 'BTC/EUR', depth: 0 });
    assert.deepEqual([book?.bids, book?.asks], [[], []]);
    const wallet = Object.fromEntries(
      (await alice.spotWallet()).data.map((w) => [w.asset_id, w.balance.balance_total]),
    );
    assert.equal(wallet.EUR, '100000.0000');
    assert.equal(wallet.BTC, '10.0000000000');
    assert.deepEqual((await alice.trades()).data, []);
    assert.deepEqual((await alice.openOrders()).data, []);
    // The checkpoints themselves survive a reset.
    assert.equal(typeof (await venue.restore('before')).ok, 'boolean');
  });

  test('a market created after a restore is listed by /v1/markets and /v1/tickers', async () => {
    await venue.checkpoint('before-new-market');
    await venue.restore('before-new-market');
    const request = (method: string, path: string, body?: unknown) => venue.admin.request(method, path, body);
    assert.equal(
      (await request('POST', '/assets', { code: 'XRS', name: 'Restored', type: 'crypto', decimals: 8 }))
        .status,
      201,
    );
    const created = await request('POST', '/markets', {
      base: 'XRS',
      quote: 'EUR',
      pair_decimals: 4,
      lot_decimals: 2,
      ordermin: '1',
    });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    const pub = venue.client(0);
    assert.ok('XRSEUR' in (await pub.markets()).data);
    assert.ok((await pub.tickers()).some((t) => t.ticker_id === 'XRS/EUR'));
    assert.equal((await request('DELETE', '/checkpoints/before-new-market')).status, 200);
  });

  test('the admin API refuses bad names, unknown and reserved checkpoints', async () => {
    const call = (method: string, path: string, body?: unknown) => venue.admin.request(method, path, body);
    const invalid = await call('POST', '/checkpoints', { name: '../escape' });
    assert.equal(invalid.status, 422);
    assert.equal((invalid.body as { error: { field: string } }).error.field, 'name');
    assert.equal((await call('POST', '/checkpoints', {})).status, 422);
    assert.equal((await call('POST', '/checkpoints/nothing-here/restore')).status, 404);
    assert.equal((await call('DELETE', '/checkpoints/nothing-here')).status, 404);
    assert.equal((await call('POST', '/checkpoints', { name: 'initial' })).status, 409);
    assert.equal((await call('DELETE', '/checkpoints/initial')).status, 409);
    await assert.rejects(venue.restore('..'), TestVenueError);
    await venue.checkpoint('twice');
    assert.equal((await venue.checkpoint('twice')).replaced, true);
    const list = (await call('GET', '/checkpoints')).body as { data: Array<{ name: string }> };
    assert.deepEqual(
      list.data.map((c) => c.name),
      ['before', 'eth', 'initial', 'twice'],
    );
    assert.equal((await call('DELETE', '/checkpoints/twice')).status, 200);
  });
});

describe('test venue checkpoints (data directory)', () => {
  test('checkpoints are files DATA_DIR/checkpoints/NAME.db (0600), gone with the temporary directory', async () => {
    const venue = await startTestVenue({ dataDir: true });
    const dir = venue.dataDir!;
    try {
      await venue.admin.placeRestingOrder({ pair: 'BTC/EUR', direction: 'buy', price: '100', volume: '1' });
      await venue.checkpoint('one');
      const file = join(dir, 'checkpoints', 'one.db');
      assert.equal(statSync(file).mode & 0o777, 0o600);
      assert.ok(existsSync(join(dir, 'checkpoints', 'initial.db')));
      await venue.admin.placeRestingOrder({ pair: 'BTC/EUR', direction: 'buy', price: '200', volume: '1' });
      await venue.restore('one');
      const [book] = await venue.client().orderbook({ tickerId: 'BTC/EUR', depth: 0 });
      assert.deepEqual(
        book?.bids.map((l) => l[0]),
        ['100.0'],
      );
    } finally {
      await venue.close();
    }
    assert.equal(existsSync(dir), false);
  });
});

describe('test venue checkpoints with the simulator running', () => {
  test('a restore while the simulator trades: the ledger holds and only fresh quotes remain', async () => {
    const venue = await startTestVenue({ simulator: { ratePerSecond: 50, seed: 5 } });
    try {
      const store = venue.server.exchange.store;
      await eventually('simulator quotes', async () =>
        (await store.loadSnapshot()).openOrders.length > 0 ? true : undefined,
      );
      await venue.checkpoint('busy');
      const saved = await store.loadSnapshot();
      assert.ok(saved.openOrders.length > 0);
      await new Promise((r) => setTimeout(r, 300));
      const ledger = await venue.restore('busy');
      assert.equal(ledger.ok, true);
      // The restarted simulator cancels every order it finds open (the checkpoint's quotes, which
      // the old one no longer knew) and quotes afresh.
      await eventually('fresh quotes only', async () => {
        const open = (await store.loadSnapshot()).openOrders;
        return open.length > 0 && open.every((o) => o.id >= saved.sequences.nextOrderId) ? true : undefined;
      });
      assert.equal((await venue.admin.ledgerCheck()).ok, true);
    } finally {
      await venue.close();
    }
  });
});
