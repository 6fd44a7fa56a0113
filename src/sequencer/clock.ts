import type { Micros } from '../domain/types.js';

export type Clock = () => Micros;

/**
 * Wall-clock microseconds, never going backwards within a process: command times order events,
 * so a clock step back (NTP) must not reorder them.
 */
export function systemClock(): Clock {
  let last = 0;
  return () => {
    const now = Math.floor((performance.timeOrigin + performance.now()) * 1000);
    last = Math.max(now, last);
    return last as Micros;
  };
}

export const MICROS_PER_SECOND = 1_000_000;
export const MICROS_PER_DAY = 86_400 * MICROS_PER_SECOND;
