/**
 * The order controls of the trader CLI as plain functions: the flags of `order` turned into the
 * client's order fields, and the `--gtd` time read in the forms a person types. Kept apart from
 * the commands so that the parsing is testable without a server or a process.
 */
import { InvalidArgumentError } from 'commander';
import type { OrderParams } from '../client/client.js';
import { CLIENT_ORDER_ID, type SelfTradePrevention } from '../client/types.js';

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
