/** The test venue a bot's own test suite starts: `startTestVenue` from `openspot/testing`. */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import pusherModule from 'pusher-js';
import { OpenSpotClient } from '../client/client.js';
import { connectRealtime } from '../client/realtime.js';
import { startTestVenue, type TestVenue } from './index.js';

type PusherClass = typeof pusherModule.default;
const Pusher: PusherClass =
  (pusherModule as unknown as { default?: PusherClass }).default ?? (pusherModule as unknown as PusherClass);

const TSX = import.meta.resolve('tsx');
const INDEX = join(import.meta.dirname, 'index.ts');

const wallet = async (client: OpenSpotClient) =>
  Object.fromEntries((await client.spotWallet()).data.map((w) => [w.asset_id, w.balance.balance_total]));

async function eventually<T>(what: string, probe: () => Promise<T | undefined>, ms = 10_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) assert.fail(`${what} did not happen within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe('startTestVenue: defaults', () => {
  let venue: TestVenue;
  let unusedDir: string;

  before(async () => {
    unusedDir = join(tmpdir(), `openspot-venue-never-${process.pid}-${Date.now()}`);
    venue = await startTestVenue({ env: { DATA_DIR: unusedDir } });
  });
  after(async () => {
    await venue.close();
  });

  test('listens on a free loopback port, with the default catalogue and one funded account', async () => {
    assert.match(venue.url, /^http:\/\/127\.0\.0\.1:\d+$/);
    assert.equal(venue.baseUrl, `${venue.url}/v1`);
    const markets = await new OpenSpotClient({ baseUrl: venue.baseUrl }).markets();
    assert.deepEqual(Object.keys(markets.data).sort(), ['BTCEUR', 'BTCUSD', 'ETHBTC', 'ETHEUR', 'USDTEUR']);
    assert.equal(venue.accounts.length, 1);
    const funds = await wallet(venue.client());
    assert.equal(funds.EUR, '100000.0000');
    assert.equal(funds.BTC, '10.0000000000');
  });

  test('in memory: nothing is written to DATA_DIR', () => {
    assert.equal(venue.dataDir, undefined);
    assert.equal(existsSync(unusedDir), false);
  });

  test('the WebSocket settings work as given with pusher-js', async () => {
    const pusher = new Pusher(venue.ws.key, { ...venue.ws });
    try {
      const snapshot = await new Promise<unknown>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error('no snapshot within 5 s')), 5000);
        pusher.subscribe('order-book.BTCEUR').bind('snapshot', (data: unknown) => {
          clearTimeout(timer);
          resolve(data);
        });
      });
      assert.equal((snapshot as { type: string }).type, 'snapshot');
      assert.equal(venue.ws.authEndpoint, `${venue.baseUrl}/broadcasting/auth`);
    } finally {
      pusher.disconnect();
    }
  });

  test('admin: deposit, setBalance up and down, and the ledger check holds', async () => {
    const [account] = venue.accounts;
    assert.ok(account);
    const deposited = await venue.admin.deposit(account, 'EUR', '2.5');
    assert.equal(deposited.total, '100002.5000');
    assert.equal((await venue.admin.setBalance(account, 'BTC', '0.25')).total, '0.2500000000');
    assert.equal((await venue.admin.setBalance(account, 'USD', '123.45')).total, '123.4500');
    assert.equal((await venue.admin.setBalance(account, 'USD', '123.45')).total, '123.4500');
    assert.equal((await venue.admin.setBalance(account.userId, 'ETH', '0')).total, '0.0000000000');
    const funds = await wallet(venue.client(account));
    assert.equal(funds.BTC, '0.2500000000');
    assert.equal(funds.ETH, '0.0000000000');
    const check = await venue.admin.ledgerCheck();
    assert.equal(check.ok, true);
    // Conservation: the changes went through the ledger as deposits and withdrawals.
    const btc = check.assets.find((a) => a.asset === 'BTC');
    assert.equal(btc?.net_deposits, '0.2500000000');
  });

  test('admin: bad input is refused with the admin API message', async () => {
    const [account] = venue.accounts;
    assert.ok(account);
    await assert.rejects(venue.admin.deposit(account, 'XYZ', '1'), /asset/);
    await assert.rejects(venue.admin.setBalance(account, 'EUR', '1.123456'), /decimals/);
    await assert.rejects(venue.admin.setBalance(account, 'EUR', '-1'), /decimal/);
  });

  test('a resting order as another user fills a bot order, seen over REST and the private channel', async () => {
    const [bot] = venue.accounts;
    assert.ok(bot);
    const client = venue.client(bot);
    const resting = await venue.admin.placeRestingOrder({
      pair: 'BTC/EUR',
      direction: 'sell',
      price: '50000.0',
      volume: '0.01',
    });
    assert.ok(resting.id > 0);
    assert.notEqual(resting.maker.userId, bot.userId);
    const book = await new OpenSpotClient({ baseUrl: venue.baseUrl }).orderbook({ tickerId: 'BTC/EUR' });
    assert.deepEqual(book[0]?.asks[0]?.slice(0, 2), ['50000.0', '0.01000000']);

    const url = new URL(venue.url);
    const realtime = connectRealtime({
      wsHost: url.hostname,
      wsPort: Number(url.port),
      appKey: venue.ws.key,
      client,
    });
    try {
      const fills: unknown[] = [];
      const executions = realtime.executions(bot.userId, (message) => {
        if (message.type === 'update') fills.push(message.data);
      });
      await executions.ready;
      const placed = await client.createOrder({
        pair: 'BTC/EUR',
        direction: 'buy',
        type: 'limit',
        price: '50000.0',
        volume: '0.01',
      });
      assert.ok(placed.id !== undefined);
      await eventually('an execution on the private channel', async () =>
        fills.length > 0 ? true : undefined,
      );
      const trades = await client.trades();
      assert.equal(trades.data.length, 1);
      assert.equal(trades.data[0]?.price.amount, '50000.0');
    } finally {
      realtime.disconnect();
    }
    // The maker's order is no longer on the book and the ledger still balances.
    assert.equal((await venue.admin.ledgerCheck()).ok, true);
  });

  test('admin: setBalance below what open orders reserve is refused and changes nothing', async () => {
    const trader = await venue.admin.createAccount({ balances: { EUR: '1000' } });
    await venue.client(trader).createOrder({
      pair: 'BTC/EUR',
      direction: 'buy',
      type: 'limit',
      price: '10000.0',
      volume: '0.05',
    });
    const [eur] = (await venue.admin.balances(trader)).filter((b) => b.asset === 'EUR');
    assert.ok(eur !== undefined && eur.reserved !== '0.0000');
    await assert.rejects(venue.admin.setBalance(trader, 'EUR', '1'), /reserved by open orders/);
    assert.deepEqual(
      (await venue.admin.balances(trader)).find((b) => b.asset === 'EUR'),
      eur,
    );
    assert.equal((await venue.admin.setBalance(trader, 'EUR', eur.reserved)).available, '0.0000');
  });

  test('a resting buy order is funded for the maker as well', async () => {
    const resting = await venue.admin.placeRestingOrder({
      pair: 'ETHEUR',
      direction: 'buy',
      price: '2999.99',
      volume: '1.5',
    });
    const open = await venue.client(resting.maker).openOrders();
    assert.ok(open.data.some((o) => o.id === resting.id));
    assert.equal((await venue.admin.ledgerCheck()).ok, true);
  });
});

describe('startTestVenue: options', () => {
  test('given assets, markets and accounts', async () => {
    const venue = await startTestVenue({
      catalogue: {
        assets: [
          { code: 'EUR', name: 'Euro', type: 'fiat', decimals: 2 },
          { code: 'SOL', name: 'Solana', type: 'crypto', decimals: 9 },
        ],
        markets: [{ base: 'SOL', quote: 'EUR', pair_decimals: 2, lot_decimals: 4, ordermin: '0.1' }],
      },
      accounts: [{ name: 'alice', balances: { EUR: '1000' } }, { balances: { SOL: '3.5' } }],
    });
    try {
      const markets = await new OpenSpotClient({ baseUrl: venue.baseUrl }).markets();
      assert.deepEqual(Object.keys(markets.data), ['SOLEUR']);
      assert.deepEqual(
        venue.accounts.map((a) => a.name),
        ['alice', 'trader-2'],
      );
      const alice = await wallet(venue.client(0));
      assert.equal(alice.EUR, '1000.00');
      assert.equal(alice.SOL, '0.000000000');
      const second = await wallet(venue.client(1));
      assert.equal(second.SOL, '3.500000000');
    } finally {
      await venue.close();
    }
  });

  test('accounts: a number gives that many funded accounts', async () => {
    const venue = await startTestVenue({ accounts: 3 });
    try {
      assert.equal(new Set(venue.accounts.map((a) => a.userId)).size, 3);
      assert.equal((await wallet(venue.client(2))).EUR, '100000.0000');
    } finally {
      await venue.close();
    }
  });

  test('an unknown asset in an account is refused at start, and nothing is left running', async () => {
    await assert.rejects(startTestVenue({ accounts: [{ balances: { NOPE: '1' } }] }), /asset/);
  });

  test('an account name that cannot be an e-mail local part is refused with a message naming it', async () => {
    await assert.rejects(startTestVenue({ accounts: [{ name: 'my bot' }] }), /account name "my bot"/);
  });

  test('dataDir: true uses a temporary directory that close() removes', async () => {
    const venue = await startTestVenue({ dataDir: true });
    const dir = venue.dataDir;
    assert.ok(dir !== undefined && existsSync(join(dir, 'openspot.db')));
    await venue.close();
    assert.equal(existsSync(dir), false);
    await venue.close(); // idempotent
  });

  test('dataDir: a given directory is kept, and a second venue on it finds the same state', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'openspot-venue-kept-'));
    try {
      const first = await startTestVenue({ dataDir: dir, accounts: [{ balances: { BTC: '1' } }] });
      const [account] = first.accounts;
      await first.close();
      assert.ok(existsSync(join(dir, 'openspot.db')));
      const second = await startTestVenue({ dataDir: dir, accounts: 0 });
      try {
        assert.equal(second.accounts.length, 0);
        assert.ok(account);
        assert.equal((await wallet(second.client(account))).BTC, '1.0000000000');
      } finally {
        await second.close();
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test('the simulator trades when asked, with a seed', async () => {
    const venue = await startTestVenue({ simulator: { ratePerSecond: 200, seed: 7 } });
    try {
      const client = new OpenSpotClient({ baseUrl: venue.baseUrl });
      await eventually(
        'a two-sided BTC/EUR book',
        async () => {
          const [book] = await client.orderbook({ tickerId: 'BTC/EUR' });
          return book !== undefined && book.bids.length > 0 && book.asks.length > 0 ? true : undefined;
        },
        15_000,
      );
    } finally {
      await venue.close();
    }
  });

  test('starts in well under a second (median of 5 starts)', async (t) => {
    const times: number[] = [];
    for (let i = 0; i < 5; i += 1) {
      const started = performance.now();
      const venue = await startTestVenue();
      times.push(performance.now() - started);
      await venue.close();
    }
    times.sort((a, b) => a - b);
    const median = times[2]!;
    t.diagnostic(`median start ${median.toFixed(0)} ms (${times.map((ms) => ms.toFixed(0)).join(', ')})`);
    assert.ok(median < 1000, `median start took ${median} ms`);
  });
});

test('the package exports it as openspot/testing, built from src/testing/index.ts', () => {
  const pkg = JSON.parse(readFileSync(join(import.meta.dirname, '../../package.json'), 'utf8')) as {
    exports: Record<string, { types: string; default: string }>;
  };
  assert.deepEqual(pkg.exports['./testing'], {
    types: './dist/src/testing/index.d.ts',
    default: './dist/src/testing/index.js',
  });
  assert.ok(existsSync(INDEX));
});

describe('startTestVenue: close() leaves nothing behind', () => {
  test('a process that starts a venue (simulator on, temp dir), uses it and closes it exits by itself', async () => {
    const script = `
      import { startTestVenue } from ${JSON.stringify(INDEX)};
      const venue = await startTestVenue({ dataDir: true, simulator: { ratePerSecond: 100 } });
      await venue.client().spotWallet();
      await venue.admin.placeRestingOrder({ pair: 'BTC/EUR', direction: 'buy', price: '1000.0', volume: '0.01' });
      await new Promise((r) => setTimeout(r, 300));
      await venue.close();
      process.stdout.write(JSON.stringify({ dir: venue.dataDir }) + '\\n');
    `;
    const cwd = mkdtempSync(join(tmpdir(), 'openspot-venue-child-'));
    try {
      const child = spawn(process.execPath, ['--import', TSX, '--input-type=module', '-e', script], {
        cwd,
        stdio: ['ignore', 'pipe', 'inherit'],
      });
      let out = '';
      let closedAt: number | undefined;
      child.stdout.on('data', (chunk: Buffer) => {
        out += chunk.toString();
        if (out.includes('\n')) closedAt ??= Date.now();
      });
      const code = await new Promise<number | null>((resolve, reject) => {
        const timer = setTimeout(() => {
          child.kill('SIGKILL');
          reject(new Error('the process did not exit within 20 s: a handle was left open'));
        }, 20_000);
        child.on('exit', (exitCode) => {
          clearTimeout(timer);
          resolve(exitCode);
        });
      });
      assert.ok(closedAt !== undefined, 'the script did not reach close()');
      // Nothing left to wait for: the event loop empties right after close() resolves.
      assert.ok(Date.now() - closedAt < 2000, `exited ${Date.now() - closedAt} ms after close()`);
      assert.equal(code, 0);
      const { dir } = JSON.parse(out.trim()) as { dir: string };
      assert.ok(dir.length > 0);
      assert.equal(existsSync(dir), false);
    } finally {
      rmSync(cwd, { recursive: true, force: true });
    }
  });
});
