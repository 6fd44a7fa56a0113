/**
 * IP allow-lists and nonces over real HTTP. The test client is 127.0.0.1; other addresses appear
 * only as allow-list values (no traffic is ever sent to them).
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { startTestServer, type TestServer, type Trader } from '../support/server-fixture.js';
import { broadcastingAuthBody, FrameLog, wsUrl } from '../ws/helpers.js';
import {
  type Credentials,
  call,
  createKey,
  limitOrder,
  openOrderIds,
  orderIdOf,
  send,
  signed,
} from './support.js';

let t: TestServer;

before(async () => {
  t = await startTestServer();
});
after(async () => {
  await t.close();
});

const DENIED = { error: 'Access Denied' };
const INVALID_NONCE = { error: 'Invalid Nonce' };

describe('IP allow-list', () => {
  let trader: Trader;
  before(async () => {
    trader = await t.trader();
  });

  test('a key allowed only from 10.0.0.0/8 is refused from 127.0.0.1: 403 Access Denied everywhere', {}, async () => {
    const key = await createKey(t, trader.userId, { ip_allowlist: ['10.0.0.0/8'] });
    const wallet = await call(t, key, 'GET', '/v1/spot-wallet');
    assert.equal(wallet.status, 403);
    assert.deepEqual(wallet.body, DENIED);
    const before = await openOrderIds(t, trader);
    const order = await call(t, key, 'POST', '/v1/orders', limitOrder('20000'));
    assert.equal(order.status, 403);
    assert.deepEqual(order.body, DENIED);
    assert.deepEqual(await openOrderIds(t, trader), before, 'no order was created');
    const bauth = await call(t, key, 'POST', '/v1/broadcasting/auth', {
      socket_id: '1.1',
      channel_name: `private-order-executed.${trader.userId}`,
    });
    assert.equal(bauth.status, 403);
  });

  test('the signature is checked first: a wrong one is 422 Invalid Signature, whatever the address', {}, async () => {
    const key = await createKey(t, trader.userId, { ip_allowlist: ['10.0.0.0/8'] });
    const forged = signed({ apiKey: key.apiKey, apiSecret: trader.apiSecret }, 'GET', '/v1/spot-wallet');
    const r = await send(t, forged);
    assert.equal(r.status, 422);
    assert.deepEqual(r.body, { error: 'Invalid Signature' });
  });

  test('keys allowed from 127.0.0.1 work: exact /32, a block, IPv4-mapped IPv6 rule', async () => {
    for (const list of [
      ['127.0.0.1/32'],
      ['127.0.0.1'],
      ['10.0.0.0/8', '127.0.0.0/8'],
      ['::ffff:127.0.0.1'],
    ]) {
      const key = await createKey(t, trader.userId, { ip_allowlist: list });
      const wallet = await call(t, key, 'GET', '/v1/spot-wallet');
      assert.equal(wallet.status, 200, `${JSON.stringify(list)}: ${JSON.stringify(wallet.body)}`);
      const order = await call(t, key, 'POST', '/v1/orders', limitOrder('20000'));
      assert.equal(order.status, 201, JSON.stringify(list));
    }
  });

  test('an IPv6-only list does not admit an IPv4 client', async () => {
    const key = await createKey(t, trader.userId, { ip_allowlist: ['::1', '2001:db8::/32'] });
    assert.equal((await call(t, key, 'GET', '/v1/spot-wallet')).status, 403);
  });
});

describe('nonces', () => {
  let trader: Trader;
  let key: Credentials;
  const wallet = async () => JSON.stringify((await call(t, trader, 'GET', '/v1/spot-wallet')).body);

  before(async () => {
    trader = await t.trader();
    key = await createKey(t, trader.userId, { nonce_required: true });
  });

  test('an order with nonce 1 is placed; the same signed request replayed is refused and changes nothing', {}, async () => {
    const first = signed(key, 'POST', '/v1/orders', limitOrder('20000', { nonce: '1' }));
    const placed = await send(t, first);
    assert.equal(placed.status, 201, JSON.stringify(placed.body));
    const orders = await openOrderIds(t, trader);
    const balances = await wallet();
    assert.deepEqual(orders, [orderIdOf(placed)]);

    const replayed = await send(t, first);
    assert.equal(replayed.status, 422);
    assert.deepEqual(replayed.body, INVALID_NONCE);
    assert.deepEqual(await openOrderIds(t, trader), orders);
    assert.equal(await wallet(), balances);
  });

  test('nonce 2 works, then a lower or equal one is refused; JSON integers and strings compare as numbers', {}, async () => {
    assert.equal((await call(t, key, 'POST', '/v1/orders', limitOrder('20001', { nonce: 2 }))).status, 201);
    const count = (await openOrderIds(t, trader)).length;
    for (const nonce of ['1', 1, '2', '0002', 0]) {
      const r = await call(t, key, 'POST', '/v1/orders', limitOrder('20002', { nonce }));
      assert.equal(r.status, 422, JSON.stringify(nonce));
      assert.deepEqual(r.body, INVALID_NONCE);
    }
    assert.equal(
      (await call(t, key, 'POST', '/v1/orders', limitOrder('20003', { nonce: '10' }))).status,
      201,
    );
    assert.equal((await openOrderIds(t, trader)).length, count + 1);
  });

  test('nonces beyond 2^64 compare exactly (as strings); JSON numbers beyond 2^53 are refused', {}, async () => {
    const big = '18446744073709551616';
    assert.equal((await call(t, key, 'POST', '/v1/orders', limitOrder('20004', { nonce: big }))).status, 201);
    const lower = await call(
      t,
      key,
      'POST',
      '/v1/orders',
      limitOrder('20005', { nonce: '18446744073709551615' }),
    );
    assert.equal(lower.status, 422);
    const unsafe = await send(
      t,
      signed(
        key,
        'POST',
        '/v1/orders',
        `{"order_direction":"buy","order_type":"limit","pair":"BTC/EUR","volume":"0.001","price":"20006","nonce":18446744073709551617}`,
      ),
    );
    assert.equal(unsafe.status, 422);
    assert.deepEqual(unsafe.body, INVALID_NONCE);
  });

  test('a body without a nonce, or with a malformed one, is refused; a body that is not JSON is 400', {}, async () => {
    for (const nonce of [undefined, '', 'abc', '-5', '1.5', '123456789012345678901', null, [99]]) {
      const body = nonce === undefined ? limitOrder('20007') : limitOrder('20007', { nonce });
      const r = await call(t, key, 'POST', '/v1/orders', body);
      assert.equal(r.status, 422, JSON.stringify(nonce));
      assert.deepEqual(r.body, INVALID_NONCE);
    }
    const broken = await send(t, signed(key, 'POST', '/v1/orders', '{"nonce":'));
    assert.equal(broken.status, 400);
    assert.deepEqual(broken.body, { error: 'Invalid request' });
  });

  test('a refused order still spends its nonce (the nonce is accepted before validation)', {}, async () => {
    const next = '18446744073709551700';
    const invalid = await call(t, key, 'POST', '/v1/orders', {
      ...limitOrder('20008'),
      volume: 'lots',
      nonce: next,
    });
    assert.equal(invalid.status, 422);
    assert.ok('errors' in (invalid.body as object), 'a validation error (shape D), not a nonce error');
    const again = await call(t, key, 'POST', '/v1/orders', limitOrder('20008', { nonce: next }));
    assert.deepEqual(again.body, INVALID_NONCE);
  });

  test('GET requests need no nonce — and stay replayable (documented)', async () => {
    const read = signed(key, 'GET', '/v1/spot-wallet');
    assert.equal((await send(t, read)).status, 200);
    assert.equal((await send(t, read)).status, 200, 'a GET signature is replayable');
  });

  /** Two fresh open orders of the trader, placed with the plain key. */
  const twoOrders = async (): Promise<[number, number]> => {
    const a = await call(t, trader, 'POST', '/v1/orders', limitOrder('19000'));
    const b = await call(t, trader, 'POST', '/v1/orders', limitOrder('19001'));
    return [orderIdOf(a), orderIdOf(b)];
  };

  test('a body-less DELETE is refused (422 Invalid Nonce) and cancels nothing', async () => {
    const [id] = await twoOrders();
    const r = await send(t, signed(key, 'DELETE', `/v1/orders/${id}`));
    assert.equal(r.status, 422);
    assert.deepEqual(r.body, INVALID_NONCE);
    assert.ok((await openOrderIds(t, trader)).includes(id));
  });

  test('one captured DELETE cannot cancel another order, nor be replayed on its own', async () => {
    const [first, second] = await twoOrders();
    const captured = signed(key, 'DELETE', `/v1/orders/${first}`, {
      nonce: '18446744073709551800',
      order_id: first,
    });
    assert.equal((await send(t, captured)).status, 200);
    const elsewhere = await send(t, { ...captured, path: `/v1/orders/${second}` });
    assert.equal(elsewhere.status, 422);
    assert.deepEqual(elsewhere.body, INVALID_NONCE);
    const again = await send(t, captured);
    assert.equal(again.status, 422);
    assert.deepEqual(again.body, INVALID_NONCE);
    assert.ok((await openOrderIds(t, trader)).includes(second), 'the other order is still open');
  });

  test('a DELETE body intercepted before it arrived is still bound to its order id (400)', async () => {
    const [first, second] = await twoOrders();
    const intercepted = signed(key, 'DELETE', `/v1/orders/${first}`, {
      nonce: '18446744073709551810',
      order_id: first,
    });
    const redirected = await send(t, { ...intercepted, path: `/v1/orders/${second}` });
    assert.equal(redirected.status, 400);
    assert.deepEqual(redirected.body, { error: 'Invalid request' });
    let nonce = 18446744073709551820n;
    for (const body of [{}, { order_id: null }, { order_id: `${second}x` }, { order_id: second + 1 }]) {
      nonce += 1n;
      const r = await call(t, key, 'DELETE', `/v1/orders/${second}`, { nonce: String(nonce), ...body });
      assert.equal(r.status, 400, JSON.stringify(body));
      assert.deepEqual(r.body, { error: 'Invalid request' });
    }
    assert.deepEqual(
      (await openOrderIds(t, trader)).filter((id) => id === first || id === second),
      [first, second],
      'nothing was canceled',
    );
    const asText = await call(t, key, 'DELETE', `/v1/orders/${second}`, {
      nonce: String(nonce + 1n),
      order_id: String(second),
    });
    assert.equal(asText.status, 200, 'order_id may be a JSON integer or its decimal text');
  });

  test('stale or missing nonces on DELETE are refused', async () => {
    const [id] = await twoOrders();
    const stale = signed(key, 'DELETE', `/v1/orders/${id}`, { nonce: '5', order_id: id });
    assert.deepEqual((await send(t, stale)).body, INVALID_NONCE);
    const missing = signed(key, 'DELETE', `/v1/orders/${id}`, { order_id: id });
    assert.deepEqual((await send(t, missing)).body, INVALID_NONCE);
    assert.ok((await openOrderIds(t, trader)).includes(id));
  });

  test('POST /broadcasting/auth needs a nonce in its body too', async () => {
    const { log, socketId } = await FrameLog.open(wsUrl(t));
    try {
      const channel = `private-order-executed.${trader.userId}`;
      const without = await send(
        t,
        signed(key, 'POST', '/v1/broadcasting/auth', broadcastingAuthBody(socketId, channel)),
      );
      assert.equal(without.status, 422);
      assert.deepEqual(without.body, INVALID_NONCE);
      const body = `{"socket_id":${socketId},"channel_name":${JSON.stringify(channel)},"nonce":"18446744073709551900"}`;
      const withNonce = await send(t, signed(key, 'POST', '/v1/broadcasting/auth', body));
      assert.equal(withNonce.status, 200, JSON.stringify(withNonce.body));
      assert.equal(typeof (withNonce.body as { auth: string }).auth, 'string');
      const form = `socket_id=${socketId}&channel_name=${encodeURIComponent(channel)}&nonce=18446744073709551901`;
      const formAuth = await send(
        t,
        signed(key, 'POST', '/v1/broadcasting/auth', form, 'application/x-www-form-urlencoded'),
      );
      assert.equal(formAuth.status, 200, JSON.stringify(formAuth.body));
    } finally {
      log.close();
    }
  });

  test('keys without nonce_required are unaffected: no nonce needed, replays accepted as before', async () => {
    const plain = signed(trader, 'POST', '/v1/orders', limitOrder('20009'));
    assert.equal((await send(t, plain)).status, 201);
    assert.equal((await send(t, plain)).status, 201);
  });
});

