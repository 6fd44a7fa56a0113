/** One user: balances, deposits and withdrawals with references, API keys (issue, show once, revoke). */
import { useState } from 'preact/hooks';
import type { AdminClient, ApiKey, ApiKeyCreated, Asset, Balance, LedgerResult, User } from './client.js';
import {
  Alert,
  CopyButton,
  Field,
  FormAlert,
  type FormError,
  formError,
  isZero,
  localTime,
  Panel,
  useLoad,
} from './ui.js';

export function UserDetail(props: {
  readonly client: AdminClient;
  readonly user: User;
  readonly assets: readonly Asset[];
}) {
  const { client, user } = props;
  const balances = useLoad(
    () => client.get<{ data: Balance[] }>(`/users/${user.id}/balances`).then((r) => r.data),
    [client, user.id],
  );
  const [showEmpty, setShowEmpty] = useState(false);
  const rows = (balances.value ?? []).filter((b) => showEmpty || !isZero(b.total));
  return (
    <>
      <Panel
        title={
          <>
            User <span class="num">{user.id}</span>
            {user.email !== null && <span class="muted title-extra"> {user.email}</span>}
          </>
        }
        actions={
          <a href="#/users" class="back-link">
            <span class="show-narrow">← All users</span>
            <span class="hide-narrow">Close</span>
          </a>
        }
      >
        <p class="muted">Created {localTime(user.created_at)}</p>
      </Panel>
      <div class="user-grid">
        <Panel
          title="Balances"
          actions={
            <button type="button" onClick={() => balances.reload()} disabled={balances.loading}>
              Refresh
            </button>
          }
        >
          {balances.error !== undefined && <p class="alert alert-error">{balances.error}</p>}
          <label class="check">
            <input
              type="checkbox"
              checked={showEmpty}
              onChange={(e) => setShowEmpty(e.currentTarget.checked)}
            />
            Show zero balances
          </label>
          <div class="table-scroll">
            <table class="rows" aria-label={`Balances of user ${user.id}`}>
              <thead>
                <tr>
                  <th scope="col">asset</th>
                  <th scope="col" class="num">
                    available
                  </th>
                  <th scope="col" class="num hide-narrow">
                    reserved
                  </th>
                  <th scope="col" class="num">
                    total
                  </th>
                </tr>
              </thead>
              <tbody>
                {rows.map((b) => (
                  <tr key={b.asset}>
                    <th scope="row">{b.asset}</th>
                    <td class="num">{b.available}</td>
                    <td class="num hide-narrow">{b.reserved}</td>
                    <td class="num">{b.total}</td>
                  </tr>
                ))}
                {balances.value !== undefined && rows.length === 0 && (
                  <tr>
                    <td colSpan={4} class="muted">
                      No funds yet.
                    </td>
                  </tr>
                )}
              </tbody>
            </table>
          </div>
        </Panel>
        <Funds client={client} userId={user.id} assets={props.assets} onApplied={() => balances.reload()} />
      </div>
      <ApiKeys client={client} userId={user.id} />
    </>
  );
}

const FUND_FIELDS = ['asset', 'amount', 'reference'];

