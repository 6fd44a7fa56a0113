/**
 * Order entry: limit or market, buy or sell, with a time in force (GTC, IOC, FOK or GTD with its
 * expiry) and post-only for limit orders; or one of the five conditional types (stop-loss,
 * take-profit, their -limit forms, trailing stop) with its trigger price, limit price or trailing
 * offset, GTC or GTD. The market's precision (pairDecimals for the price,
 * lotDecimals for the volume) is applied as the user types, the 25/50/75/100 % buttons size the
 * order from the available balance, `ordermin` is checked before sending, and a 422 from
 * POST /orders shows Laravel's messages next to the field they name.
 */
import { useEffect, useState } from 'preact/hooks';
import {
  type Envelope,
  isConditional,
  type Market,
  ORDER_TYPES,
  type Order,
  type OrderType,
  type Side,
  TIMES_IN_FORCE,
  type TimeInForce,
  takesLimitPrice,
  takesTriggerPrice,
} from '../../src/client/types.js';
import { ApiError } from '../shared/api.js';
import {
  compareDecimal,
  exactProduct,
  group,
  isPositiveDecimal,
  sanitizeDecimal,
  trimZeros,
} from '../shared/decimal.js';
import { SIZE_PERCENTS, volumeForPercent } from './order-size.js';
import type { Session } from './session.js';

type Field = 'price' | 'volume' | 'expiry' | 'trigger' | 'trailing';
type Errors = Partial<Record<Field | 'form', string>>;

/** The request fields whose server messages are shown under a field of the form. */
const FIELD_OF: Readonly<Record<string, Field>> = {
  price: 'price',
  volume: 'volume',
  expire_time: 'expiry',
  trigger_price: 'trigger',
  trailing_offset: 'trailing',
};

const TYPE_LABELS: Readonly<Record<OrderType, string>> = {
  limit: 'Limit',
  market: 'Market',
  'stop-loss': 'Stop-loss',
  'take-profit': 'Take-profit',
  'stop-loss-limit': 'Stop-loss limit',
  'take-profit-limit': 'Take-profit limit',
  'trailing-stop': 'Trailing stop',
};

/** What a trigger waits for, in the words of `trigger_conditions`: a falling or a rising price. */
function triggerHint(type: OrderType, side: Side): string {
  const stop = type.startsWith('stop-loss') || type === 'trailing-stop';
  // A sell stop and a buy take-profit wait for the price to fall; the others for it to rise.
  const falls = stop === (side === 'sell');
  return `Fires when the last trade price is ${falls ? 'at or below' : 'at or above'} it.`;
}

const TIF_LABELS: Readonly<Record<TimeInForce, string>> = {
  GTC: 'Good till canceled',
  IOC: 'Immediate or cancel',
  FOK: 'Fill or kill',
  GTD: 'Good till date',
};

/** Unix seconds of a `datetime-local` value (the browser's zone); undefined when incomplete. */
function unixSeconds(local: string): number | undefined {
  const ms = new Date(local).getTime();
  return local === '' || !Number.isFinite(ms) ? undefined : Math.floor(ms / 1000);
}

