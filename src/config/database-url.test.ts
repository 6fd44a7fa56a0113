/**
 * DATABASE_URL selects PostgreSQL: validated at start (never echoing the URL, which may hold a
 * password); with it the server keeps the venue in PostgreSQL, never quietly in SQLite.
 */
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { freshDatabase, postgresSuite, queryDatabase } from '../../test/support/postgres.js';
import { createLogger } from '../logger.js';
import { startServer } from '../server.js';
import { ConfigError, loadConfig } from './config.js';

test('DATABASE_URL: unset means SQLite; a postgres:// URL is taken; anything else is a configuration error', () => {
  assert.equal(loadConfig({}).databaseUrl, undefined);
  assert.equal(loadConfig({ DATABASE_URL: '  ' }).databaseUrl, undefined);
  const url = 'postgres://openspot:s3cret@db.internal:5432/venue';
  assert.equal(loadConfig({ DATABASE_URL: url }).databaseUrl, url);
  assert.equal(loadConfig({ DATABASE_URL: 'postgresql://db/venue' }).databaseUrl, 'postgresql://db/venue');
  for (const [bad, message] of [
    ['mysql://u:s3cret@db/venue', /must start with postgres:\/\/ or postgresql:\/\//],
    ['not a url', /not a URL/],
    ['postgres://db.internal:5432/', /names no database/],
  ] as const) {
    assert.throws(
      () => loadConfig({ DATABASE_URL: bad }),
      (error: unknown) =>
        error instanceof ConfigError && message.test(error.message) && !error.message.includes('s3cret'),
      bad,
    );
  }
});

test(
  'with DATABASE_URL the server runs on PostgreSQL: an order placed there is found after a restart',
  postgresSuite(),
  async (t) => {
    const url = await freshDatabase(t);
    const dir = mkdtempSync(join(tmpdir(), 'openspot-pg-start-'));
    t.after(() => rmSync(dir, { recursive: true, force: true }));
    const env = {
      DATABASE_URL: url,
      DATA_DIR: dir,
      PORT: '0',
      HOST: '127.0.0.1',
      SIMULATOR: 'off',
      DEMO: 'off',
    };
    const first = await startServer(loadConfig(env), createLogger('silent'), env);
    const admin = (server: typeof first, method: string, path: string, body?: unknown) =>
      fetch(`${server.url}/admin/v1${path}`, {
        method,
        headers: {
          authorization: `Bearer ${server.adminToken}`,
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
    try {
      const user = (await (await admin(first, 'POST', '/users', {})).json()) as { id: number };
      const deposit = await admin(first, 'POST', `/users/${user.id}/deposits`, {
        asset: 'EUR',
        amount: '1234.5678',
        reference: 'pg-wire-1',
      });
      assert.equal(deposit.status, 201);
    } finally {
      await first.close();
    }
    // The rows are in PostgreSQL, not in a SQLite file of DATA_DIR.
    const rows = await queryDatabase<{ n: string }>(url, 'SELECT count(*)::text AS n FROM users');
    assert.ok(Number(rows[0]!.n) >= 1);
    assert.equal(existsSync(join(dir, 'openspot.db')), false);
    const second = await startServer(loadConfig(env), createLogger('silent'), env);
    try {
      const users = (await (await admin(second, 'GET', '/users')).json()) as { data: { id: number }[] };
      const id = users.data.at(-1)!.id;
      const balances = (await (await admin(second, 'GET', `/users/${id}/balances`)).json()) as unknown;
      assert.match(JSON.stringify(balances), /1234\.5678/);
      const check = (await (await admin(second, 'GET', '/ledger/check')).json()) as { ok: boolean };
      assert.equal(check.ok, true);
    } finally {
      await second.close();
    }
  },
);
