/**
 * What the multi-process cluster tests share: the environment of one cluster (a fresh database,
 * a stream and subjects of its own, the secrets every process must share) and traders made
 * through the engine's admin API.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { OpenSpotClient } from '../../src/client/client.js';
import { deleteStreamAfter, TEST_NATS_URL, uniqueName } from './nats.js';
import { freshDatabase } from './postgres.js';

interface Cleanup {
  after(fn: () => Promise<void> | void): void;
}

/** The environment every process of one cluster shares: its database, its stream and subjects, its secrets. */
export async function clusterEnv(t: Cleanup): Promise<Record<string, string>> {
  const name = uniqueName('E2E_BATCHES');
  deleteStreamAfter(t, name);
  const dataDir = mkdtempSync(join(tmpdir(), 'openspot-cluster-'));
  t.after(() => rmSync(dataDir, { recursive: true, force: true }));
  return {
    DATABASE_URL: await freshDatabase(t),
    NATS_URL: TEST_NATS_URL!,
    OPENSPOT_STREAM: name,
    OPENSPOT_STREAM_SUBJECT: `e2e.${name}`,
    OPENSPOT_SUBJECT_PREFIX: `e2e.${name}.engine`,
    DATA_DIR: dataDir,
    HOST: '127.0.0.1',
    ADMIN_TOKEN: randomBytes(24).toString('hex'),
    // Shared by every process: API secrets sealed by the engine are opened by the gateways,
    // a channel token from one gateway's /broadcasting/auth is checked by another's WebSocket server.
    SECRETS_KEY: randomBytes(32).toString('base64'),
    WS_APP_SECRET: randomBytes(24).toString('hex'),
    SIMULATOR: 'off',
    DEMO: 'off',
    RATE_LIMIT_IP_PER_SECOND: '0',
    RATE_LIMIT_KEY_PER_SECOND: '0',
  };
}

export interface Trader {
  readonly userId: number;
  readonly apiKey: string;
  readonly apiSecret: string;
}

/** A user with an API key and one deposit, made through the engine's admin API. */
export async function trader(
  engineUrl: string,
  adminToken: string,
  asset: string,
  amount: string,
): Promise<Trader> {
  const admin = async (path: string, body: unknown): Promise<Record<string, unknown>> => {
    const response = await fetch(`${engineUrl}/admin/v1${path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${adminToken}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    const text = await response.text();
    assert.equal(response.status, 201, `${path}: ${text}`);
    return JSON.parse(text) as Record<string, unknown>;
  };
  const user = (await admin('/users', {})) as { id: number };
  const key = (await admin(`/users/${user.id}/api-keys`, { scopes: ['read', 'trade'] })) as {
    api_key: string;
    api_secret: string;
  };
  await admin(`/users/${user.id}/deposits`, { asset, amount });
  return { userId: user.id, apiKey: key.api_key, apiSecret: key.api_secret };
}

export const on = (gateway: { url: string }, who: Trader) =>
  new OpenSpotClient({
    baseUrl: `${gateway.url}/v1`,
    apiKey: who.apiKey,
    apiSecret: who.apiSecret,
    timeoutMs: 10_000,
    orderRetries: 0,
  });
