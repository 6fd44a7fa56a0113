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
 * state. Credentials are not rolled back (docs/interface-decisions.md, part H, 70-79). The
 * OpenAPI entries list every status a route answers (schemas.ts; documented, not enforced: H90).
 */
import { Type } from '@fastify/type-provider-typebox';
import type { FastifyInstance } from 'fastify';
import { INITIAL_CHECKPOINT } from '../sequencer/initial-state.js';
import type { LocalExchange } from '../sequencer/sequencer.js';
import { CheckpointError, type CheckpointInfo } from '../store/store.js';
import { asObject, InputError, stringField } from './inputs.js';
import {
  adminDoc,
  adminError,
  CheckpointParam,
  CheckpointRestoredSchema,
  CheckpointSavedSchema,
  CheckpointSchema,
  responses,
  SaveCheckpointBody,
} from './schemas.js';
import { auditView, isoMicros } from './views.js';

/** How the admin error handler renders an error: status, code, message, field. */
export type AdminFailure = (status: number, code: string, message: string, field?: string) => Error;

const checkpointView = (c: CheckpointInfo) => ({
  name: c.name,
  created_at: isoMicros(c.createdAt),
  bytes: c.bytes,
});

export function checkpointRoutes(app: FastifyInstance, exchange: LocalExchange, fail: AdminFailure): void {
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

  // The answers the routes share: a restore's, and its refusals.
  const NOT_FOUND = { 404: adminError('not_found: no checkpoint of this name') };
  const INCOMPATIBLE = adminError(
    'checkpoint_incompatible: saved by another schema version, or holding rows that refer to nothing; nothing was changed',
  );
  const RESTORED = { 200: CheckpointRestoredSchema };
  const NO_BODY = 'No request body.';

  app.get(
    '/checkpoints',
    adminDoc('List checkpoints', {
      response: responses({
        200: Type.Object({ data: Type.Array(CheckpointSchema, { description: 'by name' }) }),
      }),
    }),
    async () => ({ data: (await exchange.listCheckpoints()).map(checkpointView) }),
  );

  app.post(
    '/checkpoints',
    adminDoc(
      'Save a checkpoint',
      {
        body: SaveCheckpointBody,
        response: responses(
          {
            201: CheckpointSavedSchema,
            409: adminError(
              `checkpoint_reserved: ${INITIAL_CHECKPOINT} is the freshly seeded state, kept for reset`,
            ),
          },
          { body: true, writes: true },
        ),
      },
      'Saves the whole venue state (every committed change) under `name`, replacing a checkpoint of that name. Users and API keys are never rolled back by a restore.',
    ),
    async (request, reply) => {
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
    },
  );

  app.post(
    '/checkpoints/:name/restore',
    adminDoc(
      'Restore a checkpoint',
      {
        params: CheckpointParam,
        response: responses(
          {
            ...RESTORED,
            ...NOT_FOUND,
            409: INCOMPATIBLE,
            422: adminError('invalid_input: not a checkpoint name (field `name`)'),
          },
          { writes: true },
        ),
      },
      `${NO_BODY} Restores the venue state while the server runs, as one step of the sequencer, and answers with the ledger check of the restored state.`,
    ),
    async (request) => restored(nameParam(request.params)),
  );

  app.delete(
    '/checkpoints/:name',
    adminDoc('Delete a checkpoint', {
      params: CheckpointParam,
      response: responses({
        200: Type.Object({ name: Type.String(), deleted: Type.Literal(true) }),
        ...NOT_FOUND,
        409: adminError(`checkpoint_reserved: ${INITIAL_CHECKPOINT} is kept for reset`),
        422: adminError('invalid_input: not a checkpoint name (field `name`)'),
      }),
    }),
    async (request) => {
      const name = nameParam(request.params);
      if (name === INITIAL_CHECKPOINT)
        throw fail(409, 'checkpoint_reserved', `The checkpoint ${INITIAL_CHECKPOINT} is kept for reset.`);
      if (!(await attempt(() => exchange.deleteCheckpoint(name))))
        throw fail(404, 'not_found', `No checkpoint named ${name}.`);
      return { name, deleted: true };
    },
  );

  app.post(
    '/reset',
    adminDoc(
      'Reset to the freshly seeded state',
      {
        response: responses(
          {
            ...RESTORED,
            409: adminError(
              `no_initial_state: this data directory has no ${INITIAL_CHECKPOINT} checkpoint (its history predates checkpoints), or the store keeps no checkpoints (PostgreSQL, for now); or checkpoint_incompatible`,
            ),
          },
          { writes: true },
        ),
      },
      `${NO_BODY} Restores the checkpoint ${INITIAL_CHECKPOINT}, as a restore does.`,
    ),
    async () => {
      const { capabilities } = exchange.store;
      // Not "its history predates checkpoints": this store keeps none at all (yet).
      if (!capabilities.checkpoints) throw fail(409, 'no_initial_state', `${capitalized(capabilities.why)}.`);
      if (!(await exchange.listCheckpoints()).some((c) => c.name === INITIAL_CHECKPOINT))
        throw fail(
          409,
          'no_initial_state',
          'This data directory has no record of its freshly seeded state (its history predates checkpoints); an empty DATA_DIR starts with one.',
        );
      return restored(INITIAL_CHECKPOINT);
    },
  );
}

const capitalized = (text: string): string => text.charAt(0).toUpperCase() + text.slice(1);
