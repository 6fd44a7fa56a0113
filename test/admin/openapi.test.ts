/**
 * The admin API's OpenAPI entries agree with what the server does. Generic over the document:
 * every route under /admin/ is held to the same rules, including routes added later.
 *  - every operation has the bearer security scheme, declares 401, and a request schema when it
 *    takes a body (POST, PUT, PATCH; one that reads none says "No request body." in its description);
 *  - every operation, called without the token, answers 401;
 *  - a sample of real calls (every status the console relies on, and fault injection and
 *    checkpoints): the status answered is
 *    declared, a body the server accepted fits the documented request schema, and the answer
 *    fits the documented response schema for its status.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { Check } from 'typebox/schema';
import { startTestServer, type TestServer } from '../support/server-fixture.js';

interface Operation {
  description?: string;
  security?: Record<string, string[]>[];
  requestBody?: { content?: Record<string, { schema?: Record<string, unknown> }> };
  responses: Record<string, { content?: Record<string, { schema?: Record<string, unknown> }> }>;
}
interface OpenApi {
  paths: Record<string, Record<string, Operation>>;
  components: { securitySchemes: Record<string, Record<string, unknown>> };
}

const METHODS = ['get', 'post', 'put', 'patch', 'delete'];
const WITH_BODY = new Set(['post', 'put', 'patch']);

let t: TestServer;
let doc: OpenApi;

before(async () => {
  t = await startTestServer();
  doc = (await (await fetch(`${t.url}/v1/openapi.json`)).json()) as OpenApi;
});
after(async () => {
  await t.close();
});

const adminOperations = () =>
  Object.entries(doc.paths)
    .filter(([path]) => path.startsWith('/admin/'))
    .flatMap(([path, ops]) =>
      Object.entries(ops)
        .filter(([method]) => METHODS.includes(method))
        .map(([method, op]) => ({ path, method, op })),
    );

/** The documented operation a concrete request hits (`{id}` matches one path segment). */
function operationOf(method: string, url: string): { path: string; op: Operation } {
  const path = url.split('?')[0]!;
  for (const [template, ops] of Object.entries(doc.paths)) {
    const pattern = new RegExp(`^${template.replace(/\{[^}]+\}/g, '[^/]+')}$`);
    const op = ops[method.toLowerCase()];
    if (pattern.test(path) && op !== undefined) return { path: template, op };
  }
  throw new Error(`${method} ${path} is not in the OpenAPI document`);
}

const jsonSchema = (entry: { content?: Record<string, { schema?: Record<string, unknown> }> } | undefined) =>
  entry?.content?.['application/json']?.schema;

/** One admin call, checked against the document; answers the status and the parsed body. */
async function call(
  method: string,
  url: string,
  body?: unknown,
  init: { contentType?: string; raw?: string; server?: TestServer } = {},
): Promise<{ status: number; body: unknown }> {
  const server = init.server ?? t;
  const response = await fetch(`${server.url}${url}`, {
    method,
    headers: {
      authorization: `Bearer ${server.server.adminToken}`,
      ...(body === undefined && init.raw === undefined
        ? {}
        : { 'content-type': init.contentType ?? 'application/json' }),
    },
    body: init.raw ?? (body === undefined ? undefined : JSON.stringify(body)),
  });
  const text = await response.text();
  const parsed: unknown = text === '' ? null : JSON.parse(text);
  const { path, op } = operationOf(method, url);
  const where = `${method} ${path} → ${response.status} ${text.slice(0, 200)}`;
  const declared = op.responses[String(response.status)];
  assert.ok(declared, `status not declared: ${where}`);
  const responseSchema = jsonSchema(declared);
  assert.ok(responseSchema, `no response schema: ${where}`);
  assert.ok(Check(responseSchema, parsed), `answer does not fit the documented schema: ${where}`);
  if (response.ok && body !== undefined) {
    const requestSchema = jsonSchema(op.requestBody);
    assert.ok(requestSchema, `no request schema: ${where}`);
    assert.ok(Check(requestSchema, body), `an accepted body does not fit the request schema: ${where}`);
  }
  return { status: response.status, body: parsed };
}

