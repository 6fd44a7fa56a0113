/** The admin API's body handling, in-process (Fastify inject over an in-memory store). */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, test } from 'node:test';
import Fastify, { type FastifyInstance } from 'fastify';
import { CredentialVault } from '../auth/vault.js';
import { Engine } from '../engine/engine.js';
import { type LocalExchange, openExchange } from '../sequencer/sequencer.js';
import { asyncStore } from '../store/async-store.js';
import { SqliteStore } from '../store/sqlite/sqlite-store.js';
import { adminRoutes } from './routes.js';

const TOKEN = 'test-admin-token';
let app: FastifyInstance;
let exchange: LocalExchange;

before(async () => {
  exchange = await openExchange({ store: asyncStore(SqliteStore.open({ path: ':memory:' })) });
  app = Fastify();
  await app.register(adminRoutes, {
    prefix: '/admin/v1',
    exchange,
    vault: new CredentialVault(randomBytes(32)),
    token: TOKEN,
  });
  await app.ready();
});
after(async () => {
  await app.close();
  await exchange.close();
});

const post = (url: string, payload: Buffer) =>
  app.inject({
    method: 'POST',
    url,
    payload,
    headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
  });

test('a JSON body that is not UTF-8 is refused with 400 and changes nothing', async () => {
  // {"email":"a<0xff>@b.c"}: Fastify's default parser used to read 0xff as U+FFFD and create the user.
  const body = Buffer.concat([Buffer.from('{"email":"a'), Buffer.from([0xff]), Buffer.from('@b.c"}')]);
  const r = await post('/admin/v1/users', body);
  assert.equal(r.statusCode, 400);
  assert.deepEqual(r.json(), { error: { code: 'bad_request', message: 'The body is not valid UTF-8.' } });
  assert.equal((await exchange.store.listUsers()).length, 0);
});

test('valid UTF-8 JSON (with or without a byte order mark) is still read; malformed JSON is still 400', async () => {
  const created = await post('/admin/v1/users', Buffer.from('\ufeff{"email":"zoë@example.org"}'));
  assert.equal(created.statusCode, 201);
  assert.equal((created.json() as { email: string }).email, 'zoë@example.org');
  const broken = await post('/admin/v1/users', Buffer.from('{"email":'));
  assert.equal(broken.statusCode, 400);
  assert.equal((broken.json() as { error: { code: string } }).error.code, 'bad_request');
  const poisoned = await post('/admin/v1/users', Buffer.from('{"__proto__":{"email":"x@y.z"}}'));
  assert.equal(poisoned.statusCode, 400);
  assert.equal((await exchange.store.listUsers()).length, 1);
});

test('operator text with a control character (NUL, a newline) is refused with 422 and changes nothing', async () => {
  const json = (value: unknown) => Buffer.from(JSON.stringify(value));
  const users = (await exchange.store.listUsers()).length;
  const email = await post('/admin/v1/users', json({ email: 'a\u0000b@example.org' }));
  assert.equal(email.statusCode, 422);
  assert.equal((email.json() as { error: { field: string } }).error.field, 'email');
  assert.equal((await exchange.store.listUsers()).length, users);

  for (const name of ['Nul\u0000coin', 'Two\nlines', 'Del\u007f']) {
    const asset = await post('/admin/v1/assets', json({ code: 'CTRL', name, type: 'crypto', decimals: 8 }));
    assert.equal(asset.statusCode, 422, name);
    assert.deepEqual(asset.json(), {
      error: {
        code: 'invalid_input',
        message: 'The name must not contain control characters.',
        field: 'name',
      },
    });
  }
  assert.equal(exchange.catalogue.asset('CTRL'), undefined);

  const created = await post(
    '/admin/v1/assets',
    json({ code: 'CTRL', name: 'Control', type: 'crypto', decimals: 8 }),
  );
  assert.equal(created.statusCode, 201);
  const user = (await post('/admin/v1/users', json({})).then((r) => r.json())) as { id: number };
  const deposit = await post(
    `/admin/v1/users/${user.id}/deposits`,
    json({ asset: 'CTRL', amount: '1', reference: 'tx\u00001' }),
  );
  assert.equal(deposit.statusCode, 422);
  assert.equal((deposit.json() as { error: { field: string } }).error.field, 'reference');
  const balances = await exchange.readCommitted(() => exchange.balances(user.id as never));
  assert.ok(balances.every((b) => b.available === 0 && b.reserved === 0));
});

test('GET /engine/state: the engine hash equals a restore of the committed state, and follows every change', async () => {
  const get = async () => {
    const r = await app.inject({
      method: 'GET',
      url: '/admin/v1/engine/state',
      headers: { authorization: `Bearer ${TOKEN}` },
    });
    assert.equal(r.statusCode, 200);
    return r.json() as { state_hash: string; references_hash: string; ok: boolean; violation: string | null };
  };
  const restoredHash = async () => Engine.restore(await exchange.commitLog.loadSnapshot()).stateHash();

  const before = await get();
  assert.equal(before.ok, true);
  assert.equal(before.violation, null);
  assert.match(before.state_hash, /^[0-9a-f]{64}$/);
  assert.equal(before.state_hash, await restoredHash());

  const json = (value: unknown) => Buffer.from(JSON.stringify(value));
  await post('/admin/v1/assets', json({ code: 'HSH', name: 'Hash', type: 'crypto', decimals: 8 }));
  const user = (await post('/admin/v1/users', json({})).then((r) => r.json())) as { id: number };
  const deposit = await post(
    `/admin/v1/users/${user.id}/deposits`,
    json({ asset: 'HSH', amount: '2.5', reference: 'hash-1' }),
  );
  assert.equal(deposit.statusCode, 201);

  const after = await get();
  assert.equal(after.ok, true);
  assert.notEqual(after.state_hash, before.state_hash);
  assert.notEqual(after.references_hash, before.references_hash);
  assert.equal(after.state_hash, await restoredHash());
});

test('an unknown admin address is a 404 in the admin shape, and only after the bearer check', async () => {
  const unknown = await app.inject({
    method: 'GET',
    url: '/admin/v1/no-such-thing',
    headers: { authorization: `Bearer ${TOKEN}` },
  });
  assert.equal(unknown.statusCode, 404);
  assert.deepEqual(unknown.json(), { error: { code: 'not_found', message: 'No such admin endpoint.' } });
  const withoutToken = await app.inject({ method: 'POST', url: '/admin/v1/no-such-thing' });
  assert.equal(withoutToken.statusCode, 401);
  assert.equal((withoutToken.json() as { error: { code: string } }).error.code, 'unauthorized');
});
