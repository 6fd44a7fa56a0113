/**
 * One market's order book for the page: a LocalBook kept from `order-book.{pair}` (sequence
 * checked, resubscribed on a gap or a checksum mismatch, by src/client/realtime.ts), and the
 * views that draw it (book table, depth chart) called at most once per animation frame, however
 * many updates arrived in between: 100 updates/s cost one draw per frame, not a hundred.
 */
import type { BookApplyResult, LocalBook } from '../../src/client/local-book.js';
import type { BookSubscription, Realtime } from '../../src/client/realtime.js';

export type BookView = (book: LocalBook) => void;

export interface BookStats {
  /** Messages applied since the page opened. */
  messages: number;
  /** Frames in which the views were drawn. */
  draws: number;
  /** Resubscriptions after a sequence gap or checksum mismatch. */
  resyncs: number;
}

export class BookFeed {
  readonly #views = new Set<BookView>();
  readonly #subscription: BookSubscription;
  #frame: number | undefined;
  readonly stats: BookStats = { messages: 0, draws: 0, resyncs: 0 };

  constructor(realtime: Realtime, pair: string) {
    this.#subscription = realtime.localBook(pair, (_book, result) => this.#changed(result));
  }

  get book(): LocalBook {
    return this.#subscription.book;
  }

  /** Adds a view and draws it once at the next frame; returns its removal. */
  watch(view: BookView): () => void {
    this.#views.add(view);
    this.#schedule();
    return () => this.#views.delete(view);
  }

  close(): void {
    if (this.#frame !== undefined) cancelAnimationFrame(this.#frame);
    this.#views.clear();
    this.#subscription.unsubscribe();
  }

  #changed(result: BookApplyResult): void {
    this.stats.messages += 1;
    if (result.status === 'gap' || result.status === 'checksum') this.stats.resyncs += 1;
    this.#schedule();
  }

  #schedule(): void {
    if (this.#frame !== undefined) return;
    this.#frame = requestAnimationFrame(() => {
      this.#frame = undefined;
      this.stats.draws += 1;
      for (const view of this.#views) view(this.book);
    });
  }
}
