import { useEffect, useState } from 'preact/hooks';
import { publicGet } from '../shared/api.js';

interface Ticker {
  readonly ticker_id: string;
  readonly last_price: string;
}

export function App() {
  const [tickers, setTickers] = useState<readonly Ticker[]>([]);
  useEffect(() => {
    publicGet<Ticker[]>('/tickers').then(setTickers, () => setTickers([]));
  }, []);
  return (
    <main>
      <h1>OpenSpot</h1>
      <ul>
        {tickers.map((t) => (
          <li key={t.ticker_id}>
            {t.ticker_id} <span class="num">{t.last_price}</span>
          </li>
        ))}
      </ul>
    </main>
  );
}
