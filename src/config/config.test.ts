import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ConfigError, loadConfig } from './config.js';

test('SQLITE_JOURNAL_BATCHES: 8 by default, a whole number from 1 to 256 otherwise', () => {
  assert.equal(loadConfig({}).sqliteJournalBatches, 8);
  assert.equal(loadConfig({ SQLITE_JOURNAL_BATCHES: '16' }).sqliteJournalBatches, 16);
  for (const bad of ['0', '257', '2.5', 'many'])
    assert.throws(() => loadConfig({ SQLITE_JOURNAL_BATCHES: bad }), ConfigError, bad);
});
