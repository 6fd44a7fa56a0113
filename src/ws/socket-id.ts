/**
 * Socket ids: `<counter>.<random>`. The HTTP client sends the id back to /broadcasting/auth as a
 * JSON number (see the interface), so the text must survive `String(Number(id))`: no trailing zero
 * in the fraction, no leading zero in the integer part, and few enough digits (at most 13 until
 * ten million connections, 15 only past a billion) to stay inside a double's exact decimal range.
 */
import { randomInt } from 'node:crypto';

/** Shared by every server in the process: an id is unique per process, not per server instance. */
let counter = 0;

/**
 * The counter makes the id unique; the random fraction makes it unpredictable, so a channel
 * signature captured for one socket id cannot be replayed by a later connection (after a restart
 * the counter starts again).
 */
export function nextSocketId(): string {
  counter += 1;
  // Five random digits, then a last digit in 1..9: the fraction never ends in zero.
  const fraction = randomInt(0, 100_000) * 10 + randomInt(1, 10);
  return `${counter}.${fraction}`;
}

const SOCKET_ID = /^\d+\.\d+$/;

/** The format the Pusher server SDKs validate (`^\d+\.\d+$`). */
export const isSocketId = (text: string): boolean => SOCKET_ID.test(text);
