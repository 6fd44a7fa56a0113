/**
 * `/admin/v1/chaos`: the faults in force, set and cleared at run time (docs/chaos.md).
 * - GET: `{allowed, everyone, keys}`;
 * - PUT `{api_key?, faults}`: replaces the scope's faults (everyone without `api_key`);
 * - POST `{api_key?, faults}`: sets the given kinds in the scope and keeps its others (`null`
 *   removes a kind);
 * - DELETE: clears everything; `?api_key=` clears that key's faults only.
 * Every answer is the state after the change. Bearer-token guarded, errors in the admin API's
 * shape `{"error": {"code", "message", "field"?}}`. Setting is refused (403) when the
 * configuration does not allow fault injection (production without CHAOS=on). Documented in the
 * OpenAPI document with the rest of the admin API (schemas.ts; they document, not enforce: H90).
 */
import type { FastifyInstance, FastifyReply } from 'fastify';
import { bearerMatches } from '../admin/admin-token.js';
import { adminDoc } from '../admin/schemas.js';
import type { Chaos } from './controller.js';
import { FaultInputError, type FaultSet, parseFaultSet } from './faults.js';
import { ChaosBody, ChaosQuery, chaosResponses } from './schemas.js';

export interface ChaosAdminOptions {
  readonly chaos: Chaos;
  readonly token: string;
  /** Whether faults may be set (config CHAOS; off in production unless CHAOS=on). */
  readonly allowed: boolean;
  /** Whether an API key exists (revoked or not): a scope for a mistyped key would never apply. */
  readonly isKnownKey: (apiKey: string) => boolean | Promise<boolean>;
}

type Body = Readonly<Record<string, unknown>>;

const fail = (reply: FastifyReply, status: number, code: string, message: string, field?: string) =>
  reply.code(status).send({ error: { code, message, ...(field === undefined ? {} : { field }) } });

/**
 * The resource's own path: the plugin's prefix exactly. A route at `/` would be served, and
 * documented, at the prefix with a trailing slash too (Fastify's `prefixTrailingSlash: both`), a
 * second address for one resource that no other admin route has.
 */
const RESOURCE = '';

export async function chaosAdminRoutes(app: FastifyInstance, options: ChaosAdminOptions): Promise<void> {
  const { chaos } = options;

  // As in the admin API (src/admin/routes.ts): the schemas are for the OpenAPI document; input is
  // checked by hand (one 422 naming the field), answers are written as built.
  app.setValidatorCompiler(() => (value) => ({ value }));
  app.setSerializerCompiler(() => (data) => JSON.stringify(data));

  app.addHook('onRequest', async (request, reply) => {
    if (!bearerMatches(request.headers.authorization, options.token)) {
      reply.header('WWW-Authenticate', 'Bearer');
      return fail(reply, 401, 'unauthorized', 'A valid admin bearer token is required.');
    }
  });

  // Malformed JSON and the like, in the admin API's shape.
  app.setErrorHandler((error, request, reply) => {
    const status = (error as { statusCode?: number }).statusCode;
    if (status !== undefined && status >= 400 && status < 500)
      return fail(reply, status, 'bad_request', (error as Error).message);
    request.log.error({ err: error }, 'chaos admin request failed');
    return fail(reply, 500, 'internal', 'Internal error.');
  });

  const view = () => {
    const state = chaos.state();
    return { allowed: options.allowed, everyone: state.everyone, keys: state.keys };
  };

  /** The scope and faults of a PUT or POST body; answers the refusal itself when it is wrong. */
  const input = async (body: unknown, reply: FastifyReply) => {
    if (!options.allowed) {
      fail(
        reply,
        403,
        'chaos_disabled',
        'Fault injection is off: NODE_ENV is production and CHAOS is not on.',
      );
      return undefined;
    }
    if (typeof body !== 'object' || body === null || Array.isArray(body)) {
      fail(reply, 422, 'invalid_input', 'The body must be an object {api_key?, faults}.');
      return undefined;
    }
    const { api_key: apiKey, faults, ...rest } = body as Body;
    const unknown = Object.keys(rest)[0];
    if (unknown !== undefined) {
      fail(reply, 422, 'invalid_input', `Unknown field ${unknown}.`, unknown);
      return undefined;
    }
    if (apiKey !== undefined && (typeof apiKey !== 'string' || !(await options.isKnownKey(apiKey)))) {
      fail(reply, 422, 'invalid_input', 'The api_key must be an existing API key.', 'api_key');
      return undefined;
    }
    try {
      return { apiKey: apiKey as string | undefined, ...parseFaultSet(faults) };
    } catch (error) {
      if (!(error instanceof FaultInputError)) throw error;
      fail(reply, 422, 'invalid_input', error.message, error.field);
      return undefined;
    }
  };

  const setDoc = (summary: string, description: string) =>
    adminDoc(summary, { body: ChaosBody, response: chaosResponses.write }, description);

  app.get(
    RESOURCE,
    adminDoc(
      'Faults in force',
      { response: chaosResponses.read },
      "Everyone's faults and each API key's own, and whether the configuration allows setting any.",
    ),
    async () => view(),
  );

  app.put(
    RESOURCE,
    setDoc(
      'Replace faults',
      "Replaces the scope's fault set (everyone's without `api_key`; `{}` clears it). Every field is checked and an unknown one refused: 422 naming it.",
    ),
    async (request, reply) => {
      const parsed = await input(request.body, reply);
      if (parsed === undefined) return reply;
      const set: Record<string, unknown> = { ...parsed.set };
      for (const kind of parsed.removed) delete set[kind];
      chaos.replace(parsed.apiKey, set as FaultSet);
      request.log.info({ api_key: parsed.apiKey ?? null, faults: set }, 'chaos: faults replaced');
      return view();
    },
  );

  app.post(
    RESOURCE,
    setDoc(
      'Set faults',
      "Sets the given kinds in the scope (everyone's without `api_key`) and keeps its others; `null` removes a kind. Every field is checked and an unknown one refused: 422 naming it.",
    ),
    async (request, reply) => {
      const parsed = await input(request.body, reply);
      if (parsed === undefined) return reply;
      chaos.merge(parsed.apiKey, parsed.set, parsed.removed);
      request.log.info(
        { api_key: parsed.apiKey ?? null, faults: parsed.set, removed: parsed.removed },
        'chaos: faults set',
      );
      return view();
    },
  );

  app.delete(
    RESOURCE,
    adminDoc(
      'Clear faults',
      { querystring: ChaosQuery, response: chaosResponses.read },
      'Clears every fault of every scope, or with `?api_key=` that key’s only.',
    ),
    async (request) => {
      const apiKey = (request.query as { api_key?: unknown }).api_key;
      chaos.clear(typeof apiKey === 'string' && apiKey !== '' ? apiKey : undefined);
      request.log.info({ api_key: apiKey ?? null }, 'chaos: faults cleared');
      return view();
    },
  );
}
