import assert from 'node:assert/strict';
import { test } from 'node:test';
import { StoreUnavailableError } from '../../store/store.js';
import { HttpError } from '../errors.js';
import { pageRequest, streamList } from './shared.js';

const collect = async (stream: NodeJS.ReadableStream): Promise<string> => {
  let text = '';
  for await (const chunk of stream) text += String(chunk);
  return text;
};

/** A newest-first list of ids n..1 read the way the stores read it: below an id, at most a limit. */
const idsDown = (n: number) => (beforeId: number | undefined, limit: number) => {
  const below = beforeId ?? n + 1;
  return Array.from({ length: Math.max(0, Math.min(limit, below - 1)) }, (_, i) => below - 1 - i);
};

test('streamList writes one valid envelope for any length, in order', async () => {
  for (const n of [0, 1, 3, 4, 9]) {
    const items = Array.from({ length: n }, (_, i) => n - i);
    const render = (batch: readonly number[]) => batch.map((i) => ({ i }));
    const text = await collect(await streamList('m', idsDown(n), (i) => i, render, 3));
    assert.deepEqual(
      JSON.parse(text),
      { success: true, message: 'm', data: items.map((i) => ({ i })), code: 200 },
      String(n),
    );
  }
});

test('streamList renders each batch in its own turn of the event loop', async () => {
  const turns: number[] = [];
  let turn = 0;
  let ticking = true;
  const tick = () => {
    turn += 1;
    if (ticking) setImmediate(tick);
  };
  setImmediate(tick);
  const render = (batch: readonly number[]) => {
    turns.push(turn);
    return batch;
  };
  const text = await collect(await streamList('m', idsDown(50), (i) => i, render, 10));
  ticking = false;
  assert.equal((JSON.parse(text) as { data: number[] }).data.length, 50);
  // 50 items in batches of 10: 6 reads (the last one finds nothing), each in a later turn than the one before.
  assert.equal(turns.length, 6);
  assert.ok(
    turns.every((t, i) => i === 0 || t > turns[i - 1]!),
    `turns ${turns.join(',')}`,
  );
});

test('streamList reads the first batch before returning, so an outage is still an error response', async () => {
  const failing = () => {
    throw new StoreUnavailableError('down');
  };
  await assert.rejects(
    streamList(
      'm',
      failing,
      (i: number) => i,
      (b) => b,
    ),
    StoreUnavailableError,
  );
});

test('pageRequest: absent means unpaginated; bounds are enforced', () => {
  assert.equal(pageRequest({}), undefined);
  assert.equal(pageRequest({ page: '3' }), undefined);
  assert.deepEqual(pageRequest({ 'page-size': '25' }), { page: 1, perPage: 25 });
  assert.deepEqual(pageRequest({ 'page-size': '500', page: '2' }), { page: 2, perPage: 500 });
  for (const query of [
    { 'page-size': '0' },
    { 'page-size': '501' },
    { 'page-size': '1.5' },
    { 'page-size': '10', page: '0' },
    { 'page-size': '10', page: '1000000001' },
    { 'page-size': ['1', '2'] },
  ]) {
    assert.throws(() => pageRequest(query), HttpError, JSON.stringify(query));
  }
});
