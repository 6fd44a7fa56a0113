/**
 * DATABASE_URL selects PostgreSQL: validated at start (never echoing the URL, which may hold a
 * password), and the server refuses to start on it until the adapter is wired, rather than
 * quietly running on SQLite.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
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

test('the server refuses to start with DATABASE_URL, saying so, and never falls back to SQLite', async () => {
  const config = loadConfig({
    DATABASE_URL: 'postgres://postgres@127.0.0.1:5432/venue',
    DATA_DIR: '/nonexistent/openspot',
  });
  await assert.rejects(
    startServer(config, createLogger('silent'), {}),
    /^Error: PostgreSQL store selected but not yet supported by the server/,
  );
});
