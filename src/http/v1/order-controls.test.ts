/**
 * The order controls over real HTTP, on the server `npm start` runs (and, with TEST_STORE=postgres,
 * on PostgreSQL): the new body fields, the client-id routes, cancel-all, the dead man's switch,
 * batches and amends, their 422s in shape D, and what survives a restart (expiries, switch
 * deadlines, client ids).
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { type Answer, type Credentials, call, createKey } from '../../../test/access/support.js';
import { startTestServer, type TestServer } from '../../../test/support/server-fixture.js';

interface OrderJson {
  id: number;
  status: string;
  reason: string | null;
  expire_time: string;
  client_order_id: string | null;
  time_in_force?: string;
  post_only?: boolean;
  stp?: string;
  volume: { amount: string };
  price: { amount: string };
  volume_executed: { amount: string };
}

const order = (over: Record<string, unknown> = {}) => ({
  order_direction: 'buy',
  order_type: 'limit',
  pair: 'BTC/EUR',
  volume: '0.01',
  price: '20000.0',
  ...over,
});

const idOf = (a: Answer): number => {
  assert.equal(a.status, 201, JSON.stringify(a.body));
  return Number(String(a.location).split('/').pop());
};
const dataOf = <T>(a: Answer): T => (a.body as { data: T }).data;
const nowSeconds = () => Date.now() / 1000;

/** Polls `check` until it holds or `ms` pass. */
async function eventually(check: () => Promise<boolean>, ms: number): Promise<boolean> {
  const end = Date.now() + ms;
  for (;;) {
    if (await check()) return true;
    if (Date.now() > end) return false;
    await sleep(100);
  }
}

