/** Canvas helpers: a canvas sized to its box in device pixels, redrawn when the box changes. */

export interface CanvasSize {
  readonly width: number;
  readonly height: number;
}

/**
 * Keeps `canvas` at its CSS box × devicePixelRatio and calls `draw` with a context scaled to CSS
 * pixels whenever the box changes; returns `redraw` (for new data) and `stop`.
 */
export function fitCanvas(
  canvas: HTMLCanvasElement,
  draw: (context: CanvasRenderingContext2D, size: CanvasSize) => void,
): { redraw: () => void; stop: () => void } {
  let size: CanvasSize = { width: 0, height: 0 };
  const redraw = () => {
    const context = canvas.getContext('2d');
    if (context === null || size.width === 0 || size.height === 0) return;
    const ratio = window.devicePixelRatio || 1;
    context.setTransform(ratio, 0, 0, ratio, 0, 0);
    context.clearRect(0, 0, size.width, size.height);
    draw(context, size);
  };
  const observer = new ResizeObserver(([entry]) => {
    if (entry === undefined) return;
    const { width, height } = entry.contentRect;
    const ratio = window.devicePixelRatio || 1;
    canvas.width = Math.round(width * ratio);
    canvas.height = Math.round(height * ratio);
    size = { width, height };
    redraw();
  });
  observer.observe(canvas);
  return { redraw, stop: () => observer.disconnect() };
}
