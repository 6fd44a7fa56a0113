/**
 * One timer for the engine's next deadline (a GTD expiry or a dead man's switch). The engine
 * never reads a clock: a deadline fires when a command whose time has reached it is applied. So
 * that one fires when no command comes, the sequencer arms this timer for the engine's earliest
 * deadline after every step, and when it rings sends the engine a `tick` (a command that only
 * moves time). Deadlines are engine state, committed and restored with it: a restarted engine or
 * a standby that takes over arms the timer from the state it loaded, so nothing is lost with the
 * process that armed it.
 */
import type { Clock } from './clock.js';

/** setTimeout's longest delay (about 24.8 days): a later deadline re-arms when this one rings. */
const MAX_DELAY_MS = 2 ** 31 - 1;

export class DeadlineTimer {
  #timer: ReturnType<typeof setTimeout> | undefined;
  /** The deadline armed for, in the clock's microseconds. */
  #armed: number | undefined;

  constructor(
    private readonly clock: Clock,
    /** Called when the armed deadline has come (or a capped delay ran out: then it re-arms). */
    private readonly ring: () => void,
  ) {}

  /** Arms the timer for `deadline` (microseconds on the clock), or stops it (null). */
  set(deadline: number | null): void {
    if (deadline === this.#armed) return;
    this.stop();
    if (deadline === null) return;
    this.#armed = deadline;
    // Rounded up: a timer that rings a little early would find nothing due and arm again.
    const delay = Math.min(MAX_DELAY_MS, Math.max(0, Math.ceil((deadline - this.clock()) / 1000)));
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      this.#armed = undefined;
      this.ring();
    }, delay);
    // A pending deadline alone must not keep the process alive (a stopping server closes the exchange).
    this.#timer.unref?.();
  }

  stop(): void {
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#armed = undefined;
  }
}