describe('order controls over HTTP', () => {
  let t: TestServer;
  let alice: Credentials;
  let bob: Credentials;
  before(async () => {
    t = await startTestServer();
    alice = await t.trader();
    bob = await t.trader();
  });
  after(() => t.close());

  const place = (as: Credentials, body: unknown) => call(t, as, 'POST', '/v1/orders', body);
  const get = async (as: Credentials, id: number) =>
    dataOf<OrderJson>(await call(t, as, 'GET', `/v1/orders/${id}`));
  const book = async () => {
    const r = await fetch(`${t.url}/v1/orderbook?ticker_id=BTC%2FEUR&depth=0`);
    const [first] = (await r.json()) as { bids: string[][]; asks: string[][] }[];
    return first!;
  };

  test('an order without controls reads as before, plus client_order_id null at the end', async () => {
    const o = await get(alice, idOf(await place(alice, order())));
    const keys = Object.keys(o);
    assert.equal(keys.at(-1), 'client_order_id');
    assert.equal(keys.at(-2), 'trades');
    assert.equal(o.client_order_id, null);
    assert.equal(o.expire_time, '0.0000');
    for (const absent of ['time_in_force', 'post_only', 'stp']) assert.equal(absent in o, false, absent);
  });

  test('client order ids: shown, found, unique among open orders, cancelled by id', async () => {
    const id = idOf(await place(alice, order({ client_order_id: 'grid-1_A', stp: 'cancel-both' })));
    const shown = await get(alice, id);
    assert.equal(shown.client_order_id, 'grid-1_A');
    assert.equal(shown.stp, 'cancel-both');

    const found = await call(t, alice, 'GET', '/v1/orders/client/grid-1_A');
    assert.equal(found.status, 200);
    assert.equal(dataOf<OrderJson>(found).id, id);
    // Another user's id is not found; nor is an id that cannot exist.
    for (const [who, cid] of [
      [bob, 'grid-1_A'],
      [alice, 'no-such'],
      [alice, 'x'.repeat(37)],
    ] as const) {
      const r = await call(t, who, 'GET', `/v1/orders/client/${cid}`);
      assert.equal(r.status, 404, cid);
      assert.deepEqual(r.body, {
        success: false,
        message: 'Order not found',
        error: { message: 'Order not found', code: 404 },
      });
    }

    const twice = await place(alice, order({ client_order_id: 'grid-1_A' }));
    assert.equal(twice.status, 422);
    assert.deepEqual(Object.keys((twice.body as { errors: object }).errors), ['client_order_id']);
    // Bob may use the same id: ids are per user.
    idOf(await place(bob, order({ client_order_id: 'grid-1_A' })));

    const canceled = await call(t, alice, 'DELETE', '/v1/orders/client/grid-1_A');
    assert.equal(canceled.status, 200);
    assert.deepEqual(canceled.body, { success: true, message: 'Order canceled successfully.', code: 200 });
    assert.equal((await get(alice, id)).status, 'canceled');
    const again = await call(t, alice, 'DELETE', '/v1/orders/client/grid-1_A');
    assert.equal(again.status, 409);
    assert.deepEqual(again.body, { error: 'Order is not open (status: canceled).' });
    // Once the first has ended, the id is free again.
    idOf(await place(alice, order({ client_order_id: 'grid-1_A' })));
  });

  test('bad controls: every failure at once, in shape D, and nothing placed', async () => {
    const before = (await call(t, alice, 'GET', '/v1/open-orders')).body;
    const r = await place(
      alice,
      order({
        order_type: 'market',
        time_in_force: 'GTX',
        post_only: true,
        client_order_id: 'has space',
        stp: 'cancel-all',
      }),
    );
    assert.equal(r.status, 422);
    assert.deepEqual((r.body as { errors: object }).errors, {
      time_in_force: ['The selected time in force is invalid.'],
      post_only: ['The post only field is prohibited when order type is market.'],
      client_order_id: ['The client order id field format is invalid.'],
      stp: ['The selected stp is invalid.'],
    });
    const gtd = await place(alice, order({ time_in_force: 'GTD' }));
    assert.deepEqual((gtd.body as { errors: object }).errors, {
      expire_time: ['The expire time field is required when time in force is GTD.'],
    });
    for (const expire of [Math.floor(nowSeconds()) - 10, Math.floor(nowSeconds()) + 400 * 86400]) {
      const bad = await place(alice, order({ time_in_force: 'GTD', expire_time: expire }));
      assert.equal(bad.status, 422, String(expire));
      assert.deepEqual(Object.keys((bad.body as { errors: object }).errors), ['expire_time']);
    }
    assert.deepEqual((await call(t, alice, 'GET', '/v1/open-orders')).body, before);
  });

  test('IOC, FOK and post-only that cannot rest end canceled with their reason and never show in the book', async () => {
    const maker = await t.trader();
    idOf(await place(maker, order({ order_direction: 'sell', price: '21000.0', volume: '0.01' })));

    const ioc = await get(
      bob,
      idOf(await place(bob, order({ price: '21000.0', volume: '0.03', time_in_force: 'IOC' }))),
    );
    assert.equal(ioc.status, 'canceled');
    assert.equal(ioc.reason, 'immediate-or-cancel remainder');
    assert.equal(ioc.volume_executed.amount, '0.01000000');
    assert.equal(ioc.time_in_force, 'IOC');

    idOf(await place(maker, order({ order_direction: 'sell', price: '21000.0', volume: '0.01' })));
    const fok = await get(
      bob,
      idOf(await place(bob, order({ price: '21000.0', volume: '0.02', time_in_force: 'FOK' }))),
    );
    assert.equal(fok.status, 'canceled');
    assert.equal(fok.reason, 'fill-or-kill not filled');
    assert.equal(fok.volume_executed.amount, '0.00000000');

    const post = await get(bob, idOf(await place(bob, order({ price: '21500.0', post_only: true }))));
    assert.equal(post.status, 'canceled');
    assert.equal(post.reason, 'post-only would take liquidity');
    assert.equal(post.post_only, true);
    // The book holds the maker's second ask, untouched (the FOK took nothing), and nothing of Bob's.
    const { bids, asks } = await book();
    assert.deepEqual(asks, [['21000.0', '0.01000000']]);
    assert.equal(
      bids.some(([price]) => price === '21000.0' || price === '21500.0'),
      false,
    );
  });

  test('GET /v1/open-orders and /v1/closed-orders show every control field, as GET /v1/orders/:id does', async () => {
    const gina = await t.trader();
    const expire = Math.floor(nowSeconds()) + 3600;
    const resting = idOf(
      await place(
        gina,
        order({
          price: '19100.0',
          time_in_force: 'GTD',
          expire_time: expire,
          post_only: true,
          client_order_id: 'list-1',
          stp: 'decrement',
        }),
      ),
    );
    // An IOC buy below every ask: nothing trades, it ends at once.
    const ended = idOf(
      await place(gina, order({ price: '19000.0', time_in_force: 'IOC', client_order_id: 'list-2' })),
    );
    const fields = [
      'time_in_force',
      'post_only',
      'stp',
      'client_order_id',
      'expire_time',
      'reason',
      'status',
    ];
    const pick = (o: OrderJson) =>
      Object.fromEntries(
        fields.filter((f) => f in o).map((f) => [f, (o as unknown as Record<string, unknown>)[f]]),
      );
    const open = dataOf<OrderJson[]>(await call(t, gina, 'GET', '/v1/open-orders'));
    const closed = dataOf<OrderJson[]>(await call(t, gina, 'GET', '/v1/closed-orders'));
    assert.deepEqual(
      open.map((o) => o.id),
      [resting],
    );
    assert.deepEqual(
      closed.map((o) => o.id),
      [ended],
    );
    assert.deepEqual(pick(open[0]!), {
      time_in_force: 'GTD',
      post_only: true,
      stp: 'decrement',
      client_order_id: 'list-1',
      expire_time: `${expire}.0000`,
      reason: null,
      status: 'open',
    });
    assert.deepEqual(pick(closed[0]!), {
      time_in_force: 'IOC',
      client_order_id: 'list-2',
      expire_time: '0.0000',
      reason: 'immediate-or-cancel remainder',
      status: 'canceled',
    });
    assert.deepEqual(pick(open[0]!), pick(await get(gina, resting)));
    assert.deepEqual(pick(closed[0]!), pick(await get(gina, ended)));
  });

  test('DELETE /v1/orders cancels all, or one market, and says how many', async () => {
    const carol = await t.trader();
    idOf(await place(carol, order()));
    idOf(await place(carol, order({ price: '19000.0' })));
    idOf(await place(carol, order({ pair: 'ETH/BTC', volume: '0.1', price: '0.05' })));
    const bad = await call(t, carol, 'DELETE', '/v1/orders?pair=NOPE');
    assert.equal(bad.status, 400);
    assert.deepEqual(bad.body, { error: 'Invalid request' });
    const one = await call(t, carol, 'DELETE', '/v1/orders?pair=ETH/BTC');
    assert.deepEqual(one.body, {
      success: true,
      message: 'Orders canceled successfully.',
      data: { canceled: 1 },
      code: 200,
    });
    const all = await call(t, carol, 'DELETE', '/v1/orders');
    assert.deepEqual(dataOf(all), { canceled: 2 });
    const open = dataOf<OrderJson[]>(await call(t, carol, 'GET', '/v1/open-orders'));
    assert.deepEqual(open, []);
    const closed = dataOf<OrderJson[]>(await call(t, carol, 'GET', '/v1/closed-orders'));
    assert.deepEqual(
      closed.map((o) => o.reason),
      ['canceled by cancel-all', 'canceled by cancel-all', 'canceled by cancel-all'],
    );
    assert.deepEqual(dataOf(await call(t, carol, 'DELETE', '/v1/orders')), { canceled: 0 });
  });

  test("the dead man's switch: armed, moved, disarmed, and it fires within a second", async () => {
    const dave = await t.trader();
    const id = idOf(await place(dave, order()));
    for (const timeout of [-1, 86_401, 1.5, 'soon']) {
      const r = await call(t, dave, 'POST', '/v1/orders/cancel-all-after', { timeout });
      assert.equal(r.status, 422, String(timeout));
      assert.deepEqual(Object.keys((r.body as { errors: object }).errors), ['timeout']);
    }
    const off = await call(t, dave, 'POST', '/v1/orders/cancel-all-after', { timeout: 0 });
    assert.deepEqual(off.body, {
      success: true,
      message: 'Cancel-all-after set successfully.',
      data: { trigger_time: '0.0000' },
      code: 200,
    });
    const sent = nowSeconds();
    const armed = await call(t, dave, 'POST', '/v1/orders/cancel-all-after', { timeout: '1' });
    const trigger = Number(dataOf<{ trigger_time: string }>(armed).trigger_time);
    assert.match(dataOf<{ trigger_time: string }>(armed).trigger_time, /^\d+\.\d{4}$/);
    assert.ok(Math.abs(trigger - (sent + 1)) < 1, `${trigger} vs ${sent + 1}`);
    const fired = await eventually(async () => (await get(dave, id)).status === 'canceled', 2500);
    assert.ok(fired, 'the switch fired within a second of its deadline');
    assert.equal((await get(dave, id)).reason, "dead man's switch");
    // It stays disarmed: a new order is left alone.
    const later = idOf(await place(dave, order()));
    await sleep(1500);
    assert.equal((await get(dave, later)).status, 'open');
  });

  test('POST /v1/orders/batch: one item per order, 21 orders place nothing', async () => {
    const erin = await t.trader();
    const many = await call(t, erin, 'POST', '/v1/orders/batch', { orders: Array(21).fill(order()) });
    assert.equal(many.status, 422);
    assert.deepEqual(many.body, {
      message: 'The orders field must not have more than 20 items.',
      errors: { orders: ['The orders field must not have more than 20 items.'] },
    });
    assert.deepEqual(dataOf(await call(t, erin, 'GET', '/v1/open-orders')), []);
    const r = await call(t, erin, 'POST', '/v1/orders/batch', {
      orders: [
        order({ client_order_id: 'b1' }),
        order({ volume: 'x' }),
        order({ client_order_id: 'b1' }),
        order({ price: '19000.0', client_order_id: 'b2' }),
      ],
    });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    const items = dataOf<Record<string, unknown>[]>(r);
    assert.equal(items.length, 4);
    assert.deepEqual(Object.keys(items[0]!), ['success', 'id', 'location']);
    assert.equal(items[0]!.location, `/v1/orders/${items[0]!.id}`);
    assert.deepEqual(items[1], {
      success: false,
      message: 'The volume field must be a number.',
      errors: { volume: ['The volume field must be a number.'] },
    });
    assert.equal(items[2]!.success, false);
    assert.deepEqual(Object.keys(items[2]!.errors as object), ['client_order_id']);
    assert.equal(items[3]!.success, true);
    const open = dataOf<OrderJson[]>(await call(t, erin, 'GET', '/v1/open-orders'));
    assert.deepEqual(open.map((o) => o.client_order_id).sort(), ['b1', 'b2']);
  });

  test('PATCH /v1/orders/:id amends in place; its refusals', async () => {
    const frank = await t.trader();
    const id = idOf(await place(frank, order({ volume: '0.05' })));
    const lower = await call(t, frank, 'PATCH', `/v1/orders/${id}`, {
      volume: '0.04',
      client_order_id: 'am-1',
    });
    assert.equal(lower.status, 200, JSON.stringify(lower.body));
    assert.deepEqual(lower.body, { success: true, message: 'Order amended successfully.', code: 200 });
    const amended = await get(frank, id);
    assert.equal(amended.volume.amount, '0.04000000');
    assert.equal(amended.client_order_id, 'am-1');
    const moved = await call(t, frank, 'PATCH', `/v1/orders/${id}`, { price: '19500.0' });
    assert.equal(moved.status, 200);
    assert.equal((await get(frank, id)).price.amount, '19500.0');

    const nothing = await call(t, frank, 'PATCH', `/v1/orders/${id}`, {});
    assert.equal(nothing.status, 422);
    const tooMuch = await call(t, frank, 'PATCH', `/v1/orders/${id}`, { volume: '1000' });
    assert.equal(tooMuch.status, 422, JSON.stringify(tooMuch.body));
    assert.deepEqual(Object.keys((tooMuch.body as { errors: object }).errors), ['volume']);
    assert.equal((await call(t, bob, 'PATCH', `/v1/orders/${id}`, { volume: '0.03' })).status, 404);
    assert.equal((await call(t, frank, 'PATCH', '/v1/orders/abc', { volume: '0.03' })).status, 404);
    await call(t, frank, 'DELETE', `/v1/orders/${id}`);
    const closed = await call(t, frank, 'PATCH', `/v1/orders/${id}`, { volume: '0.03' });
    assert.equal(closed.status, 409);
    assert.deepEqual(closed.body, { error: 'Order is not open (status: canceled).' });
  });
});

