/**
 * The account's tables: open orders (with amend, cancel and cancel-all; a conditional order with
 * what it waits for), order history (with each order's reason) and trade history, each
 * paginated by the API (`page-size`, `page`, `meta`), and the balances with their valuation.
 * `version` changes whenever the account may have changed (an order placed or canceled, a
 * private-channel event): the visible table is then fetched again.
 */
import type { ComponentChildren } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import {
  isConditional,
  type Market,
  type Order,
  type PagedEnvelope,
  takesTriggerPrice,
  type UserTrade,
  type WalletEntry,
} from '../../src/client/types.js';
import { ApiError } from '../shared/api.js';
import {
  compareDecimal,
  decimalsOf,
  formatUnits,
  group,
  isPositiveDecimal,
  parseUnits,
  sanitizeDecimal,
  trimZeros,
} from '../shared/decimal.js';
import type { Session } from './session.js';

type Tab = 'open' | 'history' | 'trades' | 'balances';
const TABS: readonly { id: Tab; label: string }[] = [
  { id: 'open', label: 'Open orders' },
  { id: 'history', label: 'Order history' },
  { id: 'trades', label: 'Trade history' },
  { id: 'balances', label: 'Balances' },
];
const PAGE_SIZE = 10;

/**
 * Times in UTC, `YYYY-MM-DD HH:MM:SS`: the form the API gives trade timestamps in, the candles'
 * time axis and the interface's day ("today's prices start at midnight UTC").
 */
const when = (unixSeconds: string | null) =>
  unixSeconds === null
    ? '—'
    : new Date(Number(unixSeconds) * 1000).toISOString().slice(0, 19).replace('T', ' ');

function Pager(props: { meta: PagedEnvelope<unknown>['meta'] | undefined; onPage: (page: number) => void }) {
  const { meta } = props;
  if (meta === undefined || meta.last_page <= 1) return null;
  return (
    <nav class="pager" aria-label="Pages">
      <button
        type="button"
        disabled={meta.current_page <= 1}
        onClick={() => props.onPage(meta.current_page - 1)}
      >
        Previous
      </button>
      <span class="muted">
        Page {meta.current_page} of {meta.last_page} · {meta.total} in all
      </span>
      <button
        type="button"
        disabled={meta.current_page >= meta.last_page}
        onClick={() => props.onPage(meta.current_page + 1)}
      >
        Next
      </button>
    </nav>
  );
}

function usePaged<T>(
  session: Session,
  path: string,
  query: Record<string, string | number | readonly string[] | undefined>,
  deps: unknown[],
) {
  const [page, setPage] = useState(1);
  const [data, setData] = useState<PagedEnvelope<T>>();
  const [error, setError] = useState<string>();
  const key = JSON.stringify(query);
  // A new filter starts again from the first page.
  useEffect(() => setPage(1), [key]);
  useEffect(() => {
    let live = true;
    session.client
      .request<PagedEnvelope<T>>('GET', path, { query: { ...query, 'page-size': PAGE_SIZE, page } })
      .then(
        (answer) => {
          if (!live) return;
          // A page past the end (the list shrank): go to the last one.
          if (answer.data.length === 0 && (answer.meta?.last_page ?? 1) < page && page > 1)
            setPage(answer.meta?.last_page ?? 1);
          setData(answer);
          setError(undefined);
        },
        (reason: unknown) => live && setError(reason instanceof Error ? reason.message : String(reason)),
      );
    return () => {
      live = false;
    };
  }, [session, path, key, page, ...deps]);
  return { data, error, setPage };
}

/** An open order being amended: the texts typed for its price, volume and trigger price. */
interface Draft {
  readonly id: number;
  readonly price: string;
  readonly volume: string;
  readonly trigger: string;
}

/**
 * The price an order trades at: a limit order's limit; a conditional order's limit price once
 * triggered (the `-limit` types), none for the others (its record's `price` is the trigger).
 */
const limitOf = (o: Order): string | undefined =>
  isConditional(o.order_type) ? o.limit_price?.amount : o.order_type === 'limit' ? o.price.amount : undefined;

