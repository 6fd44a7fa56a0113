/**
 * A replay against the real server, configured as `openspot replay` configures it
 * (SIMULATOR_REPLAY_*): the venue's BTC/EUR trades are the file's, at the file's prices and
 * volumes, at the file's pace divided by the speed, and the ledger still balances.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { startTestServer } from '../../test/support/server-fixture.js';
import { OpenSpotClient } from '../client/client.js';
import type { MarketId } from '../domain/types.js';
import { startTestVenue } from '../testing/index.js';

test('the replayed market trades at the file’s prices and volumes, at its pace / speed', {
  timeout: 60_000,
}, async () => {
  const dir = mkdtempSync(join(tmpdir(), 'openspot-replay-file-'));
  const file = join(dir, 'trades.csv');
  // 30 trades, one per file second: up, down, up again, in prices of whole ticks (0.1 EUR).
  const prices = Array.from({ length: 30 }, (_, i) => 600_000 + 37 * (i < 12 ? i : i < 20 ? 24 - i : i - 16));
  const volumes = Array.from({ length: 30 }, (_, i) => 1_000_000 + 250_000 * (i % 7)); // lots of 10^-8
  const tick = (t: number) => `${Math.floor(t / 10)}.${t % 10}`;
  const lot = (l: number) => `0.${String(l).padStart(8, '0')}`;
  writeFileSync(
    file,
    `timestamp,price,volume\n${prices.map((p, i) => `${1_735_689_600 + i},${tick(p)},${lot(volumes[i]!)}`).join('\n')}\n`,
  );
  const t = await startTestServer({
    SIMULATOR: 'on',
    DEMO: 'on',
    SIMULATOR_RATE: '50',
    SIMULATOR_REPLAY_FILE: file,
    SIMULATOR_REPLAY_SPEED: '10',
    SIMULATOR_REPLAY_PAIR: 'BTC/EUR',
  });
  try {
    const market = t.server.exchange.catalogue.marketByName('BTC/EUR')!;
    const trades = () =>
      t.server.exchange.history
        .listPublicTrades({ marketId: market.id as MarketId })
        .then((l) => l.reverse());
    const last = prices[prices.length - 1]!;
    const deadline = Date.now() + 30_000;
    while ((await trades()).at(-1)?.price !== last || (await trades()).length < 2) {
      assert.ok(
        Date.now() < deadline,
        `the file's last price within 30 s: ${JSON.stringify((await trades()).map((x) => x.price))}`,
      );
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    const venue = await trades();
    const filePrices = new Set(prices);
    for (const trade of venue)
      assert.ok(filePrices.has(trade.price), `${trade.price} is one of the file's prices`);
    const seen = new Set(venue.map((x) => x.price));
    assert.ok(
      seen.size >= filePrices.size / 2,
      `the path is followed: ${seen.size} of ${filePrices.size} prices`,
    );
    // The file's pace divided by the speed: 29 file seconds at speed 10 take 2.9 s.
    const span = (venue.at(-1)!.time - venue[0]!.time) / 1e6;
    assert.ok(span >= 2.6 && span <= 6, `29 s of file at speed 10 took ${span} s`);
    // Every lot of the file changed hands, none more: the takers trade the file's volumes.
    const traded = venue.reduce((sum, x) => sum + x.volume, 0);
    assert.equal(
      traded,
      volumes.reduce((a, b) => a + b, 0),
    );

    const pub = new OpenSpotClient({ baseUrl: `${t.url}/v1` });
    const [ticker] = await pub.tickers('BTC/EUR');
    assert.equal(ticker!.last_price, tick(last));
    assert.ok((await pub.ohlc({ tickerId: 'BTC/EUR' })).length >= 1, 'candles follow');
    const ledger = (await t.admin('GET', '/ledger/check')).body as { ok: boolean };
    assert.equal(ledger.ok, true);
  } finally {
    await t.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a bad replay file stops the server’s start with its line, before it listens', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'openspot-replay-file-'));
  const file = join(dir, 'trades.csv');
  writeFileSync(file, '1,60000,0.1\n2,60000;0.1\n');
  try {
    await assert.rejects(
      startTestServer({ SIMULATOR: 'on', SIMULATOR_REPLAY_FILE: file }, join(dir, 'data')),
      /trades\.csv:2: expected 3 columns/,
    );
    writeFileSync(file, '1,60000,0.1\n');
    await assert.rejects(
      startTestServer(
        { SIMULATOR: 'on', SIMULATOR_REPLAY_FILE: file, SIMULATOR_REPLAY_PAIR: 'BTC/JPY' },
        join(dir, 'data'),
      ),
      /the replay pair BTC\/JPY is not a market of this venue/,
    );
    await assert.rejects(
      startTestServer({ SIMULATOR: 'off', SIMULATOR_REPLAY_FILE: file }, join(dir, 'data')),
      /SIMULATOR_REPLAY_FILE needs SIMULATOR=on/,
    );
    await assert.rejects(
      startTestServer(
        { SIMULATOR: 'on', SIMULATOR_REPLAY_FILE: file, SIMULATOR_REPLAY_SPEED: '2000' },
        join(dir, 'data'),
      ),
      /SIMULATOR_REPLAY_SPEED must be between 1 and 1000/,
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a test venue replays a file through its env option, in memory', { timeout: 60_000 }, async () => {
  const dir = mkdtempSync(join(tmpdir(), 'openspot-replay-file-'));
  const file = join(dir, 'trades.csv');
  writeFileSync(file, '1735689600,61000.0,0.01\n1735689601,61050.5,0.02\n1735689602,60990.0,0.03\n');
  const venue = await startTestVenue({
    simulator: { ratePerSecond: 50 },
    env: { SIMULATOR_REPLAY_FILE: file, SIMULATOR_REPLAY_SPEED: '1' },
  });
  try {
    const pub = new OpenSpotClient({ baseUrl: venue.baseUrl });
    const deadline = Date.now() + 20_000;
    let last = '';
    while (last !== '60990.0') {
      assert.ok(Date.now() < deadline, `the file's last price within 20 s, last ${last}`);
      await new Promise((resolve) => setTimeout(resolve, 100));
      last = (await pub.tickers('BTC/EUR'))[0]!.last_price;
    }
    const history = await pub.historicalTrades({ tickerId: 'BTC/EUR', limit: 0 });
    const prices = new Set([...history.buy, ...history.sell].map((x) => x.price));
    assert.deepEqual([...prices].sort(), ['60990.0', '61000.0', '61050.5']);
  } finally {
    await venue.close();
    rmSync(dir, { recursive: true, force: true });
  }
});