describe('order controls with a nonce-protected key: one signed body, one target', () => {
  let t: TestServer;
  before(async () => {
    t = await startTestServer();
  });
  after(() => t.close());

  test('the signed body names what the path or query names, or the request is 400 and changes nothing', async () => {
    const owner = await t.trader();
    const key = await createKey(t, owner.userId, { nonce_required: true });
    let nonce = 1;
    const as = (method: string, path: string, body: Record<string, unknown> = {}) =>
      call(t, key, method, path, { ...body, nonce: String(nonce++) });
    const id = idOf(await as('POST', '/v1/orders', order({ client_order_id: 'n-1' })));

    for (const [method, path, body] of [
      ['PATCH', `/v1/orders/${id}`, { volume: '0.005' }],
      ['PATCH', `/v1/orders/${id}`, { volume: '0.005', order_id: id + 1 }],
      ['DELETE', '/v1/orders/client/n-1', {}],
      ['DELETE', '/v1/orders/client/n-1', { client_order_id: 'n-2' }],
      ['DELETE', '/v1/orders?pair=BTC/EUR', {}],
      ['DELETE', '/v1/orders?pair=BTC/EUR', { pair: 'ETH/BTC' }],
    ] as const) {
      const r = await as(method, path, body);
      assert.equal(r.status, 400, `${method} ${path} ${JSON.stringify(body)}`);
      assert.deepEqual(r.body, { error: 'Invalid request' });
    }
    const still = dataOf<OrderJson>(await call(t, key, 'GET', `/v1/orders/${id}`));
    assert.equal(still.status, 'open');
    assert.equal(still.volume.amount, '0.01000000');

    assert.equal((await as('PATCH', `/v1/orders/${id}`, { volume: '0.005', order_id: id })).status, 200);
    assert.equal((await as('DELETE', '/v1/orders/client/n-1', { client_order_id: 'n-1' })).status, 200);
    idOf(await as('POST', '/v1/orders', order()));
    const all = await as('DELETE', '/v1/orders?pair=BTC/EUR', { pair: 'BTC/EUR' });
    assert.deepEqual(dataOf(all), { canceled: 1 });
  });
});