function Funds(props: {
  readonly client: AdminClient;
  readonly userId: number;
  readonly assets: readonly Asset[];
  readonly onApplied: () => void;
}) {
  const [kind, setKind] = useState<'deposit' | 'withdraw'>('deposit');
  const [chosen, setAsset] = useState('');
  // The first asset until one is chosen (the catalogue may arrive after this form).
  const asset = chosen !== '' ? chosen : (props.assets[0]?.code ?? '');
  const [amount, setAmount] = useState('');
  const [reference, setReference] = useState('');
  const [error, setError] = useState<FormError | null>(null);
  const [result, setResult] = useState<LedgerResult | null>(null);
  const [busy, setBusy] = useState(false);
  const decimals = props.assets.find((a) => a.code === asset)?.decimals;

  const submit = async (event: Event) => {
    event.preventDefault();
    setBusy(true);
    setError(null);
    setResult(null);
    try {
      const ref = reference.trim();
      const { body } = await props.client.send<LedgerResult>(
        'POST',
        `/users/${props.userId}/${kind === 'deposit' ? 'deposits' : 'withdrawals'}`,
        { asset, amount: amount.trim(), ...(ref === '' ? {} : { reference: ref }) },
      );
      setResult(body);
      if (!body.duplicate) setAmount('');
      props.onApplied();
    } catch (caught) {
      setError(formError(caught, FUND_FIELDS));
    } finally {
      setBusy(false);
    }
  };

  const conflict = error?.code === 'reference_conflict' ? error : null;
  return (
    <Panel title="Deposit or withdraw">
      <form class="form-grid" onSubmit={submit} noValidate>
        <fieldset class="segmented span-2">
          <legend class="visually-hidden">Kind</legend>
          <label class={kind === 'deposit' ? 'on' : ''}>
            <input
              type="radio"
              name="kind"
              value="deposit"
              checked={kind === 'deposit'}
              onChange={() => setKind('deposit')}
            />
            Deposit
          </label>
          <label class={kind === 'withdraw' ? 'on' : ''}>
            <input
              type="radio"
              name="kind"
              value="withdraw"
              checked={kind === 'withdraw'}
              onChange={() => setKind('withdraw')}
            />
            Withdraw
          </label>
        </fieldset>
        <Field label="Asset" name="asset" error={error}>
          {(id, invalid, describedBy) => (
            <select
              id={id}
              value={asset}
              aria-invalid={invalid}
              aria-describedby={describedBy}
              onChange={(e) => setAsset(e.currentTarget.value)}
            >
              {props.assets.map((a) => (
                <option key={a.code} value={a.code}>
                  {a.code}
                </option>
              ))}
            </select>
          )}
        </Field>
        <Field
          label="Amount"
          name="amount"
          error={error}
          hint={decimals === undefined ? undefined : `up to ${decimals} decimals`}
        >
          {(id, invalid, describedBy) => (
            <input
              id={id}
              inputMode="decimal"
              autoComplete="off"
              placeholder="100.00"
              value={amount}
              aria-invalid={invalid}
              aria-describedby={describedBy}
              onInput={(e) => setAmount(e.currentTarget.value)}
            />
          )}
        </Field>
        <Field
          label="Reference (optional)"
          name="reference"
          error={conflict === null ? error : null}
          hint="e.g. the bank wire id: the same reference is applied once"
          class="span-2"
        >
          {(id, invalid, describedBy) => (
            <input
              id={id}
              autoComplete="off"
              maxLength={128}
              value={reference}
              aria-invalid={invalid || conflict !== null}
              aria-describedby={describedBy}
              onInput={(e) => setReference(e.currentTarget.value)}
            />
          )}
        </Field>
        <button
          type="submit"
          class={`primary span-2 ${kind === 'withdraw' ? 'danger' : ''}`}
          disabled={busy || asset === ''}
        >
          {kind === 'deposit' ? 'Deposit' : 'Withdraw'}
        </button>
      </form>
      {conflict !== null ? (
        <Alert kind="error">
          <strong>Reference conflict.</strong> {conflict.message}
          {conflict.recorded !== undefined && (
            <dl class="pairs">
              <dt>recorded</dt>
              <dd>
                {conflict.recorded.kind} of <span class="num">{conflict.recorded.amount}</span>{' '}
                {conflict.recorded.asset}
              </dd>
              <dt>reference</dt>
              <dd>{conflict.recorded.reference}</dd>
              <dt>at</dt>
              <dd>{localTime(conflict.recorded.time)}</dd>
            </dl>
          )}
        </Alert>
      ) : (
        <FormAlert error={error} />
      )}
      {result !== null &&
        (result.duplicate ? (
          <Alert kind="warn">
            Already applied at {localTime(result.time)} under reference <code>{result.reference}</code>:
            nothing changed. Balance {result.balance.total} {result.asset}.
          </Alert>
        ) : (
          <Alert kind="ok">
            {kind === 'deposit' ? 'Deposited' : 'Withdrew'} <span class="num">{result.amount}</span>{' '}
            {result.asset}
            {result.reference === null ? '' : ` (reference ${result.reference})`}. Balance now{' '}
            <span class="num">{result.balance.total}</span> {result.asset}.
          </Alert>
        ))}
    </Panel>
  );
}

