/** The 24-hour ticker of the selected market, from `ticker-information.{pair}`. */
import { useEffect, useState } from 'preact/hooks';
import type { TickerItem } from '../../src/client/channels.js';
import type { Realtime } from '../../src/client/realtime.js';
import type { Market } from '../../src/client/types.js';
import { group, trimZeros } from '../shared/decimal.js';

export function TickerBar(props: { readonly realtime: Realtime | undefined; readonly market: Market }) {
  const { realtime, market } = props;
  const [ticker, setTicker] = useState<TickerItem>();
  useEffect(() => {
    setTicker(undefined);
    if (realtime === undefined) return undefined;
    const subscription = realtime.ticker(market.wsname, (message) => setTicker(message.data[0]));
    return () => subscription.unsubscribe();
  }, [realtime, market]);

  // The last price in the tab's title, as trading terminals do.
  useEffect(() => {
    document.title = `${ticker === undefined ? '' : `${group(ticker.last)} · `}${market.wsname} · OpenSpot`;
  }, [ticker, market]);

  const change = ticker?.change ?? '';
  const direction = change.startsWith('-') ? 'sell' : /[1-9]/.test(change) ? 'buy' : '';
  const stat = (label: string, value: string | undefined, cls = '') => (
    <div class="stat">
      <dt>{label}</dt>
      <dd class={`num ${cls}`}>{value === undefined || value === '' ? '—' : value}</dd>
    </div>
  );
  return (
    <dl class="ticker" aria-label={`${market.wsname} 24-hour ticker`} data-last={ticker?.last ?? ''}>
      {stat('Last', ticker && group(ticker.last), `last ${direction}`)}
      {stat(
        '24h change',
        ticker &&
          `${ticker.change.startsWith('-') ? '' : '+'}${group(ticker.change)} (${ticker.change_pct}%)`,
        direction,
      )}
      {stat('24h high', ticker && group(ticker.high))}
      {stat('24h low', ticker && group(ticker.low))}
      {stat(`24h volume (${market.base})`, ticker && trimZeros(ticker.volume))}
      {stat('Bid', ticker && group(ticker.bid), 'buy')}
      {stat('Ask', ticker && group(ticker.ask), 'sell')}
    </dl>
  );
}
