/** The store wrapper behind the commit metrics: a transparent stand-in for the store it wraps. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Metrics } from './metrics.js';
import type { CommitBatch } from './store/store.js';

/** A store whose methods need their real `this` (private fields are not reachable through a proxy). */
class FakeStore {
  readonly #commits: CommitBatch[] = [];
  failNext = false;
  async commit(batch: CommitBatch): Promise<void> {
    if (this.failNext) {
      this.failNext = false;
      throw new Error('disk full');
    }
    this.#commits.push(batch);
  }
  commitCount(): number {
    return this.#commits.length;
  }
}

const batch = { events: [{}, {}], ledger: [], candles: [] } as unknown as CommitBatch;

test('the instrumented store passes calls through to the store, private state included, and counts commits', async () => {
  const metrics = new Metrics();
  const fake = new FakeStore();
  const store = metrics.instrumentStore(fake);

  await store.commit(batch);
  await store.commit(batch);
  assert.equal(store.commitCount(), 2);
  // A method taken off the wrapper and called later still reaches the store itself.
  const { commitCount } = store;
  assert.equal(commitCount(), 2);

  fake.failNext = true;
  await assert.rejects(store.commit(batch), /disk full/);
  assert.equal(store.failNext, false, 'plain properties are read from the store');

  const text = await metrics.registry.metrics();
  assert.match(text, /openspot_commit_duration_seconds_count 3/);
  assert.match(text, /openspot_commit_batch_events_sum 4/);
  assert.match(text, /openspot_commit_failures_total 1/);
});
