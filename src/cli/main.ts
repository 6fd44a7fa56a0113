#!/usr/bin/env node
/**
 * `openspot`: the operator's command line. `serve` runs the exchange; the other commands call the
 * admin API of a running server. Human-readable tables by default, `--json` for scripts.
 */
import { Command } from 'commander';
import { type AdminTarget, adminRequest, resolveTarget } from './admin-client.js';
import { registerChaosCommands } from './chaos.js';
import { registerCheckpointCommands } from './checkpoint.js';
import { registerDbCommands } from './db.js';
import { type LedgerAnswer, ledgerRow } from './ledger-format.js';
import { registerSimulationCommands } from './simulation.js';
import { table } from './table.js';
import { registerTestVenueCommand } from './test-venue.js';
import { registerTraderCommands } from './trader.js';

const program = new Command();
program
  .name('openspot')
  .description('OpenSpot exchange server and operator tools')
  .option('--url <url>', 'server base URL (default: $OPENSPOT_URL or http://127.0.0.1:$PORT)')
  .option('--token <token>', 'admin token (default: $ADMIN_TOKEN or $DATA_DIR/admin-token)')
  .option('--data-dir <dir>', 'data directory, to find the admin token file')
  .option('--json', 'print JSON instead of tables');

type Globals = { url?: string; token?: string; dataDir?: string; json?: boolean };
const globals = (): Globals => program.opts<Globals>();
const target = (): AdminTarget => resolveTarget(globals());

function print(
  value: unknown,
  rows?: ReadonlyArray<Record<string, unknown>>,
  columns?: readonly string[],
): void {
  if (globals().json === true) process.stdout.write(`${JSON.stringify(value, null, 2)}\n`);
  else if (rows !== undefined) process.stdout.write(`${table(rows, columns)}\n`);
  else process.stdout.write(`${table([value as Record<string, unknown>])}\n`);
}

const listOf = (value: unknown) => (value as { data: Record<string, unknown>[] }).data;

program
  .command('serve')
  .description('run the exchange server (configuration from the environment, see README)')
  .option('--demo', 'provision the demo account and run the market simulator')
  .action(async (opts: { demo?: boolean }) => {
    if (opts.demo === true) {
      process.env.SIMULATOR = 'on';
      process.env.DEMO = 'on';
    }
    await import('../main.js');
  });

program
  .command('engine')
  .description(
    'run the engine alone (sequencer, engine, PostgreSQL writer) for gateways over NATS (NATS_URL, DATABASE_URL, ENGINE_PORT)',
  )
  .option('--standby', 'wait for the writer lock held by another engine, then take over')
  .action(async (opts: { standby?: boolean }) => {
    await (await import('../cluster/main.js')).runClusterProcess('engine', {
      standby: opts.standby === true,
    });
  });

program
  .command('gateway')
  .description(
    'run a gateway: the /v1 HTTP and WebSocket interface on a remote engine (NATS_URL, DATABASE_URL, PORT)',
  )
  .action(async () => {
    await (await import('../cluster/main.js')).runClusterProcess('gateway');
  });

const assets = program.command('assets').description('assets of the catalogue');
assets.command('list').action(async () => {
  const body = await adminRequest(target(), 'GET', '/assets');
  print(body, listOf(body));
});
assets
  .command('create <code> <name>')
  .requiredOption('--type <type>', 'crypto or fiat')
  .requiredOption('--decimals <n>', 'ledger precision')
  .action(async (code: string, name: string, o: { type: string; decimals: string }) => {
    print(
      await adminRequest(target(), 'POST', '/assets', {
        code,
        name,
        type: o.type,
        decimals: Number(o.decimals),
      }),
    );
  });