/** A stop or take-profit that has not fired: its trigger price may still move. */
const waitingTrigger = (o: Order): boolean =>
  takesTriggerPrice(o.order_type) && !o.trigger_conditions.startsWith('triggered');

/**
 * An order's type; under a conditional order's, what it waits for (or that it fired) as the server
 * words it — in the type's cell, so the tables keep their width. `editor` replaces the condition
 * while its trigger is being amended.
 */
function TypeCell(props: { order: Order; editor?: ComponentChildren }) {
  const o = props.order;
  return (
    <td class="order-type">
      {o.order_type}
      {props.editor ??
        (isConditional(o.order_type) && (
          <span class="trigger-condition muted" data-testid="trigger-condition">
            {o.trigger_conditions}
          </span>
        ))}
    </td>
  );
}

function OpenOrders(props: {
  session: Session;
  pair: string | undefined;
  version: number;
  onChanged: () => void;
}) {
  const { data, error, setPage } = usePaged<Order>(props.session, '/open-orders', { pair: props.pair }, [
    props.version,
  ]);
  const [busy, setBusy] = useState<number | 'all'>();
  const [actionError, setActionError] = useState<string>();
  const [draft, setDraft] = useState<Draft>();
  const [confirmAll, setConfirmAll] = useState(false);
  const client = props.session.client;

  /** One signed change: the tables refresh after it, its refusal shows above them. */
  const act = async (what: number | 'all', label: string, change: () => Promise<unknown>) => {
    setBusy(what);
    setActionError(undefined);
    try {
      await change();
      props.onChanged();
      return true;
    } catch (reason) {
      setActionError(`${label}: ${reason instanceof ApiError ? reason.message : String(reason)}`);
      return false;
    } finally {
      setBusy(undefined);
    }
  };
  // Signed bodies name what they change (and carry a nonce): required of nonce keys, accepted
  // from all, and they bind the signature to this change instead of any (docs/security.md).
  const cancel = (order: Order) =>
    act(order.id, `Order #${order.id}`, () =>
      client.request('DELETE', `/orders/${order.id}`, {
        body: { nonce: client.nextNonce(), order_id: order.id },
      }),
    );
  const cancelAll = async () => {
    setConfirmAll(false);
    await act('all', 'Cancel all', () =>
      client.request('DELETE', '/orders', {
        query: { pair: props.pair },
        body: { nonce: client.nextNonce(), ...(props.pair === undefined ? {} : { pair: props.pair }) },
      }),
    );
  };
  const amend = async (order: Order, next: Draft) => {
    // Only what changed is sent: a lower volume alone keeps the order's place in the queue.
    const changes: Record<string, string> = {};
    const limit = limitOf(order);
    if (limit !== undefined && isPositiveDecimal(next.price) && compareDecimal(next.price, limit) !== 0)
      changes.price = next.price;
    if (
      waitingTrigger(order) &&
      isPositiveDecimal(next.trigger) &&
      compareDecimal(next.trigger, order.price.amount) !== 0
    )
      changes.trigger_price = next.trigger;
    if (isPositiveDecimal(next.volume) && compareDecimal(next.volume, order.volume.amount) !== 0)
      changes.volume = next.volume;
    if (Object.keys(changes).length === 0) {
      setDraft(undefined);
      return;
    }
    const done = await act(order.id, `Order #${order.id}`, () =>
      client.request('PATCH', `/orders/${order.id}`, {
        body: { ...changes, nonce: client.nextNonce(), order_id: order.id },
      }),
    );
    if (done) setDraft(undefined);
  };
  /** An input of the draft, kept to the precision of the order's own amounts. */
  const draftInput = (order: Order, field: 'price' | 'volume' | 'trigger', label: string) => (
    <input
      class="amend-input"
      inputMode="decimal"
      autoComplete="off"
      aria-label={`${label} of order ${order.id}`}
      value={draft?.[field]}
      onInput={(e) => {
        const input = e.currentTarget as HTMLInputElement;
        const sample = field === 'volume' ? order.volume.amount : order.price.amount;
        const kept = sanitizeDecimal(input.value, decimalsOf(sample));
        if (input.value !== kept) input.value = kept;
        setDraft((d) => (d === undefined ? d : { ...d, [field]: kept }));
      }}
    />
  );
  const count = data?.meta?.total ?? data?.data.length ?? 0;
  const scope = props.pair ?? 'all markets';
  return (
    <>
      {actionError !== undefined && (
        <p class="field-error" role="alert">
          {actionError}
        </p>
      )}
      {count > 0 && (
        <div class="row bulk">
          {confirmAll ? (
            <>
              <span>
                Cancel {count} open order{count === 1 ? '' : 's'} ({scope})?
              </span>
              <button type="button" class="small danger" onClick={() => void cancelAll()}>
                Yes, cancel all
              </button>
              <button type="button" class="small" onClick={() => setConfirmAll(false)}>
                Keep them
              </button>
            </>
          ) : (
            <button type="button" class="small" disabled={busy === 'all'} onClick={() => setConfirmAll(true)}>
              Cancel all
            </button>
          )}
        </div>
      )}
      <Table error={error} empty={data?.data.length === 0 ? 'No open orders.' : undefined}>
        <thead>
          <tr>
            <th scope="col">Opened (UTC)</th>
            <th scope="col">Market</th>
            <th scope="col">Side</th>
            <th scope="col">Type</th>
            <th scope="col">Price</th>
            <th scope="col">Volume</th>
            <th scope="col">Filled</th>
            <th scope="col">
              <span class="visually-hidden">Action</span>
            </th>
          </tr>
        </thead>
        <tbody>
          {data?.data.map((o) => {
            const editing = draft?.id === o.id;
            const limit = limitOf(o);
            return (
              <tr key={o.id} data-order-id={o.id}>
                <td class="num muted">{when(o.open_time)}</td>
                <td>{o.asset_pair.display_name}</td>
                <td class={o.type}>{o.type}</td>
                <TypeCell
                  order={o}
                  editor={
                    editing && waitingTrigger(o) ? draftInput(o, 'trigger', 'New trigger price') : undefined
                  }
                />
                <td class="num">
                  {limit === undefined
                    ? 'market'
                    : editing
                      ? draftInput(o, 'price', 'New price')
                      : group(limit)}
                </td>
                <td class="num">
                  {editing ? draftInput(o, 'volume', 'New total volume') : trimZeros(o.volume.amount)}
                </td>
                <td class="num">{trimZeros(o.volume_executed.amount)}</td>
                <td class="actions">
                  {editing ? (
                    <>
                      <button
                        type="button"
                        class="small"
                        disabled={busy === o.id}
                        onClick={() => void amend(o, draft)}
                        aria-label={`Save order ${o.id}`}
                      >
                        Save
                      </button>
                      <button type="button" class="small" onClick={() => setDraft(undefined)}>
                        Discard
                      </button>
                    </>
                  ) : (
                    o.order_type !== 'market' && (
                      <button
                        type="button"
                        class="small"
                        onClick={() =>
                          setDraft({
                            id: o.id,
                            price: limit ?? '',
                            volume: trimZeros(o.volume.amount),
                            trigger: o.price.amount,
                          })
                        }
                        aria-label={`Amend order ${o.id}`}
                      >
                        Amend
                      </button>
                    )
                  )}
                  <button
                    type="button"
                    class="small"
                    disabled={busy === o.id}
                    onClick={() => void cancel(o)}
                    aria-label={`Cancel order ${o.id}`}
                  >
                    Cancel
                  </button>
                </td>
              </tr>
            );
          })}
        </tbody>
      </Table>
      <Pager meta={data?.meta} onPage={setPage} />
    </>
  );
}

