/** Markets and assets: the catalogue, and forms to create either (the server's refusals shown on the field). */
import { useState } from 'preact/hooks';
import type { AdminClient, Asset, Market } from './client.js';
import { Alert, Field, FormAlert, type FormError, formError, Panel, useLoad } from './ui.js';

export function CatalogueView(props: {
  readonly client: AdminClient;
  readonly assets: readonly Asset[];
  readonly reloadAssets: () => Promise<void>;
}) {
  const { client } = props;
  const markets = useLoad(() => client.get<{ data: Market[] }>('/markets').then((r) => r.data), [client]);
  return (
    <div class="catalogue-layout">
      <Panel title={`Markets${markets.value ? ` (${markets.value.length})` : ''}`} class="span-all">
        {markets.error !== undefined && <p class="alert alert-error">{markets.error}</p>}
        <div class="table-scroll">
          <table class="rows">
            <thead>
              <tr>
                <th scope="col" class="num hide-narrow">
                  id
                </th>
                <th scope="col">pair</th>
                <th scope="col" class="num hide-narrow">
                  price decimals
                </th>
                <th scope="col" class="num hide-narrow">
                  volume decimals
                </th>
                <th scope="col" class="num">
                  ordermin
                </th>
                <th scope="col" class="num">
                  maker fee
                </th>
                <th scope="col" class="num">
                  taker fee
                </th>
              </tr>
            </thead>
            <tbody>
              {(markets.value ?? []).map((m) => (
                <tr key={m.id}>
                  <td class="num hide-narrow">{m.id}</td>
                  <th scope="row">{m.wsname}</th>
                  <td class="num hide-narrow">{m.pair_decimals}</td>
                  <td class="num hide-narrow">{m.lot_decimals}</td>
                  <td class="num">{m.ordermin}</td>
                  <td class="num">{percent(m.maker_fee)}</td>
                  <td class="num">{percent(m.taker_fee)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      </Panel>
      <NewMarket client={client} assets={props.assets} onCreated={() => markets.reload()} />
      <Panel title={`Assets (${props.assets.length})`}>
        <div class="table-scroll">
          <table class="rows">
            <thead>
              <tr>
                <th scope="col">code</th>
                <th scope="col">name</th>
                <th scope="col">type</th>
                <th scope="col" class="num">
                  decimals
                </th>
              </tr>
            </thead>
            <tbody>
              {props.assets.map((a) => (
                <tr key={a.code}>
                  <th scope="row">{a.code}</th>
                  <td>{a.name}</td>
                  <td>{a.type}</td>
                  <td class="num">{a.decimals}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      </Panel>
      <NewAsset client={client} onCreated={props.reloadAssets} />
    </div>
  );
}

/** A fee fraction as a percentage, exactly (decimal-point shift on the string, no float). */
function percent(fraction: string): string {
  const [int = '0', frac = ''] = fraction.split('.');
  const padded = frac.padEnd(2, '0');
  const whole = `${int}${padded.slice(0, 2)}`.replace(/^0+(?=\d)/, '');
  const rest = padded.slice(2).replace(/0+$/, '');
  return `${whole}${rest === '' ? '' : `.${rest}`} %`;
}

function NewAsset(props: { readonly client: AdminClient; readonly onCreated: () => Promise<void> }) {
  const [code, setCode] = useState('');
  const [name, setName] = useState('');
  const [type, setType] = useState<'crypto' | 'fiat'>('crypto');
  const [decimals, setDecimals] = useState('8');
  const [error, setError] = useState<FormError | null>(null);
  const [done, setDone] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const submit = async (event: Event) => {
    event.preventDefault();
    setBusy(true);
    setError(null);
    setDone(null);
    try {
      const n = Number(decimals);
      const { body } = await props.client.send<Asset>('POST', '/assets', {
        code: code.trim(),
        name: name.trim(),
        type,
        // A non-integer is sent as typed, so the server's message names the field.
        decimals: decimals.trim() !== '' && Number.isInteger(n) ? n : decimals,
      });
      setDone(`Created ${body.code} (${body.decimals} decimals).`);
      setCode('');
      setName('');
      await props.onCreated();
    } catch (caught) {
      setError(formError(caught, ['code', 'name', 'type', 'decimals']));
    } finally {
      setBusy(false);
    }
  };
  return (
    <Panel title="New asset">
      <form class="form-grid" onSubmit={submit} noValidate>
        <Field label="Code" name="code" error={error} hint="2–12 upper-case letters or digits">
          {(id, invalid, describedBy) => (
            <input
              id={id}
              autoComplete="off"
              placeholder="SOL"
              value={code}
              aria-invalid={invalid}
              aria-describedby={describedBy}
              onInput={(e) => setCode(e.currentTarget.value.toUpperCase())}
            />
          )}
        </Field>
        <Field label="Name" name="name" error={error}>
          {(id, invalid, describedBy) => (
            <input
              id={id}
              autoComplete="off"
              placeholder="Solana"
              value={name}
              aria-invalid={invalid}
              aria-describedby={describedBy}
              onInput={(e) => setName(e.currentTarget.value)}
            />
          )}
        </Field>
        <Field label="Type" name="type" error={error}>
          {(id, invalid, describedBy) => (
            <select
              id={id}
              value={type}
              aria-invalid={invalid}
              aria-describedby={describedBy}
              onChange={(e) => setType(e.currentTarget.value as 'crypto' | 'fiat')}
            >
              <option value="crypto">crypto</option>
              <option value="fiat">fiat</option>
            </select>
          )}
        </Field>
        <Field label="Decimals" name="decimals" error={error} hint="at most 10">
          {(id, invalid, describedBy) => (
            <input
              id={id}
              inputMode="numeric"
              autoComplete="off"
              value={decimals}
              aria-invalid={invalid}
              aria-describedby={describedBy}
              onInput={(e) => setDecimals(e.currentTarget.value)}
            />
          )}
        </Field>
        <button type="submit" class="primary span-2" disabled={busy}>
          Create asset
        </button>
      </form>
      <FormAlert error={error} />
      {done !== null && <Alert kind="ok">{done}</Alert>}
    </Panel>
  );
}

const MARKET_FIELDS = [
  'base',
  'quote',
  'pair_decimals',
  'lot_decimals',
  'ordermin',
  'maker_fee',
  'taker_fee',
];

function NewMarket(props: {
  readonly client: AdminClient;
  readonly assets: readonly Asset[];
  readonly onCreated: () => void;
}) {
  const [values, setValues] = useState<Record<string, string>>({
    base: '',
    quote: '',
    pair_decimals: '2',
    lot_decimals: '4',
    ordermin: '',
    maker_fee: '',
    taker_fee: '',
  });
  const [error, setError] = useState<FormError | null>(null);
  const [done, setDone] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const base =
    values.base || props.assets.find((a) => a.type === 'crypto')?.code || props.assets[0]?.code || '';
  const quote =
    values.quote || props.assets.find((a) => a.type === 'fiat')?.code || props.assets[0]?.code || '';
  const set = (name: string) => (e: { currentTarget: { value: string } }) =>
    setValues((v) => ({ ...v, [name]: e.currentTarget.value }));
  const integer = (text: string | undefined) => {
    const n = Number(text);
    return text !== undefined && text.trim() !== '' && Number.isInteger(n) ? n : text;
  };
  const submit = async (event: Event) => {
    event.preventDefault();
    setBusy(true);
    setError(null);
    setDone(null);
    try {
      const { body } = await props.client.send<Market>('POST', '/markets', {
        base,
        quote,
        pair_decimals: integer(values.pair_decimals),
        lot_decimals: integer(values.lot_decimals),
        ordermin: values.ordermin?.trim(),
        ...(values.maker_fee?.trim() ? { maker_fee: values.maker_fee.trim() } : {}),
        ...(values.taker_fee?.trim() ? { taker_fee: values.taker_fee.trim() } : {}),
      });
      setDone(`Created market ${body.wsname} (id ${body.id}).`);
      props.onCreated();
    } catch (caught) {
      setError(formError(caught, MARKET_FIELDS));
    } finally {
      setBusy(false);
    }
  };
  const assetSelect =
    (name: 'base' | 'quote', value: string) => (id: string, invalid: boolean, describedBy?: string) => (
      <select
        id={id}
        value={value}
        aria-invalid={invalid}
        aria-describedby={describedBy}
        onChange={set(name)}
      >
        {props.assets.map((a) => (
          <option key={a.code} value={a.code}>
            {a.code}
          </option>
        ))}
      </select>
    );
  const text =
    (name: string, placeholder: string, numeric = false) =>
    (id: string, invalid: boolean, describedBy?: string) => (
      <input
        id={id}
        autoComplete="off"
        inputMode={numeric ? 'numeric' : 'decimal'}
        placeholder={placeholder}
        value={values[name]}
        aria-invalid={invalid}
        aria-describedby={describedBy}
        onInput={set(name)}
      />
    );
  return (
    <Panel title="New market">
      <form class="form-grid" onSubmit={submit} noValidate>
        <Field label="Base asset" name="base" error={error}>
          {assetSelect('base', base)}
        </Field>
        <Field label="Quote asset" name="quote" error={error}>
          {assetSelect('quote', quote)}
        </Field>
        <Field label="Price decimals" name="pair_decimals" error={error}>
          {text('pair_decimals', '2', true)}
        </Field>
        <Field label="Volume decimals" name="lot_decimals" error={error} hint="at most the base asset's">
          {text('lot_decimals', '4', true)}
        </Field>
        <Field label="Minimum order volume" name="ordermin" error={error} class="span-2">
          {text('ordermin', '0.001')}
        </Field>
        <Field label="Maker fee (optional)" name="maker_fee" error={error} hint="fraction; 0.0016 = 0.16 %">
          {text('maker_fee', '0.0016')}
        </Field>
        <Field label="Taker fee (optional)" name="taker_fee" error={error} hint="fraction; default 0.0026">
          {text('taker_fee', '0.0026')}
        </Field>
        <button type="submit" class="primary span-2" disabled={busy || props.assets.length === 0}>
          Create market
        </button>
      </form>
      <FormAlert error={error} />
      {done !== null && <Alert kind="ok">{done}</Alert>}
    </Panel>
  );
}
