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

test('streamList writes one valid envelope for any length, in order', async () => {
  for (const n of [0, 1, 3, 4, 9]) {
    const items = Array.from({ length: n }, (_, i) => i);
    const text = await collect(await streamList('m', items, (batch) => batch.map((i) => ({ i })), 3));
    assert.deepEqual(
      JSON.parse(text),
      { success: true, message: 'm', data: items.map((i) => ({ i })), code: 200 },
      String(n),
    );
  }
});

test('streamList reads the first batch before returning, so an outage is still an error response', async () => {
  const failing: Iterable<number> = {
    [Symbol.iterator]: () => ({
      next: () => {
        throw new StoreUnavailableError('down');
      },
    }),
  };
  await assert.rejects(
    streamList('m', failing, (b) => b),
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
