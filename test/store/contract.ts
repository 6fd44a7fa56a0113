/**
 * The store port's contract, run against every adapter (sqlite.contract.test.ts,
 * postgres.contract.test.ts): what the sequencer and the readers rely on, whatever the database.
 * Every call is awaited, so a synchronous adapter (SQLite) and an asynchronous one (PostgreSQL)
 * run the same assertions.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type {
  Amount,
  MarketId,
  Micros,
  OrderId,
  Price,
  TradeId,
  UserId,
  Volume,
} from '../../src/domain/types.js';
import type { Trade } from '../../src/engine/types.js';
import type { AsyncStore } from '../../src/store/ports.js';
import {
  ALICE,
  ASSETS,
  BOB,
  BTC,
  BTCEUR,
  balance,
  batch,
  CAROL,
  CATALOGUE,
  candle,
  ETHEUR,
  EUR,
  ledger,
  MARKETS,
  order,
  ordersOf,
  T0,
  totals,
  trade,
} from '../../src/store/sqlite/test-fixtures.js';
import type { CommandReceipt, CommitBatch, IdempotencyRecord } from '../../src/store/store.js';

/**
 * Each method of the asynchronous ports, as either adapter returns it (a value or its promise).
 * Methods only (optional ones too: `cachedApiKey`): `capabilities` is a property of the
 * asynchronous wrapper, not of the synchronous SqliteStore the contract also runs on.
 */
export type ContractStore = {
  [K in keyof AsyncStore as NonNullable<AsyncStore[K]> extends (...args: never[]) => unknown
    ? K
    : never]: AsyncStore[K] extends (...args: infer A) => Promise<infer R>
    ? (...args: A) => R | Promise<R>
    : AsyncStore[K];
};

export interface StoreHandle {
  readonly store: ContractStore;
  /** Closes the store and opens the same database again (what a restart sees). */
  reopen(): Promise<ContractStore>;
}

interface TestContext {
  after(fn: () => unknown): void;
}

export interface Adapter {
  readonly name: string;
  /** A store on a fresh, empty database, closed and removed when the test ends. */
  open(t: TestContext): Promise<StoreHandle>;
  readonly skip?: string;
}

const ids = (items: Iterable<{ readonly id: number }>): number[] => [...items].map((i) => i.id);
const range = (from: number, to: number): number[] =>
  Array.from({ length: to - from + 1 }, (_, i) => from + i);

/** Rejects (or throws) with an error whose message matches `pattern`. */
async function refuses(operation: () => unknown, pattern?: RegExp): Promise<unknown> {
  let failure: unknown;
  try {
    await operation();
  } catch (error) {
    failure = error;
  }
  assert.ok(failure !== undefined, 'expected the operation to fail');
  if (pattern !== undefined) assert.match(String((failure as Error).message ?? failure), pattern);
  return failure;
}

