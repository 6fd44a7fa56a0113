/**
 * Deadlines fire when no command comes: the sequencer's timer sends the engine a tick at the next
 * GTD expiry or dead man's switch, also for deadlines loaded from the store at start (a restart,
 * a standby taking over), and it is committed and published like any batch.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import type {
  Amount,
  AssetCode,
  FeeRate,
  MarketId,
  Micros,
  OrderId,
  Price,
  UserId,
  Volume,
} from '../domain/types.js';
import { CancelReason } from '../domain/types.js';
import type { EngineEvent } from '../engine/types.js';
import { asyncStore } from '../store/async-store.js';
import { SqliteStore } from '../store/sqlite/sqlite-store.js';
import { systemClock } from './clock.js';
import { DeadlineTimer } from './deadline-timer.js';
import { type LocalExchange, openExchange } from './sequencer.js';

const USER = 1 as UserId;

async function venue(path: string): Promise<LocalExchange> {
  return openExchange({ store: asyncStore(SqliteStore.open({ path })) });
}

async function seed(exchange: LocalExchange): Promise<MarketId> {
  for (const [code, decimals] of [
    ['BTC', 8],
    ['EUR', 2],
  ] as const)
    await exchange.submit({ kind: 'createAsset', code, name: code, type: 'crypto', decimals });
  await exchange.submit({
    kind: 'createMarket',
    base: 'BTC' as AssetCode,
    quote: 'EUR' as AssetCode,
    pairDecimals: 1,
    lotDecimals: 8,
    ordermin: 1 as Volume,
    makerFee: 0 as FeeRate,
    takerFee: 0 as FeeRate,
  });
  await exchange.submit({
    kind: 'deposit',
    userId: USER,
    asset: 'EUR' as AssetCode,
    amount: 1_000_000 as Amount,
  });
  return exchange.catalogue.marketByName('BTC/EUR')!.id;
}

/** Places a 0.001 BTC buy at 30,000 EUR (30 EUR), with `extra` controls; its id. */
async function place(exchange: LocalExchange, marketId: MarketId, extra: object = {}): Promise<OrderId> {
  const result = await exchange.submit({
    kind: 'placeOrder',
    userId: USER,
    marketId,
    side: 'buy',
    type: 'limit',
    price: 300_000 as Price,
    volume: 100_000 as Volume,
    ...extra,
  });
  assert.ok(result.ok, JSON.stringify(result));
  const accepted = result.events.find((e) => e.type === 'orderAccepted');
  assert.ok(accepted?.type === 'orderAccepted');
  return accepted.order.id;
}

/** Resolves with the first committed event for which `match` holds, or rejects after `ms`. */
function committedEvent(exchange: LocalExchange, match: (e: EngineEvent) => boolean, ms: number) {
  return new Promise<{ event: EngineEvent; at: number }>((resolve, reject) => {
    const timer = setTimeout(() => {
      stop();
      reject(new Error(`no such event within ${ms} ms`));
    }, ms);
    const stop = exchange.onCommitted(
      (batch) => {
        const event = batch.events.find(match);
        if (event === undefined) return;
        clearTimeout(timer);
        stop();
        resolve({ event, at: Date.now() });
      },
      { immediate: true },
    );
  });
}

const doneWith = (id: OrderId, reason: string) => (e: EngineEvent) =>
  e.type === 'orderDone' && e.order.id === id && e.order.reason === reason;

test('a GTD expiry and a switch fire on their own, within a second of their deadlines', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'openspot-deadlines-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const exchange = await venue(join(dir, 'a.db'));
  t.after(() => exchange.close());
  const marketId = await seed(exchange);

  const expireAt = Date.now() * 1000 + 300_000;
  const gtd = await place(exchange, marketId, { timeInForce: 'GTD', expireTime: expireAt as Micros });
  const expired = await committedEvent(exchange, doneWith(gtd, CancelReason.expired), 2000);
  assert.ok(expired.at * 1000 >= expireAt, 'not before its deadline');
  assert.ok(expired.at * 1000 - expireAt < 1_000_000, 'within a second of it');

  const open = await place(exchange, marketId);
  const armed = await exchange.submit({ kind: 'cancelAllAfter', userId: USER, timeout: 400_000 as Micros });
  assert.ok(armed.ok);
  const set = armed.events.find((e) => e.type === 'cancelAllAfterSet');
  assert.ok(set?.type === 'cancelAllAfterSet');
  const fired = await committedEvent(exchange, doneWith(open, CancelReason.deadMansSwitch), 2000);
  assert.ok(fired.at * 1000 - set.triggerTime < 1_000_000, 'within a second of the deadline');
});

test('deadlines loaded from the store at start are armed: a restart does not lose them', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'openspot-deadlines-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const path = join(dir, 'a.db');
  const first = await venue(path);
  const marketId = await seed(first);
  const gtd = await place(first, marketId, {
    timeInForce: 'GTD',
    expireTime: (Date.now() * 1000 + 600_000) as Micros,
    clientOrderId: 'g-1',
  });
  const open = await place(first, marketId);
  assert.ok((await first.submit({ kind: 'cancelAllAfter', userId: USER, timeout: 900_000 as Micros })).ok);
  await first.close();
  await first.store.close();

  const second = await venue(path);
  t.after(() => second.close());
  const expired = committedEvent(second, doneWith(gtd, CancelReason.expired), 3000);
  const fired = committedEvent(second, doneWith(open, CancelReason.deadMansSwitch), 3000);
  await Promise.all([expired, fired]);
  assert.equal((await second.history.getOrder(gtd))?.reason, CancelReason.expired);
  assert.equal((await second.history.findOrderByClientId(USER, 'g-1'))?.id, gtd);
});

test('the timer arms once per deadline, re-arms for another, and stops', async () => {
  const clock = systemClock();
  let rings = 0;
  const timer = new DeadlineTimer(clock, () => rings++);
  timer.set(clock() + 50_000);
  timer.set(clock() + 50_000 + 1); // another deadline: re-armed, still one ring
  await sleep(150);
  assert.equal(rings, 1);
  timer.set(clock() + 50_000);
  timer.stop();
  timer.set(null);
  await sleep(100);
  assert.equal(rings, 1, 'stopped: no ring');
});
