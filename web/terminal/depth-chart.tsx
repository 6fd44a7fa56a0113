/**
 * The depth chart: cumulative bid quantity stepping down to the left of the mid price, cumulative
 * ask quantity stepping up to the right, drawn on a canvas by BookFeed's frame callback.
 */
import { useEffect, useRef } from 'preact/hooks';
import type { LocalBook } from '../../src/client/local-book.js';
import type { Market } from '../../src/client/types.js';
import { toNumber } from '../shared/decimal.js';
import type { BookFeed } from './book-feed.js';
import { type CanvasSize, fitCanvas } from './frame.js';

const LEVELS = 60;

function cumulative(levels: readonly { price: string; qty: string }[]): [number, number][] {
  let total = 0;
  return levels.map((l) => {
    total += toNumber(l.qty);
    return [toNumber(l.price), total];
  });
}

function draw(
  context: CanvasRenderingContext2D,
  size: CanvasSize,
  book: LocalBook | undefined,
  market: Market,
) {
  const style = getComputedStyle(document.documentElement);
  const colour = (name: string) => style.getPropertyValue(name).trim();
  const bids = cumulative(book?.bids(LEVELS) ?? []);
  const asks = cumulative(book?.asks(LEVELS) ?? []);
  const pad = { left: 8, right: 8, top: 10, bottom: 20 };
  const w = size.width - pad.left - pad.right;
  const h = size.height - pad.top - pad.bottom;
  context.font = '11px system-ui, sans-serif';
  context.fillStyle = colour('--muted');
  if (bids.length === 0 && asks.length === 0) {
    context.fillText('Waiting for the book…', pad.left, pad.top + 12);
    return;
  }
  const low = bids.at(-1)?.[0] ?? asks[0]![0];
  const high = asks.at(-1)?.[0] ?? bids[0]![0];
  // Symmetric around the mid price, so both sides get the same width.
  const mid = bids.length > 0 && asks.length > 0 ? (bids[0]![0] + asks[0]![0]) / 2 : (low + high) / 2;
  const half = Math.max(mid - low, high - mid) || 1;
  const maxQty = Math.max(bids.at(-1)?.[1] ?? 0, asks.at(-1)?.[1] ?? 0) || 1;
  const x = (price: number) => pad.left + ((price - (mid - half)) / (2 * half)) * w;
  const y = (qty: number) => pad.top + h - (qty / maxQty) * h;

  const side = (points: [number, number][], line: string, fill: string, toward: number) => {
    if (points.length === 0) return;
    context.beginPath();
    context.moveTo(x(points[0]![0]), y(0));
    let previous = 0;
    for (const [price, qty] of points) {
      context.lineTo(x(price), y(previous));
      context.lineTo(x(price), y(qty));
      previous = qty;
    }
    context.lineTo(x(toward), y(previous));
    context.lineTo(x(toward), y(0));
    context.closePath();
    context.fillStyle = fill;
    context.fill();
    context.strokeStyle = line;
    context.lineWidth = 1.5;
    context.stroke();
  };
  side(bids, colour('--buy'), colour('--buy-bg'), mid - half);
  side(asks, colour('--sell'), colour('--sell-bg'), mid + half);

  context.fillStyle = colour('--muted');
  context.textBaseline = 'alphabetic';
  const label = (price: number, align: CanvasTextAlign, at: number) => {
    context.textAlign = align;
    context.fillText(price.toFixed(market.pairDecimals), at, size.height - 5);
  };
  label(mid - half, 'left', pad.left);
  label(mid, 'center', pad.left + w / 2);
  label(mid + half, 'right', pad.left + w);
  context.textAlign = 'left';
  context.fillText(
    `${maxQty.toFixed(Math.min(market.lotDecimals, 4))} ${market.base}`,
    pad.left,
    pad.top + 2,
  );
}

export function DepthChart(props: { readonly feed: BookFeed | undefined; readonly market: Market }) {
  const canvas = useRef<HTMLCanvasElement>(null);
  const { feed, market } = props;
  useEffect(() => {
    if (canvas.current === null) return undefined;
    let book: LocalBook | undefined;
    const fit = fitCanvas(canvas.current, (context, size) => draw(context, size, book, market));
    const unwatch = feed?.watch((current) => {
      book = current;
      fit.redraw();
    });
    return () => {
      unwatch?.();
      fit.stop();
    };
  }, [feed, market]);
  return (
    <canvas
      ref={canvas}
      class="depth-canvas"
      role="img"
      aria-label={`Depth chart of ${market.wsname}: cumulative bids and asks around the mid price`}
    />
  );
}
