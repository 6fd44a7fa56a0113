/** The trade tape: the market's last trades from `trade.{pair}` (snapshot, then updates), newest first. */
import { useEffect, useState } from 'preact/hooks';
import type { TradeItem } from '../../src/client/channels.js';
import type { Realtime } from '../../src/client/realtime.js';
import type { Market } from '../../src/client/types.js';
import { group } from '../shared/decimal.js';

const KEEP = 60;

/** HH:MM:SS in UTC, like every time on the page (the candles' axis, the account tables). */
const clock = (iso: string) => {
  const date = new Date(iso);
  return Number.isNaN(date.getTime()) ? '' : date.toISOString().slice(11, 19);
};

export function TradeTape(props: { readonly realtime: Realtime | undefined; readonly market: Market }) {
  const { realtime, market } = props;
  const [trades, setTrades] = useState<readonly TradeItem[]>([]);
  useEffect(() => {
    setTrades([]);
    if (realtime === undefined) return undefined;
    const subscription = realtime.trades(market.wsname, (message, event) => {
      const incoming = [...message.data].sort((a, b) => b.trade_id - a.trade_id);
      setTrades((current) => {
        if (event === 'snapshot') return incoming.slice(0, KEEP);
        const newest = current[0]?.trade_id ?? -1;
        return [...incoming.filter((t) => t.trade_id > newest), ...current].slice(0, KEEP);
      });
    });
    return () => subscription.unsubscribe();
  }, [realtime, market]);

  return (
    <section class="panel tape" aria-label="Trades" data-trades={trades.length}>
      <header class="panel-head">
        <h2>Trades</h2>
      </header>
      <div class="scroll">
        <table>
          <thead>
            <tr>
              <th scope="col">Price ({market.quote})</th>
              <th scope="col">Amount ({market.base})</th>
              <th scope="col">Time (UTC)</th>
            </tr>
          </thead>
          <tbody>
            {trades.map((t) => (
              <tr key={t.trade_id} data-trade-id={t.trade_id}>
                <td class={`num ${t.side === 'buy' ? 'buy' : 'sell'}`}>{group(t.price)}</td>
                <td class="num">{t.qty}</td>
                <td class="num muted">{clock(t.timestamp)}</td>
              </tr>
            ))}
          </tbody>
        </table>
        {trades.length === 0 && <p class="empty">No trades yet.</p>}
      </div>
    </section>
  );
}
