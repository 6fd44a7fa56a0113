/**
 * The first key that an object of a JSON text repeats. `JSON.parse` keeps the last occurrence
 * silently, while a WAF or a log line may read the first: a signed order that says "buy" to one
 * reader and "sell" to another must be refused, not interpreted (docs/interface-decisions.md 210).
 *
 * Only called on text `JSON.parse` has already accepted, so the scan can trust the grammar: it
 * walks the characters once, tracking the open objects and arrays and whether the next string is
 * a key. Keys are compared decoded (`"a"` and `"\u0061"` are the same key).
 */

interface Frame {
  /** The keys seen so far; undefined for an array. */
  readonly keys: Set<string> | undefined;
  /** The dotted path of this object or array (array positions omitted), for the refusal's field. */
  readonly path: string;
  /** The path of the value being read: the last key's, or the array's own. */
  current: string;
}

/**
 * The repeated key as a dotted path (`a.b` when nested), or undefined when every key is unique.
 * `parsed`, when given, is what `JSON.parse(text)` returned: it lets the common case skip the scan.
 */
export function firstDuplicateKey(text: string, parsed?: unknown): string | undefined {
  // One colon at most: at most one key, nothing to repeat (the common case for tiny bodies).
  if (text.indexOf(':') === text.lastIndexOf(':')) return undefined;
  // Every key of the text is followed by a colon, so the text holds at most as many keys as
  // colons; the parsed value keeps one key per distinct key of each object. When the parsed keys
  // are as many as the colons, the text's keys were at least that many and at most that many:
  // none was repeated. (A colon inside a string only makes this check fall through to the scan.)
  if (parsed !== undefined && countKeys(parsed, countColons(text)) === 0) return undefined;
  const frames: Frame[] = [];
  let expectKey = false;
  for (let i = 0; i < text.length; i += 1) {
    const c = text.charCodeAt(i);
    if (c === 0x22 /* " */) {
      const end = stringEnd(text, i);
      const frame = frames[frames.length - 1];
      if (expectKey && frame?.keys !== undefined) {
        const raw = text.slice(i, end + 1);
        const key = raw.includes('\\') ? (JSON.parse(raw) as string) : raw.slice(1, -1);
        const path = frame.path === '' ? key : `${frame.path}.${key}`;
        if (frame.keys.has(key)) return path;
        frame.keys.add(key);
        frame.current = path;
        expectKey = false;
      }
      i = end;
    } else if (c === 0x7b /* { */ || c === 0x5b /* [ */) {
      const path = frames[frames.length - 1]?.current ?? '';
      frames.push({ keys: c === 0x7b ? new Set() : undefined, path, current: path });
      expectKey = c === 0x7b;
    } else if (c === 0x7d /* } */ || c === 0x5d /* ] */) {
      frames.pop();
      expectKey = false;
    } else if (c === 0x2c /* , */) {
      expectKey = frames[frames.length - 1]?.keys !== undefined;
    }
  }
  return undefined;
}

function countColons(text: string): number {
  let count = 0;
  for (let i = text.indexOf(':'); i >= 0; i = text.indexOf(':', i + 1)) count++;
  return count;
}

/**
 * `budget` minus the number of keys of the objects in `value` (nested ones included); stops
 * counting, with a negative result, once the keys outnumber the budget.
 */
function countKeys(value: unknown, budget: number): number {
  if (typeof value !== 'object' || value === null) return budget;
  if (Array.isArray(value)) {
    for (const item of value) {
      budget = countKeys(item, budget);
      if (budget < 0) return budget;
    }
    return budget;
  }
  for (const key in value) {
    if (!Object.hasOwn(value, key)) continue;
    budget = countKeys((value as Record<string, unknown>)[key], budget - 1);
    if (budget < 0) return budget;
  }
  return budget;
}

/** The index of the quote closing the string that opens at `start`. */
function stringEnd(text: string, start: number): number {
  let i = start + 1;
  for (;;) {
    const quote = text.indexOf('"', i);
    if (quote < 0) return text.length - 1;
    // A quote preceded by an odd number of backslashes is escaped.
    let backslashes = 0;
    for (let j = quote - 1; text.charCodeAt(j) === 0x5c; j -= 1) backslashes += 1;
    if (backslashes % 2 === 0) return quote;
    i = quote + 1;
  }
}
