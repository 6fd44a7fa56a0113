import assert from 'node:assert/strict';
import { test } from 'node:test';
import { seededRandom } from './http-client.js';
import { crashSeed, withSeed } from './seed.js';

test('the crash seed comes from CRASH_SEED when set, from the clock otherwise; a bad value is refused', () => {
  assert.equal(
    crashSeed({ CRASH_SEED: '12345' }, () => 99),
    12345,
  );
  assert.equal(
    crashSeed({ CRASH_SEED: ' 7 ' }, () => 99),
    7,
  );
  assert.equal(
    crashSeed({}, () => 2 ** 31 + 5),
    5,
  );
  assert.equal(
    crashSeed({ CRASH_SEED: '' }, () => 42),
    42,
  );
  for (const bad of ['abc', '-1', '1.5', String(2 ** 31)])
    assert.throws(() => crashSeed({ CRASH_SEED: bad }), /CRASH_SEED must be a whole number/);
});

test('the same seed gives the same stream of choices', () => {
  const draw = (seed: number) => Array.from({ length: 50 }, seededRandom(seed));
  assert.deepEqual(draw(123), draw(123));
  assert.notDeepEqual(draw(123), draw(124));
});

test('a failure names the seed and how to replay it', async () => {
  await assert.rejects(
    withSeed(4242, 'npm test -- test/crash/crash-http', async () => assert.fail('books do not balance')),
    (error: Error) =>
      error.message.startsWith(
        'crash test seed 4242 (replay: CRASH_SEED=4242 npm test -- test/crash/crash-http): books do not balance',
      ),
  );
});