describe('the admin API in the OpenAPI document', () => {
  test('declares the bearer scheme, and every admin operation uses it and declares 401', () => {
    assert.deepEqual(
      {
        type: doc.components.securitySchemes.adminBearer?.type,
        scheme: doc.components.securitySchemes.adminBearer?.scheme,
      },
      { type: 'http', scheme: 'bearer' },
    );
    const ops = adminOperations();
    assert.ok(ops.length >= 13, `only ${ops.length} admin operations documented`);
    for (const { path, method, op } of ops) {
      assert.ok(
        op.security?.some((s) => 'adminBearer' in s),
        `${method.toUpperCase()} ${path} has no adminBearer security`,
      );
      assert.ok(op.responses['401'], `${method.toUpperCase()} ${path} does not declare 401`);
    }
  });

  test('every admin operation that takes a body has a JSON request schema with properties', () => {
    for (const { path, method, op } of adminOperations()) {
      if (!WITH_BODY.has(method)) continue;
      // A POST that reads nothing says so where a reader of /docs sees it.
      if (op.requestBody === undefined && op.description?.includes('No request body.')) continue;
      const schema = jsonSchema(op.requestBody);
      assert.ok(schema, `${method.toUpperCase()} ${path} has no request schema`);
      assert.equal(schema.type, 'object', `${method.toUpperCase()} ${path}: request schema is not an object`);
      assert.ok(schema.properties, `${method.toUpperCase()} ${path}: request schema lists no properties`);
    }
  });

  test('every admin operation answers 401 without the token, as declared', async () => {
    for (const { path, method } of adminOperations()) {
      const url = path.replace(/\{[^}]+\}/g, '1');
      const response = await fetch(`${t.url}${url}`, {
        method: method.toUpperCase(),
        ...(WITH_BODY.has(method) ? { headers: { 'content-type': 'application/json' }, body: '{}' } : {}),
      });
      assert.equal(response.status, 401, `${method.toUpperCase()} ${path}`);
      assert.equal(response.headers.get('www-authenticate'), 'Bearer');
    }
  });

  test('a sample of calls: every status answered is declared, and bodies fit the schemas', async () => {
    // Catalogue: lists, create, duplicates (409), refusals (422, with the decimals message).
    assert.equal((await call('GET', '/admin/v1/assets')).status, 200);
    assert.equal((await call('GET', '/admin/v1/markets')).status, 200);
    const asset = { code: 'OAPI', name: 'OpenAPI coin', type: 'crypto', decimals: 8 };
    assert.equal((await call('POST', '/admin/v1/assets', asset)).status, 201);
    assert.equal((await call('POST', '/admin/v1/assets', asset)).status, 409);
    const tooPrecise = await call('POST', '/admin/v1/assets', { ...asset, code: 'WEI', decimals: 18 });
    assert.equal(tooPrecise.status, 422);
    assert.match(JSON.stringify(tooPrecise.body), /at most 10 decimals/);
    const market = { base: 'OAPI', quote: 'EUR', pair_decimals: 2, lot_decimals: 4, ordermin: '0.01' };
    assert.equal((await call('POST', '/admin/v1/markets', market)).status, 201);
    assert.equal((await call('POST', '/admin/v1/markets', market)).status, 409);
    assert.equal((await call('POST', '/admin/v1/markets', { ...market, base: 'NOPE' })).status, 422);

    // Users and keys.
    assert.equal((await call('GET', '/admin/v1/users')).status, 200);
    const user = (await call('POST', '/admin/v1/users', { email: 'openapi@example.org' })) as {
      status: number;
      body: { id: number };
    };
    assert.equal(user.status, 201);
    const id = user.body.id;
    assert.equal((await call('POST', '/admin/v1/users', { email: 'openapi@example.org' })).status, 409);
    assert.equal((await call('POST', '/admin/v1/users', { email: 'not an email' })).status, 422);
    assert.equal((await call('GET', `/admin/v1/users/${id}`)).status, 200);
    assert.equal((await call('GET', '/admin/v1/users/999999')).status, 404);
    const key = (await call('POST', `/admin/v1/users/${id}/api-keys`, { scopes: ['read'] })) as {
      status: number;
      body: { api_key: string };
    };
    assert.equal(key.status, 201);
    assert.equal((await call('POST', `/admin/v1/users/${id}/api-keys`, { scopes: ['root'] })).status, 422);
    assert.equal((await call('GET', `/admin/v1/users/${id}/api-keys`)).status, 200);
    assert.equal((await call('DELETE', `/admin/v1/api-keys/${key.body.api_key}`)).status, 200);
    assert.equal((await call('DELETE', '/admin/v1/api-keys/unknown-key')).status, 404);

    // Funds: applied (201), duplicate (200), reference conflict (409), refusals (422), unknown user.
    const deposit = { asset: 'EUR', amount: '100.50', reference: 'wire-openapi-1' };
    assert.equal((await call('POST', `/admin/v1/users/${id}/deposits`, deposit)).status, 201);
    assert.equal((await call('POST', `/admin/v1/users/${id}/deposits`, deposit)).status, 200);
    const conflict = await call('POST', `/admin/v1/users/${id}/deposits`, { ...deposit, amount: '7' });
    assert.equal(conflict.status, 409);
    assert.equal((conflict.body as { error: { code: string } }).error.code, 'reference_conflict');
    assert.equal(
      (await call('POST', `/admin/v1/users/${id}/withdrawals`, { asset: 'EUR', amount: '1000' })).status,
      422,
    );
    assert.equal(
      (await call('POST', `/admin/v1/users/${id}/withdrawals`, { asset: 'EUR', amount: '0.50' })).status,
      201,
    );
    assert.equal((await call('POST', '/admin/v1/users/999999/deposits', deposit)).status, 404);
    assert.equal((await call('GET', `/admin/v1/users/${id}/balances`)).status, 200);

    // Malformed bodies: 400 and 415, declared like the rest.
    assert.equal((await call('POST', '/admin/v1/users', undefined, { raw: '{"email":' })).status, 400);
    assert.equal(
      (await call('POST', '/admin/v1/users', undefined, { raw: '<email/>', contentType: 'application/xml' }))
        .status,
      415,
    );

    // The ledger check and the health summary the console shows.
    const check = (await call('GET', '/admin/v1/ledger/check')) as { status: number; body: { ok: boolean } };
    assert.equal(check.status, 200);
    assert.equal(check.body.ok, true);
    assert.equal((await call('GET', '/admin/v1/health')).status, 200);

    // Fault injection: replace and merge one key's faults (defaults filled in the answer), read
    // them, refuse a typo (422 naming it), clear them.
    const scoped = { api_key: key.body.api_key, faults: { errors: { rate: 1, status: 429 } } };
    const replaced = (await call('PUT', '/admin/v1/chaos', scoped)) as {
      status: number;
      body: { keys: Record<string, { errors?: { retry_after: number } }> };
    };
    assert.equal(replaced.status, 200);
    assert.equal(replaced.body.keys[key.body.api_key]?.errors?.retry_after, 1);
    const merged = { api_key: key.body.api_key, faults: { errors: null, latency: { ms: 5, count: 2 } } };
    assert.equal((await call('POST', '/admin/v1/chaos', merged)).status, 200);
    assert.equal((await call('GET', '/admin/v1/chaos')).status, 200);
    const typo = await call('PUT', '/admin/v1/chaos', { faults: { lantecy: { ms: 5 } } });
    assert.equal(typo.status, 422);
    assert.equal((typo.body as { error: { field: string } }).error.field, 'faults.lantecy');
    const cleared = (await call('DELETE', `/admin/v1/chaos?api_key=${key.body.api_key}`)) as {
      status: number;
      body: { keys: Record<string, unknown> };
    };
    assert.equal(cleared.status, 200);
    assert.deepEqual(cleared.body.keys, {});

    if (process.env.TEST_STORE === 'postgres') {
      // Checkpoints are SQLite-only for now: on PostgreSQL a save is refused, as documented.
      const refused = (await call('POST', '/admin/v1/checkpoints', { name: 'openapi-1' })) as {
        status: number;
        body: { error: { code: string } };
      };
      assert.deepEqual([refused.status, refused.body.error.code], [409, 'checkpoint_incompatible']);
      // Reset says plainly that this store keeps no checkpoints (not that its history predates them).
      const reset = (await call('POST', '/admin/v1/reset')) as {
        status: number;
        body: { error: { code: string; message: string } };
      };
      assert.deepEqual([reset.status, reset.body.error.code], [409, 'no_initial_state']);
      assert.match(reset.body.error.message, /not available on the PostgreSQL store yet/);
      assert.doesNotMatch(reset.body.error.message, /predates/);
      assert.equal(t.server.initialCheckpoint, false);
      return;
    }
    // Checkpoints: save (201, then replaced), the reserved name (409), list, restore (with the
    // ledger check), an unknown (404) or impossible (422) name, delete, reset.
    assert.equal((await call('POST', '/admin/v1/checkpoints', { name: 'openapi-1' })).status, 201);
    const again = (await call('POST', '/admin/v1/checkpoints', { name: 'openapi-1' })) as {
      status: number;
      body: { replaced: boolean };
    };
    assert.deepEqual([again.status, again.body.replaced], [201, true]);
    assert.equal((await call('POST', '/admin/v1/checkpoints', { name: 'initial' })).status, 409);
    assert.equal((await call('POST', '/admin/v1/checkpoints', { name: '../up' })).status, 422);
    const list = (await call('GET', '/admin/v1/checkpoints')) as {
      status: number;
      body: { data: { name: string }[] };
    };
    assert.equal(list.status, 200);
    assert.ok(list.body.data.some((c) => c.name === 'openapi-1'));
    const restore = (await call('POST', '/admin/v1/checkpoints/openapi-1/restore')) as {
      status: number;
      body: { restored: string; ledger: { ok: boolean } };
    };
    assert.deepEqual(
      [restore.status, restore.body.restored, restore.body.ledger.ok],
      [200, 'openapi-1', true],
    );
    assert.equal((await call('POST', '/admin/v1/checkpoints/no-such-checkpoint/restore')).status, 404);
    assert.equal((await call('POST', '/admin/v1/checkpoints/.hidden/restore')).status, 422);
    assert.equal((await call('DELETE', '/admin/v1/checkpoints/openapi-1')).status, 200);
    assert.equal((await call('DELETE', '/admin/v1/checkpoints/openapi-1')).status, 404);
    assert.equal((await call('DELETE', '/admin/v1/checkpoints/initial')).status, 409);
    assert.equal((await call('POST', '/admin/v1/reset')).status, 200);
  });

  test('fault injection is documented and served at /admin/v1/chaos, without a trailing slash', async () => {
    assert.deepEqual(Object.keys(doc.paths['/admin/v1/chaos'] ?? {}).sort(), [
      'delete',
      'get',
      'post',
      'put',
    ]);
    assert.equal(doc.paths['/admin/v1/chaos/'], undefined);
    const auth = { authorization: `Bearer ${t.server.adminToken}` };
    assert.equal((await fetch(`${t.url}/admin/v1/chaos`, { headers: auth })).status, 200);
    // One address for one resource, as every other admin route.
    assert.equal((await fetch(`${t.url}/admin/v1/chaos/`, { headers: auth })).status, 404);
  });

  test('fault injection refused by the configuration (CHAOS=off): 403 as declared', async () => {
    const off = await startTestServer({ CHAOS: 'off' });
    try {
      const faults = { faults: { latency: { ms: 5 } } };
      for (const method of ['PUT', 'POST']) {
        const refused = await call(method, '/admin/v1/chaos', faults, { server: off });
        assert.equal(refused.status, 403);
        assert.equal((refused.body as { error: { code: string } }).error.code, 'chaos_disabled');
      }
      const state = await call('GET', '/admin/v1/chaos', undefined, { server: off });
      assert.deepEqual([state.status, (state.body as { allowed: boolean }).allowed], [200, false]);
    } finally {
      await off.close();
    }
  });
});
