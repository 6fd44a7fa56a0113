/** What the suites needing an outside service (PostgreSQL, NATS, Redis) share. */

/** What a test context offers for cleaning up (`node:test`'s `t`, or a suite's own list). */
export interface Cleanup {
  after(fn: () => Promise<void> | void): void;
}

/** The service URL in `process.env[name]`, or undefined when unset or blank. */
export const serviceUrl = (name: string): string | undefined => process.env[name]?.trim() || undefined;

/**
 * Options for `describe`/`test`: `{ skip: reason }` when `url` is undefined, otherwise `{}`. The
 * reason is also printed once, so the skip is visible whatever the reporter.
 */
export function serviceSuite(url: string | undefined, reason: string): () => { skip?: string } {
  let announced = false;
  return () => {
    if (url !== undefined) return {};
    if (!announced) {
      announced = true;
      process.stdout.write(`# ${reason}\n`);
    }
    return { skip: reason };
  };
}
