/** The human-readable views of the trader commands. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Order, WalletEntry } from '../client/types.js';
import { table } from './table.js';
import { balanceRows, bookTable, orderRows, renderWatch } from './trader-format.js';

test('available = total − in orders, exactly', () => {
  const entry: WalletEntry = {
    asset_id: 'BTC',
    asset_name: 'Bitcoin',
    type: 'crypto',
    balance: { balance_total: '10.0000000001', balance_total_in_fiat: '600000.0000' },
    pending: { has_pending: true, balance_pending: '0.3', balance_pending_in_fiat: '18000.0000' },
    balance_currency: 'EUR',
  };
  assert.deepEqual(balanceRows([entry]), [
    {
      asset: 'BTC',
      total: '10.0000000001',
      in_orders: '0.3',
      available: '9.7000000001',
      value: '600000.0000 EUR',
    },
  ]);
});

test('book table: bids and asks side by side, best first', () => {
  const text = bookTable(
    [
      ['100.0', '1.5'],
      ['99.0', '2'],
    ],
    [['101.0', '0.25']],
    5,
  );
  assert.equal(
    text,
    [
      'BID_QTY  BID    ASK    ASK_QTY',
      '-------  -----  -----  -------',
      '1.5      100.0  101.0  0.25',
      '2        99.0',
    ].join('\n'),
  );
  assert.equal(bookTable([], [], 5), '(empty book)');
});

test('watch screen: header, status, book, trades', () => {
  const screen = renderWatch({
    symbol: 'BTC/EUR',
    connection: 'connected',
    sequence: 12,
    synced: true,
    bids: [{ price: '100.0', qty: '1' }],
    asks: [],
    ticker: {
      symbol: 'BTC/EUR',
      bid: '100.0',
      bid_qty: '1',
      ask: '0',
      ask_qty: '0',
      last: '100.5',
      volume: '3',
      vwap: '100.2',
      low: '99.0',
      high: '101.0',
      change: '0.5',
      change_pct: '0.50',
    },
    trades: [
      {
        symbol: 'BTC/EUR',
        side: 'buy',
        price: '100.5',
        qty: '0.1',
        ord_type: 'market',
        trade_id: 3,
        timestamp: '2024-05-01T12:00:01.000000Z',
      },
    ],
    depth: 10,
    notice: undefined,
  });
  assert.match(screen, /^BTC\/EUR {3}last 100\.5 {2}24h 0\.50%.*\[connected, seq 12\]$/m);
  assert.match(screen, /^1 +100\.0$/m);
  assert.match(screen, /^12:00:01 +buy +100\.5 +0\.1 +market$/m);
  assert.match(screen, /Ctrl-C to quit$/);
  assert.match(
    renderWatch({
      symbol: 'X/Y',
      connection: 'connecting',
      sequence: undefined,
      synced: false,
      bids: [],
      asks: [],
      ticker: undefined,
      trades: [],
      depth: 3,
      notice: 'n',
    }),
    /\[connecting, waiting for snapshot\]/,
  );
});

/** An order record as the server serializes it, with the fields a row reads replaced. */
function orderRecord(fields: Partial<Order>): Order {
  const money = (amount: string, currency: string) => ({ amount, currency });
  return {
    id: 7,
    user_id: 1,
    transaction_id: 'O0000000000000007',
    status: 'open',
    open_time: '1764331200.0000',
    close_time: null,
    expire_time: '0.0000',
    reason: null,
    pair: 'BTCEUR',
    type: 'sell',
    order_type: 'limit',
    description: {
      pair: 'BTCEUR',
      type: 'sell',
      close: '',
      order: 'sell 0.01000000 BTCEUR @ limit 60000.0',
      price: '60000.0',
      leverage: 'none',
      orderType: 'limit',
      secondaryPrice: null,
    },
    volume: money('0.01000000', 'BTC'),
    volume_executed: money('0.00000000', 'BTC'),
    fee: null,
    price: money('60000.0', 'EUR'),
    secondary_price: null,
    limit_price: null,
    cost: null,
    asset_pair: { id: 1, name: 'BTCEUR', display_name: 'BTC/EUR', base_name: 'BTC', quote_name: 'EUR' },
    trigger_conditions: 'none',
    trades: [],
    client_order_id: null,
    ...fields,
  };
}

test('order rows: a conditional order shows what it waits for and the price it then trades at', () => {
  const rows = orderRows([
    orderRecord({}),
    orderRecord({
      id: 8,
      order_type: 'stop-loss-limit',
      price: { amount: '58000.0', currency: 'EUR' },
      limit_price: { amount: '57900.0', currency: 'EUR' },
      secondary_price: { amount: '57900.0', currency: 'EUR' },
      trigger_conditions: 'last price <= 58000.0',
    }),
    orderRecord({
      id: 9,
      order_type: 'trailing-stop',
      price: { amount: '58000.0', currency: 'EUR' },
      trigger_conditions: 'last price <= 58000.0 (trailing 2.5% below the best price 59487.2)',
    }),
  ]);
  assert.deepEqual(
    rows.map((r) => [r.id, r.type, r.price, r.trigger]),
    [
      [7, 'limit', '60000.0', null],
      [8, 'stop-loss-limit', '57900.0', 'last price <= 58000.0'],
      [9, 'trailing-stop', 'market', 'last price <= 58000.0 (trailing 2.5% below the best price 59487.2)'],
    ],
  );
  assert.match(table(rows), /^8 +BTC\/EUR +sell +stop-loss-limit +57900\.0 +last price <= 58000\.0 /m);
});
