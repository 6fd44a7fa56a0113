/**
 * Exact JSON: plain data (what the engine's commands, results and committed batches are made of)
 * written as JSON text with no JSON number anywhere, so that nothing on the way can round an amount
 * (a JSON number is a binary double in most parsers, and a bigint has no JSON form at all).
 *
 * Every value is tagged, and the tags cannot be confused with each other:
 * - `null`, `true`, `false`: themselves;
 * - a string: a JSON string starting with `'` (`'BTC`);
 * - a number: `#` and its canonical JavaScript text (`#12345`, `#0.5`, `#-0`, `#NaN`), which
 *   `Number()` reads back to the very same double;
 * - a bigint: `n` and its decimal digits (`n-123456789012345678901234567890`);
 * - `undefined`: the bare string `u` (kept in objects too, so `{ field: undefined }` comes back as it went);
 * - an array: a JSON array of values;
 * - a Map: a JSON array starting with the bare string `m`, then key, value, key, value... (an
 *   array's own first element, when a string, starts with `'`, so it can never be a bare `m`);
 * - a plain object: a JSON object of values (own enumerable string keys).
 *
 * Decoding checks everything and throws a WireFormatError naming the path of the first bad part:
 * a malformed message is refused, never half-read.
 */

export type ExactValue =
  | null
  | boolean
  | string
  | number
  | bigint
  | undefined
  | readonly ExactValue[]
  | ReadonlyMap<ExactValue, ExactValue>
  | { readonly [key: string]: ExactValue };

/** A message that is not what the wire format says; `path` names the part at fault. */
export class WireFormatError extends Error {
  override readonly name = 'WireFormatError';
  constructor(
    readonly path: string,
    problem: string,
  ) {
    super(`malformed message at ${path}: ${problem}`);
  }
}

/** Deeper nesting is refused: plain engine data is a few levels deep, and recursion must stay bounded. */
export const MAX_DEPTH = 64;
/** A bigint of more digits is refused (parsing huge ones costs quadratic time). */
export const MAX_BIGINT_DIGITS = 400;

const NUMBER_TEXT = /^(?:-?(?:0|[1-9]\d*)(?:\.\d+)?(?:e[+-]\d+)?|NaN|-?Infinity)$/;
const BIGINT_TEXT = /^-?(?:0|[1-9]\d*)$/;

function numberText(n: number): string {
  return Object.is(n, -0) ? '-0' : String(n);
}

/**
 * Where a value went wrong, as path segments collected while the recursion unwinds: paths are
 * built only for the value at fault, never for the (many) values that are fine.
 */
class At {
  readonly segments: string[] = [];
  constructor(
    readonly problem: string,
    readonly kind: 'encode' | 'decode',
  ) {}
}

/**
 * Rethrows `error`, an At gaining the segment of the value it unwinds through. Called in the catch
 * of each nested value, so the segment's text is made only for the value at fault (no closure or
 * string per value that is fine: these loops run for every field of every command and reply).
 */
function rethrowWithin(error: unknown, segment: string): never {
  if (error instanceof At) error.segments.unshift(segment);
  throw error;
}

function pathOf(root: string, at: At): string {
  return root + at.segments.join('');
}

/** The JSON-ready form of `value` (see the module comment); throws a TypeError for anything that is not plain data. */
export function toExactJson(value: unknown, path = '$'): unknown {
  try {
    return encodeValue(value, 0);
  } catch (error) {
    if (error instanceof At) throw new TypeError(`${pathOf(path, error)}: ${error.problem}`);
    throw error;
  }
}

function encodeValue(value: unknown, depth: number): unknown {
  if (depth > MAX_DEPTH) throw new At(`nested deeper than ${MAX_DEPTH} levels`, 'encode');
  switch (typeof value) {
    case 'string':
      return `'${value}`;
    case 'number':
      return `#${numberText(value)}`;
    case 'bigint':
      return `n${value.toString()}`;
    case 'boolean':
      return value;
    case 'undefined':
      return 'u';
    case 'object': {
      if (value === null) return null;
      if (Array.isArray(value)) {
        const out = new Array<unknown>(value.length);
        for (let i = 0; i < value.length; i += 1) {
          const item: unknown = value[i];
          try {
            out[i] = encodeValue(item, depth + 1);
          } catch (error) {
            rethrowWithin(error, `[${i}]`);
          }
        }
        return out;
      }
      if (value instanceof Map) {
        const out: unknown[] = ['m'];
        let i = 0;
        for (const [k, v] of value) {
          let key: unknown;
          try {
            key = encodeValue(k, depth + 1);
          } catch (error) {
            rethrowWithin(error, `<key ${i}>`);
          }
          try {
            out.push(key, encodeValue(v, depth + 1));
          } catch (error) {
            rethrowWithin(error, `<${i}>`);
          }
          i += 1;
        }
        return out;
      }
      const proto: unknown = Object.getPrototypeOf(value);
      if (proto !== Object.prototype && proto !== null)
        throw new At(`not plain data (${(value as object).constructor?.name ?? 'object'})`, 'encode');
      const out: Record<string, unknown> = {};
      for (const k of Object.keys(value)) {
        let encoded: unknown;
        try {
          encoded = encodeValue((value as Record<string, unknown>)[k], depth + 1);
        } catch (error) {
          rethrowWithin(error, `.${k}`);
        }
        setOwn(out, k, encoded);
      }
      return out;
    }
    default:
      throw new At(`a ${typeof value} is not plain data`, 'encode');
  }
}

