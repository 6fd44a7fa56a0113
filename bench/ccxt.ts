/**
 * What the ccxt class costs a bot per call, against raw signed REST on the same test venue:
 * sequential limit orders placed and canceled far from the book (createOrder = POST + GET of the
 * order; cancelOrder = DELETE + GET), and fetchOrderBook against GET /orderbook.
 *
 *   node --import tsx bench/ccxt.ts [--orders 200]
 */
import { performance } from 'node:perf_hooks';
import { OpenSpot } from '../src/ccxt/index.js';
import { signRequest } from '../src/client/sign.js';
import { startTestVenue } from '../src/testing/index.js';

const index = process.argv.indexOf('--orders');
const ORDERS = index >= 0 ? Number(process.argv[index + 1]) : 200;

const venue = await startTestVenue({ accounts: [{ name: 'bench', balances: { EUR: '1000000' } }] });
const [account] = venue.accounts;
if (account === undefined) throw new Error('no account');
const exchange = new OpenSpot({
  apiKey: account.apiKey,
  secret: account.apiSecret,
  urls: { api: { rest: venue.baseUrl } },
  options: { wsAppKey: venue.ws.key },
});

const signed = async (method: string, path: string, body?: unknown) => {
  const text = body === undefined ? '' : JSON.stringify(body);
  const response = await fetch(`${venue.baseUrl}${path}`, {
    method,
    headers: {
      'X-API-Key': account.apiKey,
      'X-API-Sign': signRequest(method, text, account.apiSecret),
      ...(text === '' ? {} : { 'Content-Type': 'application/json' }),
    },
    ...(text === '' ? {} : { body: text }),
  });
  await response.arrayBuffer();
  return response;
};

/** Mean milliseconds per round of `step`, after 20 warm-up rounds. */
async function measure(step: () => Promise<unknown>): Promise<number> {
  for (let i = 0; i < 20; i++) await step();
  const start = performance.now();
  for (let i = 0; i < ORDERS; i++) await step();
  return (performance.now() - start) / ORDERS;
}

try {
  await exchange.loadMarkets();
  const ccxtPair = await measure(async () => {
    const order = await exchange.createOrder('BTC/EUR', 'limit', 'buy', 0.01, 1000);
    await exchange.cancelOrder(order.id as string);
  });
  const rawPair = await measure(async () => {
    const created = await signed('POST', '/orders', {
      pair: 'BTC/EUR',
      order_direction: 'buy',
      order_type: 'limit',
      volume: '0.01',
      price: '1000.0',
    });
    await signed('DELETE', created.headers.get('location')!.replace('/v1', ''));
  });
  const ccxtBook = await measure(() => exchange.fetchOrderBook('BTC/EUR'));
  const rawBook = await measure(() => signed('GET', '/orderbook?ticker_id=BTC/EUR&depth=0'));
  const row = (what: string, a: number, b: number) =>
    `${what.padEnd(34)} ccxt ${a.toFixed(2)} ms   raw ${b.toFixed(2)} ms   ×${(a / b).toFixed(2)}`;
  console.log(`${ORDERS} sequential rounds each`);
  console.log(row('place + cancel a limit order', ccxtPair, rawPair));
  console.log(row('order book', ccxtBook, rawBook));
} finally {
  await exchange.close();
  await venue.close();
}
