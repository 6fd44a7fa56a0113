/**
 * External transaction ids in Kraken's style: `OXXXXX-XXXXX-XXXXXX` for orders and
 * `TXXXXX-XXXXX-XXXXXX` for trades (a letter, then 16 characters of Crockford base32, grouped 5-5-6).
 *
 * They are derived from the numeric id by an invertible mix over 80 bits, so they are stable,
 * unique, need no storage and can be turned back into the id, yet consecutive ids do not give
 * consecutive texts. This is obfuscation, not secrecy: the id itself is public in the same record.
 */

const BITS = 80n;
const MASK = (1n << BITS) - 1n;
const ALPHABET = '0123456789ABCDEFGHJKMNPQRSTVWXYZ'; // Crockford: no I, L, O, U
const CHARS = 16;
const MUL_1 = (0x9e3779b9_7f4a7c15_f39cn & MASK) | 1n;
const MUL_2 = (0xbf58476d_1ce4e5b9_2545n & MASK) | 1n;
const SHIFT = 40n; // >= BITS / 2, so x ^ (x >> SHIFT) is its own inverse
const KEY = { order: 0x4f52_44455253_504f5431n & MASK, trade: 0x5452_41444553_504f5431n & MASK } as const;

export type TxKind = keyof typeof KEY;
const PREFIX: Readonly<Record<TxKind, string>> = { order: 'O', trade: 'T' };

/** Inverse of an odd number modulo 2^BITS (Newton's iteration doubles correct bits each step). */
function inverse(a: bigint): bigint {
  let x = a;
  for (let i = 0; i < 7; i++) x = (x * (2n - a * x)) & MASK;
  return x;
}
const INV_1 = inverse(MUL_1);
const INV_2 = inverse(MUL_2);

// Each step (odd multiplication mod 2^BITS, xor-shift by at least half the width, xor with a key)
// is a bijection, so the composition is too, and unmix undoes the steps in reverse order.
function mix(n: bigint, key: bigint): bigint {
  let x = (n * MUL_1) & MASK;
  x ^= x >> SHIFT;
  x = ((x ^ key) * MUL_2) & MASK;
  return x ^ (x >> SHIFT);
}

function unmix(y: bigint, key: bigint): bigint {
  let x = y ^ (y >> SHIFT);
  x = ((x * INV_2) & MASK) ^ key;
  x ^= x >> SHIFT;
  return (x * INV_1) & MASK;
}

export function transactionId(kind: TxKind, id: number): string {
  if (!Number.isSafeInteger(id) || id < 0) throw new RangeError(`not an id: ${id}`);
  let x = mix(BigInt(id), KEY[kind]);
  const chars: string[] = [];
  for (let i = 0; i < CHARS; i++) {
    chars.push(ALPHABET[Number(x & 31n)]!);
    x >>= 5n;
  }
  const s = chars.reverse().join('');
  return `${PREFIX[kind]}${s.slice(0, 5)}-${s.slice(5, 10)}-${s.slice(10)}`;
}

export const orderTransactionId = (id: number): string => transactionId('order', id);
export const tradeTransactionId = (id: number): string => transactionId('trade', id);

const FORM = /^([OT])([0-9A-HJKMNP-TV-Z]{5})-([0-9A-HJKMNP-TV-Z]{5})-([0-9A-HJKMNP-TV-Z]{6})$/;

/** The id behind a transaction id, or undefined when the text is not one this server issued. */
export function parseTransactionId(text: string): { kind: TxKind; id: number } | undefined {
  const match = FORM.exec(text);
  if (match === null) return undefined;
  const kind: TxKind = match[1] === 'O' ? 'order' : 'trade';
  let y = 0n;
  for (const c of match[2]! + match[3]! + match[4]!) y = (y << 5n) | BigInt(ALPHABET.indexOf(c));
  const n = unmix(y, KEY[kind]);
  return n <= BigInt(Number.MAX_SAFE_INTEGER) ? { kind, id: Number(n) } : undefined;
}