describe('keys without nonces: DELETE as the interface shows it', () => {
  test('body-less, and one captured signature is valid for every order of the user (documented)', async () => {
    const trader = await t.trader();
    const ids = [];
    for (const price of ['18000', '18001']) {
      ids.push(orderIdOf(await call(t, trader, 'POST', '/v1/orders', limitOrder(price))));
    }
    const captured = signed(trader, 'DELETE', `/v1/orders/${ids[0]}`);
    assert.equal((await send(t, captured)).status, 200);
    assert.equal((await send(t, { ...captured, path: `/v1/orders/${ids[1]}` })).status, 200);
    assert.deepEqual(await openOrderIds(t, trader), []);
  });

  test('a body it sends with an order_id must match the path', async () => {
    const trader = await t.trader();
    const id = orderIdOf(await call(t, trader, 'POST', '/v1/orders', limitOrder('18000')));
    const wrong = await call(t, trader, 'DELETE', `/v1/orders/${id}`, { order_id: id + 1 });
    assert.equal(wrong.status, 400);
    assert.equal((await call(t, trader, 'DELETE', `/v1/orders/${id}`, { order_id: id })).status, 200);
  });
});

describe('nonces survive a restart', () => {
  test('a request accepted before a restart is still refused after it', async () => {
    const first = await startTestServer();
    const dataDir = first.dataDir;
    let second: TestServer | undefined;
    try {
      const trader = await first.trader();
      const key = await createKey(first, trader.userId, { nonce_required: true });
      const request = signed(key, 'POST', '/v1/orders', limitOrder('20000', { nonce: '1700000000000000' }));
      assert.equal((await send(first, request)).status, 201);
      await first.server.close();
      second = await startTestServer({}, dataDir);
      const replayed = await send(second, request);
      assert.equal(replayed.status, 422);
      assert.deepEqual(replayed.body, INVALID_NONCE);
      assert.equal((await openOrderIds(second, trader)).length, 1);
    } finally {
      await second?.close();
      await first.close();
    }
  });
});
