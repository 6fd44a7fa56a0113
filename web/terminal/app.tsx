/**
 * The trading terminal (`/`): market data for the selected market, live from the exchange's
 * public channels and REST endpoints, and trading for an API key entered here (signed in the
 * browser). Layout and the state shared between panels live here; each panel is its own module.
 */
import { useCallback, useEffect, useMemo, useRef, useState } from 'preact/hooks';
import type { ExecutionMessage } from '../../src/client/channels.js';
import type { Realtime } from '../../src/client/realtime.js';
import {
  type Envelope,
  INTERVALS,
  type Interval,
  type Market,
  type WalletEntry,
} from '../../src/client/types.js';
import { type PageConfig, pageConfig, publicGet } from '../shared/api.js';
import { AccountTabs, MarketBalances } from './account-tabs.js';
import { BookFeed } from './book-feed.js';
import { BookPanel } from './book-panel.js';
import { CandleChart } from './candle-chart.js';
import { DepthChart } from './depth-chart.js';
import { OrderForm } from './order-form.js';
import { availableOf } from './order-size.js';
import { connectPage, SessionAuthorizer } from './realtime.js';
import { discoverUserId, forget, keep, restore, type Session } from './session.js';
import { SignIn } from './sign-in.js';
import { TickerBar } from './ticker-bar.js';
import { TradeTape } from './trade-tape.js';

const INTERVAL_LABELS: Record<Interval, string> = {
  1: '1m',
  5: '5m',
  15: '15m',
  30: '30m',
  60: '1h',
  240: '4h',
  1440: '1D',
  10080: '1W',
  21600: '15D',
};

/** The market in the address (`#BTC/EUR`), so a reload or a shared link keeps it. */
const pairFromHash = () => decodeURIComponent(location.hash.slice(1));

/**
 * The WebSocket's state; `onReconnected` runs when it is connected again after a loss (public
 * channels come back with a snapshot each, but account events sent meanwhile are gone).
 */
function useConnectionState(realtime: Realtime | undefined, onReconnected: () => void): string {
  const [state, setState] = useState('connecting');
  useEffect(() => {
    if (realtime === undefined) return undefined;
    let wasConnected = false;
    const onChange = ({ current }: { current: string }) => {
      setState(current);
      if (current !== 'connected') return;
      if (wasConnected) onReconnected();
      wasConnected = true;
    };
    setState(realtime.pusher.connection.state);
    realtime.pusher.connection.bind('state_change', onChange);
    return () => realtime.pusher.connection.unbind('state_change', onChange);
  }, [realtime, onReconnected]);
  return state;
}

