/**
 * A very small bot, the subject of the example test beside it (dip-buyer.test.ts): it buys when
 * the best ask is at or below its limit price and reports the fill it sees on its private
 * channel. See docs/bot-testing.md.
 */
import { compareDecimal, type OpenSpotClient, type UserTrade } from '../../src/client/index.js'; // `openspot/client` when installed
import type { Realtime } from '../../src/client/realtime.js'; // `openspot/client/realtime` when installed

export interface DipBuyer {
  readonly client: OpenSpotClient;
  readonly realtime: Realtime;
  readonly userId: number;
  /** e.g. `BTC/EUR`. */
  readonly pair: string;
  /** Buy only at this price or lower. */
  readonly limit: string;
  readonly volume: string;
  /** How long to wait for the fill. Default 5000 ms. */
  readonly timeoutMs?: number;
}

/** One decision: the fills of the order placed, or undefined when no ask is at or below the limit. */
export async function buyTheDip(bot: DipBuyer): Promise<UserTrade[] | undefined> {
  const [book] = await bot.client.orderbook({ tickerId: bot.pair, depth: 1 });
  const best = book?.asks[0];
  if (best === undefined || compareDecimal(best[0], bot.limit) > 0) return undefined;

  // Subscribe before ordering, so no execution can be missed.
  const fills: UserTrade[] = [];
  let orderId: number | undefined;
  let done: () => void = () => undefined;
  const closed = new Promise<void>((resolve) => {
    done = resolve;
  });
  const executions = bot.realtime.executions(bot.userId, (message) => {
    if (message.type !== 'update' || message.data.order.id !== orderId) return;
    fills.push(...message.data.trades);
    if (message.data.order.status !== 'open') done();
  });
  try {
    await executions.ready;
    const created = await bot.client.createOrder({
      pair: bot.pair,
      direction: 'buy',
      type: 'limit',
      price: best[0],
      volume: bot.volume,
    });
    orderId = created.id;
    const timeoutMs = bot.timeoutMs ?? 5000;
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      closed,
      new Promise<void>((resolve) => {
        timer = setTimeout(resolve, timeoutMs);
      }),
    ]);
    clearTimeout(timer);
    return fills;
  } finally {
    executions.unsubscribe();
  }
}