describe('MAX_OPEN_ORDERS_PER_USER', () => {
  test('one more resting order than the limit is a 422 naming it; orders that cannot rest still go', async () => {
    const t = await startTestServer({ MAX_OPEN_ORDERS_PER_USER: '2' });
    try {
      const hank = await t.trader();
      idOf(await call(t, hank, 'POST', '/v1/orders', order()));
      idOf(await call(t, hank, 'POST', '/v1/orders', order({ price: '19000.0' })));
      const third = await call(t, hank, 'POST', '/v1/orders', order({ price: '18000.0' }));
      assert.equal(third.status, 422);
      const { errors } = third.body as { errors: Record<string, string[]> };
      assert.deepEqual(Object.keys(errors), ['volume']);
      assert.match(errors.volume![0]!, /2 open orders.*MAX_OPEN_ORDERS_PER_USER/);
      // An IOC order never rests: it is not counted against the limit.
      idOf(await call(t, hank, 'POST', '/v1/orders', order({ price: '18000.0', time_in_force: 'IOC' })));
    } finally {
      await t.close();
    }
  });
});

describe('order controls across a restart', () => {
  test('expiries, switch deadlines and client ids survive a restart of the server', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'openspot-controls-'));
    let t = await startTestServer({}, dir);
    try {
      const gina = await t.trader();
      const expire = Math.floor(nowSeconds()) + 3;
      const gtd = idOf(
        await call(
          t,
          gina,
          'POST',
          '/v1/orders',
          order({ time_in_force: 'GTD', expire_time: String(expire) }),
        ),
      );
      const tagged = idOf(await call(t, gina, 'POST', '/v1/orders', order({ client_order_id: 'keep-me' })));
      const armed = await call(t, gina, 'POST', '/v1/orders/cancel-all-after', { timeout: 4 });
      assert.equal(armed.status, 200);
      await t.close();
      t = await startTestServer({}, dir);

      const shown = dataOf<OrderJson>(await call(t, gina, 'GET', `/v1/orders/${gtd}`));
      assert.equal(shown.expire_time, `${expire}.0000`);
      assert.equal(shown.time_in_force, 'GTD');
      const found = await call(t, gina, 'GET', '/v1/orders/client/keep-me');
      assert.equal(dataOf<OrderJson>(found).id, tagged);
      // Still unique after the restart.
      assert.equal(
        (await call(t, gina, 'POST', '/v1/orders', order({ client_order_id: 'keep-me' }))).status,
        422,
      );

      const expired = await eventually(
        async () => dataOf<OrderJson>(await call(t, gina, 'GET', `/v1/orders/${gtd}`)).status === 'canceled',
        6000,
      );
      assert.ok(expired, 'the GTD order expired after the restart');
      assert.equal(dataOf<OrderJson>(await call(t, gina, 'GET', `/v1/orders/${gtd}`)).reason, 'expired');
      const fired = await eventually(
        async () =>
          dataOf<OrderJson>(await call(t, gina, 'GET', `/v1/orders/${tagged}`)).status === 'canceled',
        6000,
      );
      assert.ok(fired, 'the switch armed before the restart fired after it');
      assert.equal(
        dataOf<OrderJson>(await call(t, gina, 'GET', `/v1/orders/${tagged}`)).reason,
        "dead man's switch",
      );
    } finally {
      await t.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
