import assert from 'node:assert/strict';
import { test } from 'node:test';
import { batch, CATALOGUE, order } from '../sqlite/test-fixtures.js';
import { arrayLiteral, commitSql, commitStatement } from './commit-sql.js';

/** The numbers of the $n placeholders a statement uses, in ascending order, without repeats. */
const placeholders = (sql: string): number[] =>
  [...new Set([...sql.matchAll(/\$(\d+)/g)].map((m) => Number(m[1])))].sort((a, b) => a - b);

test('every batch shape numbers its parameters 1..n without a gap (a gap fails at Bind on PostgreSQL)', () => {
  for (let shape = 0; shape < 1 << 11; shape++) {
    const used = placeholders(commitSql(shape));
    assert.deepEqual(
      used,
      used.map((_, i) => i + 1),
      `shape ${shape.toString(2)}`,
    );
  }
});

test('a batch gets exactly one parameter per placeholder of its statement, and only the tables it writes', () => {
  const catalogue = commitStatement(batch(CATALOGUE));
  assert.equal(placeholders(catalogue.text).length, catalogue.values.length);
  assert.match(catalogue.text, /INSERT INTO assets/);
  assert.doesNotMatch(catalogue.text, /INSERT INTO trades|INSERT INTO idempotency_keys|DELETE FROM/);
  const orders = commitStatement({ ...batch({ orders: [order(1)] }), idempotencyExpiredBefore: 5 as never });
  assert.equal(placeholders(orders.text).length, orders.values.length);
  assert.match(orders.text, /INSERT INTO orders/);
  assert.match(orders.text, /DELETE FROM idempotency_keys/);
  assert.doesNotMatch(orders.text, /INSERT INTO assets/);
  // The same shape is the same prepared statement; another shape another one.
  assert.equal(
    commitStatement({ ...batch({ orders: [order(2)] }), idempotencyExpiredBefore: 9 as never }).name,
    orders.name,
  );
  assert.notEqual(catalogue.name, orders.name);
  // Book sequences: one row per market the batch changed, only when it changed some.
  assert.doesNotMatch(orders.text, /book_sequences/);
  const books = commitStatement({
    ...batch({ orders: [order(3)] }),
    bookSequences: [
      { marketId: 1 as never, sequence: 7 },
      { marketId: 1 as never, sequence: 9 },
      { marketId: 2 as never, sequence: 4 },
    ],
  });
  assert.equal(placeholders(books.text).length, books.values.length);
  assert.match(books.text, /INSERT INTO book_sequences/);
  assert.ok(
    books.values.some((v) => v === '{9,4}'),
    'the last sequence per market',
  );
});

test('columns go as array literals: numbers and booleans bare, text quoted and escaped, null as NULL', () => {
  assert.equal(arrayLiteral([]), '{}');
  assert.equal(arrayLiteral([1, -2, 9007199254740991, null, undefined]), '{1,-2,9007199254740991,NULL,NULL}');
  assert.equal(arrayLiteral([true, false]), '{true,false}');
  assert.equal(arrayLiteral(['buy', '', 'NULL', 'a,b}{ c']), '{"buy","","NULL","a,b}{ c"}');
  assert.equal(arrayLiteral(['say "hi"', 'back\\slash']), '{"say \\"hi\\"","back\\\\slash"}');
});
