/**
 * The order book: asks above (best ask nearest the middle), the spread line, bids below; each
 * row with a depth bar proportional to the cumulative quantity. Redrawn by BookFeed at most once
 * per animation frame. Clicking a row puts its price into the order form.
 */
import { useEffect, useRef, useState } from 'preact/hooks';
import type { BookLevelText } from '../../src/client/channels.js';
import type { Market } from '../../src/client/types.js';
import { exactProduct, group, toNumber } from '../shared/decimal.js';
import type { BookFeed } from './book-feed.js';

interface Row {
  readonly price: string;
  readonly qty: string;
  readonly total: number;
}

interface View {
  readonly asks: readonly Row[];
  readonly bids: readonly Row[];
  readonly synced: boolean;
  readonly max: number;
  readonly sequence: number | undefined;
}

const EMPTY: View = { asks: [], bids: [], synced: false, max: 0, sequence: undefined };

function rows(levels: readonly BookLevelText[]): Row[] {
  let total = 0;
  return levels.map((level) => {
    total += toNumber(level.qty);
    return { price: level.price, qty: level.qty, total };
  });
}

/** Height of a book row in CSS pixels (terminal.css: 18 px line + 2 × 2 px padding). */
const ROW_PX = 22;

export function BookPanel(props: {
  readonly feed: BookFeed | undefined;
  readonly market: Market;
  readonly onPrice: (price: string) => void;
}) {
  const { feed, market } = props;
  const [view, setView] = useState<View>(EMPTY);
  const body = useRef<HTMLDivElement>(null);
  // Levels per side: as many as the panel's height holds (the column head and the spread line
  // take two rows), so the spread stays in the middle at any window height.
  const [depth, setDepth] = useState(12);
  useEffect(() => {
    if (body.current === null) return undefined;
    const observer = new ResizeObserver(([entry]) => {
      if (entry === undefined) return;
      const rows = Math.floor(entry.contentRect.height / ROW_PX) - 2;
      setDepth(Math.max(3, Math.min(50, Math.floor(rows / 2))));
    });
    observer.observe(body.current);
    return () => observer.disconnect();
  }, []);

  useEffect(() => {
    setView(EMPTY);
    if (feed === undefined) return undefined;
    return feed.watch((book) => {
      const asks = rows(book.asks(depth));
      const bids = rows(book.bids(depth));
      const max = Math.max(asks.at(-1)?.total ?? 0, bids.at(-1)?.total ?? 0);
      setView({ asks, bids, synced: book.synced, max, sequence: book.sequence });
    });
  }, [feed, depth]);

  const bestAsk = view.asks[0]?.price;
  const bestBid = view.bids[0]?.price;
  let spread = '—';
  if (bestAsk !== undefined && bestBid !== undefined) {
    const a = toNumber(bestAsk);
    const b = toNumber(bestBid);
    const pct = ((a - b) / ((a + b) / 2)) * 100;
    spread = `${(a - b).toFixed(market.pairDecimals)} (${pct.toFixed(3)}%)`;
  }

  const line = (row: Row, side: 'ask' | 'bid') => {
    const width = view.max > 0 ? `${((row.total / view.max) * 100).toFixed(1)}%` : '0%';
    return (
      <tr class={`level ${side}`} onClick={() => props.onPrice(row.price)} title="Use this price">
        <td class={`num ${side === 'ask' ? 'sell' : 'buy'}`}>
          <span class="bar" style={{ width }} />
          {group(row.price)}
        </td>
        <td class="num">{row.qty}</td>
        <td class="num muted">{exactProduct(row.price, row.qty, market.pairDecimals) ?? ''}</td>
      </tr>
    );
  };

  return (
    <section
      class="panel book"
      aria-label="Order book"
      data-synced={String(view.synced)}
      data-levels={view.asks.length + view.bids.length}
      data-sequence={view.sequence ?? ''}
    >
      <header class="panel-head">
        <h2>Order book</h2>
        <span class={view.synced ? 'muted' : 'warn'}>{view.synced ? 'live' : 'syncing…'}</span>
      </header>
      <div class="book-body" ref={body}>
        <table class="book-table">
          <thead>
            <tr>
              <th scope="col">Price ({market.quote})</th>
              <th scope="col">Amount ({market.base})</th>
              <th scope="col">Value ({market.quote})</th>
            </tr>
          </thead>
          <tbody class="asks">
            {/* A thin book's asks sit on the spread line, not under the column heads. */}
            {Array.from({ length: Math.max(0, depth - view.asks.length) }, (_, i) => (
              <tr key={`pad-${i}`} class="pad">
                <td colSpan={3}>&nbsp;</td>
              </tr>
            ))}
            {[...view.asks].reverse().map((row) => line(row, 'ask'))}
          </tbody>
          <tbody class="spread-row">
            <tr>
              <td colSpan={3} class="spread" data-testid="spread">
                Spread <span class="num">{spread}</span>
              </td>
            </tr>
          </tbody>
          <tbody class="bids">{view.bids.map((row) => line(row, 'bid'))}</tbody>
        </table>
      </div>
    </section>
  );
}