const markets = program.command('markets').description('markets of the catalogue');
markets.command('list').action(async () => {
  const body = await adminRequest(target(), 'GET', '/markets');
  print(body, listOf(body));
});
markets
  .command('create <base> <quote>')
  .requiredOption('--pair-decimals <n>')
  .requiredOption('--lot-decimals <n>')
  .requiredOption('--ordermin <volume>')
  .option('--maker-fee <rate>', 'e.g. 0.0016')
  .option('--taker-fee <rate>', 'e.g. 0.0026')
  .action(async (base: string, quote: string, o: Record<string, string | undefined>) => {
    print(
      await adminRequest(target(), 'POST', '/markets', {
        base,
        quote,
        pair_decimals: Number(o.pairDecimals),
        lot_decimals: Number(o.lotDecimals),
        ordermin: o.ordermin,
        ...(o.makerFee === undefined ? {} : { maker_fee: o.makerFee }),
        ...(o.takerFee === undefined ? {} : { taker_fee: o.takerFee }),
      }),
    );
  });

const users = program.command('users').description('user accounts');
users.command('list').action(async () => {
  const body = await adminRequest(target(), 'GET', '/users');
  print(body, listOf(body));
});
users
  .command('create')
  .option('--email <email>')
  .action(async (o: { email?: string }) =>
    print(await adminRequest(target(), 'POST', '/users', o.email ? { email: o.email } : {})),
  );
users.command('balances <userId>').action(async (userId: string) => {
  const body = await adminRequest(target(), 'GET', `/users/${encodeURIComponent(userId)}/balances`);
  print(body, listOf(body));
});

const keys = program.command('keys').description('API keys');
keys
  .command('create <userId>')
  .option('--scopes <list>', 'comma-separated: read,trade', 'read,trade')
  .option(
    '--ip <list>',
    'comma-separated IP addresses or CIDR blocks the key may be used from (default: any)',
  )
  .option('--nonce', 'require a strictly increasing `nonce` in every signed body (replay protection)')
  .action(async (userId: string, o: { scopes: string; ip?: string; nonce?: boolean }) => {
    const body = await adminRequest(target(), 'POST', `/users/${encodeURIComponent(userId)}/api-keys`, {
      scopes: o.scopes.split(','),
      ...(o.ip === undefined ? {} : { ip_allowlist: o.ip.split(',').map((entry) => entry.trim()) }),
      ...(o.nonce === true ? { nonce_required: true } : {}),
    });
    print(body);
    if (globals().json !== true) process.stderr.write('The secret is shown only this once: store it now.\n');
  });
keys.command('list <userId>').action(async (userId: string) => {
  const body = await adminRequest(target(), 'GET', `/users/${encodeURIComponent(userId)}/api-keys`);
  print(body, listOf(body));
});
keys
  .command('revoke <apiKey>')
  .action(async (apiKey: string) =>
    print(await adminRequest(target(), 'DELETE', `/api-keys/${encodeURIComponent(apiKey)}`)),
  );

for (const [name, path] of [
  ['deposit', 'deposits'],
  ['withdraw', 'withdrawals'],
] as const) {
  program
    .command(`${name} <userId> <asset> <amount>`)
    .description(`${name} funds (idempotent with --reference)`)
    .option('--reference <ref>', 'idempotency reference')
    .action(async (userId: string, asset: string, amount: string, o: { reference?: string }) => {
      const body = await adminRequest(target(), 'POST', `/users/${encodeURIComponent(userId)}/${path}`, {
        asset,
        amount,
        ...(o.reference === undefined ? {} : { reference: o.reference }),
      });
      print(body, [ledgerRow(body as LedgerAnswer)]);
    });
}

program
  .command('ledger-check')
  .description('check that, per asset, balances + fees = deposits - withdrawals')
  .action(async () => {
    const body = (await adminRequest(target(), 'GET', '/ledger/check')) as {
      ok: boolean;
      assets: Record<string, unknown>[];
    };
    print(body, body.assets);
    if (!body.ok) process.exitCode = 3;
  });

registerTraderCommands(program);
registerCheckpointCommands(program, target, () => globals().json === true);
registerTestVenueCommand(program, () => globals().json === true);
registerSimulationCommands(program, globals);
registerChaosCommands(program, target, () => globals().json === true);
registerDbCommands(program, () => globals().json === true);

program.parseAsync(process.argv).catch((error: unknown) => {
  process.stderr.write(`openspot: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exitCode = 1;
});
