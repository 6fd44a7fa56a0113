/**
 * Small helpers of the benches' main threads, free of side effects (bench/cluster-support.ts
 * re-exports them; bench/ws.ts imports them from here, as it must not load that module's
 * environment defaults): command-line options, the absolute clock the client workers share,
 * percentiles and timeouts.
 */
export const argument = (name: string): string | undefined => {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1] : undefined;
};
export const numberArgument = (name: string, fallback: number): number => {
  const value = Number(argument(name) ?? fallback);
  if (!Number.isFinite(value) || value <= 0) throw new Error(`--${name} must be a positive number`);
  return value;
};

/** Milliseconds since the epoch, comparable across worker threads. */
export const absNow = (): number => performance.timeOrigin + performance.now();
export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

export const percentile = (sorted: Float64Array, p: number): number =>
  sorted.length === 0
    ? Number.NaN
    : sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
export function withTimeout<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out: ${what}`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}
