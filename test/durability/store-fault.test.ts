/**
 * Storage failures injected at the store boundary (no privileges needed; the same behaviour with a
 * real full disk and a read-only file is in full-disk.test.ts): a Store wrapper whose commit (and,
 * when asked, whose snapshot read) throws what SqliteStore throws for SQLITE_FULL / SQLITE_IOERR.
 *
 * What must hold: the failed batch is refused as a whole (503 over HTTP, with Retry-After), the
 * engine is back at the committed state, isWritable() (→ /readyz) is false and stays false until a
 * write succeeds again, commands are refused meanwhile without touching the engine, and the store
 * accepts commands again by itself once the fault is gone — never having received a change set
 * computed from uncommitted state.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, test } from 'node:test';
import Database from 'better-sqlite3';
import { pino } from 'pino';
import { computeSignature } from '../../src/auth/signature.js';
import { CredentialVault, generateApiCredentials } from '../../src/auth/vault.js';
import type {
  Amount,
  AssetCode,
  MarketId,
  Micros,
  OrderId,
  Price,
  UserId,
  Volume,
} from '../../src/domain/types.js';
import { Engine } from '../../src/engine/engine.js';
import { buildHttpApp } from '../../src/http/app.js';
import { seedCatalogue } from '../../src/sequencer/seed.js';
import { type LocalExchange, openExchange } from '../../src/sequencer/sequencer.js';
import { asyncStore } from '../../src/store/async-store.js';
import { toStoreError } from '../../src/store/sqlite/errors.js';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { type Store, StoreUnavailableError, unavailableReason } from '../../src/store/store.js';
import { checkLedger, readCommitted, replayCheck } from '../crash/committed-state.js';

const PROBE_MS = 20;
const sqliteError = (message: string, code: string) =>
  toStoreError(new Database.SqliteError(message, code)) as Error;
const diskFull = () => sqliteError('database or disk is full', 'SQLITE_FULL');
const ioError = () => sqliteError('disk I/O error', 'SQLITE_IOERR_READ');

interface Faults {
  commit?: () => Error;
  snapshot?: () => Error;
  findLedgerEntry?: () => Error;
  commits: number;
}

/** The real store, with failures switched on and off per method. */
function faultyStore(store: SqliteStore, faults: Faults): Store {
  return new Proxy(store, {
    get(target, property) {
      if (property === 'commit')
        return (batch: Parameters<Store['commit']>[0]) => {
          faults.commits += 1;
          if (faults.commit !== undefined) throw faults.commit();
          target.commit(batch);
        };
      if (property === 'loadSnapshot')
        return () => {
          if (faults.snapshot !== undefined) throw faults.snapshot();
          return target.loadSnapshot();
        };
      if (property === 'findLedgerEntry' && faults.findLedgerEntry !== undefined)
        return () => {
          throw faults.findLedgerEntry!();
        };
      const value: unknown = Reflect.get(target, property, target);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}

let dir: string;
let file: string;
let store: SqliteStore;
let faults: Faults;
let exchange: LocalExchange;
let market: MarketId;

const place = (userId: number, side: 'buy' | 'sell', price: number, volume: number) =>
  exchange.submit({
    kind: 'placeOrder',
    userId: userId as UserId,
    marketId: market,
    side,
    type: 'limit',
    price: price as Price,
    volume: volume as Volume,
  });

/** What the exchange serves, in a comparable form. */
const served = (ex: { book: LocalExchange['book']; balances: LocalExchange['balances'] }) =>
  JSON.stringify({
    book: ex.book(market, 0),
    balances: [1, 2, 3].map((u) => ex.balances(u as UserId)),
  });

/** The committed state, through a fresh engine restored from the store. */
function committed(): string {
  const engine = Engine.restore(store.loadSnapshot());
  return JSON.stringify({
    book: {
      sequence: exchange.book(market, 0).sequence,
      bids: engine.levels(market, 'buy'),
      asks: engine.levels(market, 'sell'),
    },
    balances: [1, 2, 3].map((u) =>
      engine.assetList().map((a) => ({ userId: u, asset: a.code, ...engine.balance(u as UserId, a.code) })),
    ),
  });
}

async function until(condition: () => boolean, ms = 2000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('condition not reached in time');
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), 'openspot-fault-'));
  file = join(dir, 'openspot.db');
  store = SqliteStore.open({ path: file });
  faults = { commits: 0 };
  exchange = await openExchange({ store: asyncStore(faultyStore(store, faults)), probeIntervalMs: PROBE_MS });
  await seedCatalogue(exchange, undefined);
  market = exchange.catalogue.marketByName('BTCEUR')!.id;
  for (const userId of [1, 2, 3] as UserId[]) {
    await exchange.submit({
      kind: 'deposit',
      userId,
      asset: 'EUR' as AssetCode,
      amount: 1_000_000_0000 as Amount,
    });
    await exchange.submit({
      kind: 'deposit',
      userId,
      asset: 'BTC' as AssetCode,
      amount: 10_0000000000 as Amount,
    });
  }
  // A resting book: asks of user 1, bids of user 2.
  await place(1, 'sell', 301_000, 5_000_000);
  await place(1, 'sell', 302_000, 5_000_000);
  await place(2, 'buy', 299_000, 5_000_000);
});