/**
 * `out[key] = value`, except that a key named __proto__ (an own key of plain data; JSON.parse makes
 * one) stays an ordinary key instead of setting the prototype.
 */
function setOwn<V>(out: Record<string, V>, key: string, value: V): void {
  if (key === '__proto__')
    Object.defineProperty(out, key, { value, enumerable: true, writable: true, configurable: true });
  else out[key] = value;
}

/** Reads what toExactJson wrote (already parsed from JSON text); throws WireFormatError. */
export function fromExactJson(json: unknown, path = '$'): ExactValue {
  try {
    return decodeValue(json, 0);
  } catch (error) {
    if (error instanceof At) throw new WireFormatError(pathOf(path, error), error.problem);
    throw error;
  }
}

function decodeValue(json: unknown, depth: number): ExactValue {
  if (depth > MAX_DEPTH) throw new At(`nested deeper than ${MAX_DEPTH} levels`, 'decode');
  if (json === null || typeof json === 'boolean') return json;
  if (typeof json === 'string') {
    const tag = json.charAt(0);
    if (tag === "'") return json.slice(1);
    if (tag === '#') {
      const text = json.slice(1);
      if (!NUMBER_TEXT.test(text)) throw new At('not a number', 'decode');
      const n = text === '-0' ? -0 : Number(text);
      // Only the canonical text is accepted, so each number has exactly one encoding.
      if (numberText(n) !== text) throw new At('not a number in canonical form', 'decode');
      return n;
    }
    if (tag === 'n') {
      const text = json.slice(1);
      if (!BIGINT_TEXT.test(text) || text.length > MAX_BIGINT_DIGITS + 1)
        throw new At('not a bigint', 'decode');
      return BigInt(text);
    }
    if (json === 'u') return undefined;
    throw new At('a value without a known tag', 'decode');
  }
  if (Array.isArray(json)) {
    if (json[0] === 'm') {
      if (json.length % 2 !== 1) throw new At('a map with a key but no value', 'decode');
      const map = new Map<ExactValue, ExactValue>();
      for (let i = 1; i < json.length; i += 2) {
        const entry = (i - 1) / 2;
        let key: ExactValue;
        try {
          key = decodeValue(json[i], depth + 1);
        } catch (error) {
          rethrowWithin(error, `<key ${entry}>`);
        }
        if (map.has(key)) {
          const repeated = new At('a repeated map key', 'decode');
          repeated.segments.push(`<key ${entry}>`);
          throw repeated;
        }
        try {
          map.set(key, decodeValue(json[i + 1], depth + 1));
        } catch (error) {
          rethrowWithin(error, `<${entry}>`);
        }
      }
      return map;
    }
    const out = new Array<ExactValue>(json.length);
    for (let i = 0; i < json.length; i += 1) {
      try {
        out[i] = decodeValue(json[i], depth + 1);
      } catch (error) {
        rethrowWithin(error, `[${i}]`);
      }
    }
    return out;
  }
  if (typeof json === 'object') {
    const source = json as Record<string, unknown>;
    const out: Record<string, ExactValue> = {};
    for (const k of Object.keys(source)) {
      let decoded: ExactValue;
      try {
        decoded = decodeValue(source[k], depth + 1);
      } catch (error) {
        rethrowWithin(error, `.${k}`);
      }
      setOwn(out, k, decoded);
    }
    return out;
  }
  throw new At(`unexpected ${typeof json}`, 'decode');
}

const encoder = new TextEncoder();
const decoder = new TextDecoder('utf-8', { fatal: true });

/** UTF-8 JSON bytes of `value` (any JSON-ready value: the frames put exact values inside plain JSON). */
export function jsonBytes(value: unknown): Uint8Array {
  return encoder.encode(JSON.stringify(value));
}

/** Parses UTF-8 JSON bytes; invalid UTF-8 or JSON becomes a WireFormatError. */
export function parseJsonBytes(bytes: Uint8Array): unknown {
  let text: string;
  try {
    text = decoder.decode(bytes);
  } catch {
    throw new WireFormatError('$', 'not UTF-8 text');
  }
  try {
    return JSON.parse(text) as unknown;
  } catch (error) {
    // JSON.parse's own message says where; a RangeError (too deep for the parser) lands here too.
    throw new WireFormatError('$', `not JSON (${error instanceof Error ? error.message : String(error)})`);
  }
}
