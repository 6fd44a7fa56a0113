/**
 * Kraken's order book checksum, which OpenSpot's book messages carry: the top 10 asks from the
 * lowest price up, then the top 10 bids from the highest down, each level's price then quantity
 * with the decimal point removed and leading zeros stripped, concatenated, CRC-32 (IEEE).
 */
import type { BookLevelText } from './channels.js';

const TABLE: Uint32Array = (() => {
  const table = new Uint32Array(256);
  for (let n = 0; n < 256; n += 1) {
    let c = n;
    for (let k = 0; k < 8; k += 1) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    table[n] = c >>> 0;
  }
  return table;
})();

const utf8 = new TextEncoder();

/** CRC-32 of the UTF-8 bytes of a string, unsigned. */
export function crc32(text: string): number {
  let crc = 0xffffffff;
  // TextEncoder, not Buffer: the browser pages (web/) keep their local book with this module too.
  for (const byte of utf8.encode(text)) crc = TABLE[(crc ^ byte) & 0xff]! ^ (crc >>> 8);
  return (crc ^ 0xffffffff) >>> 0;
}

export const CHECKSUM_DEPTH = 10;

const digits = (decimal: string): string => decimal.replace('.', '').replace(/^0+/, '');

/** The checksum of a book given best first on each side. */
export function bookChecksum(asks: readonly BookLevelText[], bids: readonly BookLevelText[]): number {
  let text = '';
  for (const level of asks.slice(0, CHECKSUM_DEPTH)) text += digits(level.price) + digits(level.qty);
  for (const level of bids.slice(0, CHECKSUM_DEPTH)) text += digits(level.price) + digits(level.qty);
  return crc32(text);
}
