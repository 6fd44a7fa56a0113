/**
 * `openspot checkpoint save|restore|list|delete NAME` and `openspot reset`: the admin API's
 * checkpoints (docs/operations.md, "Checkpoints and reset") from the command line. A restore and a
 * reset print the ledger check of the restored state and exit 3 should it not balance, like
 * `ledger-check`.
 */
import type { Command } from 'commander';
import { type AdminTarget, adminRequest } from './admin-client.js';
import { table } from './table.js';

interface RestoreAnswer {
  readonly restored: string;
  readonly ledger: { readonly ok: boolean; readonly assets: Record<string, unknown>[] };
}

export function registerCheckpointCommands(
  program: Command,
  target: () => AdminTarget,
  json: () => boolean,
): void {
  const out = (value: unknown, text: string) =>
    process.stdout.write(`${json() ? JSON.stringify(value, null, 2) : text}\n`);
  const restored = (answer: RestoreAnswer, what: string) => {
    out(
      answer,
      `${what}\n${table(answer.ledger.assets)}\nledger check: ${answer.ledger.ok ? 'ok' : 'FAILED'}`,
    );
    if (!answer.ledger.ok) process.exitCode = 3;
  };
  const path = (name: string) => `/checkpoints/${encodeURIComponent(name)}`;

  const checkpoint = program
    .command('checkpoint')
    .description('save and restore the whole venue state while the server runs (credentials are kept)');
  checkpoint
    .command('save <name>')
    .description(
      "save the state as NAME (letters, digits, '.', '_', '-'); replaces a checkpoint of that name",
    )
    .action(async (name: string) => {
      const saved = (await adminRequest(target(), 'POST', '/checkpoints', { name })) as {
        name: string;
        bytes: number;
        replaced: boolean;
      };
      out(
        saved,
        `saved checkpoint ${saved.name} (${saved.bytes} bytes${saved.replaced ? ', replaced' : ''})`,
      );
    });
  checkpoint
    .command('restore <name>')
    .description('bring the state saved as NAME back; WebSocket clients reconnect and get snapshots')
    .action(async (name: string) => {
      const answer = (await adminRequest(target(), 'POST', `${path(name)}/restore`)) as RestoreAnswer;
      restored(answer, `restored checkpoint ${answer.restored}`);
    });
  checkpoint.command('list').action(async () => {
    const body = (await adminRequest(target(), 'GET', '/checkpoints')) as { data: Record<string, unknown>[] };
    out(body, table(body.data));
  });
  checkpoint.command('delete <name>').action(async (name: string) => {
    const body = await adminRequest(target(), 'DELETE', path(name));
    out(body, `deleted checkpoint ${name}`);
  });

  program
    .command('reset')
    .description('return the venue to its freshly seeded state (catalogue and accounts as at first start)')
    .action(async () => {
      const answer = (await adminRequest(target(), 'POST', '/reset')) as RestoreAnswer;
      restored(answer, 'the venue is back to its freshly seeded state');
    });
}