export function App() {
  const [config, setConfig] = useState<PageConfig>();
  const [markets, setMarkets] = useState<readonly Market[]>([]);
  const [loadError, setLoadError] = useState<string>();
  const [pair, setPair] = useState(pairFromHash);
  const [interval, setInterval] = useState<Interval>(1);
  const [chartView, setChartView] = useState<'candles' | 'depth'>('candles');
  const [session, setSession] = useState<Session | undefined>(restore);
  const [version, setVersion] = useState(0);
  const [wallet, setWallet] = useState<readonly WalletEntry[]>();
  const [walletError, setWalletError] = useState<string>();
  const [picked, setPicked] = useState<{ price: string; n: number }>();
  const authorizer = useRef(new SessionAuthorizer()).current;
  authorizer.client = session?.client;

  useEffect(() => {
    Promise.all([pageConfig(), publicGet<Envelope<Record<string, Market>>>('/markets')]).then(
      ([c, m]) => {
        setConfig(c);
        setMarkets(Object.values(m.data).sort((a, b) => a.wsname.localeCompare(b.wsname)));
      },
      (reason: unknown) => setLoadError(reason instanceof Error ? reason.message : String(reason)),
    );
  }, []);

  const realtime = useMemo(
    () => (config === undefined ? undefined : connectPage(config.ws_app_key, authorizer)),
    [config, authorizer],
  );
  useEffect(() => () => realtime?.disconnect(), [realtime]);

  const market = markets.find((m) => m.wsname === pair) ?? markets[0];
  useEffect(() => {
    if (market === undefined) return;
    if (pairFromHash() !== market.wsname) history.replaceState(null, '', `#${market.wsname}`);
  }, [market]);
  useEffect(() => {
    const onHash = () => setPair(pairFromHash());
    window.addEventListener('hashchange', onHash);
    return () => window.removeEventListener('hashchange', onHash);
  }, []);

  const feed = useMemo(
    () =>
      realtime === undefined || market === undefined ? undefined : new BookFeed(realtime, market.wsname),
    [realtime, market],
  );
  useEffect(() => () => feed?.close(), [feed]);
  // For the browser test's frame measurement (test/web): how many messages and draws.
  useEffect(() => {
    (window as unknown as { __bookFeed?: BookFeed }).__bookFeed = feed;
  }, [feed]);

  const changed = useCallback(() => setVersion((v) => v + 1), []);
  const connection = useConnectionState(realtime, changed);

  // Balances: on sign-in and after every change of the account.
  useEffect(() => {
    if (session === undefined) {
      setWallet(undefined);
      return undefined;
    }
    let live = true;
    session.client.request<Envelope<WalletEntry[]>>('GET', '/spot-wallet').then(
      (answer) => {
        if (!live) return;
        setWallet(answer.data);
        setWalletError(undefined);
      },
      (reason: unknown) => live && setWalletError(reason instanceof Error ? reason.message : String(reason)),
    );
    return () => {
      live = false;
    };
  }, [session, version]);

  // The private channel: every order event of the account refreshes its tables and balances.
  const userId = session?.account.userId;
  useEffect(() => {
    if (realtime === undefined || session === undefined || userId === undefined) return undefined;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const subscription = realtime.executions(userId, (_message: ExecutionMessage, event) => {
      if (event === 'snapshot') return;
      // A burst of fills refreshes once.
      if (timer === undefined)
        timer = setTimeout(() => {
          timer = undefined;
          changed();
        }, 150);
    });
    return () => {
      clearTimeout(timer);
      subscription.unsubscribe();
    };
  }, [realtime, session, userId, changed]);

  const learnUserId = useCallback(async (current: Session) => {
    if (current.account.userId !== undefined) return;
    const id = await discoverUserId(current.client).catch(() => undefined);
    if (id === undefined) return;
    const next = { ...current, account: { ...current.account, userId: id } };
    keep(next);
    setSession(next);
  }, []);

  const signIn = async (next: Session) => {
    // A signed request proves the key and secret before anything is kept.
    await next.client.request('GET', '/spot-wallet');
    keep(next);
    setSession(next);
    void learnUserId(next);
  };
  const signOut = () => {
    forget();
    setSession(undefined);
  };

  // What an order can spend: the total less what open orders hold.
  const available = useMemo(() => {
    const map: Record<string, string> = {};
    for (const w of wallet ?? []) map[w.asset_id] = availableOf(w);
    return map;
  }, [wallet]);
  const bestAsk = useCallback(() => feed?.book.asks(1)[0]?.price, [feed]);

  if (loadError !== undefined)
    return (
      <main class="fatal">
        <h1>OpenSpot</h1>
        <p class="field-error">The exchange did not answer: {loadError}</p>
      </main>
    );
  if (market === undefined || config === undefined)
    return (
      <main class="fatal">
        <p class="muted">Loading markets…</p>
      </main>
    );

  return (
    <div class="terminal">
      <header class="top">
        <a class="brand" href="/" aria-label="OpenSpot home">
          OpenSpot
        </a>
        <div class="market-select">
          <label for="market" class="visually-hidden">
            Market
          </label>
          <select
            id="market"
            value={market.wsname}
            onChange={(e) => setPair((e.currentTarget as HTMLSelectElement).value)}
          >
            {markets.map((m) => (
              <option key={m.wsname} value={m.wsname}>
                {m.wsname}
              </option>
            ))}
          </select>
        </div>
        <TickerBar realtime={realtime} market={market} />
        <span class={`connection ${connection}`} role="status" aria-label={`WebSocket ${connection}`}>
          {connection}
        </span>
      </header>

      <main class="grid">
        <div class="left">
          <BookPanel
            feed={feed}
            market={market}
            onPrice={(price) => setPicked((p) => ({ price, n: (p?.n ?? 0) + 1 }))}
          />
          <TradeTape realtime={realtime} market={market} />
        </div>

        <section class="panel chart" aria-label="Charts">
          <header class="panel-head chart-head">
            <fieldset class="segmented">
              <legend class="visually-hidden">Chart</legend>
              <button
                type="button"
                aria-pressed={chartView === 'candles'}
                onClick={() => setChartView('candles')}
              >
                Candles
              </button>
              <button
                type="button"
                aria-pressed={chartView === 'depth'}
                onClick={() => setChartView('depth')}
              >
                Depth
              </button>
            </fieldset>
            {chartView === 'candles' && (
              <fieldset class="segmented intervals">
                <legend class="visually-hidden">Candle interval</legend>
                {INTERVALS.map((i) => (
                  <button
                    key={i}
                    type="button"
                    aria-pressed={interval === i}
                    aria-label={`${i}-minute candles`}
                    onClick={() => setInterval(i)}
                  >
                    {INTERVAL_LABELS[i]}
                  </button>
                ))}
              </fieldset>
            )}
          </header>
          <div class={`chart-body show-${chartView}`}>
            <CandleChart realtime={realtime} market={market} interval={interval} />
            {chartView === 'depth' && <DepthChart feed={feed} market={market} />}
          </div>
        </section>

        <div class="side">
          {session === undefined ? (
            <SignIn demoAvailable={config.demo_available} onSignIn={signIn} />
          ) : (
            <section class="panel signed-in" aria-label="Account">
              <p>
                <span class="muted">API key </span>
                <span class="num key">{session.client.apiKey.slice(0, 10)}…</span>
                {session.remembered && <span class="muted"> · remembered</span>}
              </p>
              <button type="button" onClick={signOut}>
                Sign out
              </button>
            </section>
          )}
          <OrderForm
            session={session}
            market={market}
            pickedPrice={picked}
            balances={available}
            bestAsk={bestAsk}
            onPlaced={() => {
              changed();
              if (session !== undefined) void learnUserId(session);
            }}
          />
          {session !== undefined && <MarketBalances market={market} wallet={wallet} />}
        </div>

        <AccountTabs
          session={session}
          market={market}
          version={version}
          wallet={wallet}
          walletError={walletError}
          onChanged={changed}
        />
      </main>
      <footer class="foot muted">
        <span>
          API: <a href="/docs">/docs</a>
        </span>
        <span>
          Charts by <a href="https://www.tradingview.com/">TradingView</a> Lightweight Charts™
        </span>
      </footer>
    </div>
  );
}
