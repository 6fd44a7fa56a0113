/**
 * Trader commands of the `openspot` CLI, run as a child process against the real server: the
 * `--json` output of each command, tables by default, errors, profiles, and `book --watch`.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { startTestServer, type TestServer, type Trader } from '../../test/support/server-fixture.js';
import { OpenSpotClient } from '../client/client.js';

const MAIN = join(import.meta.dirname, 'main.ts');

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs the CLI without blocking the event loop (the server under test lives in this process). */
function cli(args: string[], env: Record<string, string>, timeoutMs = 20_000): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', MAIN, ...args], {
      env: { PATH: process.env.PATH ?? '', ...env },
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => {
      stdout += c.toString('utf8');
    });
    child.stderr.on('data', (c: Buffer) => {
      stderr += c.toString('utf8');
    });
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`openspot ${args.join(' ')} timed out; stderr: ${stderr}`));
    }, timeoutMs);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

describe('trader commands', { timeout: 300_000 }, () => {
  let t: TestServer;
  let alice: Trader;
  let bob: Trader;
  let home: string;
  let env: Record<string, string>;
  before(async () => {
    t = await startTestServer();
    alice = await t.trader();
    bob = await t.trader();
    home = mkdtempSync(join(tmpdir(), 'openspot-cli-home-'));
    env = {
      HOME: home,
      OPENSPOT_URL: t.url,
      OPENSPOT_API_KEY: alice.apiKey,
      OPENSPOT_API_SECRET: alice.apiSecret,
    };
  });
  after(async () => {
    await t.close();
    rmSync(home, { recursive: true, force: true });
  });

  const json = async (args: string[], extra: Record<string, string> = {}): Promise<unknown> => {
    const r = await cli(['--json', ...args], { ...env, ...extra });
    assert.equal(r.code, 0, `openspot ${args.join(' ')}: ${r.stderr}`);
    return JSON.parse(r.stdout) as unknown;
  };

  test('markets, ticker, book (public)', async () => {
    const markets = (await json(['markets'])) as { data: Record<string, { wsname: string }> };
    assert.equal(markets.data.BTCEUR?.wsname, 'BTC/EUR');
    const one = (await json(['markets', '--pair', 'ETH/EUR'])) as { data: Record<string, unknown> };
    assert.deepEqual(Object.keys(one.data), ['ETHEUR']);

    const tickers = (await json(['ticker'])) as Array<{ ticker_id: string }>;
    assert.ok(tickers.length >= 5);
    // The joined spelling is looked up and sent in slash form.
    assert.deepEqual(
      ((await json(['ticker', 'BTCEUR'])) as Array<{ ticker_id: string }>).map((x) => x.ticker_id),
      ['BTC/EUR'],
    );

    const book = (await json(['book', 'BTC/EUR', '--depth', '3'])) as { ticker_id: string; bids: unknown[] };
    assert.equal(book.ticker_id, 'BTC/EUR');
    assert.deepEqual(book.bids, []);

    const table = await cli(['markets'], env);
    assert.equal(table.code, 0);
    assert.match(table.stdout, /^PAIR\s+WSNAME\s+BASE/m);
    assert.match(table.stdout, /^BTCEUR\s+BTC\/EUR\s+BTC\s+EUR\s+1\s+8\s+0\.00005000$/m);
  });

  test('order, orders, cancel, trades, balances', async () => {
    const placed = (await json(['order', 'sell', 'BTC/EUR', '0.01', '--price', '30000'])) as {
      id: number;
      message: string;
      order: { id: number; status: string; order_type: string };
    };
    assert.equal(typeof placed.id, 'number');
    assert.equal(placed.order.id, placed.id);
    assert.equal(placed.order.status, 'open');
    assert.equal(placed.order.order_type, 'limit');

    const open = (await json(['orders', '--pair', 'BTC/EUR'])) as { data: Array<{ id: number }> };
    assert.deepEqual(
      open.data.map((o) => o.id),
      [placed.id],
    );

    const bobEnv = { OPENSPOT_API_KEY: bob.apiKey, OPENSPOT_API_SECRET: bob.apiSecret };
    const market = (await json(['order', 'buy', 'BTCEUR', '0.004'], bobEnv)) as {
      order: { status: string; order_type: string };
    };
    assert.equal(market.order.order_type, 'market');
    assert.equal(market.order.status, 'closed');

    const trades = (await json(['trades', '--pair', 'BTC/EUR'])) as {
      data: Array<{ type: string; price: { amount: string } }>;
    };
    assert.equal(trades.data.length, 1);
    assert.equal(trades.data[0]?.type, 'sell');
    assert.equal(trades.data[0]?.price.amount, '30000.0');

    const canceled = (await json(['cancel', String(placed.id)])) as { success: boolean; code: number };
    assert.deepEqual(canceled, { success: true, message: 'Order canceled successfully.', code: 200 });
    const closed = (await json(['orders', '--closed', '--page-size', '10'])) as {
      data: Array<{ id: number; status: string; trades: unknown[] }>;
      meta: { total: number };
    };
    assert.equal(closed.data[0]?.id, placed.id);
    assert.equal(closed.data[0]?.status, 'canceled');
    assert.equal(closed.data[0]?.trades.length, 1);
    assert.equal(closed.meta.total, 1);

    const balances = (await json(['balances'])) as {
      data: Array<{ asset_id: string; balance: { balance_total: string } }>;
    };
    assert.equal(balances.data.find((b) => b.asset_id === 'BTC')?.balance.balance_total, '9.9960000000');

    const table = await cli(['balances'], env);
    assert.match(table.stdout, /^ASSET\s+TOTAL\s+IN_ORDERS\s+AVAILABLE\s+VALUE$/m);
    assert.match(table.stdout, /^BTC\s+9\.9960000000\s+0\.0000000000\s+9\.9960000000\s/m);
  });

  test('errors: exit code 1 and a readable message', async () => {
    const missing = await cli(['order', 'buy', 'BTC/EUR', '0.01', '--type', 'limit'], env);
    assert.equal(missing.code, 1);
    assert.match(missing.stderr, /a limit order needs --price/);

    const refused = await cli(['order', 'buy', 'BTC/EUR', '0.0000001', '--price', '100'], env);
    assert.equal(refused.code, 1);
    assert.match(refused.stderr, /^openspot: 422: .*\n\s+volume: /m);

    const unknown = await cli(['cancel', '999999'], env);
    assert.equal(unknown.code, 1);
    assert.match(unknown.stderr, /404: Order not found/);

    const noKey = await cli(['balances'], { HOME: home, OPENSPOT_URL: t.url });
    assert.equal(noKey.code, 1);
    assert.match(noKey.stderr, /no API credentials/);
  });

  test('--profile supplies url and credentials', async () => {
    const profile = join(home, 'bob.json');
    writeFileSync(
      profile,
      JSON.stringify({ url: `${t.url}/v1`, api_key: bob.apiKey, api_secret: bob.apiSecret }),
    );
    const r = (await json(['--profile', profile, 'trades'], { OPENSPOT_URL: 'http://127.0.0.1:9/' })) as {
      data: Array<{ type: string }>;
    };
    assert.equal(r.data[0]?.type, 'buy');
  });

  test('a key created with nonces: order and cancel work with nonce_required in the profile', async () => {
    const created = await t.admin('POST', `/users/${alice.userId}/api-keys`, { nonce_required: true });
    const key = created.body as { api_key: string; api_secret: string };
    const profile = join(home, 'alice-nonce.json');
    const entry = { url: `${t.url}/v1`, api_key: key.api_key, api_secret: key.api_secret };
    writeFileSync(profile, JSON.stringify({ ...entry, nonce_required: true }));
    const placed = (await json([
      '--profile',
      profile,
      'order',
      'sell',
      'BTC/EUR',
      '0.01',
      '--price',
      '40000',
    ])) as {
      id: number;
    };
    const canceled = await json(['--profile', profile, 'cancel', String(placed.id)]);
    assert.deepEqual(canceled, { success: true, message: 'Order canceled successfully.', code: 200 });
    writeFileSync(profile, JSON.stringify(entry));
    const again = (await json(
      ['--profile', profile, 'order', 'sell', 'BTC/EUR', '0.01', '--price', '40000'],
      {
        OPENSPOT_NONCE: 'true',
      },
    )) as { id: number };
    const refused = await cli(['--profile', profile, 'cancel', String(again.id)], env);
    assert.equal(refused.code, 1, 'without nonces the key refuses the body-less DELETE');
    assert.match(refused.stderr, /Invalid Nonce/);
  });

  test('order controls against the server: post-only, GTD, client ids, IOC, FOK, amend, cancel-all, dead-man', async () => {
    const carol = await t.trader();
    const dave = await t.trader();
    const as = (who: Trader) => ({ OPENSPOT_API_KEY: who.apiKey, OPENSPOT_API_SECRET: who.apiSecret });
    type Placed = {
      id: number;
      order: {
        id: number;
        status: string;
        reason: string | null;
        expire_time: string;
        client_order_id: string | null;
        price: { amount: string };
        volume: { amount: string };
        volume_executed: { amount: string };
      };
    };
    const place = async (who: Trader, args: string[]) => (await json(['order', ...args], as(who))) as Placed;

    const before = Math.floor(Date.now() / 1000);
    const bid = await place(carol, [
      'buy',
      'BTC/EUR',
      '0.01',
      '--price',
      '100',
      '--post-only',
      '--gtd',
      '1h',
      '--client-id',
      'c-bid-1',
    ]);
    assert.equal(bid.order.status, 'open');
    assert.equal(bid.order.client_order_id, 'c-bid-1');
    const expires = Number(bid.order.expire_time.split('.')[0]);
    assert.ok(expires >= before + 3600 && expires <= before + 3700, bid.order.expire_time);

    const found = (await json(['orders', '--client-id', 'c-bid-1'], as(carol))) as { data: { id: number } };
    assert.equal(found.data.id, bid.id);

    const amended = (await json(
      ['amend', String(bid.id), '--price', '101', '--volume', '0.02'],
      as(carol),
    )) as Placed;
    assert.equal(amended.order.price.amount, '101.0');
    assert.equal(amended.order.volume.amount, '0.02000000');

    const client = (who: Trader) =>
      new OpenSpotClient({ baseUrl: `${t.url}/v1`, apiKey: who.apiKey, apiSecret: who.apiSecret });
    // On ETH/BTC, where no other test trades: the taker meets dave's ask alone.
    await client(dave).createOrder({
      pair: 'ETH/BTC',
      direction: 'sell',
      type: 'limit',
      volume: '0.5',
      price: '0.05000',
    });
    const maker = await place(carol, ['buy', 'ETH/BTC', '0.01', '--price', '0.05', '--post-only']);
    assert.equal(maker.order.status, 'canceled', 'a post-only order that would take is canceled');
    assert.equal(maker.order.volume_executed.amount, '0.00000000');
    assert.ok(maker.order.reason !== null && maker.order.reason !== '');

    const fok = await place(carol, ['buy', 'ETH/BTC', '1', '--price', '0.05', '--fok']);
    assert.equal(fok.order.status, 'canceled', 'FOK: half the volume is there, so nothing trades');
    assert.equal(fok.order.volume_executed.amount, '0.00000000');

    const ioc = await place(carol, ['buy', 'ETH/BTC', '1', '--price', '0.05', '--ioc']);
    assert.equal(ioc.order.volume_executed.amount, '0.50000000', 'IOC takes what is there');
    assert.equal(ioc.order.status, 'canceled', 'and cancels the rest');
    const open = (await json(['orders'], as(carol))) as { data: Array<{ id: number }> };
    assert.deepEqual(
      open.data.map((o) => o.id),
      [bid.id],
      'nothing of the IOC rests',
    );

    const byClientId = await cli(['cancel', '--client-id', 'c-bid-1'], { ...env, ...as(carol) });
    assert.equal(byClientId.code, 0, byClientId.stderr);

    for (const [pair, price] of [
      ['BTC/EUR', '100'],
      ['BTC/EUR', '101'],
      ['ETH/EUR', '10.00'],
    ] as const)
      await client(carol).createOrder({ pair, direction: 'buy', type: 'limit', volume: '0.01', price });
    const some = await cli(['cancel', '--all', '--pair', 'BTCEUR'], { ...env, ...as(carol) });
    assert.equal(some.stdout, '2 orders canceled.\n', some.stderr);
    const rest = (await json(['cancel', '--all'], as(carol))) as { data: { canceled: number } };
    assert.equal(rest.data.canceled, 1);

    const armed = (await json(['dead-man', '60'], as(carol))) as { data: { trigger_time: string } };
    const trigger = Number(armed.data.trigger_time.split('.')[0]);
    assert.ok(
      trigger >= before + 60 && trigger <= Math.floor(Date.now() / 1000) + 61,
      armed.data.trigger_time,
    );
    const words = await cli(['dead-man', '0'], { ...env, ...as(carol) });
    assert.equal(words.stdout, "The dead man's switch is off.\n", words.stderr);
  });

  test('conditional orders: --stop [--limit], --take-profit, --trailing, amend --trigger; a trade fires the stop', async () => {
    // On BTC/USD, where no other test trades: the last price is what this test makes it.
    const erin = await t.trader({ USD: '100000', BTC: '1' });
    const frank = await t.trader({ USD: '100000', BTC: '1' });
    const gus = await t.trader({ USD: '100000', BTC: '1' });
    const as = (who: Trader) => ({ OPENSPOT_API_KEY: who.apiKey, OPENSPOT_API_SECRET: who.apiSecret });
    const api = (who: Trader) =>
      new OpenSpotClient({ baseUrl: `${t.url}/v1`, apiKey: who.apiKey, apiSecret: who.apiSecret });
    type Placed = {
      id: number;
      order: {
        status: string;
        order_type: string;
        price: { amount: string };
        limit_price: { amount: string } | null;
        trigger_conditions: string;
      };
    };
    const place = async (args: string[]) => (await json(['order', ...args], as(erin))) as Placed;
    const pair = 'BTC/USD';
    // One trade at 60000.0: frank offers, gus takes.
    await api(frank).createOrder({ pair, direction: 'sell', type: 'limit', volume: '0.001', price: '60000' });
    await api(gus).createOrder({ pair, direction: 'buy', type: 'market', volume: '0.001' });

    const stop = await place(['sell', pair, '0.01', '--stop', '58000', '--limit', '57900']);
    assert.equal(stop.order.status, 'open');
    assert.equal(stop.order.order_type, 'stop-loss-limit');
    assert.equal(stop.order.price.amount, '58000.0');
    assert.equal(stop.order.limit_price?.amount, '57900.0');
    assert.equal(stop.order.trigger_conditions, 'last price <= 58000.0');
    const take = await place(['sell', pair, '0.01', '--take-profit', '65000']);
    assert.equal(take.order.order_type, 'take-profit');
    assert.equal(take.order.limit_price, null);
    assert.equal(take.order.trigger_conditions, 'last price >= 65000.0');
    const trail = await place(['sell', pair, '0.01', '--trailing', '2%']);
    assert.equal(trail.order.order_type, 'trailing-stop');
    assert.equal(
      trail.order.trigger_conditions,
      'last price <= 58800.0 (trailing 2% below the best price 60000.0)',
    );

    const reached = await cli(['order', 'sell', pair, '0.01', '--stop', '61000'], { ...env, ...as(erin) });
    assert.equal(reached.code, 1);
    assert.match(
      reached.stderr,
      /^\s+trigger_price: The last trade price, 60000\.0, has reached this trigger already/m,
    );

    const moved = (await json(['amend', String(stop.id), '--trigger', '57950'], as(erin))) as Placed;
    assert.equal(moved.order.price.amount, '57950.0');
    const listed = await cli(['orders', '--pair', pair], { ...env, ...as(erin) });
    assert.match(listed.stdout, /^ID\s+PAIR\s+SIDE\s+TYPE\s+PRICE\s+TRIGGER\s+VOLUME/m);
    assert.match(
      listed.stdout,
      new RegExp(
        `^${stop.id}\\s+BTC/USD\\s+sell\\s+stop-loss-limit\\s+57900\\.0\\s+last price <= 57950\\.0\\s`,
        'm',
      ),
    );
    assert.match(
      listed.stdout,
      new RegExp(
        `^${take.id}\\s+BTC/USD\\s+sell\\s+take-profit\\s+market\\s+last price >= 65000\\.0\\s`,
        'm',
      ),
    );
    await json(['cancel', String(take.id)], as(erin));
    await json(['cancel', String(trail.id)], as(erin));

    // The price falls: frank bids 57950.0 and 57900.0; gus sells into the first bid, a trade at
    // 57950.0 reaches the stop, which sells at its limit into the second.
    await api(frank).createOrder({ pair, direction: 'buy', type: 'limit', volume: '0.001', price: '57950' });
    await api(frank).createOrder({ pair, direction: 'buy', type: 'limit', volume: '0.01', price: '57900' });
    await api(gus).createOrder({ pair, direction: 'sell', type: 'market', volume: '0.001' });
    const fired = (await json(['orders', '--closed', '--pair', pair], as(erin))) as {
      data: Array<{
        id: number;
        status: string;
        trigger_conditions: string;
        volume_executed: { amount: string };
      }>;
    };
    const done = fired.data.find((o) => o.id === stop.id);
    assert.equal(done?.status, 'closed');
    assert.equal(done?.trigger_conditions, 'triggered: last price <= 57950.0');
    assert.equal(done?.volume_executed.amount, '0.01000000');
  });

  test('book --watch --json streams the live book until SIGINT', async () => {
    const child = spawn(
      process.execPath,
      ['--import', 'tsx', MAIN, '--json', 'book', 'ETH/EUR', '--watch', '--depth', '2'],
      {
        env: { PATH: process.env.PATH ?? '', ...env },
      },
    );
    const lines: Array<{ sequence: number; asks: Array<{ price: string; qty: string }> }> = [];
    let buffered = '';
    let stderr = '';
    child.stderr.on('data', (c: Buffer) => {
      stderr += c.toString('utf8');
    });
    const waitFor = (predicate: () => boolean, what: string) =>
      new Promise<void>((resolve, reject) => {
        const timer = setTimeout(
          () => reject(new Error(`${what}: ${JSON.stringify(lines)} ${stderr}`)),
          15_000,
        );
        const check = () => {
          if (predicate()) {
            clearTimeout(timer);
            child.stdout.off('data', check);
            resolve();
          }
        };
        child.stdout.on('data', check);
        check();
      });
    child.stdout.on('data', (c: Buffer) => {
      buffered += c.toString('utf8');
      const parts = buffered.split('\n');
      buffered = parts.pop() ?? '';
      for (const part of parts) if (part !== '') lines.push(JSON.parse(part) as (typeof lines)[number]);
    });
    const exited = new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)));
    try {
      await waitFor(() => lines.length >= 1, 'snapshot line');
      const c = (await import('../client/client.js')).OpenSpotClient;
      const seller = new c({ baseUrl: `${t.url}/v1`, apiKey: bob.apiKey, apiSecret: bob.apiSecret });
      await seller.createOrder({
        pair: 'ETH/EUR',
        direction: 'sell',
        type: 'limit',
        volume: '0.5',
        price: '2500.00',
      });
      await waitFor(
        () => lines.some((l) => l.asks.some((a) => a.price === '2500.00' && a.qty === '0.50000000')),
        'update line',
      );
      assert.equal(lines.at(-1)!.sequence, lines[0]!.sequence + 1);
    } finally {
      child.kill('SIGINT');
    }
    assert.equal(await exited, 0, stderr);
  });
});
