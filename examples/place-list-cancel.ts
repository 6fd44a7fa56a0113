/**
 * Places a limit buy well below the market, lists open orders, cancels the order, reads it back.
 *
 *   OPENSPOT_URL=http://127.0.0.1:8080 OPENSPOT_API_KEY=... OPENSPOT_API_SECRET=... \
 *     node --import tsx examples/place-list-cancel.ts [PAIR]
 */
import { formatUnits, OpenSpotClient, parseUnits } from '../src/client/index.js'; // `openspot/client` when installed

const root = (process.env.OPENSPOT_URL ?? 'http://127.0.0.1:8080').replace(/\/+$/, '');
const client = new OpenSpotClient({
  baseUrl: root.endsWith('/v1') ? root : `${root}/v1`,
  apiKey: process.env.OPENSPOT_API_KEY,
  apiSecret: process.env.OPENSPOT_API_SECRET,
});
const pair = process.argv[2] ?? 'BTC/EUR';

const market = Object.values((await client.markets()).data).find((m) => m.wsname === pair);
if (market === undefined) throw new Error(`unknown market ${pair}`);
// Half the best bid (or of 1000 when the book is empty), in whole ticks: it will not trade.
const [ticker] = await client.tickers(pair);
const bid = parseUnits(ticker?.bid ?? '0', market.pairDecimals);
const ticks = (bid > 0n ? bid : parseUnits('1000', market.pairDecimals)) / 2n;
const price = formatUnits(ticks, market.pairDecimals);

const created = await client.createOrder({
  pair,
  direction: 'buy',
  type: 'limit',
  volume: market.ordermin,
  price,
});
console.log(`placed order ${created.id}: buy ${market.ordermin} ${pair} @ ${price}`);

const open = await client.openOrders({ pair });
for (const o of open.data) console.log(`  open: #${o.id} ${o.type} ${o.volume.amount} @ ${o.price.amount}`);

if (created.id !== undefined) {
  console.log((await client.cancelOrder(created.id)).message);
  const order = (await client.order(created.id)).data;
  console.log(`order ${order.id} is ${order.status} (${order.reason})`);
}
