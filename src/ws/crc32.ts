/**
 * CRC-32 (IEEE 802.3, the zlib one) and Kraken's order book checksum. Written out with a table
 * rather than taken from a dependency: it is twenty lines, and the checksum must match what
 * Kraken-style clients compute bit for bit.
 */

const TABLE: Uint32Array = (() => {
  const table = new Uint32Array(256);
  for (let n = 0; n < 256; n += 1) {
    let c = n;
    for (let k = 0; k < 8; k += 1) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    table[n] = c >>> 0;
  }
  return table;
})();

/** CRC-32 of the UTF-8 bytes of a string (or of raw bytes), as an unsigned 32-bit integer. */
export function crc32(input: string | Uint8Array): number {
  const bytes = typeof input === 'string' ? Buffer.from(input, 'utf8') : input;
  let crc = 0xffffffff;
  for (const byte of bytes) crc = TABLE[(crc ^ byte) & 0xff]! ^ (crc >>> 8);
  return (crc ^ 0xffffffff) >>> 0;
}

/** How many levels per side the checksum covers. */
export const CHECKSUM_DEPTH = 10;

export interface TextLevel {
  readonly price: string;
  readonly qty: string;
}

/** A decimal as the checksum wants it: the point removed, then the leading zeros. */
const checksumDigits = (decimal: string): string => decimal.replace('.', '').replace(/^0+/, '');

/**
 * Kraken's book checksum: the top 10 asks from the lowest price up, then the top 10 bids from the
 * highest down, each level as price digits then quantity digits, all concatenated, then CRC-32.
 * The levels are the formatted strings (prices at pairDecimals, quantities at lotDecimals), given
 * best first.
 */
export function bookChecksum(asks: readonly TextLevel[], bids: readonly TextLevel[]): number {
  let text = '';
  for (const level of asks.slice(0, CHECKSUM_DEPTH))
    text += checksumDigits(level.price) + checksumDigits(level.qty);
  for (const level of bids.slice(0, CHECKSUM_DEPTH))
    text += checksumDigits(level.price) + checksumDigits(level.qty);
  return crc32(text);
}
