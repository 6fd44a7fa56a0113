import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { firstDuplicateKey } from './duplicate-keys.js';

test('a repeated key is found, however it is spelled or nested', () => {
  const cases: [string, string | undefined][] = [
    ['{"order_direction":"buy","order_direction":"sell"}', 'order_direction'],
    ['{"a":1,"\\u0061":2}', 'a'],
    ['{"pair":"BTC/EUR","x":{"k":1,"k":2}}', 'x.k'],
    ['{"list":[{"k":1},{"k":2,"k":3}]}', 'list.k'],
    ['{"a":"\\"a\\":","b":{"a":1},"c":[{"a":2}]}', undefined],
    ['{"a":"x\\\\","a":1}', 'a'],
    ['{"order_direction":"buy","pair":"BTC/EUR","volume":"1","price":"2"}', undefined],
    ['[{"a":1},{"a":1}]', undefined],
    ['{}', undefined],
    ['"a:b:c"', undefined],
    ['{"nonce":"1","order_id":5}', undefined],
  ];
  for (const [text, expected] of cases) {
    assert.equal(firstDuplicateKey(text), expected, text);
    // With the parsed value (the route's call): the same answer, the scan skipped or not.
    assert.equal(firstDuplicateKey(text, JSON.parse(text)), expected, text);
  }
});

/** A JSON text written by hand, so keys may repeat, and whether some object in it repeats one. */
interface Written {
  readonly text: string;
  readonly repeats: boolean;
}

test('finds a repeated key exactly when some object of the text repeats one', () => {
  const written: fc.Arbitrary<Written> = fc.letrec<{ value: Written }>((tie) => ({
    value: fc.oneof(
      { depthSize: 'small' },
      fc.jsonValue({ maxDepth: 0 }).map((v) => ({ text: JSON.stringify(v), repeats: false })),
      fc.array(tie('value'), { maxLength: 3 }).map((items) => ({
        text: `[${items.map((i) => i.text).join(',')}]`,
        repeats: items.some((i) => i.repeats),
      })),
      fc
        .array(fc.tuple(fc.constantFrom('a', 'b', '"', '\\', 'é', ':', '\u0061'), tie('value')), {
          maxLength: 4,
        })
        .map((pairs) => ({
          // '\u0061' is written escaped: the same key as 'a'.
          text: `{${pairs.map(([k, v]) => `${k === '\u0061' ? '"\\u0061"' : JSON.stringify(k)}:${v.text}`).join(',')}}`,
          repeats:
            new Set(pairs.map(([k]) => (k === '\u0061' ? 'a' : k))).size < pairs.length ||
            pairs.some(([, v]) => v.repeats),
        })),
    ),
  })).value;
  fc.assert(
    fc.property(written, ({ text, repeats }) => {
      const parsed: unknown = JSON.parse(text);
      assert.equal(firstDuplicateKey(text) !== undefined, repeats, text);
      assert.equal(firstDuplicateKey(text, parsed), firstDuplicateKey(text), text);
    }),
    { numRuns: 3000 },
  );
});
