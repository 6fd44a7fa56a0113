/**
 * Acknowledged means durable: a worker places and cancels orders through the real exchange and
 * store and is killed with SIGKILL at random moments; after each kill the store must hold every
 * acknowledged order and cancel, and its state must be internally consistent (nothing half-applied).
 */
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { test } from 'node:test';
import type { OrderId } from '../../src/domain/types.js';
import { Engine } from '../../src/engine/engine.js';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';

const KILLS = Number(process.env.CRASH_TEST_KILLS ?? 4);

function runUntilKilled(
  dir: string,
  seed: number,
  acks: { orders: Set<number>; cancels: Set<number> },
): Promise<void> {
  return new Promise((resolve, reject) => {
    const child: ChildProcess = spawn(
      process.execPath,
      ['--import', 'tsx', join(import.meta.dirname, 'crash-worker.ts'), dir, String(seed)],
      {
        stdio: ['ignore', 'pipe', 'inherit'],
      },
    );
    let acked = 0;
    const killAfter = 50 + ((seed * 7919) % 400);
    createInterface({ input: child.stdout! }).on('line', (line) => {
      const [tag, kind, id] = line.split(' ');
      if (tag !== 'ACK') return;
      (kind === 'order' ? acks.orders : acks.cancels).add(Number(id));
      if (++acked === killAfter) child.kill('SIGKILL');
    });
    child.on('error', reject);
    child.on('exit', (_code, signal) =>
      signal === 'SIGKILL' ? resolve() : reject(new Error(`worker exited without being killed (${_code})`)),
    );
  });
}

function checkStore(dir: string, acks: { orders: Set<number>; cancels: Set<number> }): void {
  const store = SqliteStore.open({ path: join(dir, 'openspot.db') });
  try {
    for (const id of acks.orders)
      assert.ok(store.getOrder(id as OrderId), `acknowledged order ${id} is missing`);
    for (const id of acks.cancels)
      assert.equal(
        store.getOrder(id as OrderId)?.status,
        'canceled',
        `acknowledged cancel of ${id} is missing`,
      );
    const snapshot = store.loadSnapshot();
    const engine = Engine.restore(snapshot);
    for (const row of engine.audit())
      assert.ok(
        row.ok,
        `conservation broken for ${row.asset}: ${JSON.stringify(row, (_k, v) => (typeof v === 'bigint' ? v.toString() : v))}`,
      );
    // Reservations must equal what open orders hold: a half-applied batch would break this.
    const held = new Map<string, number>();
    for (const o of snapshot.openOrders) {
      const market = snapshot.markets.find((m) => m.id === o.marketId)!;
      const key = `${o.userId}:${o.side === 'buy' ? market.quote : market.base}`;
      held.set(key, (held.get(key) ?? 0) + o.reserved);
      assert.equal(o.status, 'open');
    }
    for (const b of snapshot.balances)
      assert.equal(
        b.reserved,
        held.get(`${b.userId}:${b.asset}`) ?? 0,
        `reservation of ${b.userId}/${b.asset}`,
      );
    // Each order's executed volume equals the sum of its trades.
    const ids = snapshot.openOrders.map((o) => o.id).slice(0, 200);
    const trades = store.tradesOfOrders(ids);
    for (const o of snapshot.openOrders.slice(0, 200)) {
      const sum = (trades.get(o.id) ?? []).reduce((s, t) => s + t.volume, 0);
      assert.equal(sum, o.executed, `order ${o.id} executed volume vs its trades`);
    }
  } finally {
    store.close();
  }
}

test(`SIGKILL during load loses no acknowledged command (${KILLS} kills)`, { timeout: 120_000 }, async () => {
  const dir = mkdtempSync(join(tmpdir(), 'openspot-crash-'));
  try {
    const acks = { orders: new Set<number>(), cancels: new Set<number>() };
    for (let round = 1; round <= KILLS; round++) {
      await runUntilKilled(dir, round, acks);
      checkStore(dir, acks);
    }
    assert.ok(acks.orders.size > 100, 'the worker acknowledged a meaningful number of orders');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