afterEach(async () => {
  await exchange.close();
  store.close();
  rmSync(dir, { recursive: true, force: true });
});

test('a failed commit refuses the whole batch, restores the committed state, and recovers by itself', async () => {
  const before = served(exchange);
  faults.commit = diskFull;
  // One batch (same turn): a crossing buy (trades with user 1), a new ask, a cancel.
  const outcomes = await Promise.allSettled([
    place(3, 'buy', 301_000, 3_000_000),
    place(3, 'sell', 305_000, 1_000_000),
    exchange.submit({ kind: 'cancelOrder', userId: 2 as UserId, orderId: 3 as OrderId }),
  ]);
  for (const outcome of outcomes) {
    assert.equal(outcome.status, 'rejected');
    assert.ok(outcome.reason instanceof StoreUnavailableError);
    assert.match(String((outcome.reason as Error).message), /SQLITE_FULL/);
  }
  assert.equal(served(exchange), before, 'the engine is back at the committed state');
  assert.equal(served(exchange), committed());
  assert.ok(exchange.audit().every((row) => row.ok));
  assert.equal(exchange.isWritable(), false);

  // While the fault lasts, commands are refused at once, even one the engine would refuse anyway
  // (a batch that writes nothing must not declare the store writable again).
  const attempts = faults.commits;
  await assert.rejects(
    exchange.submit({ kind: 'cancelOrder', userId: 3 as UserId, orderId: 999 as OrderId }),
    StoreUnavailableError,
  );
  await assert.rejects(place(3, 'buy', 301_000, 1_000_000), StoreUnavailableError);
  assert.equal(exchange.isWritable(), false);
  await new Promise((resolve) => setTimeout(resolve, PROBE_MS * 5));
  assert.ok(faults.commits > attempts, 'the store is probed while unavailable');
  assert.equal(exchange.isWritable(), false);
  assert.equal(served(exchange), before);

  faults.commit = undefined;
  await until(() => exchange.isWritable());
  const result = await place(3, 'buy', 301_000, 3_000_000);
  assert.ok(result.ok);
  assert.ok(result.events.some((e) => e.type === 'trade'));
  assert.equal(served(exchange), committed());
  assert.deepEqual(checkLedger(readCommitted(file)), []);
});

test('readiness comes back by itself, without any command, once the store takes writes again', async () => {
  faults.commit = diskFull;
  await assert.rejects(place(3, 'buy', 301_000, 1_000_000), StoreUnavailableError);
  // Probes keep failing while writes do: not ready, saying why, and commands stay refused.
  const failedAt = faults.commits;
  await until(() => faults.commits >= failedAt + 5);
  assert.equal(exchange.isReady(), false);
  assert.equal(exchange.isWritable(), false);
  assert.equal(unavailableReason(exchange.notReadyCause()), 'disk full');

  // No command is sent from here on: the probe's own write is what brings readiness back.
  faults.commit = undefined;
  const commitsBefore = faults.commits;
  await until(() => exchange.isReady());
  assert.equal(exchange.notReadyCause(), undefined);
  assert.equal(faults.commits, commitsBefore + 1, 'one probe commit, and nothing else, made it ready');
  assert.ok((await place(3, 'buy', 301_000, 1_000_000)).ok);
});

test('when the rebuild fails too, nothing is applied or committed on top of the uncommitted state', async () => {
  faults.commit = diskFull;
  faults.snapshot = ioError;
  await assert.rejects(place(3, 'buy', 301_000, 3_000_000), StoreUnavailableError); // trades, then fails
  // The disk has room again, but the committed state still cannot be read back: the engine still
  // holds the failed trade, so a command applied now would commit a change set built on it.
  faults.commit = undefined;
  await new Promise((resolve) => setTimeout(resolve, PROBE_MS * 3));
  assert.equal(exchange.isWritable(), false);
  await assert.rejects(
    exchange.submit({ kind: 'deposit', userId: 3 as UserId, asset: 'EUR' as AssetCode, amount: 1 as Amount }),
    StoreUnavailableError,
  );
  await assert.rejects(place(2, 'buy', 299_500, 1_000_000), StoreUnavailableError);

  faults.snapshot = undefined;
  await until(() => exchange.isWritable());
  assert.equal(served(exchange), committed(), 'rebuilt from the store before accepting anything');
  assert.ok((await place(2, 'buy', 299_500, 1_000_000)).ok);
  assert.ok(
    (
      await exchange.submit({
        kind: 'deposit',
        userId: 3 as UserId,
        asset: 'EUR' as AssetCode,
        amount: 1 as Amount,
      })
    ).ok,
  );
  const state = readCommitted(file);
  assert.deepEqual(checkLedger(state), []);
  assert.deepEqual(replayCheck(state), []);
  assert.equal(state.trades.length, 0, 'the failed trade never reached the store');
});

