/**
 * Starts the real server (same composition as `npm start`) on an ephemeral port with a fresh
 * temporary data directory, and offers the operator steps tests need: users, keys, funds.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '../../src/config/config.js';
import { createLogger } from '../../src/logger.js';
import { type RunningServer, startServer } from '../../src/server.js';
import { LOCAL_VENUE_ENV } from './local-venue-env.js';
import { databaseFor } from './postgres.js';

export interface Trader {
  readonly userId: number;
  readonly apiKey: string;
  readonly apiSecret: string;
}

export interface TestServer {
  readonly url: string;
  readonly server: RunningServer;
  readonly dataDir: string;
  admin(method: string, path: string, body?: unknown): Promise<{ status: number; body: unknown }>;
  /** A new user with an API key, funded with `funds` (asset code → decimal string). */
  trader(funds?: Record<string, string>, scopes?: string[]): Promise<Trader>;
  close(): Promise<void>;
}

export async function startTestServer(
  env: Record<string, string> = {},
  dataDir?: string,
): Promise<TestServer> {
  const dir = dataDir ?? mkdtempSync(join(tmpdir(), 'openspot-test-'));
  const fullEnv = {
    PORT: '0',
    HOST: '127.0.0.1',
    DATA_DIR: dir,
    LOG_LEVEL: 'silent',
    // Rate limits off unless a test sets them: suites send far more than any one client would.
    ...LOCAL_VENUE_ENV,
    ...env,
  };
  // TEST_STORE=postgres: the same suites on PostgreSQL, one database per data directory (a
  // restart with the same directory finds its data again), dropped at the end (test/support/postgres.ts).
  const database = process.env.TEST_STORE === 'postgres' ? await databaseFor(dir) : undefined;
  if (database !== undefined) Object.assign(fullEnv, { DATABASE_URL: database.url });
  const config = loadConfig(fullEnv);
  const server = await startServer(config, createLogger(config.logLevel), fullEnv);
  const admin = async (method: string, path: string, body?: unknown) => {
    const response = await fetch(`${server.url}/admin/v1${path}`, {
      method,
      headers: {
        authorization: `Bearer ${server.adminToken}`,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await response.text();
    return { status: response.status, body: text === '' ? null : (JSON.parse(text) as unknown) };
  };
  return {
    url: server.url,
    server,
    dataDir: dir,
    admin,
    async trader(funds = { EUR: '100000', BTC: '10', ETH: '100' }, scopes = ['read', 'trade']) {
      const user = (await admin('POST', '/users', {})).body as { id: number };
      const key = (await admin('POST', `/users/${user.id}/api-keys`, { scopes })).body as {
        api_key: string;
        api_secret: string;
      };
      for (const [asset, amount] of Object.entries(funds)) {
        const r = await admin('POST', `/users/${user.id}/deposits`, { asset, amount });
        if (r.status !== 201) throw new Error(`deposit failed: ${JSON.stringify(r.body)}`);
      }
      return { userId: user.id, apiKey: key.api_key, apiSecret: key.api_secret };
    },
    async close() {
      await server.close();
      if (dataDir === undefined) {
        rmSync(dir, { recursive: true, force: true });
        await database?.drop();
      }
    },
  };
}
