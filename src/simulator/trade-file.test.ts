/** The replay file format: what is read, exactly, and what is refused with which line. */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { sampleTradeLines } from './sample-trades.js';
import { formatExact, parseExact, parseTradeFile, TradeFileError, toUnits } from './trade-file.js';

const refusal = (text: string, pattern: RegExp) =>
  assert.throws(
    () => parseTradeFile(text, 'trades.csv'),
    (error: unknown) => error instanceof TradeFileError && pattern.test(error.message),
  );

describe('trade files', () => {
  test('reads Kraken’s timestamp,price,volume lines: seconds, exact decimals, blank lines and CRLF', () => {
    const trades = parseTradeFile('1735689607,59997.30000,0.01866340\r\n\r\n1735689608.25,60001,2\n');
    assert.equal(trades.length, 2);
    assert.deepEqual(trades[0], {
      line: 1,
      time: 1_735_689_607_000_000,
      price: { units: 5999730000n, decimals: 5 },
      volume: { units: 1866340n, decimals: 8 },
    });
    assert.equal(trades[1]!.line, 3);
    assert.equal(trades[1]!.time, 1_735_689_608_250_000);
  });

  test('a header naming the columns is skipped; the same words later are an error', () => {
    assert.equal(parseTradeFile('timestamp,price,volume\n1,2,3\n').length, 1);
    refusal('1,2,3\ntimestamp,price,volume\n', /trades\.csv:2: the timestamp "timestamp" is not a number/);
  });

  test('prices and volumes are exact: no digit is lost to a binary float', () => {
    const [trade] = parseTradeFile('1,0.10000000000000000555,123456789.123456789\n');
    assert.equal(formatExact(trade!.price), '0.10000000000000000555');
    assert.equal(formatExact(trade!.volume), '123456789.123456789');
    // 0.1 + 0.2 in ticks of 10^-2 is exactly 30.
    assert.equal(toUnits(parseExact('0.1')!, 2, 'floor') + toUnits(parseExact('0.2')!, 2, 'floor'), 30n);
  });

  test('conversion to a market’s ticks rounds to the nearest (halves up), to lots it rounds down', () => {
    const price = parseExact('60000.15')!;
    assert.equal(toUnits(price, 1, 'nearest'), 600002n);
    assert.equal(toUnits(parseExact('60000.14999')!, 1, 'nearest'), 600001n);
    assert.equal(toUnits(parseExact('0.123456789')!, 8, 'floor'), 12345678n);
    assert.equal(toUnits(parseExact('5')!, 2, 'floor'), 500n);
  });

  test('bad lines are refused with the file name, the line number and what is wrong', () => {
    refusal(
      '1,2,3\n2,60000,0.1,buy\n',
      /^trades\.csv:2: expected 3 columns, timestamp,price,volume, found 4/,
    );
    refusal('1,2\n', /^trades\.csv:1: expected 3 columns/);
    refusal('1,2,3\n\n3,-5,1\n', /^trades\.csv:3: the price "-5" is not a plain decimal number/);
    refusal('1,1e5,1\n', /trades\.csv:1: the price "1e5" is not a plain decimal/);
    refusal('1,60000,abc\n', /trades\.csv:1: the volume "abc" is not a plain decimal/);
    refusal('1,0.000,1\n', /trades\.csv:1: the price is zero/);
    refusal('1,5,0\n', /trades\.csv:1: the volume is zero/);
    refusal('2025-01-01T00:00:00Z,5,1\n', /trades\.csv:1: the timestamp .* is not a number of unix seconds/);
    refusal(
      '1735689607000,5,1\n',
      /trades\.csv:1: the timestamp "1735689607000" is too large .*milliseconds/,
    );
    refusal('10,5,1\n9,5,1\n', /trades\.csv:2: the timestamp 9 is earlier than the line before/);
    refusal('\n\n', /^trades\.csv: no trades/);
  });

  test('the same second may hold several trades', () => {
    assert.equal(parseTradeFile('5,1,1\n5,2,1\n5,3,1\n').length, 3);
  });

  test('the shipped sample is the project’s own seeded walk, readable as a replay file', () => {
    const file = join(import.meta.dirname, '../../examples/replay/btceur-sample-trades.csv');
    const text = readFileSync(file, 'utf8');
    assert.equal(text, `${sampleTradeLines().join('\n')}\n`, 'scripts/make-sample-trades.ts writes it');
    const trades = parseTradeFile(text, file);
    assert.ok(trades.length >= 2000, `${trades.length} trades`);
  });
});
