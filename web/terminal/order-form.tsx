/**
 * Order entry: limit or market, buy or sell. The market's precision (pairDecimals for the price,
 * lotDecimals for the volume) is applied as the user types, `ordermin` is checked before
 * sending, and a 422 from POST /orders shows Laravel's messages next to the field they name.
 */
import { useEffect, useState } from 'preact/hooks';
import type { Market, OrderType, Side } from '../../src/client/types.js';
import { ApiError } from '../shared/api.js';
import {
  compareDecimal,
  exactProduct,
  group,
  isPositiveDecimal,
  sanitizeDecimal,
  trimZeros,
} from '../shared/decimal.js';
import type { Session } from './session.js';

type Field = 'price' | 'volume';
type Errors = Partial<Record<Field | 'form', string>>;

export function OrderForm(props: {
  readonly session: Session | undefined;
  readonly market: Market;
  /** A price picked in the book; `n` changes with every pick, so the same price can be picked twice. */
  readonly pickedPrice: { readonly price: string; readonly n: number } | undefined;
  /** Balances by asset code (total). */
  readonly balances: Readonly<Record<string, string>>;
  readonly onPlaced: (orderId: number | undefined) => void;
}) {
  const { session, market, balances } = props;
  const [side, setSide] = useState<Side>('buy');
  const [type, setType] = useState<OrderType>('limit');
  const [price, setPrice] = useState('');
  const [volume, setVolume] = useState('');
  const [errors, setErrors] = useState<Errors>({});
  const [busy, setBusy] = useState(false);
  const [status, setStatus] = useState('');

  // A new market: its own precision, so the typed numbers no longer apply.
  useEffect(() => {
    setPrice('');
    setVolume('');
    setErrors({});
    setStatus('');
  }, [market]);

  useEffect(() => {
    if (props.pickedPrice === undefined) return;
    setPrice(sanitizeDecimal(props.pickedPrice.price, market.pairDecimals));
    setType('limit');
  }, [props.pickedPrice, market]);

  const typed = (field: Field, decimals: number, set: (value: string) => void) => (event: Event) => {
    const input = event.currentTarget as HTMLInputElement;
    const kept = sanitizeDecimal(input.value, decimals);
    // Write back at once: when the kept value equals the previous state, no render would undo
    // the character just refused.
    if (input.value !== kept) input.value = kept;
    set(kept);
    setErrors((e) => ({ ...e, [field]: undefined, form: undefined }));
  };

  const belowMin = volume !== '' && isPositiveDecimal(volume) && compareDecimal(volume, market.ordermin) < 0;
  const volumeHint = belowMin
    ? `The minimum is ${trimZeros(market.ordermin)} ${market.base}.`
    : (errors.volume ?? undefined);
  const total = type === 'limit' ? exactProduct(price, volume, market.pairDecimals) : undefined;
  const spendAsset = side === 'buy' ? market.quote : market.base;

  const submit = async (event: Event) => {
    event.preventDefault();
    if (session === undefined) return;
    const found: Errors = {};
    if (type === 'limit' && !isPositiveDecimal(price)) found.price = 'Enter a price.';
    if (!isPositiveDecimal(volume)) found.volume = 'Enter a volume.';
    else if (belowMin) found.volume = `The minimum is ${trimZeros(market.ordermin)} ${market.base}.`;
    setErrors(found);
    if (Object.keys(found).length > 0) return;
    setBusy(true);
    setStatus('');
    const body: Record<string, string> = {
      order_direction: side,
      order_type: type,
      pair: market.wsname,
      volume,
    };
    if (type === 'limit') body.price = price;
    body.nonce = session.client.nextNonce();
    try {
      // One Idempotency-Key per submitted order: a resent request never places it twice.
      const answer = await session.client.send('POST', '/orders', {
        body,
        headers: { 'Idempotency-Key': crypto.randomUUID() },
      });
      const id = /\/orders\/(\d+)$/.exec(answer.headers.get('location') ?? '')?.[1];
      setStatus(`${side === 'buy' ? 'Buy' : 'Sell'} order placed${id === undefined ? '' : ` (#${id})`}.`);
      props.onPlaced(id === undefined ? undefined : Number(id));
    } catch (error) {
      if (error instanceof ApiError && error.status === 422) {
        const next: Errors = {};
        const rest: string[] = [];
        for (const [field, messages] of Object.entries(error.fieldErrors)) {
          if (field === 'price' || field === 'volume') next[field] = messages.join(' ');
          else rest.push(...messages);
        }
        if (rest.length > 0 || Object.keys(next).length === 0) next.form = rest.join(' ') || error.message;
        setErrors(next);
      } else {
        setErrors({ form: error instanceof Error ? error.message : String(error) });
      }
    } finally {
      setBusy(false);
    }
  };

  const fieldError = (field: Field, text: string | undefined) =>
    text === undefined ? null : (
      <p id={`order-${field}-error`} class="field-error" role="alert">
        {text}
      </p>
    );

  return (
    <form class="panel order-form" aria-label="Place an order" onSubmit={submit} noValidate>
      <header class="panel-head">
        <h2>Place order</h2>
        <span class="muted">{market.wsname}</span>
      </header>
      <fieldset class="sides">
        <legend class="visually-hidden">Side</legend>
        {(['buy', 'sell'] as const).map((s) => (
          <label key={s} class={`side-option ${s} ${side === s ? 'checked' : ''}`}>
            <input
              type="radio"
              name="order-side"
              value={s}
              checked={side === s}
              onChange={() => setSide(s)}
              class="visually-hidden"
            />
            {s === 'buy' ? 'Buy' : 'Sell'}
          </label>
        ))}
      </fieldset>
      <div class="field">
        <label for="order-type">Order type</label>
        <select
          id="order-type"
          value={type}
          onChange={(e) => setType((e.currentTarget as HTMLSelectElement).value as OrderType)}
        >
          <option value="limit">Limit</option>
          <option value="market">Market</option>
        </select>
      </div>
      {type === 'limit' && (
        <div class="field">
          <label for="order-price">
            Price <span class="muted">({market.quote})</span>
          </label>
          <input
            id="order-price"
            name="price"
            inputMode="decimal"
            autoComplete="off"
            placeholder={`0.${'0'.repeat(market.pairDecimals)}`.replace(/\.$/, '')}
            value={price}
            onInput={typed('price', market.pairDecimals, setPrice)}
            aria-invalid={errors.price !== undefined}
            aria-describedby={errors.price !== undefined ? 'order-price-error' : undefined}
          />
          {fieldError('price', errors.price)}
        </div>
      )}
      <div class="field">
        <label for="order-volume">
          Volume <span class="muted">({market.base})</span>
        </label>
        <input
          id="order-volume"
          name="volume"
          inputMode="decimal"
          autoComplete="off"
          placeholder={`min ${trimZeros(market.ordermin)}`}
          value={volume}
          onInput={typed('volume', market.lotDecimals, setVolume)}
          aria-invalid={volumeHint !== undefined}
          aria-describedby={volumeHint !== undefined ? 'order-volume-error' : undefined}
        />
        {fieldError('volume', volumeHint)}
      </div>
      <p class="summary">
        <span class="muted">Total</span>
        <output class="num" for="order-price order-volume" aria-label="Order total">
          {type === 'market' ? 'at market' : total === undefined ? '—' : `${group(total)} ${market.quote}`}
        </output>
      </p>
      <p class="summary">
        <span class="muted">Balance</span>
        <span class="num">
          {session === undefined ? '—' : `${group(balances[spendAsset] ?? '0')} ${spendAsset}`}
        </span>
      </p>
      {errors.form !== undefined && (
        <p class="field-error" role="alert">
          {errors.form}
        </p>
      )}
      <button type="submit" class={`submit ${side}`} disabled={session === undefined || busy}>
        {session === undefined ? 'Sign in to trade' : `${side === 'buy' ? 'Buy' : 'Sell'} ${market.base}`}
      </button>
      <p class="status" role="status">
        {status}
      </p>
    </form>
  );
}
