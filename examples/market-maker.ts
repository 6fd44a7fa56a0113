/**
 * A small market maker: keeps one bid and one ask around the mid of the live order book
 * (WebSocket, through the local book helper) and requotes when the mid moves. Ctrl-C cancels its
 * quotes and exits. It needs a two-sided book (the demo simulator keeps one). The mid includes
 * the bot's own quotes; a real bot would subtract them.
 *
 *   OPENSPOT_URL=http://127.0.0.1:8080 OPENSPOT_API_KEY=... OPENSPOT_API_SECRET=... \
 *     node --import tsx examples/market-maker.ts [PAIR] [SPREAD_TICKS]
 */
import { formatUnits, joinPair, OpenSpotClient, parseUnits } from '../src/client/index.js';
import { connectRealtime } from '../src/client/realtime.js'; // `openspot/client/realtime` when installed

const root = (process.env.OPENSPOT_URL ?? 'http://127.0.0.1:8080').replace(/\/+$/, '').replace(/\/v1$/, '');
const client = new OpenSpotClient({
  baseUrl: `${root}/v1`,
  apiKey: process.env.OPENSPOT_API_KEY,
  apiSecret: process.env.OPENSPOT_API_SECRET,
});
const pair = process.argv[2] ?? 'BTC/EUR';
const spread = BigInt(process.argv[3] ?? '50');

const market = (await client.markets()).data[joinPair(pair)];
if (market === undefined) throw new Error(`unknown market ${pair}`);
const ticks = (text: string) => parseUnits(text, market.pairDecimals);
const url = new URL(root);
const realtime = connectRealtime({
  wsHost: url.hostname,
  wsPort: Number(url.port || 80),
  appKey: process.env.OPENSPOT_WS_APP_KEY ?? 'openspot-key',
});

let quotes: number[] = [];
let quotedMid: bigint | undefined;
let busy = false;

async function requote(mid: bigint): Promise<void> {
  busy = true;
  try {
    await Promise.allSettled(quotes.map((id) => client.cancelOrder(id)));
    const place = (direction: 'buy' | 'sell', price: bigint) =>
      client.createOrder({
        pair,
        direction,
        type: 'limit',
        volume: market!.ordermin,
        price: formatUnits(price, market!.pairDecimals),
      });
    const placed = await Promise.all([place('buy', mid - spread), place('sell', mid + spread)]);
    quotes = placed.flatMap((p) => (p.id === undefined ? [] : [p.id]));
    quotedMid = mid;
    console.log(
      `quoting ${formatUnits(mid - spread, market!.pairDecimals)} / ${formatUnits(mid + spread, market!.pairDecimals)}`,
    );
  } catch (error) {
    console.error(`requote failed: ${error instanceof Error ? error.message : String(error)}`);
  } finally {
    busy = false;
  }
}

const sub = realtime.localBook(pair, (book) => {
  const [bid] = book.bids(1);
  const [ask] = book.asks(1);
  if (busy || bid === undefined || ask === undefined) return;
  const mid = (ticks(bid.price) + ticks(ask.price)) / 2n;
  // Requote only when the mid moved by more than half the spread: our own quotes do not count.
  if (quotedMid === undefined || (mid > quotedMid ? mid - quotedMid : quotedMid - mid) > spread / 2n)
    void requote(mid);
});
await sub.ready;
console.log(`watching ${pair}; Ctrl-C to stop`);

process.once('SIGINT', async () => {
  realtime.disconnect();
  await Promise.allSettled(quotes.map((id) => client.cancelOrder(id)));
  console.log(`canceled ${quotes.length} quotes`);
});