function ApiKeys(props: { readonly client: AdminClient; readonly userId: number }) {
  const { client, userId } = props;
  const keys = useLoad(
    () => client.get<{ data: ApiKey[] }>(`/users/${userId}/api-keys`).then((r) => r.data),
    [client, userId],
  );
  const [read, setRead] = useState(true);
  const [trade, setTrade] = useState(true);
  const [allowlist, setAllowlist] = useState('');
  const [nonce, setNonce] = useState(false);
  const [error, setError] = useState<FormError | null>(null);
  const [busy, setBusy] = useState(false);
  const [issued, setIssued] = useState<ApiKeyCreated | null>(null);
  const [confirming, setConfirming] = useState<string | null>(null);
  const [revokeError, setRevokeError] = useState<string | null>(null);

  const issue = async (event: Event) => {
    event.preventDefault();
    setBusy(true);
    setError(null);
    setIssued(null);
    try {
      const scopes = [...(read ? ['read'] : []), ...(trade ? ['trade'] : [])];
      const list = allowlist
        .split(/[\s,]+/)
        .map((s) => s.trim())
        .filter((s) => s !== '');
      const { body } = await client.send<ApiKeyCreated>('POST', `/users/${userId}/api-keys`, {
        scopes,
        ...(list.length === 0 ? {} : { ip_allowlist: list }),
        nonce_required: nonce,
      });
      setIssued(body);
      setAllowlist('');
      await keys.reload();
    } catch (caught) {
      setError(formError(caught, ['scopes', 'ip_allowlist', 'nonce_required']));
    } finally {
      setBusy(false);
    }
  };

  const revoke = async (key: string) => {
    setRevokeError(null);
    try {
      await client.send('DELETE', `/api-keys/${encodeURIComponent(key)}`);
      setConfirming(null);
      if (issued?.api_key === key) setIssued(null);
      await keys.reload();
    } catch (caught) {
      setRevokeError(caught instanceof Error ? caught.message : String(caught));
    }
  };

  return (
    <Panel
      title="API keys"
      actions={
        <button type="button" onClick={() => keys.reload()} disabled={keys.loading}>
          Refresh
        </button>
      }
    >
      {issued !== null && (
        <div class="secret-box" role="status">
          <p>
            <strong>New key issued.</strong> Copy the secret now: it is shown this once and cannot be read
            again.
          </p>
          <div class="field">
            <label for="issued-key">API key</label>
            <div class="copy-row">
              <input id="issued-key" readOnly value={issued.api_key} class="mono" />
              <CopyButton text={issued.api_key} label="Copy the API key" />
            </div>
          </div>
          <div class="field">
            <label for="issued-secret">API secret</label>
            <div class="copy-row">
              <input id="issued-secret" readOnly value={issued.api_secret} class="mono" />
              <CopyButton text={issued.api_secret} label="Copy the API secret" />
            </div>
          </div>
          <button type="button" onClick={() => setIssued(null)}>
            I have stored it — hide
          </button>
        </div>
      )}
      <form class="key-form" onSubmit={issue} noValidate>
        <fieldset class="field" aria-describedby={error?.field === 'scopes' ? 'scopes-error' : undefined}>
          <legend>Scopes</legend>
          <label class="check">
            <input type="checkbox" checked={read} onChange={(e) => setRead(e.currentTarget.checked)} /> read
          </label>
          <label class="check">
            <input type="checkbox" checked={trade} onChange={(e) => setTrade(e.currentTarget.checked)} />{' '}
            trade
          </label>
          {error?.field === 'scopes' && (
            <small id="scopes-error" class="field-error" role="alert">
              {error.message}
            </small>
          )}
        </fieldset>
        <Field
          label="IP allow-list (optional)"
          name="ip_allowlist"
          error={error}
          hint="addresses or CIDR ranges, comma or space separated; empty = any"
        >
          {(id, invalid, describedBy) => (
            <input
              id={id}
              autoComplete="off"
              placeholder="203.0.113.7, 10.0.0.0/8"
              value={allowlist}
              aria-invalid={invalid}
              aria-describedby={describedBy}
              onInput={(e) => setAllowlist(e.currentTarget.value)}
            />
          )}
        </Field>
        <label class="check">
          <input type="checkbox" checked={nonce} onChange={(e) => setNonce(e.currentTarget.checked)} />{' '}
          Require an increasing nonce
        </label>
        <button type="submit" class="primary" disabled={busy}>
          Issue key
        </button>
      </form>
      <FormAlert error={error} />
      {revokeError !== null && <p class="alert alert-error">{revokeError}</p>}
      <div class="table-scroll">
        <table class="rows" aria-label={`API keys of user ${userId}`}>
          <thead>
            <tr>
              <th scope="col">key</th>
              <th scope="col">scopes</th>
              <th scope="col" class="hide-narrow">
                restrictions
              </th>
              <th scope="col" class="hide-narrow">
                created
              </th>
              <th scope="col">state</th>
            </tr>
          </thead>
          <tbody>
            {[...(keys.value ?? [])].reverse().map((k) => (
              <tr key={k.api_key} class={k.revoked_at === null ? '' : 'revoked'}>
                <td class="mono key-cell" title={k.api_key}>
                  {k.api_key}
                </td>
                <td>{k.scopes.join(', ')}</td>
                <td class="hide-narrow muted">
                  {[
                    k.ip_allowlist === null ? null : `IPs: ${k.ip_allowlist.join(', ')}`,
                    k.nonce_required ? 'nonce' : null,
                  ]
                    .filter(Boolean)
                    .join('; ') || '—'}
                </td>
                <td class="hide-narrow muted nowrap">{localTime(k.created_at)}</td>
                <td class="nowrap">
                  {k.revoked_at !== null ? (
                    <span class="muted">revoked {localTime(k.revoked_at)}</span>
                  ) : confirming === k.api_key ? (
                    <span class="confirm">
                      <button type="button" class="danger" onClick={() => revoke(k.api_key)}>
                        Confirm revoke
                      </button>
                      <button type="button" onClick={() => setConfirming(null)}>
                        Keep
                      </button>
                    </span>
                  ) : (
                    <button
                      type="button"
                      onClick={() => setConfirming(k.api_key)}
                      aria-label={`Revoke key ${k.api_key}`}
                    >
                      Revoke
                    </button>
                  )}
                </td>
              </tr>
            ))}
            {keys.value !== undefined && keys.value.length === 0 && (
              <tr>
                <td colSpan={5} class="muted">
                  No API key yet.
                </td>
              </tr>
            )}
          </tbody>
        </table>
      </div>
    </Panel>
  );
}
