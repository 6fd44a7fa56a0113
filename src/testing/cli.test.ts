/** `openspot test-venue --json`: the test venue for bots in other languages. */
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { test } from 'node:test';
import { OpenSpotClient } from '../client/client.js';

const TSX = import.meta.resolve('tsx');
const CLI = join(import.meta.dirname, '../cli/main.ts');

interface VenueInfo {
  url: string;
  base_url: string;
  ws: { key: string; wsHost: string; wsPort: number; authEndpoint: string };
  admin: { url: string; token: string };
  accounts: Array<{ name: string; user_id: number; api_key: string; api_secret: string; url: string }>;
  data_dir: string | null;
}

function start(args: string[]): { child: ChildProcess; info: Promise<VenueInfo> } {
  const child = spawn(process.execPath, ['--import', TSX, CLI, ...args], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const info = new Promise<VenueInfo>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('no venue information within 20 s')), 20_000);
    createInterface({ input: child.stdout! }).once('line', (line) => {
      clearTimeout(timer);
      resolve(JSON.parse(line) as VenueInfo);
    });
    child.once('exit', (code) => reject(new Error(`the venue exited with ${code}: ${stderr}`)));
  });
  return { child, info };
}

const exited = (child: ChildProcess, ms: number) =>
  new Promise<number | null>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`still running ${ms} ms after SIGTERM`)), ms);
    child.once('exit', (code) => {
      clearTimeout(timer);
      resolve(code);
    });
  });

test('prints the venue as one JSON line, serves signed requests, and stops cleanly on SIGTERM', async () => {
  const { child, info } = start([
    '--json',
    'test-venue',
    '--accounts',
    '2',
    '--balances',
    'EUR=5000,BTC=0.5',
  ]);
  try {
    const venue = await info;
    assert.match(venue.url, /^http:\/\/127\.0\.0\.1:\d+$/);
    assert.equal(venue.base_url, `${venue.url}/v1`);
    assert.equal(venue.ws.wsPort, Number(new URL(venue.url).port));
    assert.equal(venue.ws.authEndpoint, `${venue.base_url}/broadcasting/auth`);
    assert.equal(venue.data_dir, null);
    assert.equal(venue.accounts.length, 2);
    const [account] = venue.accounts;
    assert.ok(account);
    const client = new OpenSpotClient({
      baseUrl: account.url,
      apiKey: account.api_key,
      apiSecret: account.api_secret,
    });
    const wallet = await client.spotWallet();
    const eur = wallet.data.find((w) => w.asset_id === 'EUR');
    assert.equal(eur?.balance.balance_total, '5000.0000');
    const admin = await fetch(`${venue.admin.url}/ledger/check`, {
      headers: { authorization: `Bearer ${venue.admin.token}` },
    });
    assert.equal(admin.status, 200);
    const stopping = exited(child, 5000);
    child.kill('SIGTERM');
    assert.equal(await stopping, 0);
  } finally {
    if (child.exitCode === null) child.kill('SIGKILL');
  }
});

test('--catalogue and --dir: the given markets, the state kept in the directory', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'openspot-test-venue-cli-'));
  try {
    const catalogue = join(dir, 'catalogue.json');
    writeFileSync(
      catalogue,
      JSON.stringify({
        assets: [
          { code: 'EUR', name: 'Euro', type: 'fiat', decimals: 2 },
          { code: 'SOL', name: 'Solana', type: 'crypto', decimals: 9 },
        ],
        markets: [{ base: 'SOL', quote: 'EUR', pair_decimals: 2, lot_decimals: 4, ordermin: '0.1' }],
      }),
    );
    const state = join(dir, 'state');
    const { child, info } = start(['--json', 'test-venue', '--catalogue', catalogue, '--dir', state]);
    try {
      const venue = await info;
      assert.equal(venue.data_dir, state);
      const markets = await new OpenSpotClient({ baseUrl: venue.base_url }).markets();
      assert.deepEqual(Object.keys(markets.data), ['SOLEUR']);
      const stopping = exited(child, 5000);
      child.kill('SIGINT');
      assert.equal(await stopping, 0);
      assert.ok(existsSync(join(state, 'openspot.db')));
    } finally {
      if (child.exitCode === null) child.kill('SIGKILL');
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('refuses a malformed --balances with a message and a non-zero exit', async () => {
  const { child, info } = start(['--json', 'test-venue', '--balances', 'EUR']);
  await assert.rejects(info, /--balances/);
  assert.notEqual(child.exitCode, 0);
});