function OrderHistory(props: { session: Session; pair: string | undefined; version: number }) {
  const { data, error, setPage } = usePaged<Order>(props.session, '/closed-orders', { pair: props.pair }, [
    props.version,
  ]);
  return (
    <>
      <Table error={error} empty={data?.data.length === 0 ? 'No closed orders.' : undefined}>
        <thead>
          <tr>
            <th scope="col">Closed (UTC)</th>
            <th scope="col">Market</th>
            <th scope="col">Side</th>
            <th scope="col">Type</th>
            <th scope="col">Price</th>
            <th scope="col">Volume</th>
            <th scope="col">Filled</th>
            <th scope="col">Status</th>
          </tr>
        </thead>
        <tbody>
          {data?.data.map((o) => (
            <tr key={o.id} data-order-id={o.id}>
              <td class="num muted">{when(o.close_time)}</td>
              <td>{o.asset_pair.display_name}</td>
              <td class={o.type}>{o.type}</td>
              <TypeCell order={o} />
              <td class="num">{o.order_type === 'market' ? 'market' : group(limitOf(o) ?? 'market')}</td>
              <td class="num">{trimZeros(o.volume.amount)}</td>
              <td class="num">{trimZeros(o.volume_executed.amount)}</td>
              <td>
                {o.status}
                {o.reason !== null && o.reason !== '' && <span class="muted reason"> · {o.reason}</span>}
              </td>
            </tr>
          ))}
        </tbody>
      </Table>
      <Pager meta={data?.meta} onPage={setPage} />
    </>
  );
}

