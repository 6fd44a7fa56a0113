/**
 * The operator's admin API under /admin/v1: assets, markets, users, API keys, deposits,
 * withdrawals, balances and the ledger check. Bearer-token guarded; JSON in and out; errors are
 * `{"error": {"code", "message", "field"?}}` with a 4xx status.
 */
import { Type } from '@fastify/type-provider-typebox';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { parseAllowlist } from '../auth/key-policy.js';
import { type CredentialVault, generateApiCredentials } from '../auth/vault.js';
import { formatUnits } from '../domain/money.js';
import type { Amount, AssetCode, UserId } from '../domain/types.js';
import type { Rejection } from '../engine/types.js';
import type { LocalExchange } from '../sequencer/sequencer.js';
import { type ApiKeyScope, StoreUnavailableError } from '../store/store.js';
import { bearerMatches } from './admin-token.js';
import { checkpointRoutes } from './checkpoint-routes.js';
import {
  asObject,
  assetCommand,
  decimalField,
  hasControlCharacter,
  InputError,
  marketCommand,
  stringField,
  textField,
} from './inputs.js';
import {
  AdminErrorSchema,
  type AdminHealth,
  ApiKeyCreatedSchema,
  ApiKeyParam,
  ApiKeySchema,
  AssetSchema,
  adminDoc,
  adminSecurity,
  BalanceSchema,
  CreateApiKeyBody,
  CreateAssetBody,
  CreateMarketBody,
  CreateUserBody,
  EngineStateSchema,
  HealthSchema,
  LedgerCheckSchema,
  LedgerEntryBody,
  LedgerResultSchema,
  MarketSchema,
  ReferenceConflictSchema,
  responses,
  USER_NOT_FOUND,
  UserIdParam,
  UserSchema,
} from './schemas.js';
import {
  apiKeyView,
  assetView,
  auditView,
  balanceView,
  isoMicros,
  ledgerEntryView,
  marketView,
  userView,
} from './views.js';

export interface AdminOptions {
  readonly exchange: LocalExchange;
  readonly vault: CredentialVault;
  readonly token: string;
  /** Called after a key is revoked (closes that user's private WebSocket subscriptions). */
  readonly onApiKeyRevoked?: (userId: UserId, apiKey: string) => void;
  /** Readiness and metrics figures for GET /health (the route exists only when given). */
  readonly health?: () => Promise<AdminHealth>;
}

class AdminError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly field?: string,
    /** Further members of the error object (a conflict's recorded entry). */
    readonly details?: Readonly<Record<string, unknown>>,
  ) {
    super(message);
  }
}

const REJECTION_STATUS: Partial<Record<Rejection['code'], number>> = {
  asset_exists: 409,
  market_exists: 409,
  order_not_found: 404,
};

const SCOPES: readonly ApiKeyScope[] = ['read', 'trade'];

