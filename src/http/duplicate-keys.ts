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

/** The repeated key as a dotted path (`a.b` when nested), or undefined when every key is unique. */
export function firstDuplicateKey(text: string): string | undefined {
  // One colon at most: at most one key, nothing to repeat (the common case for tiny bodies).
  if (text.indexOf(':') === text.lastIndexOf(':')) return undefined;
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
