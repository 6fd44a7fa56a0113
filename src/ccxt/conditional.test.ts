/**
 * The ccxt class's mapping of conditional orders (H245, H246), without a venue: ccxt's unified
 * trigger params to the request body, and the venue's Order record back to ccxt's order. The
 * contract test (openspot.contract.test.ts) places and triggers them on a test venue.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { type Dict, InvalidOrder, type Num, type OrderType } from 'ccxt';
import { OpenSpot } from './index.js';

class Probe extends OpenSpot {
  constructor() {
    super({ apiKey: 'k', secret: 's' });
    this.setMarkets([
      this.parseMarket({
        altname: 'BTCEUR',
        wsname: 'BTC/EUR',
        base: 'BTC',
        quote: 'EUR',
        pairDecimals: 1,
        lotDecimals: 8,
        ordermin: '0.00005',
      }),
    ]);
  }

  body(type: OrderType, side: 'buy' | 'sell', amount: number, price: Num, params: Dict): Dict {
    return this.orderRequest('BTC/EUR', type, side, amount, price, params);
  }
}

test('createOrder params: stop-loss, take-profit, their -limit forms and trailing stops', () => {
  const x = new Probe();
  const base = { pair: 'BTC/EUR', order_direction: 'sell', volume: '0.01' };
  assert.deepEqual(x.body('market', 'sell', 0.01, undefined, { stopLossPrice: 58000 }), {
    ...base,
    order_type: 'stop-loss',
    trigger_price: '58000',
  });
  assert.deepEqual(x.body('limit', 'sell', 0.01, 57900, { stopLossPrice: 58000 }), {
    ...base,
    order_type: 'stop-loss-limit',
    price: '57900',
    trigger_price: '58000',
  });
  // ccxt's createStopOrder / createStopLimitOrder send stopPrice, createTriggerOrder triggerPrice.
  assert.equal(x.body('market', 'sell', 0.01, undefined, { stopPrice: 58000 }).order_type, 'stop-loss');
  assert.equal(x.body('limit', 'sell', 0.01, 1, { triggerPrice: 58000 }).order_type, 'stop-loss-limit');
  assert.deepEqual(x.body('market', 'sell', 0.01, undefined, { takeProfitPrice: '65000.05' }), {
    ...base,
    order_type: 'take-profit',
    trigger_price: '65000.1',
  });
  assert.deepEqual(x.body('limit', 'buy', 0.01, 49000, { takeProfitPrice: 50000 }), {
    ...base,
    order_direction: 'buy',
    order_type: 'take-profit-limit',
    price: '49000',
    trigger_price: '50000',
  });
  assert.deepEqual(x.body('market', 'sell', 0.01, undefined, { trailingPercent: 2.5 }), {
    ...base,
    order_type: 'trailing-stop',
    trailing_offset: '2.5%',
  });
  assert.equal(x.body('market', 'sell', 0.01, undefined, { trailingPercent: '2%' }).trailing_offset, '2%');
  assert.deepEqual(x.body('market', 'sell', 0.01, undefined, { trailingAmount: '150.5' }), {
    ...base,
    order_type: 'trailing-stop',
    trailing_offset: '150.5',
  });
  // No ccxt param leaks into the body as an unknown venue field.
  assert.deepEqual(x.body('market', 'sell', 0.01, undefined, {}), { ...base, order_type: 'market' });
});

test('createOrder params the venue cannot honour are refused before anything is sent', () => {
  const x = new Probe();
  assert.throws(
    () => x.body('market', 'sell', 0.01, undefined, { stopLossPrice: 1, takeProfitPrice: 2 }),
    InvalidOrder,
  );
  assert.throws(() => x.body('limit', 'sell', 0.01, 1, { trailingPercent: 2 }), /trades at market/);
  assert.throws(
    () => x.body('market', 'sell', 0.01, undefined, { trailingAmount: 5, trailingTriggerPrice: 1 }),
    /trailingTriggerPrice is not supported/,
  );
  assert.throws(() => x.body('limit', 'sell', 0.01, undefined, { stopLossPrice: 1 }), /requires a price/);
});

/** The venue's record of a conditional order, with the fields the mapping reads. */
function record(fields: Dict): Dict {
  const money = (amount: string | null, currency = 'EUR') => (amount === null ? null : { amount, currency });
  return {
    id: 9,
    status: 'open',
    open_time: '1764331200.0000',
    close_time: null,
    pair: 'BTCEUR',
    type: 'sell',
    volume: money('0.01000000', 'BTC'),
    volume_executed: money('0.00000000', 'BTC'),
    fee: null,
    cost: null,
    client_order_id: null,
    asset_pair: { name: 'BTCEUR' },
    trades: [],
    ...fields,
    price: money(fields.price as string),
    limit_price: money((fields.limit_price as string | undefined) ?? null),
    secondary_price: money((fields.limit_price as string | undefined) ?? null),
  };
}

test('parseOrder: the type it trades as, the trigger in triggerPrice and stopLossPrice or takeProfitPrice', () => {
  const x = new Probe();
  const stop = x.parseOrder(
    record({ order_type: 'stop-loss-limit', price: '58000.0', limit_price: '57900.0' }),
  );
  assert.equal(stop.type, 'limit');
  assert.equal(stop.price, 57900);
  assert.equal(stop.triggerPrice, 58000);
  assert.equal(stop.stopLossPrice, 58000);
  assert.equal(stop.takeProfitPrice, undefined);
  assert.equal(stop.timeInForce, 'GTC');
  assert.equal(stop.info.order_type, 'stop-loss-limit');

  const take = x.parseOrder(record({ order_type: 'take-profit', price: '65000.0' }));
  assert.equal(take.type, 'market');
  assert.equal(take.price, undefined);
  assert.equal(take.takeProfitPrice, 65000);
  assert.equal(take.stopLossPrice, undefined);
  assert.equal(take.timeInForce, 'GTC', 'a waiting order rests, unlike a market order');

  const trailing = x.parseOrder(record({ order_type: 'trailing-stop', price: '58300.0' }));
  assert.equal(trailing.type, 'market');
  assert.equal(trailing.triggerPrice, 58300);
  assert.equal(trailing.stopLossPrice, undefined);
  // A trailing stop on a market that never traded has no trigger yet.
  assert.equal(x.parseOrder(record({ order_type: 'trailing-stop', price: '0.0' })).triggerPrice, undefined);

  const plain = x.parseOrder(
    record({ order_type: 'limit', price: '60000.0', description: { price: '60000.0' } }),
  );
  assert.equal(plain.price, 60000);
  assert.equal(plain.triggerPrice, undefined);
});

test('has: the conditional order methods are offered', () => {
  const x = new Probe();
  for (const name of [
    'createStopOrder',
    'createStopLimitOrder',
    'createStopMarketOrder',
    'createTriggerOrder',
    'createStopLossOrder',
    'createTakeProfitOrder',
    'createTrailingAmountOrder',
    'createTrailingPercentOrder',
  ])
    assert.equal(x.has[name], true, name);
  assert.equal(x.has.createOrderWithTakeProfitAndStopLoss, false);
});
