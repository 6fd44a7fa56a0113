import assert from 'node:assert/strict';
import { statSync } from 'node:fs';
import { describe, test } from 'node:test';
import Database from 'better-sqlite3';
import type { CommitBatch } from '../store.js';
import { SqliteStore } from './sqlite-store.js';
import {
  ALICE,
  BOB,
  balance,
  batch,
  CATALOGUE,
  EUR,
  order,
  type TempStore,
  tempStore,
} from './test-fixtures.js';
import { WRITE_PROBE_BYTES } from './write-probe.js';

/** WAL frames (page writes) one commit appended: the WAL only grows while no checkpoint resets it. */
function framesOf(temp: TempStore, commit: CommitBatch): number {
  const wal = `${temp.path}-wal`;
  const before = statSync(wal).size;
  temp.store.commit(commit);
  return (statSync(wal).size - before) / (pragma(temp.path, 'page_size') + 24);
}

const probe = (): CommitBatch => ({ ...batch({}), writeProbe: true });

function pragma(path: string, name: 'page_size' | 'page_count'): number {
  const db = new Database(path, { readonly: true });
  try {
    return Number(db.pragma(name, { simple: true }));
  } finally {
    db.close();
  }
}

describe('SqliteStore: the write probe', () => {
  test('writes more pages than an order commit, where an empty commit writes fewer', (t) => {
    const temp = tempStore(t);
    temp.store.commit(batch({ ...CATALOGUE, balances: [balance(ALICE, EUR, 1000)] }));
    const anOrder = framesOf(
      temp,
      batch({
        orders: [order(1)],
        balances: [balance(ALICE, EUR, 900, 100), balance(BOB, EUR, 5)],
        sequences: { nextOrderId: 2, nextTradeId: 1, nextMarketId: 3 },
      }),
    );
    const empty = framesOf(temp, batch({ sequences: { nextOrderId: 2, nextTradeId: 1, nextMarketId: 3 } }));
    const probed = framesOf(temp, {
      ...batch({ sequences: { nextOrderId: 2, nextTradeId: 1, nextMarketId: 3 } }),
      writeProbe: true,
    });
    t.diagnostic(`frames: empty ${empty}, order ${anOrder}, probe ${probed}`);
    assert.ok(empty < anOrder, `an empty commit (${empty}) fits where an order (${anOrder}) may not`);
    assert.ok(probed > anOrder, `the probe (${probed} frames) needs more room than an order (${anOrder})`);
    // The probe changes no state.
    assert.equal(temp.store.loadSnapshot().openOrders.length, 1);
  });

  test('probes again and again do not grow the database', (t) => {
    const temp = tempStore(t);
    temp.store.commit(probe());
    const pages = pragma(temp.path, 'page_count');
    const pageSize = pragma(temp.path, 'page_size');
    // 20 of them stay below the 1000 frames at which SQLite checkpoints and starts the WAL over.
    for (let i = 0; i < 20; i++) assert.ok(framesOf(temp, probe()) > WRITE_PROBE_BYTES / pageSize);
    assert.equal(pragma(temp.path, 'page_count'), pages);
  });

  test('a database from before the probe gets its row when opened', (t) => {
    const temp = tempStore(t);
    temp.store.close();
    const db = new Database(temp.path);
    db.exec('DROP TABLE write_probe');
    db.close();
    const reopened = SqliteStore.open({ path: temp.path });
    try {
      reopened.commit(probe());
    } finally {
      reopened.close();
    }
    const check = new Database(temp.path, { readonly: true });
    const filler = check.prepare('SELECT length(filler) AS n FROM write_probe').get() as { n: number };
    check.close();
    assert.equal(filler.n, WRITE_PROBE_BYTES);
  });
});