export async function adminRoutes(app: FastifyInstance, options: AdminOptions): Promise<void> {
  const { exchange, vault } = options;
  const store = exchange.credentials;

  // The schemas are for the OpenAPI document only: input is checked by hand (inputs.ts, one 422
  // naming the field, with the operator-facing messages), and answers are written as built (a
  // schema serializer would drop members it does not list, such as a conflict's `recorded`).
  app.setValidatorCompiler(() => (value) => ({ value }));
  app.setSerializerCompiler(() => (data) => JSON.stringify(data));
  // Every route of this scope is behind the bearer check below: its OpenAPI entry says so, and is
  // listed under `admin`, even when the route itself (a later addition) forgets to.
  app.addHook('onRoute', (route) => {
    const schema = (route.schema ?? {}) as Record<string, unknown>;
    if (schema.hide === true) return;
    route.schema = { tags: ['admin'], security: adminSecurity, ...schema };
  });

  // JSON bodies must be UTF-8 (RFC 8259): Fastify's own parser would decode other bytes into
  // U+FFFD and carry on, storing replacement characters in e-mails and references.
  const utf8 = new TextDecoder('utf-8', { fatal: true });
  const parseJson = app.getDefaultJsonParser('error', 'error');
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (request, body, done) => {
    let text: string;
    try {
      text = utf8.decode(body as Buffer);
    } catch {
      done(new AdminError(400, 'bad_request', 'The body is not valid UTF-8.'), undefined);
      return;
    }
    parseJson(request, text, done);
  });

  app.addHook('onRequest', async (request, reply) => {
    if (!bearerMatches(request.headers.authorization, options.token)) {
      reply
        .header('WWW-Authenticate', 'Bearer')
        .code(401)
        .send({ error: { code: 'unauthorized', message: 'A valid admin bearer token is required.' } });
    }
  });

  // An unknown admin address answers in the admin shape, after the bearer check above (which
  // runs for this handler too): no path list for callers without the token.
  app.setNotFoundHandler((_request, reply) =>
    reply.code(404).send({ error: { code: 'not_found', message: 'No such admin endpoint.' } }),
  );

  app.setErrorHandler((error, request, reply) => {
    if (error instanceof AdminError) {
      return reply.code(error.status).send({
        error: {
          code: error.code,
          message: error.message,
          ...(error.field ? { field: error.field } : {}),
          ...error.details,
        },
      });
    }
    if (error instanceof InputError) {
      return reply
        .code(422)
        .send({ error: { code: 'invalid_input', message: error.message, field: error.field } });
    }
    if (error instanceof StoreUnavailableError) {
      return reply
        .code(503)
        .header('Retry-After', '1')
        .send({
          error: {
            code: 'unavailable',
            message: 'The store cannot accept changes right now; try again later.',
          },
        });
    }
    const status = (error as { statusCode?: number }).statusCode;
    if (status !== undefined && status >= 400 && status < 500) {
      return reply.code(status).send({ error: { code: 'bad_request', message: (error as Error).message } });
    }
    request.log.error({ err: error }, 'admin request failed');
    return reply.code(500).send({ error: { code: 'internal', message: 'Internal error.' } });
  });

  const submit = async (command: Parameters<LocalExchange['submit']>[0], reference?: string) => {
    const result = await exchange.submit(command, reference === undefined ? undefined : { reference });
    if (!result.ok) {
      throw new AdminError(
        REJECTION_STATUS[result.error.code] ?? 422,
        result.error.code,
        result.error.message,
        result.error.field,
      );
    }
    return result;
  };

  const userParam = async (request: FastifyRequest): Promise<UserId> => {
    const raw = (request.params as { id?: string }).id ?? '';
    const id = /^\d{1,15}$/.test(raw) ? Number(raw) : 0;
    if (id <= 0 || (await store.getUser(id as UserId)) === undefined)
      throw new AdminError(404, 'not_found', 'User not found.');
    return id as UserId;
  };

  app.get(
    '/assets',
    adminDoc('List assets', { response: responses({ 200: Type.Object({ data: Type.Array(AssetSchema) }) }) }),
    async () => ({ data: exchange.catalogue.assets().map(assetView) }),
  );

  app.post(
    '/assets',
    adminDoc(
      'Create an asset',
      {
        body: CreateAssetBody,
        response: responses({ 201: AssetSchema, 409: AdminErrorSchema }, { body: true, writes: true }),
      },
      'At most 10 decimals: with more, an amount (2^53 − 1 of the smallest unit) could not reach 100,000 units; the 422 says so.',
    ),
    async (request, reply) => {
      const command = assetCommand(request.body);
      await submit(command);
      return reply.code(201).send(assetView(exchange.catalogue.asset(command.code)!));
    },
  );

  app.get(
    '/markets',
    adminDoc('List markets', {
      response: responses({ 200: Type.Object({ data: Type.Array(MarketSchema) }) }),
    }),
    async () => ({ data: exchange.catalogue.markets().map(marketView) }),
  );

  app.post(
    '/markets',
    adminDoc('Create a market', {
      body: CreateMarketBody,
      response: responses({ 201: MarketSchema, 409: AdminErrorSchema }, { body: true, writes: true }),
    }),
    async (request, reply) => {
      const command = marketCommand(request.body, exchange.catalogue);
      const result = await submit(command);
      const created = result.events.find((e) => e.type === 'marketCreated');
      if (created?.type !== 'marketCreated') throw new AdminError(500, 'internal', 'Market was not created.');
      return reply.code(201).send(marketView(created.market));
    },
  );

  app.get(
    '/users',
    adminDoc('List users', { response: responses({ 200: Type.Object({ data: Type.Array(UserSchema) }) }) }),
    async () => ({ data: (await store.listUsers()).map(userView) }),
  );

  app.post(
    '/users',
    adminDoc('Create a user', {
      body: CreateUserBody,
      response: responses({ 201: UserSchema, 409: AdminErrorSchema }, { body: true, writes: true }),
    }),
    async (request, reply) => {
      const body = asObject(request.body ?? {});
      const email = stringField(body, 'email', true);
      if (email !== undefined && (!/^[^\s@]{1,64}@[^\s@]{1,255}$/.test(email) || hasControlCharacter(email)))
        throw new InputError('email', 'The email must be a valid email address.');
      if (email !== undefined && (await store.listUsers()).some((u) => u.email === email)) {
        throw new AdminError(409, 'user_exists', 'A user with this email already exists.', 'email');
      }
      const user = await store.createUser(email ?? null, exchange.clock());
      return reply.code(201).send(userView(user));
    },
  );

  app.get(
    '/users/:id',
    adminDoc('Get a user', {
      params: UserIdParam,
      response: responses({ 200: UserSchema, ...USER_NOT_FOUND }),
    }),
    async (request) => userView((await store.getUser(await userParam(request)))!),
  );

  app.get(
    '/users/:id/balances',
    adminDoc("A user's balances", {
      params: UserIdParam,
      response: responses({ 200: Type.Object({ data: Type.Array(BalanceSchema) }), ...USER_NOT_FOUND }),
    }),
    async (request) => {
      const userId = await userParam(request);
      return {
        data: (await exchange.readCommitted(() => exchange.balances(userId))).map((b) =>
          balanceView(b, exchange.catalogue.asset(b.asset)!.decimals),
        ),
      };
    },
  );

  app.post(
    '/users/:id/api-keys',
    adminDoc('Issue an API key', {
      params: UserIdParam,
      body: CreateApiKeyBody,
      response: responses({ 201: ApiKeyCreatedSchema, ...USER_NOT_FOUND }, { body: true, writes: true }),
    }),
    async (request, reply) => {
      const userId = await userParam(request);
      const body = asObject(request.body ?? {});
      const scopes = parseScopes(body.scopes);
      const allowlist = parseAllowlist(body.ip_allowlist);
      if (!allowlist.ok) throw new InputError('ip_allowlist', allowlist.message);
      const nonceRequired = parseNonceRequired(body.nonce_required);
      const { apiKey, apiSecret } = generateApiCredentials();
      await store.createApiKey({
        key: apiKey,
        userId,
        sealedSecret: vault.seal(apiSecret),
        scopes,
        createdAt: exchange.clock(),
        revokedAt: null,
        ipAllowlist: allowlist.value,
        nonceRequired,
      });
      // The secret is shown once, here, and never stored or logged in the clear.
      return reply.code(201).send({
        api_key: apiKey,
        api_secret: apiSecret,
        user_id: userId,
        scopes,
        ip_allowlist: allowlist.value,
        nonce_required: nonceRequired,
      });
    },
  );

  app.get(
    '/users/:id/api-keys',
    adminDoc("A user's API keys (without secrets)", {
      params: UserIdParam,
      response: responses({ 200: Type.Object({ data: Type.Array(ApiKeySchema) }), ...USER_NOT_FOUND }),
    }),
    async (request) => ({
      data: (await store.listApiKeys(await userParam(request))).map(apiKeyView),
    }),
  );

  app.delete(
    '/api-keys/:key',
    adminDoc(
      'Revoke an API key',
      {
        params: ApiKeyParam,
        response: responses(
          {
            200: ApiKeySchema,
            404: Type.Object(AdminErrorSchema.properties, { description: 'No such key' }),
          },
          { writes: true },
        ),
      },
      'Idempotent: revoking a revoked key answers 200 with its record. Closes the private channels of the key.',
    ),
    async (request) => {
      const key = (request.params as { key: string }).key;
      const record = await store.getApiKey(key);
      if (record === undefined) throw new AdminError(404, 'not_found', 'API key not found.');
      if (record.revokedAt === null) {
        await store.revokeApiKey(key, exchange.clock());
        options.onApiKeyRevoked?.(record.userId, key);
      }
      return apiKeyView((await store.getApiKey(key))!);
    },
  );

  const ledgerRoute =
    (kind: 'deposit' | 'withdraw') => async (request: FastifyRequest, reply: FastifyReply) => {
      const userId = await userParam(request);
      const body = asObject(request.body);
      const code = stringField(body, 'asset')!;
      const asset = exchange.catalogue.asset(code);
      if (asset === undefined) throw new InputError('asset', 'The selected asset is invalid.');
      const amount = decimalField(body, 'amount', asset.decimals) as Amount;
      const reference = textField(body, 'reference', 128, true);
      const result = await submit({ kind, userId, asset: asset.code as AssetCode, amount }, reference);
      const { recorded } = result;
      if (recorded !== undefined && (recorded.asset !== asset.code || recorded.amount !== amount)) {
        // The reference names one operator action: a reuse with another asset or amount is a
        // mistake to surface, never a silent "duplicate" echoing an amount that was not applied.
        const view = ledgerEntryView(recorded, exchange.catalogue.asset(recorded.asset)?.decimals ?? 0);
        throw new AdminError(
          409,
          'reference_conflict',
          `The reference was already used for another ${recorded.kind} (${view.amount} ${view.asset}); nothing was changed.`,
          'reference',
          { recorded: view },
        );
      }
      const balances = await exchange.readCommitted(() => exchange.balances(userId));
      const balance = balances.find((b) => b.asset === asset.code)!;
      return reply.code(result.duplicate ? 200 : 201).send({
        user_id: userId,
        asset: asset.code,
        amount: formatUnits(amount, asset.decimals),
        reference: reference ?? null,
        duplicate: result.duplicate === true,
        // When the entry was applied (the earlier one for a duplicate).
        time: isoMicros(recorded?.time ?? exchange.clock()),
        balance: balanceView(balance, asset.decimals),
      });
    };

  const ledgerDoc = (summary: string) =>
    adminDoc(
      summary,
      {
        params: UserIdParam,
        body: LedgerEntryBody,
        response: responses(
          {
            200: Type.Object(LedgerResultSchema.properties, {
              description:
                'Duplicate: this reference was already applied with this asset and amount; nothing changed',
            }),
            201: Type.Object(LedgerResultSchema.properties, { description: 'Applied and committed' }),
            ...USER_NOT_FOUND,
            409: ReferenceConflictSchema,
          },
          { body: true, writes: true },
        ),
      },
      'Idempotent on `reference`. An engine refusal (insufficient_funds for a withdrawal, …) is a 422 with its code.',
    );
  app.post('/users/:id/deposits', ledgerDoc('Deposit'), ledgerRoute('deposit'));
  app.post('/users/:id/withdrawals', ledgerDoc('Withdraw'), ledgerRoute('withdraw'));

  checkpointRoutes(
    app,
    exchange,
    (status, code, message, field) => new AdminError(status, code, message, field),
  );

  // Always 200: the report itself says whether the books balance (`ok`); monitoring reads the flag.
  app.get(
    '/ledger/check',
    adminDoc(
      'Ledger check',
      { response: responses({ 200: LedgerCheckSchema }) },
      'Per asset: balances + fees = deposits − withdrawals, and no negative balance.',
    ),
    async () =>
      auditView(
        await exchange.readCommitted(() => exchange.audit()),
        (code) => exchange.catalogue.asset(code)?.decimals ?? 0,
      ),
  );

  // Always 200, like the ledger check: `ok` is the flag. The hash is what a restore of the
  // committed state (a restart, a standby, the crash test's own reading of the store) must equal.
  app.get(
    '/engine/state',
    adminDoc(
      'Engine state check',
      { response: responses({ 200: EngineStateSchema }) },
      'The engine state hash (equal for every engine holding the same committed state) and its internal invariants (books, id index, reservations, balances, conservation). Runs between two commits and blocks the sequencer while it hashes: about a second per 100,000 resting orders.',
    ),
    async () => {
      const check = await exchange.readCommitted(() => exchange.stateCheck());
      return {
        state_hash: check.stateHash,
        references_hash: check.referencesHash,
        ok: check.violation === null,
        violation: check.violation,
      };
    },
  );

  const { health } = options;
  if (health !== undefined)
    app.get(
      '/health',
      adminDoc(
        'Health summary',
        { response: responses({ 200: HealthSchema }) },
        'Readiness (as /readyz), group-commit latency, WebSocket connections, events and memory: the figures of GET /metrics, as JSON for the operator console. Always 200; `status` says whether the venue accepts changes.',
      ),
      async () => health(),
    );
}

function parseNonceRequired(value: unknown): boolean {
  if (value === undefined || value === null) return false;
  if (typeof value !== 'boolean')
    throw new InputError('nonce_required', 'The nonce_required field must be true or false.');
  return value;
}

function parseScopes(value: unknown): ApiKeyScope[] {
  if (value === undefined) return ['read', 'trade'];
  if (!Array.isArray(value) || value.length === 0 || !value.every((s) => SCOPES.includes(s as ApiKeyScope))) {
    throw new InputError('scopes', 'The scopes must be a non-empty array of "read" and "trade".');
  }
  return [...new Set(value as ApiKeyScope[])];
}
