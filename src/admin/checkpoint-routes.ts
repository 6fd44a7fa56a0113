/**
 * Checkpoints and reset in the admin API (registered by routes.ts, so behind the same bearer token
 * and error handler):
 *
 *   POST   /checkpoints                {name}  save the whole state (201; replaces one of that name)
 *   GET    /checkpoints                        list them
 *   POST   /checkpoints/:name/restore          restore one while the server runs (200)
 *   DELETE /checkpoints/:name                  delete one
 *   POST   /reset                              restore the freshly seeded state (checkpoint `initial`)
 *
 * A restore answers once the state is swapped and reloaded, with the ledger check of the restored
 * state. Credentials are not rolled back (docs/interface-decisions.md, part H, 70-79).
 */
import type { FastifyInstance } from 'fastify';
import type { OpenExchange } from '../app/exchange.js';
import { INITIAL_CHECKPOINT } from '../app/initial-state.js';
import { CheckpointError, type CheckpointInfo } from '../store/store.js';
import { asObject, InputError, stringField } from './inputs.js';
import { auditView, isoMicros } from './views.js';

/** How the admin error handler renders an error: status, code, message, field. */
export type AdminFailure = (status: number, code: string, message: string, field?: string) => Error;

const checkpointView = (c: CheckpointInfo) => ({
  name: c.name,
  created_at: isoMicros(c.createdAt),
  bytes: c.bytes,
});

export function checkpointRoutes(app: FastifyInstance, exchange: OpenExchange, fail: AdminFailure): void {
  const problem = (error: unknown): unknown => {
    if (!(error instanceof CheckpointError)) return error;
    if (error.problem === 'invalid_name') return new InputError('name', error.message);
    if (error.problem === 'not_found') return fail(404, 'not_found', error.message);
    return fail(409, 'checkpoint_incompatible', error.message);
  };
  const attempt = async <T>(operation: () => T | Promise<T>): Promise<T> => {
    try {
      return await operation();
    } catch (error) {
      throw problem(error);
    }
  };
  const nameParam = (params: unknown): string => (params as { name: string }).name;
  const restored = async (name: string) => {
    await attempt(() => exchange.restoreCheckpoint(name));
    const audit = await exchange.readCommitted(() => exchange.audit());
    const ledger = auditView(audit, (code) => exchange.catalogue.asset(code)?.decimals ?? 0);
    return { restored: name, ledger };
  };

  app.get('/checkpoints', async () => ({ data: (await exchange.listCheckpoints()).map(checkpointView) }));

  app.post('/checkpoints', async (request, reply) => {
    const body = asObject(request.body ?? {});
    const name = stringField(body, 'name');
    if (name === INITIAL_CHECKPOINT)
      throw fail(
        409,
        'checkpoint_reserved',
        `The checkpoint ${INITIAL_CHECKPOINT} holds the freshly seeded state (reset); choose another name.`,
        'name',
      );
    const existed = (await exchange.listCheckpoints()).some((c) => c.name === name);
    const saved = await attempt(() => exchange.saveCheckpoint(name ?? ''));
    return reply.code(201).send({ ...checkpointView(saved), replaced: existed });
  });

  app.post('/checkpoints/:name/restore', async (request) => restored(nameParam(request.params)));

  app.delete('/checkpoints/:name', async (request) => {
    const name = nameParam(request.params);
    if (name === INITIAL_CHECKPOINT)
      throw fail(409, 'checkpoint_reserved', `The checkpoint ${INITIAL_CHECKPOINT} is kept for reset.`);
    if (!(await attempt(() => exchange.deleteCheckpoint(name))))
      throw fail(404, 'not_found', `No checkpoint named ${name}.`);
    return { name, deleted: true };
  });

  app.post('/reset', async () => {
    if (!(await exchange.listCheckpoints()).some((c) => c.name === INITIAL_CHECKPOINT))
      throw fail(
        409,
        'no_initial_state',
        'This data directory has no record of its freshly seeded state (its history predates checkpoints); an empty DATA_DIR starts with one.',
      );
    return restored(INITIAL_CHECKPOINT);
  });
}
