/**
 * Per-connection rate limit on client frames (subscribe, unsubscribe, ping, anything else).
 *
 * Policy:
 * - A connection may send `framesPerSecond` frames per second on average, with bursts up to
 *   `burst` (by default enough to resubscribe every channel at once after a reconnect:
 *   max(2 × rate, maxSubscriptionsPerConnection + 10)).
 * - A frame beyond that is not processed; it is answered with `pusher:error` code 4301 (Pusher's
 *   own "rejected due to rate limit" code) and the connection stays open.
 * - Refused frames are counted in a second bucket of `maxRefused` that drains at the same rate:
 *   a client that keeps sending faster than twice the allowed rate fills it within seconds and is
 *   closed with 4100 (preceded by `pusher:error` 4100), on which pusher-js backs off and reconnects.
 *   So the server never spends more than about 2 × rate frame handlings per second on a client.
 *
 * State lives in a WeakMap keyed by the connection object, so it goes away with the connection.
 */
import { CloseCode, errorFrame, REJECTED_FRAME_CODE } from './frames.js';

export interface FrameSink {
  send(frame: string): boolean;
  close(code: number, reason: string): void;
}

export interface FrameGateOptions {
  /** Frames per second per connection; 0 (or less) turns the limit off. */
  readonly framesPerSecond: number;
  /** Bucket size; default frameBurst(framesPerSecond). */
  readonly burst?: number;
  /** Refusals tolerated (draining at framesPerSecond) before closing; default max(10, framesPerSecond). */
  readonly maxRefused?: number;
}

export interface FrameGate {
  /**
   * Call for every client frame, before handling it (ms from a monotonic clock). True: handle
   * the frame. False: drop it — the client was already told (4301) or is being closed (4100).
   */
  admit(connection: FrameSink, nowMs: number): boolean;
}

/** The default burst: room to resubscribe every channel after a reconnect, and at least 2 s of rate. */
export function frameBurst(framesPerSecond: number, maxSubscriptionsPerConnection = 100): number {
  return Math.max(2 * framesPerSecond, maxSubscriptionsPerConnection + 10, 1);
}

export const RATE_LIMITED_MESSAGE = 'Rate limit exceeded';

interface State {
  tokens: number;
  refused: number;
  at: number;
}

const OPEN_GATE: FrameGate = { admit: () => true };

export function createFrameGate(options: FrameGateOptions): FrameGate {
  const rate = options.framesPerSecond;
  if (!(rate > 0)) return OPEN_GATE;
  const burst = options.burst ?? frameBurst(rate);
  const maxRefused = options.maxRefused ?? Math.max(10, rate);
  if (!Number.isFinite(rate) || !(burst >= 1) || !(maxRefused >= 1))
    throw new RangeError(`invalid frame rate limit: ${rate}/s, burst ${burst}, maxRefused ${maxRefused}`);
  const states = new WeakMap<FrameSink, State>();
  const refusal = errorFrame(
    REJECTED_FRAME_CODE,
    `${RATE_LIMITED_MESSAGE}: at most ${rate} frames per second`,
  );
  const closing = errorFrame(CloseCode.overCapacity, RATE_LIMITED_MESSAGE);

  return {
    admit(connection, nowMs) {
      let state = states.get(connection);
      if (state === undefined) {
        state = { tokens: burst, refused: 0, at: nowMs };
        states.set(connection, state);
      } else {
        const refill = (Math.max(0, nowMs - state.at) * rate) / 1000;
        state.tokens = Math.min(burst, state.tokens + refill);
        state.refused = Math.max(0, state.refused - refill);
        state.at = nowMs;
      }
      if (state.tokens >= 1) {
        state.tokens -= 1;
        return true;
      }
      state.refused += 1;
      if (state.refused > maxRefused) {
        connection.send(closing);
        connection.close(CloseCode.overCapacity, RATE_LIMITED_MESSAGE);
      } else {
        connection.send(refusal);
      }
      return false;
    },
  };
}
