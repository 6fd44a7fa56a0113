/**
 * Whether this gateway's SECRETS_KEY opens the API secrets the engine sealed. A gateway with
 * another key would answer every signed request `Invalid Signature` while reporting ready, the
 * reason only in its log. So it checks at start (refusing to start: a configuration error) and
 * every CHECK_INTERVAL_MS after (a key created later under another SECRETS_KEY: not ready, with
 * that reason, until the keys agree again).
 */
import type { SecretOpener } from '../http/context.js';

export const SECRETS_KEY_MISMATCH = 'SECRETS_KEY cannot open the stored API secrets';
export const CHECK_INTERVAL_MS = 30_000;

export class SecretsKeyCheck {
  private failing = false;
  private timer: ReturnType<typeof setInterval> | undefined;

  constructor(
    private readonly vault: SecretOpener,
    /** The newest API key's sealed secret, undefined when no key exists yet. */
    private readonly newestSealedSecret: () => Promise<string | undefined>,
  ) {}

  /** Opens the newest stored secret; false when this vault's key cannot. A read failure changes nothing. */
  async check(): Promise<boolean> {
    let sealed: string | undefined;
    try {
      sealed = await this.newestSealedSecret();
    } catch {
      return !this.failing; // the database is away: the other probes say so
    }
    if (sealed === undefined) return true;
    try {
      this.vault.open(sealed);
      this.failing = false;
    } catch {
      this.failing = true;
    }
    return !this.failing;
  }

  /** Checks again every `intervalMs` (unref'd) until stop(). */
  watch(intervalMs = CHECK_INTERVAL_MS): void {
    this.timer = setInterval(() => void this.check(), intervalMs);
    this.timer.unref();
  }

  stop(): void {
    clearInterval(this.timer);
  }

  /** For /readyz: why this gateway should get no signed traffic, or undefined. */
  notReadyReason(): string | undefined {
    return this.failing ? SECRETS_KEY_MISMATCH : undefined;
  }
}
