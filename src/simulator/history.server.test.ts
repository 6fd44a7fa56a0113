/**
 * `openspot simulate`: a new venue filled with a day of simulated history, then the real server
 * started on it. A chart of every interval is full at once, timestamps run forward and end now,
 * tickers carry the last 24 hours, the ledger check holds; a venue in use is refused.
 */
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { startTestServer } from '../../test/support/server-fixture.js';
import { OpenSpotClient } from '../client/client.js';
import { DEFAULT_CATALOGUE } from '../config/default-catalogue.js';
import type { Micros } from '../domain/types.js';
import { INTERVALS } from '../market-data/candle.js';
import { DataDirInUseError, LOCK_FILE } from '../store/sqlite/data-dir-lock.js';
import { simulatedClock } from './history.js';
import { simulateNewVenue } from './new-venue.js';

// simulate writes an SQLite venue; the servers started here must read that file, not PostgreSQL.
const sqliteOnly =
  process.env.TEST_STORE === 'postgres'
    ? { skip: 'simulate fills an SQLite venue (TEST_STORE=postgres)' }
    : {};

describe('simulated history', sqliteOnly, () => {
  test('a day of history: candles of every interval, trades, tickers, consistent times', {
    timeout: 180_000,
  }, async () => {
    const dir = mkdtempSync(join(tmpdir(), 'openspot-history-'));
    const now = (Math.floor(Date.now() / 1000) * 1_000_000) as Micros;
    const catalogue = {
      assets: DEFAULT_CATALOGUE.assets.filter((a) => ['EUR', 'BTC', 'ETH'].includes(a.code)),
      markets: DEFAULT_CATALOGUE.markets.filter((m) => ['BTCEUR', 'ETHBTC'].includes(m.base + m.quote)),
    };
    const catalogueFile = join(tmpdir(), `openspot-history-catalogue-${process.pid}.json`);
    writeFileSync(catalogueFile, JSON.stringify(catalogue));
    try {
      // Two markets and steps of 30 simulated seconds (20 by default) keep the test short; that is
      // still a taker order every 30 s in each market.
      const summary = await simulateNewVenue({
        dataDir: dir,
        days: 1,
        now,
        seed: 3,
        stepSeconds: 30,
        catalogue,
      });
      assert.deepEqual(
        readdirSync(dir).sort(),
        ['openspot.db', LOCK_FILE],
        'the draft is gone, the database is in place (the lock file stays, held by no one)',
      );
      assert.equal(summary.to, now);
      assert.equal(summary.from, now - 86_400_000_000);
      assert.deepEqual(summary.markets, ['BTC/EUR', 'ETH/BTC']);
      assert.ok(summary.trades > 2 * 1000, `${summary.trades} trades in two markets`);

      const t = await startTestServer({ CATALOGUE_FILE: catalogueFile }, dir);
      try {
        const pub = new OpenSpotClient({ baseUrl: `${t.url}/v1` });
        const nowSeconds = now / 1_000_000;
        const fromSeconds = nowSeconds - 86_400;
        for (const pair of summary.markets) {
          for (const interval of INTERVALS) {
            const candles = await pub.ohlc({ tickerId: pair, interval });
            assert.ok(candles.length > 0, `${pair} ${interval} min candles`);
            const starts = candles.map((c) => c.time);
            assert.deepEqual(
              starts,
              [...starts].sort((a, b) => a - b),
              `${pair} ${interval} candles in time order`,
            );
            const misaligned = starts.filter((s) => s % (interval * 60) !== 0);
            assert.deepEqual(misaligned, [], `${pair} ${interval} min candles start on the interval`);
            // The newest candle is the current one: the history ends now.
            assert.ok(starts.at(-1)! > nowSeconds - interval * 60 - 60, `${pair} ${interval}: ends now`);
            assert.ok(starts[0]! >= fromSeconds - interval * 60, `${pair} ${interval}: starts a day ago`);
          }
          // The minute chart is full: a candle for (nearly) every one of its 720 minutes.
          const minutes = await pub.ohlc({ tickerId: pair, interval: 1 });
          assert.ok(minutes.length >= 700, `${pair}: ${minutes.length} one-minute candles of 720`);
        }
        const [ticker] = await pub.tickers('BTC/EUR');
        assert.notEqual(Number(ticker!.last_price), 0);
        assert.ok(Number(ticker!.base_volume) > 0, 'the 24-hour volume counts the history');
        assert.ok(Number(ticker!.low) <= Number(ticker!.high));

        const history = await pub.historicalTrades({ tickerId: 'BTC/EUR', limit: 0 });
        const times = [...history.buy, ...history.sell].map((x) => Number(x.trade_timestamp));
        assert.ok(times.length > 1000, `${times.length} trades`);
        const [first, last] = [Math.min(...times), Math.max(...times)];
        assert.ok(
          first >= fromSeconds && last <= nowSeconds,
          `${first}..${last} in ${fromSeconds}..${nowSeconds}`,
        );

        const ledger = (await t.admin('GET', '/ledger/check')).body as { ok: boolean };
        assert.equal(ledger.ok, true);
        const [book] = await pub.orderbook({ tickerId: 'BTC/EUR', depth: 0 });
        assert.deepEqual([book!.bids, book!.asks], [[], []], 'the history leaves nothing resting');

        // The venue exists now, and its server is running: simulate refuses and changes nothing.
        await assert.rejects(simulateNewVenue({ dataDir: dir, days: 1 }), DataDirInUseError);
        assert.ok(readdirSync(dir).every((f) => !f.includes('simulating')));
      } finally {
        await t.close();
      }
      await assert.rejects(
        simulateNewVenue({ dataDir: dir, days: 1 }),
        /already holds a venue \(openspot\.db\)/,
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
      rmSync(catalogueFile, { force: true });
    }
  });

  test('the data directory of a running server is refused, even before its first trade', async () => {
    const t = await startTestServer();
    try {
      // The server holds the directory's lock: simulate is refused before it looks at the files.
      await assert.rejects(
        simulateNewVenue({ dataDir: t.dataDir, days: 1 }),
        (error: unknown) =>
          error instanceof DataDirInUseError && /in use by another OpenSpot process/.test(error.message),
      );
    } finally {
      await t.close();
    }
  });

  test('an interrupted run leaves nothing behind', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'openspot-history-'));
    try {
      const abort = new AbortController();
      const run = simulateNewVenue({
        dataDir: dir,
        days: 1,
        signal: abort.signal,
        onProgress: () => abort.abort(),
      });
      await assert.rejects(run, { name: 'AbortError' });
      // Nothing but the lock file, which the next process takes as it is.
      assert.deepEqual(readdirSync(dir), [LOCK_FILE]);
      assert.equal(existsSync(join(dir, 'openspot.db')), false);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test('days are whole, 1 to 31; simulated time never goes back', async () => {
    for (const days of [0, 32, 1.5])
      await assert.rejects(simulateNewVenue({ dataDir: '/nonexistent', days }), /from 1 to 31/);
    const clock = simulatedClock(100 as Micros);
    clock.set(200 as Micros);
    assert.equal(clock(), 200);
    assert.throws(() => clock.set(199 as Micros), /cannot go backwards/);
  });
});
