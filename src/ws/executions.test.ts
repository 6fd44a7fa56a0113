import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  type Amount,
  executionTypeOf,
  type MarketId,
  type Micros,
  type OrderId,
  type Price,
  type TradeId,
  type UserId,
  type Volume,
} from '../domain/types.js';
import type { EngineEvent, OrderState, Trade } from '../engine/types.js';
import { executionSteps, type OrderHistory } from './executions.js';

const order = (o: Partial<OrderState> & Pick<OrderState, 'id' | 'userId' | 'side'>): OrderState => ({
  marketId: 1 as MarketId,
  type: 'limit',
  price: 300_000 as Price,
  volume: 100_000_000 as Volume,
  executed: 0 as Volume,
  status: 'open',
  reason: null,
  openTime: 1 as Micros,
  closeTime: null,
  cost: 0 as Amount,
  fee: 0 as Amount,
  feeExcess: 0,
  reserved: 0 as Amount,
  ...o,
});

const trade = (id: number, taker: OrderState, maker: OrderState, lots: number): Trade => ({
  id: id as TradeId,
  marketId: 1 as MarketId,
  price: 300_000 as Price,
  volume: lots as Volume,
  // Any integer cost will do: only its sums matter here.
  cost: ((lots * 3) / 10) as Amount,
  takerOrderId: taker.id,
  makerOrderId: maker.id,
  takerUserId: taker.userId,
  makerUserId: maker.userId,
  takerSide: taker.side,
  takerType: executionTypeOf(taker.type),
  takerFee: 5 as Amount,
  makerFee: 2 as Amount,
  time: (1000 + id) as Micros,
});

// Maker M (user 1) rested with 0.2 BTC already executed; taker T (user 2) buys 0.8 BTC at market
// and fills M in two trades, which closes both.
const m0 = order({ id: 1 as OrderId, userId: 1 as UserId, side: 'sell' });
const t0 = order({
  id: 2 as OrderId,
  userId: 2 as UserId,
  side: 'buy',
  type: 'market',
  volume: 80_000_000 as Volume,
});
const before = trade(1, order({ id: 9 as OrderId, userId: 3 as UserId, side: 'buy' }), m0, 20_000_000);
const tr1 = trade(2, t0, m0, 50_000_000);
const tr2 = trade(3, t0, m0, 30_000_000);
const sum = (ts: Trade[], f: (t: Trade) => number) => ts.reduce((a, t) => a + f(t), 0);
const mFinal = order({
  ...m0,
  executed: 100_000_000 as Volume,
  cost: sum([before, tr1, tr2], (t) => t.cost) as Amount,
  fee: 6 as Amount,
  status: 'closed',
  closeTime: 1003 as Micros,
});
const tFinal = order({
  ...t0,
  executed: 80_000_000 as Volume,
  cost: sum([tr1, tr2], (t) => t.cost) as Amount,
  fee: 10 as Amount,
  status: 'closed',
  closeTime: 1003 as Micros,
});
const events: EngineEvent[] = [
  { type: 'orderAccepted', order: t0 },
  { type: 'trade', trade: tr1 },
  { type: 'trade', trade: tr2 },
  { type: 'orderDone', order: mFinal },
  { type: 'orderDone', order: tFinal },
];
const history: OrderHistory = {
  order: (id) => (id === mFinal.id ? mFinal : id === tFinal.id ? tFinal : undefined),
  tradesOfOrders: (ids) =>
    new Map(ids.map((id) => [id, id === m0.id ? [before, tr1, tr2] : id === t0.id ? [tr1, tr2] : []])),
};

