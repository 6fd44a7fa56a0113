/**
 * A bot built to survive what production does to it, the subject of the test beside it
 * (resilient-bot.test.ts), which rehearses failures with the venue's fault injection
 * (docs/chaos.md):
 * - its order book is a LocalBook kept from the `order-book` channel: a lost update shows as a
 *   sequence gap and the copy resubscribes for a fresh snapshot (duplicates are ignored);
 * - its reads retry 503, 429 (after Retry-After) and lost answers;
 * - its orders carry an Idempotency-Key, so a retry can never place one twice, and when every
 *   retry fails it reconciles through GET /open-orders before deciding anything.
 */
import {
  type CreateOrderParams,
  compareDecimal,
  OpenSpotApiError,
  type OpenSpotClient,
  OpenSpotTransportError,
} from '../../src/client/index.js'; // `openspot/client` when installed
import type { BookSubscription, Realtime } from '../../src/client/realtime.js'; // `openspot/client/realtime` when installed

export interface ResilientBotOptions {
  readonly client: OpenSpotClient;
  readonly realtime: Realtime;
  /** e.g. `BTC/EUR`. */
  readonly pair: string;
  /** Attempts of a read before giving up. Default 6. */
  readonly attempts?: number;
  /** First wait between attempts without Retry-After, doubled each time. Default 50 ms. */
  readonly backoffMs?: number;
}

export interface Placed {
  readonly id: number;
  /** True when the answer was lost and the order was found through GET /open-orders. */
  readonly reconciled: boolean;
}

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Whether a failed request may be sent again: no answer, or the server said "not now". */
const transient = (error: unknown): boolean =>
  error instanceof OpenSpotTransportError ||
  (error instanceof OpenSpotApiError && [429, 500, 502, 503, 504].includes(error.status));

export class ResilientBot {
  /** Fresh snapshots asked for after a gap or a checksum mismatch. */
  resyncs = 0;
  /** Requests sent again after a transient failure. */
  retries = 0;
  #subscription: BookSubscription | undefined;

  constructor(private readonly options: ResilientBotOptions) {}

  /** Subscribes to the book and waits for the first snapshot. */
  async start(timeoutMs = 5000): Promise<void> {
    this.#subscription = this.options.realtime.localBook(this.options.pair, (_book, result) => {
      if (result.status === 'gap' || result.status === 'checksum') this.resyncs += 1;
    });
    await this.#subscription.ready;
    await this.#until(() => this.book.synced, timeoutMs, 'no book snapshot');
  }

  get book() {
    if (this.#subscription === undefined) throw new Error('start() the bot first');
    return this.#subscription.book;
  }

  /** A read, retried while the failure is transient (honouring Retry-After). */
  async read<T>(request: () => Promise<T>): Promise<T> {
    const attempts = this.options.attempts ?? 6;
    for (let attempt = 1; ; attempt++) {
      try {
        return await request();
      } catch (error) {
        if (!transient(error) || attempt >= attempts) throw error;
        this.retries += 1;
        const retryAfter = error instanceof OpenSpotApiError ? error.retryAfter : undefined;
        await pause(
          retryAfter !== undefined ? retryAfter * 1000 : (this.options.backoffMs ?? 50) * 2 ** attempt,
        );
      }
    }
  }

  /**
   * Places a limit order at most once. The client resends it under the same Idempotency-Key after
   * a lost answer or a 503; if the answer is still missing, the order may or may not exist, and
   * only the venue knows: look for it in the open orders before anything else.
   */
  async placeOnce(order: Omit<CreateOrderParams, 'type' | 'idempotencyKey'>): Promise<Placed> {
    const known = new Set(
      (await this.read(() => this.options.client.openOrders({ pair: order.pair }))).data.map((o) => o.id),
    );
    const idempotencyKey = `bot-${Date.now()}-${Math.random().toString(36).slice(2)}`;
    try {
      const created = await this.options.client.createOrder({ ...order, type: 'limit', idempotencyKey });
      if (created.id !== undefined) return { id: created.id, reconciled: false };
    } catch (error) {
      if (!transient(error)) throw error;
    }
    const open = (await this.read(() => this.options.client.openOrders({ pair: order.pair }))).data;
    const found = open.find(
      (o) =>
        !known.has(o.id) &&
        o.type === order.direction &&
        compareDecimal(o.price.amount, order.price ?? '0') === 0 &&
        compareDecimal(o.volume.amount, order.volume) === 0,
    );
    if (found !== undefined) return { id: found.id, reconciled: true };
    // Not placed: sending it again under the same key is safe either way.
    const created = await this.options.client.createOrder({ ...order, type: 'limit', idempotencyKey });
    if (created.id === undefined) throw new Error('the venue answered without an order id');
    return { id: created.id, reconciled: false };
  }

  /** True when the local book is in sync and equal to the REST order book. */
  async bookMatchesRest(): Promise<boolean> {
    const [rest] = await this.read(() =>
      this.options.client.orderbook({ tickerId: this.options.pair, depth: 0 }),
    );
    const local = (levels: readonly { price: string; qty: string }[]) => levels.map((l) => [l.price, l.qty]);
    return (
      this.book.synced &&
      JSON.stringify(local(this.book.bids())) === JSON.stringify(rest?.bids ?? []) &&
      JSON.stringify(local(this.book.asks())) === JSON.stringify(rest?.asks ?? [])
    );
  }

  /** Waits until the local book equals the REST book (a resubscription may be under way). */
  async resynchronised(timeoutMs = 5000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!(await this.bookMatchesRest())) {
      if (Date.now() > deadline) throw new Error('the local book did not match the REST book in time');
      await pause(25);
    }
  }

  stop(): void {
    this.#subscription?.unsubscribe();
  }

  async #until(condition: () => boolean, timeoutMs: number, message: string): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!condition()) {
      if (Date.now() > deadline) throw new Error(message);
      await pause(10);
    }
  }
}
