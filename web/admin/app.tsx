/**
 * The operator console: sign-in, then Users · Catalogue · Ledger · Health, each at its own
 * `#/…` address (a reload stays on the same view; no server-side routing needed).
 */
import { useCallback, useEffect, useMemo, useState } from 'preact/hooks';
import { CatalogueView } from './catalogue.js';
import { AdminClient, type Asset, readiness, storedToken, storeToken } from './client.js';
import { HealthView } from './health.js';
import { LedgerView } from './ledger.js';
import { SignIn } from './sign-in.js';
import { UsersView } from './users.js';

type Route =
  | { readonly view: 'users'; readonly user: number | null }
  | { readonly view: 'catalogue' }
  | { readonly view: 'ledger' }
  | { readonly view: 'health' };

function parseRoute(hash: string): Route {
  const parts = hash.replace(/^#\/?/, '').split('/');
  switch (parts[0]) {
    case 'catalogue':
      return { view: 'catalogue' };
    case 'ledger':
      return { view: 'ledger' };
    case 'health':
      return { view: 'health' };
    default: {
      const id = Number(parts[1]);
      return { view: 'users', user: Number.isSafeInteger(id) && id > 0 ? id : null };
    }
  }
}

function useRoute(): Route {
  const [hash, setHash] = useState(location.hash);
  useEffect(() => {
    const onChange = () => setHash(location.hash);
    addEventListener('hashchange', onChange);
    return () => removeEventListener('hashchange', onChange);
  }, []);
  return parseRoute(hash);
}

/** Each label's second part is left out at phone width, so the four tabs fit. */
const TABS = [
  { view: 'users', label: 'Users', more: '', href: '#/users' },
  { view: 'catalogue', label: 'Markets', more: ' & assets', href: '#/catalogue' },
  { view: 'ledger', label: 'Ledger', more: ' check', href: '#/ledger' },
  { view: 'health', label: 'Health', more: '', href: '#/health' },
] as const;

export function App() {
  const [token, setToken] = useState<string | null>(storedToken);
  const [notice, setNotice] = useState<string | null>(null);
  const signOut = useCallback((why: string | null) => {
    storeToken(null);
    setToken(null);
    setNotice(why);
  }, []);
  const client = useMemo(
    () =>
      token === null
        ? null
        : new AdminClient(token, () => signOut('The server refused the token; sign in again.')),
    [token, signOut],
  );
  if (client === null)
    return (
      <SignIn
        notice={notice}
        onSignedIn={(t) => {
          storeToken(t);
          setNotice(null);
          setToken(t);
        }}
      />
    );
  return <Console client={client} signOut={() => signOut(null)} />;
}

function Console(props: { readonly client: AdminClient; readonly signOut: () => void }) {
  const { client } = props;
  const route = useRoute();
  const [assets, setAssets] = useState<readonly Asset[]>([]);
  const [assetsError, setAssetsError] = useState<string | null>(null);
  const loadAssets = useCallback(async () => {
    try {
      setAssets((await client.get<{ data: Asset[] }>('/assets')).data);
      setAssetsError(null);
    } catch (caught) {
      setAssetsError(caught instanceof Error ? caught.message : String(caught));
    }
  }, [client]);
  useEffect(() => {
    void loadAssets();
  }, [loadAssets]);

  const tab = TABS.find((t) => t.view === route.view);
  const viewName = `${tab?.label ?? ''}${tab?.more ?? ''}`;
  useEffect(() => {
    document.title = `${viewName} — OpenSpot operator console`;
  }, [viewName]);

  // The header's readiness light: /readyz every 10 s.
  const [ready, setReady] = useState<{ ready: boolean; status: string } | null>(null);
  useEffect(() => {
    let stopped = false;
    const tick = async () => {
      const r = await readiness();
      if (!stopped) setReady(r);
    };
    void tick();
    const timer = setInterval(tick, 10_000);
    return () => {
      stopped = true;
      clearInterval(timer);
    };
  }, []);

  return (
    <div class="console">
      <header class="topbar">
        <a class="brand" href="#/users">
          OpenSpot <span class="muted">operator console</span>
        </a>
        <nav aria-label="Sections">
          {TABS.map((t) => (
            <a
              key={t.view}
              href={t.href}
              class="tab"
              aria-current={route.view === t.view ? 'page' : undefined}
            >
              {t.label}
              {t.more !== '' && <span class="hide-narrow">{t.more}</span>}
            </a>
          ))}
        </nav>
        <div class="topbar-end">
          {ready !== null && (
            <a
              href="#/health"
              class={`ready-light ${ready.ready ? 'on' : 'off'}`}
              title={`/readyz: ${ready.status}`}
            >
              <span class="dot" aria-hidden="true" />
              {ready.ready ? 'ready' : ready.status}
            </a>
          )}
          <a href="/docs" class="muted hide-narrow">
            API docs
          </a>
          <button type="button" onClick={props.signOut}>
            Sign out
          </button>
        </div>
      </header>
      <main class="content">
        <h1 class="visually-hidden">{viewName}</h1>
        {assetsError !== null && <p class="alert alert-error">Assets could not be loaded: {assetsError}</p>}
        {route.view === 'users' && (
          <UsersView
            client={client}
            assets={assets}
            selected={route.user}
            select={(id) => {
              location.hash = id === null ? '#/users' : `#/users/${id}`;
            }}
          />
        )}
        {route.view === 'catalogue' && (
          <CatalogueView client={client} assets={assets} reloadAssets={loadAssets} />
        )}
        {route.view === 'ledger' && <LedgerView client={client} />}
        {route.view === 'health' && <HealthView client={client} />}
      </main>
    </div>
  );
}