test('one step per event, each with the order as it stood right after it', () => {
  const steps = executionSteps(events, () => true, history);
  assert.deepEqual(
    steps.map((s) => [
      s.userId,
      s.event,
      s.order.id,
      s.order.status,
      s.order.executed,
      s.orderTrades.map((t) => t.id),
    ]),
    [
      [2, 'accepted', 2, 'open', 0, []],
      [2, 'trade', 2, 'open', 50_000_000, [2]],
      [1, 'trade', 1, 'open', 70_000_000, [2]],
      [2, 'trade', 2, 'closed', 80_000_000, [3]],
      [1, 'trade', 1, 'closed', 100_000_000, [3]],
      // The final step lists every execution, earlier batches' included.
      [1, 'closed', 1, 'closed', 100_000_000, [1, 2, 3]],
      [2, 'closed', 2, 'closed', 80_000_000, [2, 3]],
    ],
  );
  // Running totals: cost and fee grow trade by trade from the state before the batch.
  const makerFirst = steps[2]!.order;
  assert.equal(makerFirst.cost, before.cost + tr1.cost);
  assert.equal(makerFirst.fee, 2 + 2);
  assert.equal(makerFirst.closeTime, null);
  const takerFirst = steps[1]!.order;
  assert.equal(takerFirst.fee, 5);
  // The execution is seen from each party's side.
  assert.deepEqual(
    steps
      .filter((s) => s.execution !== undefined)
      .map((s) => [s.userId, s.execution!.side, s.execution!.taker, s.execution!.fee]),
    [
      [2, 'buy', true, 5],
      [1, 'sell', false, 2],
      [2, 'buy', true, 5],
      [1, 'sell', false, 2],
    ],
  );
});

test('only watched users get steps, and nothing is read for the others', () => {
  let reads = 0;
  const counting: OrderHistory = {
    order: (id) => {
      reads += 1;
      return history.order(id);
    },
    tradesOfOrders: (ids) => {
      reads += 1;
      return history.tradesOfOrders(ids);
    },
  };
  const steps = executionSteps(events, (u) => u === 1, counting);
  assert.deepEqual(
    steps.map((s) => [s.userId, s.event]),
    [
      [1, 'trade'],
      [1, 'trade'],
      [1, 'closed'],
    ],
  );
  reads = 0;
  assert.deepEqual(
    executionSteps(events, () => false, counting),
    [],
  );
  assert.equal(reads, 0);
});

test('a partly filled order canceled in the same batch shows open on its trade, canceled after', () => {
  const maker = order({ id: 5 as OrderId, userId: 1 as UserId, side: 'sell', volume: 10 as Volume });
  const taker = order({
    id: 6 as OrderId,
    userId: 2 as UserId,
    side: 'buy',
    type: 'market',
    volume: 40 as Volume,
  });
  const fill = trade(8, taker, maker, 10);
  const canceled = order({
    ...taker,
    executed: 10 as Volume,
    cost: fill.cost,
    fee: 5 as Amount,
    status: 'canceled',
    reason: 'no liquidity',
    closeTime: 9 as Micros,
  });
  const steps = executionSteps(
    [
      { type: 'orderAccepted', order: taker },
      { type: 'trade', trade: fill },
      { type: 'orderDone', order: canceled },
    ],
    (u) => u === 2,
    { order: () => undefined, tradesOfOrders: (ids) => new Map(ids.map((id) => [id, [fill]])) },
  );
  assert.deepEqual(
    steps.map((s) => [s.event, s.order.status, s.order.executed, s.order.reason]),
    [
      ['accepted', 'open', 0, null],
      ['trade', 'open', 10, null],
      ['canceled', 'canceled', 10, 'no liquidity'],
    ],
  );
});

test("a fill that leaves the order open reports that execution only, without reading the order's history", () => {
  // M rests with a long history (earlier batches' fills); one more partial fill, M stays open.
  const history = Array.from({ length: 1000 }, (_, i) =>
    trade(i + 1, order({ id: (100 + i) as OrderId, userId: 3 as UserId, side: 'buy' }), m0, 10),
  );
  const taker = order({ id: 2000 as OrderId, userId: 2 as UserId, side: 'buy', volume: 10 as Volume });
  const fill = trade(5000, taker, m0, 10);
  const after = order({ ...m0, executed: 10_010 as Volume, cost: 3003 as Amount, fee: 2002 as Amount });
  let historyReads = 0;
  const steps = executionSteps([{ type: 'trade', trade: fill }], (u) => u === 1, {
    order: (id) => (id === m0.id ? after : undefined),
    tradesOfOrders: (ids) => {
      historyReads += 1;
      return new Map(ids.map((id) => [id, [...history, fill]]));
    },
  });
  assert.deepEqual(
    steps.map((s) => [s.event, s.order.status, s.order.executed, s.orderTrades.map((t) => t.id)]),
    [['trade', 'open', 10_010, [5000]]],
  );
  assert.equal(historyReads, 0);
});