function TradeHistory(props: { session: Session; pair: string | undefined; version: number }) {
  const query = { 'pairs[]': props.pair === undefined ? undefined : [props.pair] };
  const { data, error, setPage } = usePaged<UserTrade>(props.session, '/trades', query, [props.version]);
  return (
    <>
      <Table error={error} empty={data?.data.length === 0 ? 'No trades.' : undefined}>
        <thead>
          <tr>
            <th scope="col">Time (UTC)</th>
            <th scope="col">Market</th>
            <th scope="col">Side</th>
            <th scope="col">Price</th>
            <th scope="col">Volume</th>
            <th scope="col">Cost</th>
            <th scope="col">Fee</th>
          </tr>
        </thead>
        <tbody>
          {data?.data.map((t) => (
            <tr key={t.id} data-trade-id={t.id}>
              <td class="num muted">{t.timestamp}</td>
              <td>{t.pair}</td>
              <td class={t.type}>{t.type}</td>
              <td class="num">{group(t.price.amount)}</td>
              <td class="num">{trimZeros(t.volume.amount)}</td>
              <td class="num">{group(t.cost.amount)}</td>
              <td class="num">
                {t.fee.amount} {t.fee.currency}
              </td>
            </tr>
          ))}
        </tbody>
      </Table>
      <Pager meta={data?.meta} onPage={setPage} />
    </>
  );
}

/** The sum of decimal strings, exactly. */
function sum(values: readonly string[]): string {
  const decimals = Math.max(0, ...values.map((v) => v.split('.')[1]?.length ?? 0));
  return formatUnits(
    values.reduce((acc, v) => acc + parseUnits(v, decimals), 0n),
    decimals,
  );
}

export function Balances(props: { wallet: readonly WalletEntry[] | undefined; error: string | undefined }) {
  const wallet = props.wallet ?? [];
  const currency = wallet[0]?.balance_currency ?? '';
  const total = wallet.length === 0 ? undefined : sum(wallet.map((w) => w.balance.balance_total_in_fiat));
  return (
    <Table error={props.error} empty={props.wallet?.length === 0 ? 'No balances.' : undefined}>
      <thead>
        <tr>
          <th scope="col">Asset</th>
          <th scope="col">Name</th>
          <th scope="col">Total</th>
          <th scope="col">Pending</th>
          <th scope="col">Value ({currency})</th>
        </tr>
      </thead>
      <tbody>
        {wallet.map((w) => (
          <tr key={w.asset_id} data-asset={w.asset_id}>
            <td>{w.asset_id}</td>
            <td class="muted">{w.asset_name}</td>
            <td class="num balance-total">{group(w.balance.balance_total)}</td>
            <td class="num muted">{w.pending.has_pending ? group(w.pending.balance_pending) : '—'}</td>
            <td class="num">{group(w.balance.balance_total_in_fiat)}</td>
          </tr>
        ))}
      </tbody>
      {total !== undefined && (
        <tfoot>
          <tr>
            <th scope="row" colSpan={4}>
              Total value
            </th>
            <td class="num" data-testid="wallet-total">
              {group(total)} {currency}
            </td>
          </tr>
        </tfoot>
      )}
    </Table>
  );
}

