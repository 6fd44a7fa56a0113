/**
 * The ccxt bot against `openspot test-venue` (the CLI, as a bot in any language would start it):
 * another account offers below the bot's limit, the bot buys through ccxt, and the venue's admin
 * API confirms the fill and the ledger. Run: node --import tsx --test examples/ccxt-bot/ccxt-bot.test.ts
 */
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { after, before, test } from 'node:test';
import { OpenSpot } from '../../src/ccxt/index.js'; // `openspot/ccxt`
import { buyTheDip } from './ccxt-bot.js';

interface VenueInfo {
  readonly base_url: string;
  readonly ws: { readonly key: string };
  readonly admin: { readonly url: string; readonly token: string };
  readonly accounts: ReadonlyArray<{
    readonly user_id: number;
    readonly api_key: string;
    readonly api_secret: string;
  }>;
}

// `npx openspot test-venue`, from the sources of this repository.
const CLI = join(import.meta.dirname, '../../src/cli/main.ts');
let child: ChildProcess;
let venue: VenueInfo;
const exchanges: OpenSpot[] = [];

const connect = (account: VenueInfo['accounts'][number]) => {
  const exchange = new OpenSpot({
    apiKey: account.api_key,
    secret: account.api_secret,
    urls: { api: { rest: venue.base_url } },
    options: { wsAppKey: venue.ws.key },
  });
  exchanges.push(exchange);
  return exchange;
};

const admin = async (path: string) =>
  (
    await fetch(`${venue.admin.url}${path}`, { headers: { authorization: `Bearer ${venue.admin.token}` } })
  ).json();

before(async () => {
  child = spawn(
    process.execPath,
    [
      '--import',
      import.meta.resolve('tsx'),
      CLI,
      '--json',
      'test-venue',
      '--accounts',
      '2',
      '--balances',
      'EUR=100000,BTC=1',
    ],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  venue = await new Promise<VenueInfo>((resolve, reject) => {
    createInterface({ input: child.stdout! }).once('line', (line) => resolve(JSON.parse(line) as VenueInfo));
    child.once('exit', (code) => reject(new Error(`test-venue exited with ${code}`)));
  });
});

after(async () => {
  for (const exchange of exchanges) await exchange.close();
  child.kill('SIGTERM');
});

test('waits while the best ask is above its limit', async () => {
  const [, seller] = venue.accounts;
  await connect(seller!).createOrder('BTC/EUR', 'limit', 'sell', 0.1, 51000);
  const bot = connect(venue.accounts[0]!);
  assert.equal(
    await buyTheDip(bot, { symbol: 'BTC/EUR', limitPrice: 50000, amount: 0.01, timeoutMs: 1500 }),
    undefined,
  );
  assert.deepEqual(await bot.fetchOpenOrders('BTC/EUR'), []);
});

test('buys once an offer comes down to the limit, and sees the fill', async () => {
  const [buyer, seller] = venue.accounts;
  const bot = connect(buyer!);
  const run = buyTheDip(bot, { symbol: 'BTC/EUR', limitPrice: 50000, amount: 0.01 });
  // Another trader offers below the bot's limit while it waits.
  setTimeout(() => void connect(seller!).createOrder('BTC/EUR', 'limit', 'sell', 0.01, 49500), 300);
  const order = await run;
  assert.equal(order?.status, 'closed');
  assert.equal(order?.filled, 0.01);
  assert.equal(order?.average, 49500);
  const balances = (await admin(`/users/${buyer!.user_id}/balances`)) as {
    data: Array<{ asset: string; total: string }>;
  };
  assert.equal(balances.data.find((b) => b.asset === 'BTC')?.total, '1.0100000000');
  assert.equal(((await admin('/ledger/check')) as { ok: boolean }).ok, true);
});
