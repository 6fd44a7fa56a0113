/**
 * Candles and volume for one market and interval (TradingView's lightweight-charts, bundled):
 * history from GET /ohlc, then the live candle from `ohlc.{pair}.{interval}`. Channel messages
 * that arrive before the history are kept and applied after it, so no trade is lost in between.
 *
 * The library's own attribution logo is off: it injects an inline <style>, which the page's CSP
 * refuses. The attribution its licence asks for is in the page footer instead (a link to
 * tradingview.com, as the option's documentation allows).
 */
import {
  CandlestickSeries,
  ColorType,
  createChart,
  HistogramSeries,
  type IChartApi,
  type ISeriesApi,
  type UTCTimestamp,
} from 'lightweight-charts';
import { useEffect, useRef, useState } from 'preact/hooks';
import type { CandleMessage } from '../../src/client/channels.js';
import type { Realtime } from '../../src/client/realtime.js';
import type { Candle, Interval, Market } from '../../src/client/types.js';
import { publicGet } from '../shared/api.js';
import { toNumber } from '../shared/decimal.js';

interface Bar {
  readonly time: UTCTimestamp;
  readonly open: number;
  readonly high: number;
  readonly low: number;
  readonly close: number;
  readonly volume: number;
}

const css = (name: string) => getComputedStyle(document.documentElement).getPropertyValue(name).trim();

function fromRest(candle: Candle): Bar {
  return {
    // The interval's start, as the server aligns it; `time` may carry a fraction.
    time: Math.floor(candle.time) as UTCTimestamp,
    open: toNumber(candle.open),
    high: toNumber(candle.high),
    low: toNumber(candle.low),
    close: toNumber(candle.close),
    volume: toNumber(candle.volume),
  };
}

function fromChannel(message: CandleMessage): Bar {
  const d = message.data;
  return {
    time: Math.floor(Date.parse(d.interval_begin) / 1000) as UTCTimestamp,
    open: toNumber(d.open),
    high: toNumber(d.high),
    low: toNumber(d.low),
    close: toNumber(d.close),
    volume: toNumber(d.volume),
  };
}

export function CandleChart(props: {
  readonly realtime: Realtime | undefined;
  readonly market: Market;
  readonly interval: Interval;
}) {
  const { realtime, market, interval } = props;
  const box = useRef<HTMLDivElement>(null);
  const chart = useRef<IChartApi>();
  const series = useRef<{ candles: ISeriesApi<'Candlestick'>; volume: ISeriesApi<'Histogram'> }>();
  const [bars, setBars] = useState(0);
  const [error, setError] = useState<string>();

  // The chart itself lives as long as the component.
  useEffect(() => {
    if (box.current === null) return undefined;
    const created = createChart(box.current, {
      autoSize: true,
      layout: {
        background: { type: ColorType.Solid, color: css('--panel') },
        textColor: css('--muted'),
        attributionLogo: false,
        fontFamily: css('--sans'),
      },
      grid: { vertLines: { color: css('--border') }, horzLines: { color: css('--border') } },
      rightPriceScale: { borderColor: css('--border') },
      timeScale: { borderColor: css('--border'), timeVisible: true, secondsVisible: false, rightOffset: 6 },
      crosshair: { mode: 0 },
    });
    const candles = created.addSeries(CandlestickSeries, {
      upColor: css('--buy'),
      downColor: css('--sell'),
      wickUpColor: css('--buy'),
      wickDownColor: css('--sell'),
      borderVisible: false,
    });
    candles.priceScale().applyOptions({ scaleMargins: { top: 0.08, bottom: 0.28 } });
    const volume = created.addSeries(HistogramSeries, {
      priceScaleId: 'volume',
      priceFormat: { type: 'volume' },
      lastValueVisible: false,
      priceLineVisible: false,
    });
    volume.priceScale().applyOptions({ scaleMargins: { top: 0.8, bottom: 0 } });
    chart.current = created;
    series.current = { candles, volume };
    return () => {
      created.remove();
      chart.current = undefined;
      series.current = undefined;
    };
  }, []);

  // History and live candle per market and interval.
  useEffect(() => {
    const s = series.current;
    if (s === undefined || realtime === undefined) return undefined;
    const minMove = 10 ** -market.pairDecimals;
    s.candles.applyOptions({ priceFormat: { type: 'price', precision: market.pairDecimals, minMove } });
    s.candles.setData([]);
    s.volume.setData([]);
    setBars(0);
    setError(undefined);
    let loaded = false;
    let last = 0;
    const pending: Bar[] = [];
    const up = css('--buy-bg');
    const down = css('--sell-bg');
    const put = (bar: Bar) => {
      if (bar.time < last) return; // older than what is drawn: the history already has it
      s.candles.update(bar);
      s.volume.update({ time: bar.time, value: bar.volume, color: bar.close >= bar.open ? up : down });
      if (bar.time > last) setBars((n) => n + 1);
      last = bar.time;
    };
    const subscription = realtime.ohlc(market.wsname, interval, (message) => {
      const bar = fromChannel(message);
      if (loaded) put(bar);
      else pending.push(bar);
    });
    const abort = new AbortController();
    publicGet<Candle[]>('/ohlc', { ticker_id: market.wsname, interval }, abort.signal).then(
      (candles) => {
        const history = candles.map(fromRest);
        s.candles.setData(history);
        s.volume.setData(
          history.map((b) => ({ time: b.time, value: b.volume, color: b.close >= b.open ? up : down })),
        );
        last = history.at(-1)?.time ?? 0;
        setBars(history.length);
        loaded = true;
        for (const bar of pending.splice(0)) put(bar);
        chart.current?.timeScale().scrollToRealTime();
      },
      (reason: unknown) => {
        if (abort.signal.aborted) return;
        loaded = true;
        setError(reason instanceof Error ? reason.message : String(reason));
      },
    );
    return () => {
      abort.abort();
      subscription.unsubscribe();
    };
  }, [realtime, market, interval]);

  return (
    <div class="candles" data-bars={bars}>
      <div
        ref={box}
        class="chart-box"
        role="img"
        aria-label={`Candle chart of ${market.wsname}, ${interval}-minute candles with volume`}
      />
      {error !== undefined && <p class="chart-error">Candles unavailable: {error}</p>}
    </div>
  );
}