export function storeContract(adapter: Adapter): void {
  const options = adapter.skip === undefined ? {} : { skip: adapter.skip };

  describe(`Store contract (${adapter.name}): commit and load`, options, () => {
    test('an empty database restores to an empty engine with the default sequences', async (t) => {
      const { store } = await adapter.open(t);
      assert.deepEqual(await store.loadSnapshot(), {
        assets: [],
        markets: [],
        balances: [],
        totals: [],
        openOrders: [],
        sequences: { nextOrderId: 1, nextTradeId: 1, nextMarketId: 1 },
      });
    });

    test('the catalogue (in creation order), balances, totals, open orders (by id) and sequences survive a restart', async (t) => {
      const { store, reopen } = await adapter.open(t);
      const sequences = { nextOrderId: 10, nextTradeId: 4, nextMarketId: 3 };
      await store.commit(
        batch({
          ...CATALOGUE,
          orders: [
            order(7),
            order(2, { userId: BOB, side: 'sell' }),
            order(9, { marketId: ETHEUR }),
            order(4),
            order(5, { feeExcess: 12_345_678 }),
          ],
          balances: [balance(BOB, BTC, 7, 3), balance(ALICE, EUR, 100, 20)],
          totals: [totals(EUR, 120), totals(BTC, 10, 0)],
          sequences,
        }),
      );
      const canceled = order(4, {
        status: 'canceled',
        reason: 'canceled by user',
        closeTime: (T0 + 99) as Micros,
      });
      await store.commit(
        batch({
          orders: [canceled, order(5, { executed: 10 as Volume, fee: 1 as Amount, feeExcess: 99_999_999 })],
          balances: [balance(ALICE, EUR, 120, 0)],
          totals: [totals(EUR, 120, 5)],
          sequences: { ...sequences, nextTradeId: 5 },
        }),
      );
      const reopened = await reopen();
      const snapshot = await reopened.loadSnapshot();
      assert.deepEqual(snapshot.assets, ASSETS);
      assert.deepEqual(snapshot.markets, MARKETS);
      assert.deepEqual(snapshot.balances, [balance(ALICE, EUR, 120, 0), balance(BOB, BTC, 7, 3)]);
      assert.deepEqual(snapshot.totals, [totals(BTC, 10, 0), totals(EUR, 120, 5)]);
      assert.deepEqual(snapshot.openOrders, [
        order(2, { userId: BOB, side: 'sell' }),
        order(5, { executed: 10 as Volume, fee: 1 as Amount, feeExcess: 99_999_999 }),
        order(7),
        order(9, { marketId: ETHEUR }),
      ]);
      assert.deepEqual(snapshot.sequences, { nextOrderId: 10, nextTradeId: 5, nextMarketId: 3 });
      assert.deepEqual(await reopened.getOrder(4 as OrderId), canceled);
      assert.equal(await reopened.getOrder(404 as OrderId), undefined);
    });

    test("order controls, amends and dead man's switches survive a restart; client ids are found per user", async (t) => {
      const { store, reopen } = await adapter.open(t);
      const gtd = order(1, {
        timeInForce: 'GTD',
        expireTime: (T0 + 5_000_000) as Micros,
        postOnly: true,
        clientOrderId: 'quote-1',
        stp: 'decrement',
      });
      const plain = order(2, { userId: BOB });
      await store.commit({
        ...batch({ ...CATALOGUE, orders: [gtd, plain] }),
        changes: {
          ...batch({ orders: [gtd, plain] }).changes,
          switches: [
            { userId: ALICE, triggerTime: (T0 + 60_000_000) as Micros },
            { userId: BOB, triggerTime: (T0 + 1) as Micros },
          ],
        },
      });
      // An amend changes price, volume and client id in place; Bob's switch is disarmed.
      // A new price sends the order to the back of its level: its priority follows every id so far.
      const amended = {
        ...gtd,
        price: 400_000 as Price,
        volume: 50_000_000 as Volume,
        clientOrderId: 'quote-2',
        priority: 4,
      };
      const old = order(3, {
        clientOrderId: 'quote-2',
        status: 'canceled',
        reason: 'expired',
        closeTime: T0,
      });
      await store.commit({
        ...batch({ orders: [amended, old] }),
        changes: {
          ...batch({ orders: [amended, old] }).changes,
          switches: [{ userId: BOB, triggerTime: 0 as Micros }],
        },
      });
      const reopened = await reopen();
      const snapshot = await reopened.loadSnapshot();
      // In time priority: the amended order (priority 4) after Bob's order 2.
      assert.deepEqual(snapshot.openOrders, [plain, amended]);
      assert.deepEqual(snapshot.switches, [{ userId: ALICE, triggerTime: T0 + 60_000_000 }]);
      assert.deepEqual(
        await reopened.getOrder(2 as OrderId),
        plain,
        'an order without controls is the same state',
      );
      // The newest of the user's orders with that id, open or not; none of another user's.
      assert.deepEqual(await reopened.findOrderByClientId(ALICE, 'quote-2'), old);
      assert.equal(await reopened.findOrderByClientId(BOB, 'quote-2'), undefined);
      assert.equal(await reopened.findOrderByClientId(ALICE, 'quote-1'), undefined);
    });

    test("conditional orders (waiting, trailing, fired) and each market's last trade price survive a restart", async (t) => {
      const { store, reopen } = await adapter.open(t);
      const stopLimit = order(1, {
        side: 'sell',
        type: 'stop-loss-limit',
        price: 579_000 as Price,
        triggerPrice: 580_000 as Price,
        reserved: 100_000_000 as Amount,
      });
      const trailing = order(2, {
        side: 'sell',
        type: 'trailing-stop',
        price: 0 as Price,
        triggerPrice: 580_125 as Price,
        trailingOffset: { unit: 'bps', amount: 250 },
        trailingBest: 595_000 as Price,
        reserved: 100_000_000 as Amount,
      });
      const noTradeYet = order(3, {
        userId: BOB,
        type: 'trailing-stop',
        marketId: ETHEUR,
        price: 0 as Price,
        trailingOffset: { unit: 'ticks', amount: 1_505 },
        clientOrderId: 'trail-1',
      });
      const takeProfit = order(4, { type: 'take-profit', price: 0 as Price, triggerPrice: 450_000 as Price });
      // Trades of both markets, the highest id last on neither side of the list: the last price
      // is the price of each market's newest trade.
      const trades = [
        trade(1, { price: 600_000 as Price }),
        trade(3, { price: 610_000 as Price }),
        trade(2, { marketId: ETHEUR, price: 30_000 as Price }),
      ];
      await store.commit(
        batch({
          ...CATALOGUE,
          trades,
          orders: [...ordersOf(trades), stopLimit, trailing, noTradeYet, takeProfit],
        }),
      );
      // Later states: the trailing stop follows a new best price; the stop-loss-limit fires and
      // rests as a limit order; the take-profit fires, trades and closes.
      const moved = { ...trailing, triggerPrice: 585_000 as Price, trailingBest: 600_000 as Price };
      const fired = { ...stopLimit, triggered: true as const };
      const done = {
        ...takeProfit,
        triggered: true as const,
        status: 'closed' as const,
        executed: takeProfit.volume,
        closeTime: (T0 + 50) as Micros,
      };
      await store.commit(batch({ orders: [moved, fired, done] }));
      const reopened = await reopen();
      const snapshot = await reopened.loadSnapshot();
      assert.deepEqual(snapshot.openOrders, [fired, moved, noTradeYet]);
      assert.deepEqual(snapshot.lastPrices, [
        { marketId: BTCEUR, price: 610_000 },
        { marketId: ETHEUR, price: 30_000 },
      ]);
      assert.deepEqual(await reopened.getOrder(4 as OrderId), done);
      assert.deepEqual(await reopened.findOrderByClientId(BOB, 'trail-1'), noTradeYet);
    });

    test('money survives the round trip exactly: amounts past 10^15 units, candle sums past 2^64', async (t) => {
      const { store, reopen } = await adapter.open(t);
      const big = 9_007_199_254_740_991; // 2^53 - 1, the largest amount the engine holds exactly
      const quadrillion = 1_234_567_890_123_457;
      const whale = trade(1, {
        price: quadrillion as Price,
        volume: big as Volume,
        cost: big as Amount,
        takerFee: 1_000_000_000_000_001 as Amount,
        makerFee: 999_999_999_999_999 as Amount,
        time: (T0 + 1) as Micros,
      });
      const sums = { volume: 2n ** 64n + 7n, quoteVolume: 10n ** 40n + 3n, notional: 2n ** 106n + 1n };
      await store.commit(
        batch({
          ...CATALOGUE,
          trades: [whale],
          orders: [
            ...ordersOf([whale]),
            order(3, { price: quadrillion as Price, volume: big as Volume, reserved: big as Amount }),
          ],
          balances: [balance(ALICE, BTC, big, quadrillion), balance(BOB, EUR, 1, big - 1)],
          totals: [totals(BTC, big, quadrillion)],
          ledger: [ledger({ asset: BTC, amount: big as Amount, reference: 'whale' })],
          candles: [candle(60, { ...sums, open: quadrillion as Price, high: quadrillion as Price })],
        }),
      );
      const reopened = await reopen();
      const snapshot = await reopened.loadSnapshot();
      assert.deepEqual(snapshot.balances, [
        balance(ALICE, BTC, big, quadrillion),
        balance(BOB, EUR, 1, big - 1),
      ]);
      assert.deepEqual(snapshot.totals, [totals(BTC, big, quadrillion)]);
      assert.deepEqual(snapshot.openOrders, [
        order(3, { price: quadrillion as Price, volume: big as Volume, reserved: big as Amount }),
      ]);
      assert.deepEqual(await reopened.listPublicTrades({ marketId: BTCEUR }), [whale]);
      assert.deepEqual((await reopened.findLedgerEntry(ALICE, 'deposit', 'whale'))?.amount, big);
      assert.deepEqual(await reopened.listCandles(BTCEUR, 1, 0, 10), [
        candle(60, { ...sums, open: quadrillion as Price, high: quadrillion as Price }),
      ]);
    });

    test('candles are upserted by (market, interval, start); trades and ledger entries appended', async (t) => {
      const { store } = await adapter.open(t);
      const trades = [trade(1), trade(2, { takerSide: 'sell', takerType: 'market' })];
      await store.commit(
        batch({
          ...CATALOGUE,
          trades,
          orders: ordersOf(trades),
          candles: [candle(60), candle(120), candle(60, { interval: 5 })],
          ledger: [ledger({ reference: 'dep-1' })],
        }),
      );
      await store.commit(batch({ candles: [candle(120, { close: 15 as Price, count: 3 })] }));
      assert.deepEqual(await store.listPublicTrades({ marketId: BTCEUR }), [...trades].reverse());
      assert.deepEqual(await store.listCandles(BTCEUR, 1, 0, 10), [
        candle(60),
        candle(120, { close: 15 as Price, count: 3 }),
      ]);
      assert.deepEqual(await store.listCandles(BTCEUR, 1, 60, 10), [
        candle(120, { close: 15 as Price, count: 3 }),
      ]);
      assert.deepEqual(await store.listCandles(BTCEUR, 1, 0, 1), [
        candle(120, { close: 15 as Price, count: 3 }),
      ]);
      // Paging forward keeps the oldest after `since`, still oldest first.
      assert.deepEqual(await store.listCandles(BTCEUR, 1, 0, 1, 'oldest'), [candle(60)]);
      assert.deepEqual(await store.listCandles(BTCEUR, 1, 60, 1, 'oldest'), [
        candle(120, { close: 15 as Price, count: 3 }),
      ]);
      assert.deepEqual(await store.latestCandles(BTCEUR), [
        candle(120, { close: 15 as Price, count: 3 }),
        candle(60, { interval: 5 }),
      ]);
      assert.deepEqual(await store.latestCandles(ETHEUR), []);
      assert.deepEqual(
        await store.findLedgerEntry(ALICE, 'deposit', 'dep-1'),
        ledger({ reference: 'dep-1' }),
      );
    });

    test('an empty batch commits (the sequencer probes the store with one) and changes only the sequences', async (t) => {
      const { store } = await adapter.open(t);
      await store.commit(batch({ ...CATALOGUE, orders: [order(1)] }));
      const before = await store.loadSnapshot();
      await store.commit(batch({ sequences: before.sequences }));
      assert.deepEqual(await store.loadSnapshot(), before);
    });

    test('a batch of a few hundred orders and trades commits in one go', async (t) => {
      const { store } = await adapter.open(t);
      await store.commit(batch(CATALOGUE));
      const trades = range(1, 400).map((i) => trade(i));
      await store.commit(batch({ trades, orders: ordersOf(trades), balances: [balance(ALICE, EUR, 1)] }));
      assert.equal(await store.countUserTrades({ userId: ALICE }), 400);
      assert.equal(await store.countOrders({ userId: BOB, status: 'done' }), 400);
    });
  });

  describe(`Store contract (${adapter.name}): book sequences`, options, () => {
    test('none on an empty database (every market at 0)', async (t) => {
      const { store } = await adapter.open(t);
      assert.deepEqual(await store.loadBookSequences(), []);
    });

    test('written with their batch, only for the markets it names, and kept across a restart', async (t) => {
      const { store, reopen } = await adapter.open(t);
      await store.commit({
        ...batch({ ...CATALOGUE, orders: [order(1)] }),
        bookSequences: [
          { marketId: ETHEUR, sequence: 2 },
          { marketId: BTCEUR, sequence: 7 },
        ],
      });
      await store.commit({
        ...batch({ orders: [order(2)] }),
        bookSequences: [{ marketId: BTCEUR, sequence: 9 }],
      });
      // A batch that changed no book (a deposit, the probe's empty commit) leaves them all.
      await store.commit(batch({ balances: [balance(ALICE, EUR, 5)] }));
      const expected = [
        { marketId: BTCEUR, sequence: 9 },
        { marketId: ETHEUR, sequence: 2 },
      ];
      assert.deepEqual(await store.loadBookSequences(), expected);
      const reopened = await reopen();
      assert.deepEqual(await reopened.loadBookSequences(), expected, 'durable, by market id');
      // Past 2^32 (a busy market over years): exact.
      await reopened.commit({
        ...batch({ orders: [order(3)] }),
        bookSequences: [{ marketId: ETHEUR, sequence: 2 ** 40 + 1 }],
      });
      assert.deepEqual(await reopened.loadBookSequences(), [
        expected[0],
        { marketId: ETHEUR, sequence: 2 ** 40 + 1 },
      ]);
    });

    test('a negative sequence is refused with the whole batch', async (t) => {
      const { store } = await adapter.open(t);
      await store.commit(batch(CATALOGUE));
      await refuses(() =>
        store.commit({
          ...batch({ orders: [order(1)] }),
          bookSequences: [{ marketId: BTCEUR, sequence: -1 }],
        }),
      );
      assert.equal(await store.getOrder(1 as OrderId), undefined);
      assert.deepEqual(await store.loadBookSequences(), []);
    });
  });

  describe(`Store contract (${adapter.name}): a failed commit changes nothing`, options, () => {
    test('a batch that violates a constraint half-way leaves no row of it, and the store stays usable', async (t) => {
      const { store } = await adapter.open(t);
      await store.commit(batch({ ...CATALOGUE, orders: [order(1)], balances: [balance(ALICE, EUR, 10)] }));
      const before = await store.loadSnapshot();
      const trades = [trade(1), trade(2)];
      const failing: CommitBatch = {
        ...batch({
          trades,
          orders: [...ordersOf(trades), order(1, { status: 'closed' }), order(50)],
          // A negative balance: refused by a CHECK, whatever order the adapter writes in.
          balances: [balance(ALICE, EUR, 0), balance(BOB, EUR, -1)],
          totals: [totals(EUR, 10)],
          ledger: [ledger({ reference: 'r1' })],
          candles: [candle(60)],
          sequences: { nextOrderId: 51, nextTradeId: 3, nextMarketId: 3 },
        }),
        idempotencyKeys: [
          { userId: ALICE, key: 'k', fingerprint: 'f'.repeat(64), orderId: 50 as OrderId, time: T0 },
        ],
        bookSequences: [{ marketId: BTCEUR, sequence: 5 }],
        commandReceipts: [{ id: 'c'.repeat(22), expires: 5_000, reply: '{"answer":1}' }],
      };
      await refuses(() => store.commit(failing));
      assert.deepEqual(await store.loadCommandReceipts(0), []);
      assert.deepEqual(await store.loadSnapshot(), before);
      assert.deepEqual(await store.loadBookSequences(), []);
      assert.deepEqual(await store.listPublicTrades({ marketId: BTCEUR }), []);
      assert.equal(await store.findLedgerEntry(ALICE, 'deposit', 'r1'), undefined);
      assert.equal(await store.findIdempotencyRecord(ALICE, 'k'), undefined);
      assert.deepEqual(await store.listCandles(BTCEUR, 1, 0, 10), []);
      assert.equal(await store.getOrder(50 as OrderId), undefined);
      // Usable: the same batch without the bad row commits.
      await store.commit({ ...failing, changes: { ...failing.changes, balances: [balance(ALICE, EUR, 0)] } });
      assert.equal((await store.getOrder(1 as OrderId))?.status, 'closed');
    });

    test('a market of an unknown asset is refused (foreign key) and nothing is written', async (t) => {
      const { store } = await adapter.open(t);
      await refuses(() => store.commit(batch({ markets: MARKETS, balances: [balance(ALICE, EUR, 1)] })));
      const snapshot = await store.loadSnapshot();
      assert.deepEqual([snapshot.markets, snapshot.balances], [[], []]);
    });

    test('a fractional amount is refused, never stored as a float', async (t) => {
      const { store } = await adapter.open(t);
      await store.commit(batch(CATALOGUE));
      await refuses(() => store.commit(batch({ balances: [balance(ALICE, EUR, 1.5)] })));
      assert.deepEqual((await store.loadSnapshot()).balances, []);
    });
  });

  describe(`Store contract (${adapter.name}): deposit references`, options, () => {
    test('a reused reference fails the whole batch; the same reference is free for another user, asset or kind', async (t) => {
      const { store } = await adapter.open(t);
      await store.commit(batch({ ...CATALOGUE, ledger: [ledger({ reference: 'r1' }), ledger(), ledger()] }));
      await refuses(() =>
        store.commit(batch({ balances: [balance(ALICE, EUR, 1)], ledger: [ledger({ reference: 'r1' })] })),
      );
      assert.deepEqual((await store.loadSnapshot()).balances, []);
      await store.commit(
        batch({
          ledger: [
            ledger({ reference: 'r1', userId: BOB }),
            ledger({ reference: 'r1', asset: BTC, time: (T0 + 5) as Micros }),
            ledger({ reference: 'r1', kind: 'withdrawal' }),
          ],
        }),
      );
      assert.equal((await store.findLedgerEntry(BOB, 'deposit', 'r1'))?.userId, BOB);
      // Whatever the asset, the oldest entry under the reference.
      assert.deepEqual(await store.findLedgerEntry(ALICE, 'deposit', 'r1'), ledger({ reference: 'r1' }));
      assert.equal(await store.findLedgerEntry(CAROL, 'deposit', 'r1'), undefined);
      assert.deepEqual(await store.loadLedgerReferences(), [
        ledger({ reference: 'r1' }),
        ledger({ reference: 'r1', userId: BOB }),
        ledger({ reference: 'r1', kind: 'withdrawal' }),
      ]);
    });
  });

  describe(`Store contract (${adapter.name}): idempotency keys`, options, () => {
    const record = (key: string, time: number, orderId = 1): IdempotencyRecord => ({
      userId: ALICE,
      key,
      fingerprint: 'a'.repeat(64),
      orderId: orderId as OrderId,
      time: time as Micros,
    });

    test('are written with the batch, found per user and key, replaced under the same key, kept across a restart', async (t) => {
      const { store, reopen } = await adapter.open(t);
      await store.commit({ ...batch(CATALOGUE), idempotencyKeys: [record('k1', 10), record('k2', 11, 2)] });
      assert.deepEqual(await store.findIdempotencyRecord(ALICE, 'k1'), record('k1', 10));
      assert.equal(await store.findIdempotencyRecord(BOB, 'k1'), undefined);
      await store.commit({ ...batch({}), idempotencyKeys: [record('k1', 50, 7)] });
      assert.deepEqual(await store.findIdempotencyRecord(ALICE, 'k1'), record('k1', 50, 7));
      const reopened = await reopen();
      assert.deepEqual(await reopened.findIdempotencyRecord(ALICE, 'k2'), record('k2', 11, 2));
    });

    test('older than the expiry are pruned at commit, at most 1000 per commit, oldest first', async (t) => {
      const { store } = await adapter.open(t);
      const many = Array.from({ length: 1500 }, (_, i) => record(`k${i}`, i));
      await store.commit({ ...batch(CATALOGUE), idempotencyKeys: many });
      await store.commit({ ...batch({}), idempotencyExpiredBefore: 1400 as Micros });
      assert.equal(await store.findIdempotencyRecord(ALICE, 'k999'), undefined);
      assert.deepEqual(await store.findIdempotencyRecord(ALICE, 'k1000'), record('k1000', 1000));
      // A key rewritten by the pruning commit itself is kept, with its new record.
      await store.commit({
        ...batch({}),
        idempotencyKeys: [record('k1001', 2000, 9)],
        idempotencyExpiredBefore: 1400 as Micros,
      });
      assert.equal(await store.findIdempotencyRecord(ALICE, 'k1399'), undefined);
      assert.deepEqual(await store.findIdempotencyRecord(ALICE, 'k1400'), record('k1400', 1400));
      assert.deepEqual(await store.findIdempotencyRecord(ALICE, 'k1001'), record('k1001', 2000, 9));
    });
  });

  describe(`Store contract (${adapter.name}): command receipts`, options, () => {
    const receipt = (n: number, expires: number): CommandReceipt => ({
      id: `id${String(n).padStart(20, '0')}`,
      expires,
      reply: `{"v":2,"t":"reply","b":{"n":"${n}","text":"é ✓"}}`,
    });

    test('are written with the batch, loaded unexpired soonest first, kept across a restart', async (t) => {
      const { store, reopen } = await adapter.open(t);
      await store.commit({ ...batch(CATALOGUE), commandReceipts: [receipt(2, 2_000), receipt(1, 1_000)] });
      await store.commit({ ...batch({}), commandReceipts: [receipt(3, 3_000)] });
      assert.deepEqual(await store.loadCommandReceipts(0), [
        receipt(1, 1_000),
        receipt(2, 2_000),
        receipt(3, 3_000),
      ]);
      assert.deepEqual(await store.loadCommandReceipts(2_000), [receipt(2, 2_000), receipt(3, 3_000)]);
      const reopened = await reopen();
      assert.deepEqual(await reopened.loadCommandReceipts(2_001), [receipt(3, 3_000)]);
    });

    test('expired before the bound are pruned at commit, at most 1000 per commit, soonest expiry first', async (t) => {
      const { store } = await adapter.open(t);
      const many = Array.from({ length: 1500 }, (_, i) => receipt(i, 10_000 + i));
      await store.commit({ ...batch(CATALOGUE), commandReceipts: many });
      await store.commit({
        ...batch({}),
        commandReceipts: [receipt(9999, 99_000)],
        commandReceiptsExpiredBefore: 11_400,
      });
      const left = await store.loadCommandReceipts(0);
      assert.equal(left.length, 501);
      assert.deepEqual(left[0], receipt(1000, 11_000));
      assert.deepEqual(left.at(-1), receipt(9999, 99_000));
      await store.commit({ ...batch({}), commandReceiptsExpiredBefore: 11_400 });
      assert.deepEqual((await store.loadCommandReceipts(0))[0], receipt(1400, 11_400));
    });
  });

  describe(`Store contract (${adapter.name}): order history`, options, () => {
    const statusOf = (id: number) => (id % 3 === 0 ? 'open' : id % 3 === 1 ? 'closed' : 'canceled');
    const marketOf = (id: number): MarketId => (id % 2 === 0 ? BTCEUR : ETHEUR);
    const aliceIds = range(1, 300);
    const expected = (status: 'open' | 'done', marketId?: MarketId): number[] =>
      aliceIds
        .filter((id) => (status === 'open') === (statusOf(id) === 'open'))
        .filter((id) => marketId === undefined || marketOf(id) === marketId)
        .reverse();

    test('lists newest first per status and market, pages by limit and offset, counts match', async (t) => {
      const { store } = await adapter.open(t);
      await store.commit(
        batch({
          ...CATALOGUE,
          orders: [
            ...aliceIds.map((id) => order(id, { status: statusOf(id), marketId: marketOf(id) })),
            order(301, { userId: BOB }),
            order(302, { userId: BOB, status: 'closed' }),
          ],
        }),
      );
      for (const status of ['open', 'done'] as const)
        for (const marketId of [undefined, BTCEUR, ETHEUR]) {
          const filter = { userId: ALICE, status, marketId };
          assert.deepEqual(
            ids(await store.listOrders(filter)),
            expected(status, marketId),
            `${status} ${marketId}`,
          );
          assert.equal(await store.countOrders(filter), expected(status, marketId).length);
        }
      const done = expected('done');
      assert.deepEqual(
        ids(await store.listOrders({ userId: ALICE, status: 'done' }, { limit: 7, offset: 0 })),
        done.slice(0, 7),
      );
      assert.deepEqual(
        ids(await store.listOrders({ userId: ALICE, status: 'done' }, { limit: 50, offset: 170 })),
        done.slice(170, 220),
      );
      assert.deepEqual(
        ids(await store.listOrders({ userId: ALICE, status: 'done' }, { limit: 0, offset: 0 })),
        [],
      );
      // Keyset continuation (an unpaginated list streamed in batches): below an id, by market too.
      const below = done[40]!;
      assert.deepEqual(
        ids(
          await store.listOrders({ userId: ALICE, status: 'done', beforeId: below }, { limit: 9, offset: 0 }),
        ),
        done.slice(41, 50),
      );
      assert.deepEqual(
        ids(await store.listOrders({ userId: ALICE, status: 'done', marketId: ETHEUR, beforeId: below })),
        expected('done', ETHEUR).filter((id) => id < below),
      );
      assert.deepEqual(ids(await store.listOrders({ userId: ALICE, status: 'done', beforeId: 1 })), []);
      assert.deepEqual(ids(await store.listOrders({ userId: BOB, status: 'open' })), [301]);
      assert.equal(await store.countOrders({ userId: CAROL, status: 'done' }), 0);
      assert.deepEqual([...(await store.listOrders({ userId: CAROL, status: 'done' }))], []);
      await refuses(() => store.listOrders({ userId: ALICE, status: 'open' }, { limit: -1, offset: 0 }));
      await refuses(() => store.listOrders({ userId: ALICE, status: 'open' }, { limit: 1, offset: 1.5 }));
    });
  });

  describe(`Store contract (${adapter.name}): trade history`, options, () => {
    // Alice takes the even trades and makes the odd ones; every third is on ETHEUR.
    const tradeOf = (id: number): Trade => {
      const aliceTakes = id % 2 === 0;
      return trade(id, {
        marketId: id % 3 === 0 ? ETHEUR : BTCEUR,
        takerUserId: aliceTakes ? ALICE : BOB,
        makerUserId: aliceTakes ? BOB : ALICE,
        takerOrderId: (10_000 + id) as OrderId,
        makerOrderId: (20_000 + Math.ceil(id / 5)) as OrderId,
        takerSide: id % 4 < 2 ? 'buy' : 'sell',
        takerFee: (id * 3) as Amount,
        makerFee: id as Amount,
      });
    };
    const trades = range(1, 120).map(tradeOf);

    test('user trades newest first from the user side, by market, paged; counts; single trade; per order; public', async (t) => {
      const { store } = await adapter.open(t);
      await store.commit(batch({ ...CATALOGUE, trades, orders: ordersOf(trades) }));
      const all = [...trades].reverse();

      const alice = [...(await store.listUserTrades({ userId: ALICE }))];
      assert.deepEqual(
        alice.map((u) => u.trade.id),
        all.map((x) => x.id),
      );
      const t7 = alice.find((u) => u.trade.id === 7);
      assert.deepEqual(t7 && { orderId: t7.orderId, side: t7.side, fee: t7.fee, taker: t7.taker }, {
        orderId: 20_002,
        side: 'buy',
        fee: 7,
        taker: false,
      });
      assert.equal(await store.countUserTrades({ userId: ALICE }), 120);

      const eth = all.filter((x) => x.marketId === ETHEUR).map((x) => x.id);
      assert.deepEqual(
        [
          ...(await store.listUserTrades({ userId: ALICE, marketIds: [ETHEUR] }, { limit: 5, offset: 3 })),
        ].map((u) => u.trade.id),
        eth.slice(3, 8),
      );
      assert.equal(await store.countUserTrades({ userId: ALICE, marketIds: [ETHEUR] }), eth.length);
      assert.equal(await store.countUserTrades({ userId: ALICE, marketIds: [] }), 0);
      assert.deepEqual([...(await store.listUserTrades({ userId: ALICE, marketIds: [] }))], []);
      assert.deepEqual(
        [...(await store.listUserTrades({ userId: ALICE }, { limit: 4, offset: 100 }))].map(
          (u) => u.trade.id,
        ),
        all.slice(100, 104).map((x) => x.id),
      );

      // Keyset continuation: below a trade id, with and without a market filter.
      assert.deepEqual(
        [...(await store.listUserTrades({ userId: ALICE, beforeId: 50 }, { limit: 6, offset: 0 }))].map(
          (u) => u.trade.id,
        ),
        [49, 48, 47, 46, 45, 44],
      );
      assert.deepEqual(
        [...(await store.listUserTrades({ userId: ALICE, marketIds: [ETHEUR], beforeId: 13 }))].map(
          (u) => u.trade.id,
        ),
        [12, 9, 6, 3],
      );

      const asTaker = await store.getUserTrade(ALICE, 8 as TradeId);
      assert.deepEqual(asTaker && [asTaker.taker, asTaker.orderId, asTaker.fee], [true, 10_008, 24]);
      assert.equal((await store.getUserTrade(BOB, 8 as TradeId))?.taker, false);
      assert.equal(await store.getUserTrade(CAROL, 8 as TradeId), undefined);
      assert.equal(await store.getUserTrade(ALICE, 999 as TradeId), undefined);

      const byOrder = await store.tradesOfOrders([20_001, 10_002, 10_002, 77] as OrderId[]);
      assert.deepEqual([...byOrder.keys()], [20_001, 10_002, 77]);
      assert.deepEqual(ids(byOrder.get(20_001 as OrderId) ?? []), [1, 2, 3, 4, 5]);
      assert.deepEqual(ids(byOrder.get(10_002 as OrderId) ?? []), [2]);
      assert.deepEqual(byOrder.get(77 as OrderId), []);
      assert.equal((await store.tradesOfOrders([])).size, 0);

      const btc = all.filter((x) => x.marketId === BTCEUR);
      assert.deepEqual(await store.listPublicTrades({ marketId: BTCEUR }), btc);
      assert.deepEqual(await store.listPublicTrades({ marketId: BTCEUR, limit: 3 }), btc.slice(0, 3));
      assert.deepEqual(
        await store.listPublicTrades({ marketId: BTCEUR, takerSide: 'sell' }),
        btc.filter((x) => x.takerSide === 'sell'),
      );
      const since = trades[99]?.time as Micros;
      assert.deepEqual(
        await store.listPublicTrades({ marketId: BTCEUR, since }),
        btc.filter((x) => x.time >= since),
      );
      const fromSince = [...btc.filter((x) => x.time >= since)].reverse();
      assert.deepEqual(
        await store.listPublicTrades({ marketId: BTCEUR, since, limit: 3, oldestFirst: true }),
        fromSince.slice(0, 3),
      );
      assert.deepEqual(
        await store.listPublicTrades({ marketId: BTCEUR, limit: 2, oldestFirst: true }),
        [...btc].reverse().slice(0, 2),
      );
      assert.deepEqual(await store.listPublicTrades({ marketId: 9 as MarketId }), []);
    });
  });

  describe(`Store contract (${adapter.name}): users, API keys, nonces`, options, () => {
    test('users: created with increasing ids, found, listed; emails unique', async (t) => {
      const { store } = await adapter.open(t);
      const a = await store.createUser('a@example.com', T0);
      const b = await store.createUser(null, (T0 + 1) as Micros);
      const c = await store.createUser(null, (T0 + 2) as Micros);
      assert.ok(a.id < b.id && b.id < c.id);
      assert.deepEqual(await store.getUser(a.id), { id: a.id, email: 'a@example.com', createdAt: T0 });
      assert.equal(await store.getUser(999 as UserId), undefined);
      assert.deepEqual(await store.listUsers(), [a, b, c]);
      await refuses(() => store.createUser('a@example.com', T0));
    });

    test('API keys: created with their policy, read, listed in creation order, revoked once', async (t) => {
      const { store, reopen } = await adapter.open(t);
      const user = await store.createUser(null, T0);
      const base = { userId: user.id, sealedSecret: 'sealed', createdAt: T0, revokedAt: null };
      await store.createApiKey({ ...base, key: 'k2', scopes: ['read'] });
      await store.createApiKey({
        ...base,
        key: 'k1',
        scopes: ['read', 'trade'],
        ipAllowlist: ['10.0.0.0/8', '2001:db8::1'],
        nonceRequired: true,
      });
      assert.deepEqual(await store.getApiKey('k2'), {
        ...base,
        key: 'k2',
        scopes: ['read'],
        ipAllowlist: null,
        nonceRequired: false,
      });
      assert.equal(await store.getApiKey('nope'), undefined);
      assert.deepEqual(
        (await store.listApiKeys(user.id)).map((k) => k.key),
        ['k2', 'k1'],
      );
      assert.equal(await store.revokeApiKey('k1', (T0 + 5) as Micros), true);
      assert.equal(await store.revokeApiKey('k1', (T0 + 9) as Micros), false);
      assert.equal(await store.revokeApiKey('nope', (T0 + 9) as Micros), false);
      const reopened = await reopen();
      assert.deepEqual(await reopened.getApiKey('k1'), {
        ...base,
        key: 'k1',
        scopes: ['read', 'trade'],
        ipAllowlist: ['10.0.0.0/8', '2001:db8::1'],
        nonceRequired: true,
        revokedAt: T0 + 5,
      });
      assert.deepEqual(await reopened.listApiKeys(999 as UserId), []);
    });

    test('a key read before its revocation reads as revoked right after it', async (t) => {
      const { store } = await adapter.open(t);
      const user = await store.createUser(null, T0);
      await store.createApiKey({
        key: 'k',
        userId: user.id,
        sealedSecret: 's',
        scopes: ['read'],
        createdAt: T0,
        revokedAt: null,
      });
      assert.equal((await store.getApiKey('k'))?.revokedAt, null);
      await store.revokeApiKey('k', (T0 + 1) as Micros);
      assert.equal((await store.getApiKey('k'))?.revokedAt, T0 + 1);
    });

    test('cachedApiKey answers without a read only what getApiKey would answer, never a revoked key as active', async (t) => {
      const { store } = await adapter.open(t);
      const user = await store.createUser(null, T0);
      await store.createApiKey({
        key: 'k',
        userId: user.id,
        sealedSecret: 's',
        scopes: ['read', 'trade'],
        createdAt: T0,
        revokedAt: null,
      });
      if (store.cachedApiKey === undefined) {
        t.skip('this adapter keeps no API key cache');
        return;
      }
      const read = await store.getApiKey('k');
      const cached = store.cachedApiKey('k');
      // Held after a read (authentication then needs no promise); when held, it is the same record.
      assert.notEqual(cached, undefined);
      assert.deepEqual(cached, read);
      assert.equal(store.cachedApiKey('unknown'), undefined);
      await store.revokeApiKey('k', (T0 + 1) as Micros);
      // Dropped by the revocation: a caller falls back to getApiKey, which reads the revocation.
      const after = store.cachedApiKey('k');
      assert.ok(after === undefined || after.revokedAt === T0 + 1, 'a revoked key is not held as active');
      assert.equal((await store.getApiKey('k'))?.revokedAt, T0 + 1);
    });

    test('lookups by a key or reference holding a NUL character find nothing (PostgreSQL text cannot hold one)', async (t) => {
      const { store } = await adapter.open(t);
      await store.commit(batch(CATALOGUE));
      assert.equal(await store.getApiKey('k\u0000'), undefined);
      assert.equal(await store.revokeApiKey('\u0000', T0), false);
      assert.equal(await store.acceptNonce('\u0000', '1'), false);
      assert.equal(await store.findIdempotencyRecord(ALICE, 'a\u0000b'), undefined);
      assert.equal(await store.findLedgerEntry(ALICE, 'deposit', '\u0000'), undefined);
    });

    test('acceptNonce: only strictly increasing nonces, exact up to 20 digits, per active key, durable', async (t) => {
      const { store, reopen } = await adapter.open(t);
      const user = await store.createUser(null, T0);
      const base = { userId: user.id, scopes: ['read', 'trade'] as const, createdAt: T0, revokedAt: null };
      await store.createApiKey({ ...base, key: 'k', sealedSecret: 's', nonceRequired: true });
      await store.createApiKey({ ...base, key: 'other', sealedSecret: 's', nonceRequired: true });
      assert.equal(await store.acceptNonce('k', '5'), true);
      assert.equal(await store.acceptNonce('k', '5'), false, 'the same nonce twice');
      assert.equal(await store.acceptNonce('k', '4'), false, 'a smaller one');
      assert.equal(await store.acceptNonce('k', '10'), true, 'longer is greater');
      assert.equal(await store.acceptNonce('k', '9007199254740993'), true);
      assert.equal(await store.acceptNonce('k', '9007199254740992'), false, 'beyond 2^53: still exact');
      assert.equal(await store.acceptNonce('k', '18446744073709551616'), true);
      assert.equal(await store.acceptNonce('k', '18446744073709551615'), false, 'beyond 2^64: still exact');
      assert.equal(await store.acceptNonce('other', '1'), true, 'per key');
      assert.equal(await store.acceptNonce('nope', '1'), false, 'unknown key');
      await store.revokeApiKey('other', (T0 + 1) as Micros);
      assert.equal(await store.acceptNonce('other', '2'), false, 'revoked key');
      for (const bad of ['', '01', '-1', '1.5', '1e3', '123456789012345678901', 'abc'])
        assert.ok((await refuses(() => store.acceptNonce('k', bad))) instanceof RangeError, bad);
      // Two requests with the same nonce at once: exactly one is accepted.
      const raced = await Promise.all([
        store.acceptNonce('k', '99999999999999999999'),
        store.acceptNonce('k', '99999999999999999999'),
      ]);
      assert.deepEqual(raced.sort(), [false, true]);
      const reopened = await reopen();
      assert.equal(
        await reopened.acceptNonce('k', '99999999999999999999'),
        false,
        'durable across a restart',
      );
    });
  });
}
