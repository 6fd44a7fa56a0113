/**
 * The order controls of the trader CLI as plain functions: the flags of `order` turned into the
 * client's order fields, and the `--gtd` time read in the forms a person types. Kept apart from
 * the commands so that the parsing is testable without a server or a process.
 */
import { InvalidArgumentError } from 'commander';
import type { OrderParams } from '../client/client.js';
import { CLIENT_ORDER_ID, type OrderType, type SelfTradePrevention } from '../client/types.js';

export interface OrderControlFlags {
  readonly ioc?: boolean;
  readonly fok?: boolean;
  readonly postOnly?: boolean;
  /** Unix seconds, already read by parseExpiry. */
  readonly gtd?: number;
  readonly clientId?: string;
  readonly stp?: SelfTradePrevention;
}

export const STP_MODES: readonly SelfTradePrevention[] = [
  'cancel-oldest',
  'cancel-newest',
  'cancel-both',
  'decrement',
];

/** The controls' part of the order: only the fields a flag asked for, so plain orders stay plain. */
export function orderControls(
  flags: OrderControlFlags,
): Pick<OrderParams, 'timeInForce' | 'expireTime' | 'postOnly' | 'clientOrderId' | 'stp'> {
  const timeInForce = flags.ioc ? 'IOC' : flags.fok ? 'FOK' : flags.gtd !== undefined ? 'GTD' : undefined;
  return {
    ...(timeInForce === undefined ? {} : { timeInForce }),
    ...(flags.gtd === undefined ? {} : { expireTime: flags.gtd }),
    ...(flags.postOnly ? { postOnly: true } : {}),
    ...(flags.clientId === undefined ? {} : { clientOrderId: flags.clientId }),
    ...(flags.stp === undefined ? {} : { stp: flags.stp }),
  };
}

/** The flags of `order` that choose its type and prices. */
export interface OrderTypeFlags {
  readonly price?: string;
  readonly type?: 'limit' | 'market';
  /** A stop-loss trigger price. */
  readonly stop?: string;
  /** A take-profit trigger price. */
  readonly takeProfit?: string;
  /** The limit price of a stop or take-profit: makes it a `-limit` type. */
  readonly limit?: string;
  /** A trailing stop's offset: `2%` or an absolute distance `150.5`. */
  readonly trailing?: string;
}

/**
 * The order's type and price fields from the flags: `--price` alone a limit order, nothing a
 * market order; `--stop P` a stop-loss, `--take-profit P` a take-profit (`--limit L` makes either
 * a `-limit` order with that limit price); `--trailing D` a trailing stop. A combination the
 * server would refuse (two triggers, `--price` with a trigger, `--limit` alone) is refused here,
 * with the flag to use instead.
 */
export function orderTypeFields(
  flags: OrderTypeFlags,
): Pick<OrderParams, 'type' | 'price' | 'triggerPrice' | 'trailingOffset'> {
  const triggers = [
    flags.stop === undefined ? undefined : '--stop',
    flags.takeProfit === undefined ? undefined : '--take-profit',
    flags.trailing === undefined ? undefined : '--trailing',
  ].filter((flag) => flag !== undefined);
  if (triggers.length > 1) throw new Error(`${triggers.join(' and ')}: choose one`);
  const trigger = triggers[0];
  if (trigger === undefined) {
    if (flags.limit !== undefined)
      throw new Error('--limit is the limit price of a --stop or --take-profit order');
    const type = flags.type ?? (flags.price === undefined ? 'market' : 'limit');
    if (type === 'limit' && flags.price === undefined) throw new Error('a limit order needs --price');
    return type === 'limit' ? { type, price: flags.price } : { type };
  }
  if (flags.type !== undefined) throw new Error(`--type does not go with ${trigger}`);
  if (flags.price !== undefined)
    throw new Error(
      `${trigger}: the order's limit price is --limit (${trigger} is its trigger price), not --price`,
    );
  if (flags.trailing !== undefined) {
    if (flags.limit !== undefined)
      throw new Error('a trailing stop trades at market once triggered: no --limit');
    return { type: 'trailing-stop', trailingOffset: parseTrailingOffset(flags.trailing) };
  }
  const base: OrderType = flags.stop !== undefined ? 'stop-loss' : 'take-profit';
  const triggerPrice = (flags.stop ?? flags.takeProfit) as string;
  return flags.limit === undefined
    ? { type: base, triggerPrice }
    : {
        type: base === 'stop-loss' ? 'stop-loss-limit' : 'take-profit-limit',
        triggerPrice,
        price: flags.limit,
      };
}

/**
 * `--trailing`: a percentage (`2%`, `2.5%`) or an absolute price distance (`150.5`), sent as
 * typed. The range (0.01 % to 50 %, the market's price decimals) is the server's rule.
 */
export function parseTrailingOffset(value: string): string {
  const text = value.trim();
  if (!/^\d+(\.\d+)?%?$/.test(text))
    throw new InvalidArgumentError('give a percentage (2%, 2.5%) or a price distance (150.5)');
  return text;
}

const UNIT_SECONDS: Readonly<Record<string, number>> = { s: 1, m: 60, h: 3600, d: 86_400 };

/**
 * A `--gtd` time as whole Unix seconds: a duration from now (`90s`, `30m`, `12h`, `7d`), Unix
 * seconds (`1767225600`), or an ISO 8601 time with its zone (`2026-12-31T23:00:00Z`). Whether the
 * time is in the future and within a year is the server's rule, so it is left to it.
 */
export function parseExpiry(text: string, nowMs: number): number {
  const value = text.trim();
  const duration = /^(\d{1,9})([smhd])$/.exec(value);
  if (duration !== null) return Math.floor(nowMs / 1000) + Number(duration[1]) * UNIT_SECONDS[duration[2]!]!;
  if (/^\d{1,12}$/.test(value)) return Number(value);
  // A zone is required: a time without one would mean something else on every machine.
  if (/^\d{4}-\d\d-\d\dT\d\d:\d\d(:\d\d(\.\d+)?)?(Z|[+-]\d\d:\d\d)$/.test(value)) {
    const ms = Date.parse(value);
    if (Number.isFinite(ms)) return Math.floor(ms / 1000);
  }
  throw new InvalidArgumentError(
    'give a duration from now (90s, 30m, 12h, 7d), Unix seconds, or an ISO time with its zone (2026-12-31T23:00:00Z)',
  );
}

/** `--client-id`: the server's rule, checked before anything is sent. */
export function parseClientOrderId(value: string): string {
  if (!CLIENT_ORDER_ID.test(value))
    throw new InvalidArgumentError('1 to 36 characters of letters, digits, _ and -');
  return value;
}

/** `dead-man SECONDS`: 0 (off) to 86,400. */
export function parseSwitchTimeout(value: string): number {
  if (!/^\d{1,5}$/.test(value) || Number(value) > 86_400)
    throw new InvalidArgumentError('SECONDS must be a whole number from 0 (off) to 86400');
  return Number(value);
}

/** What `dead-man` says about the answer's `trigger_time` (Unix seconds with 4 decimals). */
export function describeSwitch(triggerTime: string): string {
  if (/^0+(\.0+)?$/.test(triggerTime)) return "The dead man's switch is off.";
  const seconds = Number(triggerTime.split('.')[0]);
  const at = new Date(seconds * 1000).toISOString().slice(0, 19).replace('T', ' ');
  return `Unless renewed, all your open orders are canceled at ${at} UTC.`;
}
