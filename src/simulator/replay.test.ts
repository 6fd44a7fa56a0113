/** The replay feed: the file's pace divided by the speed, merged steps, the tick rule, the checks at start. */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { prepareReplay, ReplayFeed, replayTradesFor } from './replay.js';
import { parseTradeFile, TradeFileError } from './trade-file.js';

const BTC_EUR = { pair: 'BTC/EUR', pairDecimals: 1, lotDecimals: 8 };
const file = (lines: string[]) => replayTradesFor(parseTradeFile(lines.join('\n')), BTC_EUR, 'f.csv');
/** One trade every 10 file seconds, prices 60000.0, 60010.0, ... */
const tenSeconds = (n: number) =>
  file(Array.from({ length: n }, (_, i) => `${1000 + 10 * i},${60000 + 10 * i},0.5`));

describe('replay feed', () => {
  test('speed 1 follows the file’s own pace; speed 10 replays ten file seconds per second', () => {
    const slow = new ReplayFeed(tenSeconds(4), { speed: 1 });
    assert.equal(slow.take(0)?.ticks, 600000n, 'the first trade is due at the start');
    assert.equal(slow.take(9_999), undefined);
    assert.equal(slow.take(10_000)?.ticks, 600100n);
    const fast = new ReplayFeed(tenSeconds(4), { speed: 10 });
    fast.start(0);
    assert.equal(fast.take(0)?.ticks, 600000n);
    assert.equal(fast.take(999), undefined);
    assert.equal(fast.take(1000)?.ticks, 600100n);
    assert.equal(fast.take(2000)?.ticks, 600200n);
    assert.equal(fast.take(3000)?.ticks, 600300n);
    assert.equal(fast.finished, true);
    assert.equal(fast.take(60_000), undefined, 'nothing after the end');
    assert.equal(fast.ticks, 600300n, 'the reference stays at the last price');
  });

  test('trades due together become one step: the last price, the summed volume, capped', () => {
    const feed = new ReplayFeed(tenSeconds(5), { speed: 1000, maxLots: 120_000_000n });
    feed.start(0);
    const step = feed.take(30)!; // 30 ms × 1000 = 30 file seconds: four trades
    assert.equal(step.trades, 4);
    assert.equal(step.ticks, 600300n);
    assert.equal(step.lots, 120_000_000n, 'four times 0.5 BTC, capped at 1.2');
    assert.equal(step.line, 4);
    assert.equal(feed.replayed, 4);
  });

  test('the taker’s side follows the tick rule: up buys, down sells, unchanged repeats', () => {
    const feed = new ReplayFeed(file(['0,100,1', '1,101,1', '2,101,1', '3,99,1', '4,99,1', '5,100,1']), {
      speed: 1,
    });
    const sides = [0, 1000, 2000, 3000, 4000, 5000].map((t) => feed.take(t)?.side);
    assert.deepEqual(sides, ['buy', 'buy', 'buy', 'sell', 'sell', 'buy']);
  });

  test('the speed must be a whole number from 1 to 1000', () => {
    for (const speed of [0, 1001, 1.5, Number.NaN])
      assert.throws(() => new ReplayFeed(tenSeconds(1), { speed }), /from 1 to 1000/);
  });

  test('prices are rounded to the market’s tick; one below a tick is refused with its line', () => {
    const [trade] = file(['1,60000.06,0.123456789']);
    assert.equal(trade!.ticks, 600001n);
    assert.equal(trade!.lots, 12345678n);
    assert.throws(
      () => replayTradesFor(parseTradeFile('1,1,1\n2,0.04,1\n'), BTC_EUR, 'f.csv'),
      (error: unknown) =>
        error instanceof TradeFileError &&
        /^f\.csv:2: the price 0\.04 is below one tick of BTC\/EUR/.test(error.message),
    );
  });

  test('prepareReplay checks the pair against the venue and the whole file before the start', () => {
    const dir = mkdtempSync(join(tmpdir(), 'openspot-replay-'));
    try {
      const path = join(dir, 'trades.csv');
      writeFileSync(path, '1,60000,0.1\n2,60001,0.2\n');
      const markets = (pair: string) => (pair === 'BTC/EUR' ? BTC_EUR : undefined);
      const ok = prepareReplay({ file: path, speed: 5, pair: 'BTC/EUR' }, markets);
      assert.equal(ok.trades.length, 2);
      assert.equal(ok.speed, 5);
      assert.throws(
        () => prepareReplay({ file: path, speed: 5, pair: 'DOGE/EUR' }, markets),
        /the replay pair DOGE\/EUR is not a market of this venue/,
      );
      writeFileSync(path, '1,60000,0.1\n2,sixty,0.2\n');
      assert.throws(
        () => prepareReplay({ file: path, speed: 5, pair: 'BTC/EUR' }, markets),
        new RegExp(`${path.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}:2: the price "sixty"`),
      );
      assert.throws(
        () => prepareReplay({ file: join(dir, 'missing.csv'), speed: 5, pair: 'BTC/EUR' }, markets),
        /cannot read the trade file .*missing\.csv: no such file/,
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