export function OrderForm(props: {
  readonly session: Session | undefined;
  readonly market: Market;
  /** A price picked in the book; `n` changes with every pick, so the same price can be picked twice. */
  readonly pickedPrice: { readonly price: string; readonly n: number } | undefined;
  /** Available balances by asset code (total less what open orders hold). */
  readonly balances: Readonly<Record<string, string>>;
  /** The best ask now: the price a market buy's percentage buttons size it at. */
  readonly bestAsk: () => string | undefined;
  readonly onPlaced: (orderId: number | undefined) => void;
}) {
  const { session, market, balances } = props;
  const [side, setSide] = useState<Side>('buy');
  const [type, setType] = useState<OrderType>('limit');
  const [price, setPrice] = useState('');
  const [volume, setVolume] = useState('');
  const [tif, setTif] = useState<TimeInForce>('GTC');
  const [expiry, setExpiry] = useState('');
  const [postOnly, setPostOnly] = useState(false);
  const [trigger, setTrigger] = useState('');
  const [trailing, setTrailing] = useState('');
  /** A trailing offset in percent, or as a price distance in the quote asset. */
  const [trailingUnit, setTrailingUnit] = useState<'percent' | 'price'>('percent');
  const [errors, setErrors] = useState<Errors>({});
  const [busy, setBusy] = useState(false);
  const [status, setStatus] = useState('');

  // A new market: its own precision, so the typed numbers no longer apply.
  useEffect(() => {
    setPrice('');
    setVolume('');
    setTrigger('');
    setTrailing('');
    setErrors({});
    setStatus('');
  }, [market]);

  useEffect(() => {
    if (props.pickedPrice === undefined) return;
    setPrice(sanitizeDecimal(props.pickedPrice.price, market.pairDecimals));
    // A picked price is a limit price: a stop-limit keeps its type, anything else becomes a limit.
    setType((t) => (takesLimitPrice(t) ? t : 'limit'));
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
  const hasLimit = takesLimitPrice(type);
  const hasTrigger = takesTriggerPrice(type);
  const conditional = isConditional(type);
  const total = hasLimit ? exactProduct(price, volume, market.pairDecimals) : undefined;
  const spendAsset = side === 'buy' ? market.quote : market.base;
  // The controls a resting order may have; a market order trades at once by nature. A
  // conditional order waits (GTC or GTD) and takes liquidity when it fires: no IOC, FOK, post-only.
  const controls = type === 'limit' || conditional;
  const timesInForce = conditional
    ? TIMES_IN_FORCE.filter((t) => t === 'GTC' || t === 'GTD')
    : TIMES_IN_FORCE;
  const canPostOnly = type === 'limit' && (tif === 'GTC' || tif === 'GTD');

  const chooseType = (next: OrderType) => {
    setType(next);
    if (isConditional(next) && tif !== 'GTC' && tif !== 'GTD') setTif('GTC');
    setErrors({});
  };
  /** The price a buy's percentage buttons size it at: its limit, else its trigger, else the ask. */
  const sizingPrice = hasLimit ? price : hasTrigger ? trigger : props.bestAsk();

  const sizeAt = (percent: number) => {
    const next = volumeForPercent({
      side,
      percent,
      available: balances[spendAsset] ?? '0',
      price: sizingPrice,
      lotDecimals: market.lotDecimals,
    });
    if (next === undefined) {
      setErrors((e) =>
        hasLimit
          ? { ...e, price: 'Enter a price first.' }
          : hasTrigger
            ? { ...e, trigger: 'Enter a trigger price first.' }
            : { ...e, form: 'No ask to size a buy at.' },
      );
      return;
    }
    setVolume(trimZeros(next));
    setErrors((e) => ({ ...e, volume: undefined, form: undefined }));
  };

  const submit = async (event: Event) => {
    event.preventDefault();
    if (session === undefined) return;
    const found: Errors = {};
    if (hasLimit && !isPositiveDecimal(price)) found.price = 'Enter a price.';
    if (hasTrigger && !isPositiveDecimal(trigger)) found.trigger = 'Enter a trigger price.';
    if (type === 'trailing-stop' && !isPositiveDecimal(trailing)) found.trailing = 'Enter an offset.';
    if (!isPositiveDecimal(volume)) found.volume = 'Enter a volume.';
    else if (belowMin) found.volume = `The minimum is ${trimZeros(market.ordermin)} ${market.base}.`;
    const expireTime = unixSeconds(expiry);
    if (controls && tif === 'GTD' && (expireTime === undefined || expireTime * 1000 <= Date.now()))
      found.expiry = 'Pick a time in the future.';
    setErrors(found);
    if (Object.keys(found).length > 0) return;
    setBusy(true);
    setStatus('');
    const body: Record<string, string | number | boolean> = {
      order_direction: side,
      order_type: type,
      pair: market.wsname,
      volume,
    };
    if (hasLimit) body.price = price;
    if (hasTrigger) body.trigger_price = trigger;
    if (type === 'trailing-stop')
      body.trailing_offset = trailingUnit === 'percent' ? `${trailing}%` : trailing;
    // Only what differs from a plain order is sent, so a plain order's request is as before.
    const extra: Record<string, string | number | boolean> = {};
    if (controls && tif !== 'GTC') extra.time_in_force = tif;
    if (controls && tif === 'GTD' && expireTime !== undefined) extra.expire_time = expireTime;
    if (canPostOnly && postOnly) extra.post_only = true;
    Object.assign(body, extra, { nonce: session.client.nextNonce() });
    try {
      // One Idempotency-Key per submitted order: a resent request never places it twice.
      const answer = await session.client.send('POST', '/orders', {
        body,
        headers: { 'Idempotency-Key': crypto.randomUUID() },
      });
      const id = /\/orders\/(\d+)$/.exec(answer.headers.get('location') ?? '')?.[1];
      const what = conditional ? `${TYPE_LABELS[type]} ${side}` : side === 'buy' ? 'Buy' : 'Sell';
      const placed = `${what} order placed${id === undefined ? '' : ` (#${id})`}.`;
      setStatus(placed);
      props.onPlaced(id === undefined ? undefined : Number(id));
      // IOC, FOK and post-only orders may end on arrival: say how, with the server's reason; a
      // conditional order says what it waits for. (The order is placed either way: a failed read
      // leaves the status as it is.)
      if (id !== undefined && (conditional || Object.keys(extra).length > 0)) {
        const order = await session.client
          .request<Envelope<Order>>('GET', `/orders/${id}`)
          .then((answer) => answer.data)
          .catch(() => undefined);
        if (order !== undefined && order.status !== 'open')
          setStatus(`${placed} It is ${order.status}${order.reason ? `: ${order.reason}` : ''}.`);
        else if (order !== undefined && conditional)
          setStatus(`${placed} Waiting: ${order.trigger_conditions}.`);
      }
    } catch (error) {
      if (error instanceof ApiError && error.status === 422) {
        const next: Errors = {};
        const rest: string[] = [];
        for (const [field, messages] of Object.entries(error.fieldErrors)) {
          const own = FIELD_OF[field];
          if (own !== undefined) next[own] = messages.join(' ');
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
          onChange={(e) => chooseType((e.currentTarget as HTMLSelectElement).value as OrderType)}
        >
          {ORDER_TYPES.map((t) => (
            <option key={t} value={t}>
              {TYPE_LABELS[t]}
            </option>
          ))}
        </select>
      </div>
      {hasTrigger && (
        <div class="field">
          <label for="order-trigger">
            Trigger price <span class="muted">({market.quote})</span>
          </label>
          <input
            id="order-trigger"
            name="trigger_price"
            inputMode="decimal"
            autoComplete="off"
            placeholder={`0.${'0'.repeat(market.pairDecimals)}`.replace(/\.$/, '')}
            value={trigger}
            onInput={typed('trigger', market.pairDecimals, setTrigger)}
            aria-invalid={errors.trigger !== undefined}
            aria-describedby={errors.trigger !== undefined ? 'order-trigger-error' : 'order-trigger-hint'}
          />
          {errors.trigger === undefined ? (
            <p id="order-trigger-hint" class="hint muted">
              {triggerHint(type, side)}
            </p>
          ) : (
            fieldError('trigger', errors.trigger)
          )}
        </div>
      )}
      {type === 'trailing-stop' && (
        <div class="field">
          <label for="order-trailing">Trailing offset</label>
          <div class="row trailing">
            <input
              id="order-trailing"
              name="trailing_offset"
              inputMode="decimal"
              autoComplete="off"
              placeholder={trailingUnit === 'percent' ? '2.5' : `0.${'0'.repeat(market.pairDecimals)}`}
              value={trailing}
              onInput={typed('trailing', trailingUnit === 'percent' ? 2 : market.pairDecimals, setTrailing)}
              aria-invalid={errors.trailing !== undefined}
              aria-describedby={
                errors.trailing !== undefined ? 'order-trailing-error' : 'order-trailing-hint'
              }
            />
            <select
              aria-label="Trailing offset unit"
              value={trailingUnit}
              onChange={(e) => {
                setTrailingUnit((e.currentTarget as HTMLSelectElement).value as 'percent' | 'price');
                setTrailing('');
              }}
            >
              <option value="percent">%</option>
              <option value="price">{market.quote}</option>
            </select>
          </div>
          {errors.trailing === undefined ? (
            <p id="order-trailing-hint" class="hint muted">
              {side === 'sell' ? 'Below the highest' : 'Above the lowest'} trade price since placement; trades
              at market when reached.
            </p>
          ) : (
            fieldError('trailing', errors.trailing)
          )}
        </div>
      )}
      {hasLimit && (
        <div class="field">
          <label for="order-price">
            {type === 'limit' ? 'Price' : 'Limit price'} <span class="muted">({market.quote})</span>
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
        <fieldset class="percents">
          <legend class="visually-hidden">Size from the available {spendAsset}</legend>
          {SIZE_PERCENTS.map((p) => (
            <button
              key={p}
              type="button"
              class="small"
              disabled={session === undefined}
              onClick={() => sizeAt(p)}
              aria-label={`${p} % of available ${spendAsset}`}
            >
              {p}%
            </button>
          ))}
        </fieldset>
      </div>
      {controls && (
        <div class="row controls">
          <div class="field">
            <label for="order-tif">Time in force</label>
            <select
              id="order-tif"
              value={tif}
              onChange={(e) => setTif((e.currentTarget as HTMLSelectElement).value as TimeInForce)}
            >
              {timesInForce.map((t) => (
                <option key={t} value={t}>
                  {TIF_LABELS[t]}
                </option>
              ))}
            </select>
          </div>
          {!conditional && (
            <label
              class="check"
              title="Canceled instead of trading on arrival: the order only adds liquidity"
            >
              <input
                type="checkbox"
                checked={canPostOnly && postOnly}
                disabled={!canPostOnly}
                onChange={(e) => setPostOnly((e.currentTarget as HTMLInputElement).checked)}
              />
              Post only
            </label>
          )}
        </div>
      )}
      {controls && tif === 'GTD' && (
        <div class="field">
          <label for="order-expiry">Expires (your local time)</label>
          <input
            id="order-expiry"
            type="datetime-local"
            value={expiry}
            onInput={(e) => {
              setExpiry((e.currentTarget as HTMLInputElement).value);
              setErrors((x) => ({ ...x, expiry: undefined }));
            }}
            aria-invalid={errors.expiry !== undefined}
            aria-describedby={errors.expiry !== undefined ? 'order-expiry-error' : undefined}
          />
          {fieldError('expiry', errors.expiry)}
        </div>
      )}
      <p class="summary">
        <span class="muted">Total</span>
        <output class="num" for="order-price order-volume" aria-label="Order total">
          {!hasLimit ? 'at market' : total === undefined ? '—' : `${group(total)} ${market.quote}`}
        </output>
      </p>
      <p class="summary">
        <span class="muted">Available</span>
        <span class="num" data-testid="available">
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
