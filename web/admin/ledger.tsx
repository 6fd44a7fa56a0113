/** The ledger check: per asset, balances + fees = deposits − withdrawals, and no negative balance. */
import { useState } from 'preact/hooks';
import type { AdminClient, LedgerCheck } from './client.js';
import { Alert, isZero, Panel, useLoad } from './ui.js';

export function LedgerView(props: { readonly client: AdminClient }) {
  const [checkedAt, setCheckedAt] = useState<Date | null>(null);
  const check = useLoad(async () => {
    const result = await props.client.get<LedgerCheck>('/ledger/check');
    setCheckedAt(new Date());
    return result;
  }, [props.client]);
  const value = check.value;
  return (
    <Panel
      title="Ledger check"
      actions={
        <button type="button" class="primary" onClick={() => check.reload()} disabled={check.loading}>
          {check.loading ? 'Checking…' : 'Run the check'}
        </button>
      }
    >
      <p class="muted">
        For every asset, the sum of all balances plus the fees collected must equal deposits minus
        withdrawals, and no balance may be negative.
      </p>
      {check.error !== undefined && <Alert kind="error">{check.error}</Alert>}
      {value !== undefined && (
        <div class="ledger-verdict" data-ok={value.ok}>
          <Alert kind={value.ok ? 'ok' : 'error'}>
            <strong>{value.ok ? 'The books balance.' : 'The books do NOT balance.'}</strong>{' '}
            {value.ok
              ? `${value.assets.length} assets checked`
              : `${value.assets.filter((a) => !a.ok).length} of ${value.assets.length} assets are off`}
            {checkedAt !== null && ` at ${checkedAt.toLocaleTimeString()}`}.
          </Alert>
        </div>
      )}
      {value !== undefined && (
        <div class="table-scroll">
          <table class="rows">
            <thead>
              <tr>
                <th scope="col">asset</th>
                <th scope="col" class="num">
                  balances
                </th>
                <th scope="col" class="num">
                  fees
                </th>
                <th scope="col" class="num">
                  net deposits
                </th>
                <th scope="col" class="num">
                  difference
                </th>
                <th scope="col" class="num hide-narrow">
                  negative
                </th>
                <th scope="col">state</th>
              </tr>
            </thead>
            <tbody>
              {value.assets.map((a) => (
                <tr key={a.asset} class={a.ok ? '' : 'bad'}>
                  <th scope="row">{a.asset}</th>
                  <td class="num">{a.balances}</td>
                  <td class="num">{a.fees}</td>
                  <td class="num">{a.net_deposits}</td>
                  <td class={`num ${isZero(a.difference.replace('-', '')) ? 'muted' : 'sell'}`}>
                    {a.difference}
                  </td>
                  <td class="num hide-narrow">{a.negative_balances}</td>
                  <td>{a.ok ? <span class="badge ok">ok</span> : <span class="badge bad">off</span>}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </Panel>
  );
}
