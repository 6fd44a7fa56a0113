/**
 * `openspot replay` and `openspot simulate` (docs/simulation.md).
 *
 * - replay: the server, with the simulator replaying a historical trade file in one market. The
 *   file is read and checked here first, so a bad file or option fails at once with its line,
 *   then the server starts as `serve --demo` does, the replay passed through SIMULATOR_REPLAY_*
 *   (which the server checks again against its catalogue before it listens).
 * - simulate: fills a new DATA_DIR with days of simulated history, then exits; no server runs.
 */
import { resolve } from 'node:path';
import { type Command, InvalidArgumentError } from 'commander';
import { MAX_SPEED, MIN_SPEED } from '../simulator/replay.js';

interface Globals {
  readonly dataDir?: string;
  readonly json?: boolean;
}

/** A whole number within [min, max], or a commander usage error naming the option. */
export const wholeIn = (option: string, min: number, max: number) => (value: string) => {
  if (!/^\d{1,9}$/.test(value.trim()) || Number(value) < min || Number(value) > max)
    throw new InvalidArgumentError(`${option} must be a whole number from ${min} to ${max}, got "${value}".`);
  return Number(value);
};

const pairOption = (value: string) => {
  const pair = value.trim().toUpperCase();
  if (!/^[A-Z0-9]{2,12}\/[A-Z0-9]{2,12}$/.test(pair))
    throw new InvalidArgumentError(`--pair must be a pair such as BTC/EUR, got "${value}".`);
  return pair;
};

const duration = (micros: number): string => {
  const seconds = Math.round(micros / 1_000_000);
  if (seconds < 120) return `${seconds} s`;
  if (seconds < 7200) return `${Math.round(seconds / 60)} min`;
  return `${(seconds / 3600).toFixed(1)} h`;
};

export function registerSimulationCommands(program: Command, globals: () => Globals): void {
  program
    .command('replay')
    .description('run the server with one market following a historical trade file (docs/simulation.md)')
    .requiredOption(
      '--trades <file>',
      'CSV, one trade per line: timestamp,price,volume (Kraken’s column order)',
    )
    .option(
      '--speed <n>',
      `file seconds per real second, ${MIN_SPEED} to ${MAX_SPEED}`,
      wholeIn('--speed', MIN_SPEED, MAX_SPEED),
      1,
    )
    .option('--pair <pair>', 'the market whose price follows the file', pairOption, 'BTC/EUR')
    .option('--rate <n>', 'simulator actions per second (default 20)', wholeIn('--rate', 1, 10_000))
    .action(async (o: { trades: string; speed: number; pair: string; rate?: number }) => {
      const { loadTradeFile } = await import('../simulator/replay.js');
      const file = resolve(o.trades);
      const trades = loadTradeFile(file);
      const span = trades[trades.length - 1]!.time - trades[0]!.time;
      process.stderr.write(
        `Replaying ${trades.length} trades (${duration(span)} of history) in ${o.pair} at speed ${o.speed}: ` +
          `about ${duration(span / o.speed)}.\n`,
      );
      const dataDir = globals().dataDir;
      if (dataDir !== undefined) process.env.DATA_DIR = dataDir;
      process.env.SIMULATOR = 'on';
      process.env.DEMO = 'on';
      process.env.SIMULATOR_REPLAY_FILE = file;
      process.env.SIMULATOR_REPLAY_SPEED = String(o.speed);
      process.env.SIMULATOR_REPLAY_PAIR = o.pair;
      // A replay step costs a dozen requests; the default pace of 5 would lag a fast file.
      process.env.SIMULATOR_RATE = String(o.rate ?? (process.env.SIMULATOR_RATE || 20));
      await import('../main.js');
    });

  program
    .command('simulate')
    .description('fill a new venue (DATA_DIR) with days of simulated history ending now, then exit')
    .option('--days <n>', 'days of history, 1 to 31', wholeIn('--days', 1, 31), 7)
    .option('--seed <n>', 'random seed (same seed, same history shape)', wholeIn('--seed', 0, 2 ** 31 - 1), 1)
    .action(async (o: { days: number; seed: number }) => {
      if (process.env.DATABASE_URL?.trim())
        throw new Error(
          'simulate fills a new SQLite venue in DATA_DIR, and DATABASE_URL is set: unset it, simulate into an empty DATA_DIR, then move the venue with `openspot db copy --from DATA_DIR/openspot.db --to $DATABASE_URL`',
        );
      const { simulateNewVenue } = await import('../simulator/new-venue.js');
      const dataDir = resolve(globals().dataDir ?? (process.env.DATA_DIR?.trim() || './data'));
      const abort = new AbortController();
      const stop = () => abort.abort();
      process.once('SIGINT', stop);
      process.once('SIGTERM', stop);
      const json = globals().json === true;
      let lastPercent = -1;
      try {
        const summary = await simulateNewVenue({
          dataDir,
          days: o.days,
          seed: o.seed,
          ...(process.env.CATALOGUE_FILE?.trim() ? { catalogue: process.env.CATALOGUE_FILE.trim() } : {}),
          signal: abort.signal,
          onProgress: (done, total) => {
            const percent = Math.floor((100 * done) / total / 10) * 10;
            if (json || percent === lastPercent) return;
            lastPercent = percent;
            process.stderr.write(`simulated ${percent} %\n`);
          },
        });
        const report = {
          database: summary.database,
          days: o.days,
          from: new Date(summary.from / 1000).toISOString(),
          to: new Date(summary.to / 1000).toISOString(),
          markets: summary.markets,
          trades: summary.trades,
          commands: summary.commands,
          seconds: Number((summary.elapsedMs / 1000).toFixed(1)),
        };
        if (json) process.stdout.write(`${JSON.stringify(report)}\n`);
        else
          process.stdout.write(
            `${summary.trades} trades over ${o.days} days (${report.from} to ${report.to}) in ` +
              `${summary.markets.join(', ')}, written to ${summary.database} in ${report.seconds} s.\n` +
              'Start the server on this DATA_DIR (npm start, openspot serve --demo): the charts are full.\n',
          );
      } finally {
        process.off('SIGINT', stop);
        process.off('SIGTERM', stop);
      }
    });
}
