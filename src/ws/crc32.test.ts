import assert from 'node:assert/strict';
import { test } from 'node:test';
import * as zlib from 'node:zlib';
import { bookChecksum, crc32 } from './crc32.js';

/** The inputs compared with zlib: n * 7 bytes of a fixed pattern, n = 0..199. */
const patterns = (): Uint8Array[] =>
  Array.from({ length: 200 }, (_, n) => {
    const bytes = new Uint8Array(n * 7);
    for (let i = 0; i < bytes.length; i += 1) bytes[i] = (i * 31 + n * 17) & 0xff;
    return bytes;
  });

test('crc32 matches the standard check values', () => {
  assert.equal(crc32('123456789'), 0xcbf43926);
  assert.equal(crc32(''), 0);
  assert.equal(crc32('The quick brown fox jumps over the lazy dog'), 0x414fa339);
  assert.equal(crc32(Uint8Array.from({ length: 256 }, (_, i) => i)), 0x29058c73);
  assert.equal(crc32(new Uint8Array(1 << 20)), 0xa738ea1c);
});

test('crc32 matches values computed by zlib.crc32, on every Node version', () => {
  // Computed once with zlib.crc32 (Node 20.20): package.json allows Node 20.10, which has no
  // zlib.crc32, so these fixed values keep the comparison there too.
  const values = patterns().map((bytes) => crc32(bytes));
  assert.equal(values[1], 0xbe0c600f);
  assert.equal(values[2], 0x44cb1d4c);
  assert.equal(values[50], 0x8e18284e);
  assert.equal(values[199], 0xb76ce580);
  assert.equal(
    values.reduce((h, v) => (Math.imul(h, 31) + v) >>> 0, 0),
    557827974,
    'digest of all 200 values',
  );
});

test('crc32 matches zlib.crc32 where Node has it (20.15+, 22.2+)', (t) => {
  const reference = (zlib as { crc32?: (data: Uint8Array) => number }).crc32;
  if (reference === undefined) {
    t.skip(`zlib.crc32 is not in Node ${process.version}; the fixed values above still ran`);
    return;
  }
  for (const bytes of patterns()) assert.equal(crc32(bytes), reference(bytes));
});

test("book checksum reproduces the example of Kraken's documentation (974947235)", () => {
  const level = (price: string) => ({ price, qty: '0.00000500' });
  const asks = [
    '0.05005',
    '0.05010',
    '0.05015',
    '0.05020',
    '0.05025',
    '0.05030',
    '0.05035',
    '0.05040',
    '0.05045',
    '0.05050',
  ];
  const bids = [
    '0.05000',
    '0.04995',
    '0.04990',
    '0.04980',
    '0.04975',
    '0.04970',
    '0.04965',
    '0.04960',
    '0.04955',
    '0.04950',
  ];
  assert.equal(bookChecksum(asks.map(level), bids.map(level)), 974947235);
  // Levels past the tenth do not count.
  assert.equal(bookChecksum([...asks, '0.06000'].map(level), [...bids, '0.04000'].map(level)), 974947235);
});

test('book checksum strips the point and then the leading zeros of price and qty', () => {
  assert.equal(
    bookChecksum([{ price: '45285.2', qty: '0.00100000' }], [{ price: '45283.5', qty: '0.10000000' }]),
    crc32('452852100000' + '45283510000000'),
  );
  assert.equal(bookChecksum([], []), 0);
});
