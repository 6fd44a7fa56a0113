/**
 * What a cluster process does with a message it will not take (a command or batch without a valid
 * MAC, an operator command over NATS, a message set aside on the stream; not an id seen again,
 * which is what a gateway's resend is): it goes on,
 * and raises the alarm three ways, so an operator learns that someone writes to NATS who should
 * not — the log (at most one line a second, with how many were left out), a counter in /metrics
 * (every one, by message and reason), and the /readyz body (`alarm`, for ALARM_HOLD_MS after the
 * last one). /readyz stays 200: the process itself still works, and taking it out of service
 * would hand whoever sends the garbage a way to stop the venue.
 */
import type { Metrics } from '../metrics.js';

/** How long /readyz names the last refusal. */
export const ALARM_HOLD_MS = 15 * 60 * 1000;
const LOG_EVERY_MS = 1_000;

export type RefusedMessage = 'command' | 'batch';

export class RefusalAlarm {
  private last:
    | { readonly message: RefusedMessage; readonly reason: string; readonly at: number }
    | undefined;
  private lastLogged = Number.NEGATIVE_INFINITY;
  private unlogged = 0;

  constructor(
    private readonly logger: { warn(obj: object, msg: string): void },
    private readonly metrics: Pick<Metrics, 'clusterMessageRefused'> | undefined,
    private readonly now: () => number = Date.now,
  ) {}

  refused(message: RefusedMessage, reason: string, detail: object = {}): void {
    const at = this.now();
    this.last = { message, reason, at };
    this.metrics?.clusterMessageRefused(message, reason);
    if (at - this.lastLogged < LOG_EVERY_MS) {
      this.unlogged += 1;
      return;
    }
    this.logger.warn(
      { message, reason, ...detail, ...(this.unlogged > 0 ? { alsoRefused: this.unlogged } : {}) },
      'a cluster message was refused or set aside: is someone else writing to NATS?',
    );
    this.lastLogged = at;
    this.unlogged = 0;
  }

  /** For /readyz: the last refusal, while it is recent; a fixed phrase (no content of the message). */
  current(): string | undefined {
    const last = this.last;
    if (last === undefined || this.now() - last.at > ALARM_HOLD_MS) return undefined;
    const what = last.message === 'batch' ? 'a batch-stream message was set aside' : 'a command was refused';
    return `${what} (${last.reason}) ${Math.round((this.now() - last.at) / 1000)} s ago`;
  }
}