function Table(props: {
  error: string | undefined;
  empty: string | undefined;
  children: preact.ComponentChildren;
}) {
  return (
    <div class="scroll">
      {props.error !== undefined && (
        <p class="field-error" role="alert">
          {props.error}
        </p>
      )}
      <table class="data">{props.children}</table>
      {props.empty !== undefined && <p class="empty">{props.empty}</p>}
    </div>
  );
}

export function AccountTabs(props: {
  readonly session: Session | undefined;
  readonly market: Market;
  readonly version: number;
  readonly wallet: readonly WalletEntry[] | undefined;
  readonly walletError: string | undefined;
  readonly onChanged: () => void;
}) {
  const [tab, setTab] = useState<Tab>('open');
  const [onlyThis, setOnlyThis] = useState(false);
  const { session } = props;
  const pair = onlyThis ? props.market.wsname : undefined;
  return (
    <section class="panel account" aria-label="Orders, trades and balances">
      <header class="panel-head tabs-head">
        <div role="tablist" class="tabs" aria-label="Account">
          {TABS.map((t) => (
            <button
              key={t.id}
              type="button"
              role="tab"
              id={`tab-${t.id}`}
              aria-selected={tab === t.id}
              aria-controls="account-panel"
              class={tab === t.id ? 'tab active' : 'tab'}
              onClick={() => setTab(t.id)}
            >
              {t.label}
            </button>
          ))}
        </div>
        {tab !== 'balances' && (
          <label class="check">
            <input
              type="checkbox"
              checked={onlyThis}
              onChange={(e) => setOnlyThis((e.currentTarget as HTMLInputElement).checked)}
            />
            Only {props.market.wsname}
          </label>
        )}
      </header>
      <div id="account-panel" role="tabpanel" aria-labelledby={`tab-${tab}`} class="tab-panel">
        {session === undefined ? (
          <p class="empty">Sign in to see your orders, trades and balances.</p>
        ) : tab === 'open' ? (
          <OpenOrders session={session} pair={pair} version={props.version} onChanged={props.onChanged} />
        ) : tab === 'history' ? (
          <OrderHistory session={session} pair={pair} version={props.version} />
        ) : tab === 'trades' ? (
          <TradeHistory session={session} pair={pair} version={props.version} />
        ) : (
          <Balances wallet={props.wallet} error={props.walletError} />
        )}
      </div>
    </section>
  );
}

/** The selected market's two assets and the wallet's total value, beside the order form. */
export function MarketBalances(props: { market: Market; wallet: readonly WalletEntry[] | undefined }) {
  const { market, wallet } = props;
  const entry = (asset: string) => wallet?.find((w) => w.asset_id === asset);
  const currency = wallet?.[0]?.balance_currency ?? '';
  const total =
    wallet === undefined || wallet.length === 0
      ? undefined
      : sum(wallet.map((w) => w.balance.balance_total_in_fiat));
  return (
    <section class="panel market-balances" aria-label={`Balances for ${market.wsname}`}>
      <header class="panel-head">
        <h2>Assets</h2>
      </header>
      <dl>
        {[market.base, market.quote].map((asset) => (
          <div key={asset} class="summary">
            <dt class="muted">{asset}</dt>
            <dd class="num">{group(entry(asset)?.balance.balance_total ?? '0')}</dd>
          </div>
        ))}
        <div class="summary">
          <dt class="muted">Total value</dt>
          <dd class="num">{total === undefined ? '—' : `${group(total)} ${currency}`}</dd>
        </div>
      </dl>
    </section>
  );
}