test('an amend is an `amended` step with its reason; the outcomes of the controls are `canceled` steps told apart by reason', () => {
  const resting = order({ id: 20 as OrderId, userId: 5 as UserId, side: 'buy', clientOrderId: 'q-1' });
  const amended = order({ ...resting, volume: 50_000_000 as Volume, priority: 22 });
  const ioc = order({ id: 21 as OrderId, userId: 5 as UserId, side: 'buy', timeInForce: 'IOC' });
  const iocDone = order({
    ...ioc,
    status: 'canceled',
    reason: 'immediate-or-cancel remainder',
    closeTime: 9 as Micros,
  });
  const events: EngineEvent[] = [
    { type: 'orderAmended', order: amended, reason: 'amended by user' },
    { type: 'orderAccepted', order: ioc },
    { type: 'orderDone', order: iocDone },
  ];
  const history: OrderHistory = { order: () => undefined, tradesOfOrders: () => new Map() };
  const steps = executionSteps(events, (u) => u === 5, history);
  assert.deepEqual(
    steps.map((s) => [s.event, s.order.id, s.reason ?? s.order.reason]),
    [
      ['amended', 20, 'amended by user'],
      ['accepted', 21, null],
      ['canceled', 21, 'immediate-or-cancel remainder'],
    ],
  );
  assert.equal(steps[0]!.order.volume, 50_000_000);
  assert.deepEqual(
    executionSteps(events, (u) => u === 6, history),
    [],
    'only the watched user',
  );
});

test('a fired stop is a `triggered` step before the trade steps of its own fills', () => {
  // A resting buy (maker, user 8) and a waiting stop-loss sell (user 9) that a trade fires: the
  // engine reports orderTriggered, then the stop's trade and its orderDone.
  const bid = order({ id: 30 as OrderId, userId: 8 as UserId, side: 'buy' });
  const waiting = order({
    id: 31 as OrderId,
    userId: 9 as UserId,
    side: 'sell',
    type: 'stop-loss',
    price: 0 as Price,
    volume: 10_000_000 as Volume,
    triggerPrice: 300_100 as Price,
  });
  const fired = { ...waiting, triggered: true as const };
  const fill = trade(40, fired, bid, 10_000_000);
  const done = {
    ...fired,
    status: 'closed' as const,
    executed: 10_000_000 as Volume,
    cost: fill.cost,
    fee: fill.takerFee,
    closeTime: 5 as Micros,
  };
  const events: EngineEvent[] = [
    { type: 'orderTriggered', order: fired, lastPrice: 300_000 as Price, time: 5 as Micros },
    { type: 'trade', trade: fill },
    { type: 'orderDone', order: done },
  ];
  const history: OrderHistory = {
    order: (id) => (id === bid.id ? { ...bid, executed: 10_000_000 as Volume } : undefined),
    tradesOfOrders: (ids) => new Map(ids.map((id) => [id, id === done.id ? [fill] : []])),
  };
  const steps = executionSteps(events, (u) => u === 9, history);
  assert.deepEqual(
    steps.map((s) => [s.event, s.order.id, s.order.triggered ?? false, s.orderTrades.length]),
    [
      ['triggered', 31, true, 0],
      ['trade', 31, true, 1],
      ['closed', 31, true, 1],
    ],
  );
  assert.equal(steps[0]!.order.executed, 0, 'the triggered step shows the order before its fills');
  assert.deepEqual(
    executionSteps(events, (u) => u === 8, history).map((s) => s.event),
    ['trade'],
    "the maker's channel has no `triggered` step",
  );
});