test('nothing is read from the store in the middle of a batch: a repeated reference is known in memory', async () => {
  // The reference lookup used to read the store between two commands of a batch; it is now state
  // kept beside the engine, so a store whose reads fail cannot cost a batch its commit.
  const deposit = () =>
    exchange.submit(
      { kind: 'deposit', userId: 3 as UserId, asset: 'EUR' as AssetCode, amount: 5 as Amount },
      { reference: 'ref-1' },
    );
  assert.equal((await deposit()).duplicate, undefined);
  faults.findLedgerEntry = ioError;
  const [placed, first, again] = await Promise.all([
    place(3, 'buy', 301_000, 3_000_000),
    deposit(),
    deposit(),
  ]);
  assert.ok(placed.ok);
  assert.equal(first.duplicate, true, 'a committed reference was not recognised');
  assert.equal(again.duplicate, true);
  assert.equal(first.recorded?.amount, 5);
  faults.findLedgerEntry = undefined;
  assert.ok(exchange.isWritable());
  assert.deepEqual(checkLedger(readCommitted(file)), []);
});

test('over HTTP: 503 with Retry-After while the store refuses writes, 201 once it accepts them again', async () => {
  const vault = new CredentialVault(randomBytes(32));
  const user = store.createUser(null, 1 as Micros);
  const { apiKey, apiSecret } = generateApiCredentials();
  store.createApiKey({
    key: apiKey,
    userId: user.id,
    sealedSecret: vault.seal(apiSecret),
    scopes: ['read', 'trade'],
    createdAt: 1 as Micros,
    revokedAt: null,
  });
  await exchange.submit({
    kind: 'deposit',
    userId: user.id,
    asset: 'EUR' as AssetCode,
    amount: 1_000_000_0000 as Amount,
  });
  const app = buildHttpApp({
    exchange,
    vault,
    logger: pino({ level: 'silent' }),
    config: { ws: { appKey: 'k', appSecret: 's' }, balanceCurrency: 'EUR', bodyLimitBytes: 16_384 },
  });
  await app.ready();
  try {
    const order = async () => {
      const body = JSON.stringify({
        order_direction: 'buy',
        order_type: 'limit',
        pair: 'BTC/EUR',
        volume: '0.01',
        price: '29000.0',
      });
      return app.inject({
        method: 'POST',
        url: '/v1/orders',
        headers: {
          'content-type': 'application/json',
          'x-api-key': apiKey,
          'x-api-sign': computeSignature('POST', body, apiSecret),
        },
        payload: body,
      });
    };
    faults.commit = diskFull;
    for (let i = 0; i < 2; i++) {
      const refused = await order(); // the first fails at commit, the second is refused up front
      assert.equal(refused.statusCode, 503);
      assert.deepEqual(JSON.parse(refused.body), { error: 'Service Unavailable' });
      assert.equal(refused.headers['retry-after'], '1');
    }
    faults.commit = undefined;
    await until(() => exchange.isWritable());
    const accepted = await order();
    assert.equal(accepted.statusCode, 201, accepted.body);
  } finally {
    await app.close();
  }
});

test('an order under an Idempotency-Key whose commit failed left no record: a retry places it, once', async () => {
  const command = {
    kind: 'placeOrder',
    userId: 3 as UserId,
    marketId: market,
    side: 'sell',
    type: 'limit',
    price: 310_000 as Price,
    volume: 1_000_000 as Volume,
  } as const;
  const key = { key: 'k-fault', fingerprint: 'f'.repeat(64) };
  faults.commit = diskFull;
  await assert.rejects(exchange.submitOnce(command, key), StoreUnavailableError);
  assert.equal(store.findIdempotencyRecord(3 as UserId, 'k-fault'), undefined);
  faults.commit = undefined;
  await until(() => exchange.isWritable());
  const [first, retry] = await Promise.all([
    exchange.submitOnce(command, key),
    exchange.submitOnce(command, key),
  ]);
  assert.equal(first?.kind, 'executed');
  assert.equal(retry, first, 'the retry in flight gets the first answer');
  const later = await exchange.submitOnce(command, key);
  const accepted = first?.kind === 'executed' && first.result.ok ? first.result.events[0] : undefined;
  assert.equal(accepted?.type, 'orderAccepted');
  assert.deepEqual(later, {
    kind: 'replayed',
    orderId: accepted?.type === 'orderAccepted' ? accepted.order.id : 0,
  });
  assert.equal(exchange.book(market, 0).asks.length, 3);
  assert.deepEqual(checkLedger(readCommitted(file)), []);
});
