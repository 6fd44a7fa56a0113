/**
 * The crash tests' seed: CRASH_SEED when set, to replay a run; otherwise from the clock. Every run
 * prints its seed when it starts, and a failure's message names it with the command that replays it.
 */

export function crashSeed(env: NodeJS.ProcessEnv = process.env, now: () => number = Date.now): number {
  const raw = env.CRASH_SEED?.trim();
  if (raw === undefined || raw === '') return now() % 2 ** 31;
  if (!/^\d+$/.test(raw) || Number(raw) >= 2 ** 31)
    throw new Error(`CRASH_SEED must be a whole number below 2^31, got "${raw}"`);
  return Number(raw);
}

export const replayHint = (seed: number, command: string): string =>
  `crash test seed ${seed} (replay: CRASH_SEED=${seed} ${command})`;

/** Runs `body`; if it fails, the error's message starts with the seed and the replay command. */
export async function withSeed<T>(seed: number, command: string, body: () => Promise<T>): Promise<T> {
  try {
    return await body();
  } catch (error) {
    if (error instanceof Error) {
      error.message = `${replayHint(seed, command)}: ${error.message}`;
      throw error;
    }
    throw new Error(`${replayHint(seed, command)}: ${String(error)}`);
  }
}
