/**
 * A small ccxt strategy, written as any ccxt user writes one: it knows nothing of OpenSpot but
 * the exchange class. It waits (on the WebSocket ticker) for the best ask to come down to its
 * limit, buys there, and follows the order on the private channel until it is filled or a
 * deadline passes.
 *
 * Run against a test venue (docs/ccxt.md):
 *   npx openspot --json test-venue          # prints the venue: base_url, ws.key, accounts…
 *   OPENSPOT_URL=<base_url> OPENSPOT_WS_KEY=<ws.key> API_KEY=… API_SECRET=… \
 *     node --import tsx examples/ccxt-bot/ccxt-bot.ts BTC/EUR 50000 0.01
 */
import { pathToFileURL } from 'node:url';
import type { Exchange, Order } from 'ccxt';
import { OpenSpot } from '../../src/ccxt/index.js'; // `openspot/ccxt`

export interface DipBuyer {
  readonly symbol: string;
  /** Buy at this price or lower. */
  readonly limitPrice: number;
  readonly amount: number;
  /** How long to wait for the dip, then for the fill. Default 10 s. */
  readonly timeoutMs?: number;
}

/** Resolves with undefined once `ms` have passed: a bound for ccxt's watch calls. */
const timeout = (ms: number) =>
  new Promise<undefined>((resolve) => setTimeout(() => resolve(undefined), ms).unref());

/** The order placed (as last seen), or undefined when the ask never came down to the limit. */
export async function buyTheDip(exchange: Exchange, bot: DipBuyer): Promise<Order | undefined> {
  const deadline = Date.now() + (bot.timeoutMs ?? 10_000);
  await exchange.loadMarkets();
  let ask = (await exchange.fetchTicker(bot.symbol)).ask;
  while (ask === undefined || ask > bot.limitPrice) {
    const left = deadline - Date.now();
    if (left <= 0) return undefined;
    const ticker = await Promise.race([exchange.watchTicker(bot.symbol), timeout(left)]);
    if (ticker !== undefined) ask = ticker.ask;
  }
  let order = await exchange.createOrder(bot.symbol, 'limit', 'buy', bot.amount, ask);
  while (order.status === 'open' && Date.now() < deadline) {
    const updates = await Promise.race([exchange.watchOrders(bot.symbol), timeout(deadline - Date.now())]);
    order = updates?.find((o) => o.id === order.id) ?? order;
  }
  return order;
}

// As a script: the venue and the account from the environment, the order from the arguments.
if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const [symbol = 'BTC/EUR', limit = '50000', amount = '0.01'] = process.argv.slice(2);
  const exchange = new OpenSpot({
    apiKey: process.env.API_KEY,
    secret: process.env.API_SECRET,
    urls: { api: { rest: process.env.OPENSPOT_URL ?? 'http://127.0.0.1:8080/v1' } },
    options: { wsAppKey: process.env.OPENSPOT_WS_KEY ?? 'openspot-key' },
  });
  try {
    const order = await buyTheDip(exchange, { symbol, limitPrice: Number(limit), amount: Number(amount) });
    console.log(
      order === undefined ? 'no dip' : `${order.status}: ${order.filled} ${symbol} at ${order.average}`,
    );
  } finally {
    await exchange.close();
  }
}
