/**
 * `openspot test-venue`: the test venue of `openspot/testing` for bots in any language. Prints the
 * venue (URLs, WebSocket settings, admin token, accounts with their keys) and runs until SIGINT or
 * SIGTERM, or until it is abandoned (its stdin pipe closes, its parent exits: abandoned.ts), then
 * closes it and exits 0. With --json: one JSON object on the first line of stdout.
 */
import { readFileSync } from 'node:fs';
import { type Command, InvalidArgumentError } from 'commander';
import type { CatalogueFile } from '../config/default-catalogue.js';
import { onStopSignal } from '../stop-signals.js';
import type { ChaosFaults } from '../testing/chaos.js';
import { onAbandoned } from './abandoned.js';

interface TestVenueCliOptions {
  port: number;
  accounts: number;
  balances?: Record<string, string>;
  simulator?: boolean;
  rate?: number;
  seed?: number;
  dir?: string;
  catalogue?: string;
  chaos?: string;
}

const whole = (name: string) => (value: string) => {
  if (!/^\d{1,9}$/.test(value)) throw new InvalidArgumentError(`${name} must be a whole number.`);
  return Number(value);
};

function balancesOption(value: string): Record<string, string> {
  const balances: Record<string, string> = {};
  for (const entry of value.split(',')) {
    const match = /^\s*([A-Za-z0-9]{2,12})=(\d+(?:\.\d+)?)\s*$/.exec(entry);
    if (match === null)
      throw new InvalidArgumentError(
        '--balances takes ASSET=AMOUNT pairs separated by commas, e.g. EUR=10000,BTC=1.',
      );
    balances[match[1]!.toUpperCase()] = match[2]!;
  }
  return balances;
}

export function registerTestVenueCommand(program: Command, json: () => boolean): void {
  program
    .command('test-venue')
    .description('run a throw-away venue for tests (in memory) and print how to reach it')
    .option('--port <n>', 'port (default: a free one)', whole('--port'), 0)
    .option('--accounts <n>', 'funded accounts to create', whole('--accounts'), 1)
    .option(
      '--balances <list>',
      'each account’s funds, e.g. EUR=10000,BTC=1 (default: the demo account’s)',
      balancesOption,
    )
    .option('--simulator', 'run the market simulator')
    .option('--rate <n>', 'simulator actions per second', whole('--rate'))
    .option('--seed <n>', 'simulator seed', whole('--seed'))
    .option('--dir <path>', 'keep the state in this directory instead of memory')
    .option(
      '--catalogue <file>',
      'assets and markets (JSON, the CATALOGUE_FILE shape) instead of the default catalogue',
    )
    .option(
      '--chaos <json>',
      'faults to set for everyone at start (docs/chaos.md), e.g. \'{"book_updates":{"drop":0.1}}\'',
    )
    .action(async (o: TestVenueCliOptions) => {
      const faults = o.chaos === undefined ? undefined : (JSON.parse(o.chaos) as ChaosFaults);
      const { startTestVenue, testVenueInfo } = await import('../testing/index.js');
      const catalogue =
        o.catalogue === undefined
          ? undefined
          : (JSON.parse(readFileSync(o.catalogue, 'utf8')) as CatalogueFile);
      const simulated = o.simulator === true || o.rate !== undefined || o.seed !== undefined;
      const venue = await startTestVenue({
        port: o.port,
        accounts: Array.from({ length: o.accounts }, () =>
          o.balances === undefined ? {} : { balances: o.balances },
        ),
        ...(o.dir === undefined ? {} : { dataDir: o.dir }),
        ...(catalogue === undefined ? {} : { catalogue }),
        ...(simulated
          ? {
              simulator: {
                ...(o.rate === undefined ? {} : { ratePerSecond: o.rate }),
                ...(o.seed === undefined ? {} : { seed: o.seed }),
              },
            }
          : {}),
      });
      if (faults !== undefined) {
        try {
          await venue.chaos.set(faults);
        } catch (error) {
          await venue.close();
          throw error;
        }
      }
      // Before the venue is announced: a caller may signal as soon as it reads the line (a
      // write to a pipe is synchronous on Linux, so it can do so before the next statement here).
      let stopping = false;
      const stop = () => {
        if (stopping) return; // a signal and the end of stdin, say
        stopping = true;
        venue.close().then(
          () => process.exit(0),
          (error: unknown) => {
            process.stderr.write(`openspot: error while closing the venue: ${String(error)}\n`);
            process.exit(1);
          },
        );
      };
      onStopSignal(stop);
      onAbandoned(stop);
      const info = testVenueInfo(venue);
      if (json()) process.stdout.write(`${JSON.stringify(info)}\n`);
      else {
        const lines = [
          `OpenSpot test venue at ${info.base_url} (Ctrl-C stops it${info.data_dir === null ? ' and forgets everything' : ''})`,
          `WebSocket: ws://${info.ws.wsHost}:${info.ws.wsPort} app key ${info.ws.key}`,
          `Admin API: ${info.admin.url}, bearer token ${info.admin.token}`,
          ...info.accounts.map(
            (a) => `account ${a.name}: user ${a.user_id}, api_key ${a.api_key}, api_secret ${a.api_secret}`,
          ),
        ];
        process.stdout.write(`${lines.join('\n')}\n`);
      }
    });
}
