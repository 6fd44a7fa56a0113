/**
 * `openspot chaos …`: fault injection on a running server through /admin/v1/chaos (docs/chaos.md).
 *   openspot chaos show
 *   openspot chaos set --error-rate 0.2 --error-status 429 --latency 200 --jitter 50 [--key K] [--replace]
 *   openspot chaos set --faults '{"book_updates":{"drop":0.1}}'
 *   openspot chaos clear [--key K]
 * Flags only build the JSON; the server validates it (and says which field is wrong).
 */
import { type Command, InvalidArgumentError } from 'commander';
import type { AdminTarget } from './admin-client.js';
import { adminRequest } from './admin-client.js';

export interface ChaosSetOptions {
  key?: string;
  replace?: boolean;
  faults?: string;
  count?: number;
  routes?: string;
  latency?: number;
  jitter?: number;
  errorRate?: number;
  errorStatus?: number;
  retryAfter?: number;
  timeoutRate?: number;
  hold?: number;
  wsDelay?: number;
  wsJitter?: number;
  drop?: number;
  duplicate?: number;
  reorder?: number;
  disconnectRate?: number;
  closeCode?: number;
}

const number = (name: string) => (value: string) => {
  const parsed = Number(value);
  if (value.trim() === '' || !Number.isFinite(parsed))
    throw new InvalidArgumentError(`${name} must be a number.`);
  return parsed;
};

/** Drops the undefined members, so the server applies its defaults. */
const defined = (fields: Record<string, number | undefined>): Record<string, number> =>
  Object.fromEntries(Object.entries(fields).filter(([, v]) => v !== undefined)) as Record<string, number>;

/** The `faults` object of a set command: `--faults` JSON, then each kind whose main flag is given. */
export function faultsFromOptions(o: ChaosSetOptions): Record<string, unknown> {
  let faults: Record<string, unknown> = {};
  if (o.faults !== undefined) {
    const parsed: unknown = JSON.parse(o.faults);
    if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed))
      throw new InvalidArgumentError('--faults must be a JSON object.');
    faults = { ...(parsed as Record<string, unknown>) };
  }
  const count = o.count;
  const add = (kind: string, when: number | undefined, fields: Record<string, number | undefined>) => {
    if (when !== undefined) faults[kind] = defined({ ...fields, count });
  };
  add('latency', o.latency, { ms: o.latency, jitter_ms: o.jitter });
  add('errors', o.errorRate, { rate: o.errorRate, status: o.errorStatus, retry_after: o.retryAfter });
  const routes = o.routes?.split(',').map((r) => r.trim().replace(/\s+/, ' '));
  if (routes !== undefined)
    for (const kind of ['latency', 'errors'])
      if (faults[kind] !== undefined) faults[kind] = { ...(faults[kind] as object), routes };
  add('timeouts', o.timeoutRate, { rate: o.timeoutRate, hold_ms: o.hold });
  add('ws_delay', o.wsDelay, { ms: o.wsDelay, jitter_ms: o.wsJitter });
  const book = o.drop ?? o.duplicate ?? o.reorder;
  add('book_updates', book, { drop: o.drop, duplicate: o.duplicate, reorder: o.reorder });
  add('disconnects', o.disconnectRate, { rate: o.disconnectRate, code: o.closeCode });
  return faults;
}

interface ChaosView {
  allowed: boolean;
  everyone: Record<string, unknown>;
  keys: Record<string, Record<string, unknown>>;
}

/** One line per scope and fault, e.g. `everyone  errors  rate=0.2 status=503 retry_after=1`. */
export function describeChaos(view: ChaosView): string {
  const lines: string[] = [];
  if (!view.allowed) lines.push('fault injection is off (NODE_ENV=production without CHAOS=on)');
  const scopes: [string, Record<string, unknown>][] = [
    ['everyone', view.everyone],
    ...Object.entries(view.keys),
  ];
  for (const [scope, faults] of scopes)
    for (const [kind, fault] of Object.entries(faults)) {
      const fields = Object.entries(fault as Record<string, unknown>).map(([k, v]) => `${k}=${String(v)}`);
      lines.push(`${scope}  ${kind}  ${fields.join(' ')}`);
    }
  if (lines.length === 0) lines.push('no faults set');
  return lines.join('\n');
}

export function registerChaosCommands(
  program: Command,
  target: () => AdminTarget,
  json: () => boolean,
): void {
  const chaos = program
    .command('chaos')
    .description('fault injection for rehearsing failures (docs/chaos.md)');
  const print = (view: unknown): void => {
    process.stdout.write(`${json() ? JSON.stringify(view, null, 2) : describeChaos(view as ChaosView)}\n`);
  };

  chaos
    .command('show')
    .description('the faults in force')
    .action(async () => print(await adminRequest(target(), 'GET', '/chaos')));

  chaos
    .command('set')
    .description(
      'set faults, for everyone or for one API key (added to the faults already set unless --replace)',
    )
    .option('--key <apiKey>', 'only requests and WebSocket connections of this API key')
    .option('--replace', "replace the scope's faults instead of adding to them")
    .option('--faults <json>', 'faults as JSON, e.g. \'{"book_updates":{"drop":0.1}}\'')
    .option('--count <n>', 'each fault given by a flag applies this many times, then ends', number('--count'))
    .option(
      '--routes <list>',
      'REST latency and errors only on these routes, e.g. "POST /v1/orders,GET /v1/open-orders"',
    )
    .option('--latency <ms>', 'REST latency', number('--latency'))
    .option('--jitter <ms>', 'random extra REST latency, 0 to ms', number('--jitter'))
    .option('--error-rate <r>', 'share of REST requests refused, 0 to 1', number('--error-rate'))
    .option('--error-status <code>', '503 (default) or 429', number('--error-status'))
    .option('--retry-after <s>', 'Retry-After of refused requests (default 1)', number('--retry-after'))
    .option(
      '--timeout-rate <r>',
      'share of accepted order placements/cancellations left unanswered',
      number('--timeout-rate'),
    )
    .option(
      '--hold <ms>',
      'how long an unanswered connection is held before it is destroyed (default 10000)',
      number('--hold'),
    )
    .option('--ws-delay <ms>', 'WebSocket frame delay', number('--ws-delay'))
    .option('--ws-jitter <ms>', 'random extra WebSocket delay, 0 to ms', number('--ws-jitter'))
    .option('--drop <r>', 'share of order-book updates dropped', number('--drop'))
    .option('--duplicate <r>', 'share of order-book updates sent twice', number('--duplicate'))
    .option('--reorder <r>', 'share of order-book updates swapped with the next', number('--reorder'))
    .option(
      '--disconnect-rate <r>',
      'chance per second that a connection is closed',
      number('--disconnect-rate'),
    )
    .option('--close-code <code>', '4200 (default) or 4201', number('--close-code'))
    .action(async (o: ChaosSetOptions) => {
      const faults = faultsFromOptions(o);
      if (Object.keys(faults).length === 0 && o.replace !== true)
        throw new InvalidArgumentError('no fault given: see openspot chaos set --help');
      const body = { faults, ...(o.key === undefined ? {} : { api_key: o.key }) };
      print(await adminRequest(target(), o.replace === true ? 'PUT' : 'POST', '/chaos', body));
    });

  chaos
    .command('clear')
    .description('clear every fault, or one API key’s')
    .option('--key <apiKey>', "only this key's faults")
    .action(async (o: { key?: string }) => {
      const query = o.key === undefined ? '' : `?api_key=${encodeURIComponent(o.key)}`;
      print(await adminRequest(target(), 'DELETE', `/chaos${query}`));
    });
}
