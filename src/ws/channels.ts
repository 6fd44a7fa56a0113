/**
 * Channel names of the interface and the port through which the protocol layer learns what a
 * channel is. The protocol layer only knows "exists or not", "private or public" and "what to send
 * first"; everything about markets lives behind `ChannelProvider`, so it can be tested with a fake.
 */
import type { MarketId, UserId } from '../domain/types.js';
import { INTERVALS, type Interval } from '../market-data/candle.js';

export type ChannelKind = 'ticker' | 'ohlc' | 'trade' | 'book' | 'executions';

export interface ResolvedChannel {
  readonly kind: ChannelKind;
  readonly marketId?: MarketId;
  readonly interval?: Interval;
  /** The owner of a private channel. */
  readonly userId?: UserId;
}

export interface ChannelProvider {
  /** What a channel name denotes, or undefined when no such channel exists (refused with 404). */
  resolve(channel: string): ResolvedChannel | undefined;
  /**
   * The payload sent right after a successful subscription, as event `snapshot`, or undefined
   * when there is nothing to send. Called between two commits; a payload read from the store
   * comes as a promise, and the subscription then opens only if no commit came in the meantime
   * (see `commitMark`), so the snapshot shows the same committed state the following updates
   * start from.
   */
  snapshot(channel: string, resolved: ResolvedChannel): unknown | Promise<unknown>;
  /** A number that changes with every commit: a snapshot read across a change is read again. */
  commitMark?(): number;
  /**
   * Sends the updates still due to the current subscribers, before a new subscriber is added:
   * its snapshot then shows the state those updates lead to, and its first update is the next.
   * A promise when some of them are still being prepared (read from the store): the subscriber is
   * added once they are sent.
   */
  catchUp?(): void | Promise<void>;
  /**
   * Runs `run` when no batch is being committed: at once when none is, otherwise as soon as the
   * commit in flight has settled. A subscription's catch-up, registration and snapshot run inside
   * it, so the snapshot shows committed state only.
   */
  betweenCommits?(run: () => void | Promise<void>): void | Promise<void>;
}

/** Private channels need a signed `auth`; the prefix is Pusher's. */
export const PRIVATE_PREFIX = 'private-';
export const isPrivateChannel = (channel: string): boolean => channel.startsWith(PRIVATE_PREFIX);

/** Builders for the interface's channel names; `pair` is the joined form (`BTCEUR`). */
export const channelName = {
  ticker: (pair: string): string => `ticker-information.${pair}`,
  ohlc: (pair: string, interval: Interval): string => `ohlc.${pair}.${interval}`,
  trade: (pair: string): string => `trade.${pair}`,
  book: (pair: string): string => `order-book.${pair}`,
  executions: (userId: UserId | number): string => `${PRIVATE_PREFIX}order-executed.${userId}`,
} as const;

export type ParsedChannel =
  | { readonly kind: 'ticker' | 'trade' | 'book'; readonly pair: string }
  | { readonly kind: 'ohlc'; readonly pair: string; readonly interval: Interval }
  | { readonly kind: 'executions'; readonly userId: UserId };

// Pairs are alphanumeric (the interface); user ids positive integers without leading zeros, so a
// channel has exactly one spelling and two spellings never share subscribers.
const PAIR = '([A-Za-z0-9]{1,32})';
const PATTERNS: ReadonlyArray<readonly [RegExp, (m: RegExpExecArray) => ParsedChannel | undefined]> = [
  [new RegExp(`^ticker-information\\.${PAIR}$`), (m) => ({ kind: 'ticker', pair: m[1]! })],
  [new RegExp(`^trade\\.${PAIR}$`), (m) => ({ kind: 'trade', pair: m[1]! })],
  [new RegExp(`^order-book\\.${PAIR}$`), (m) => ({ kind: 'book', pair: m[1]! })],
  [
    new RegExp(`^ohlc\\.${PAIR}\\.([1-9]\\d{0,4})$`),
    (m) => {
      const interval = INTERVALS.find((i) => String(i) === m[2]);
      return interval === undefined ? undefined : { kind: 'ohlc', pair: m[1]!, interval };
    },
  ],
  [
    /^private-order-executed\.([1-9]\d{0,14})$/,
    (m) => ({ kind: 'executions', userId: Number(m[1]) as UserId }),
  ],
];

/** Parses a channel name of the interface, without checking that the pair or user exists. */
export function parseChannelName(channel: string): ParsedChannel | undefined {
  for (const [pattern, build] of PATTERNS) {
    const match = pattern.exec(channel);
    if (match !== null) return build(match);
  }
  return undefined;
}
