/**
 * The admin API's request and response schemas, for its OpenAPI entries (tag `admin`, bearer
 * security). The routes validate by hand (src/admin/inputs.ts: one 422 naming the first wrong
 * field, with the operator-facing messages), so these schemas document and are not enforced;
 * test/admin/openapi.test.ts checks that the document and the answers agree.
 */
import { type Static, type TSchema, Type } from '@fastify/type-provider-typebox';
import { StringEnum } from '../http/schemas.js';
import { INITIAL_CHECKPOINT } from '../sequencer/initial-state.js';
import { CHECKPOINT_NAME } from '../store/store.js';
import { MAX_ASSET_DECIMALS } from './inputs.js';

/** The name of the security scheme in components.securitySchemes (src/http/app.ts). */
export const ADMIN_SECURITY_SCHEME = 'adminBearer';
export const adminSecurity = [{ [ADMIN_SECURITY_SCHEME]: [] }];

/**
 * The `schema` route option of an admin route: tag, summary, bearer security and the given
 * schemas (body, params, response: see `responses`). Routes added to the admin API later use it
 * too, so test/admin/openapi.test.ts holds them to the same rules.
 */
export const adminDoc = (summary: string, schema: Record<string, unknown>, description?: string) => ({
  schema: {
    tags: ['admin'],
    summary,
    ...(description === undefined ? {} : { description }),
    security: adminSecurity,
    ...schema,
  },
});

const Decimal = (description: string) => Type.String({ pattern: '^[0-9]+(\\.[0-9]+)?$', description });
const Time = Type.String({ format: 'date-time', description: 'UTC, ISO 8601 (millisecond precision)' });

// ---- errors ----------------------------------------------------------------------------------

export const AdminErrorSchema = Type.Object(
  {
    error: Type.Object({
      code: Type.String({
        description:
          'unauthorized, bad_request, invalid_input, not_found, user_exists, asset_exists, market_exists, ' +
          'reference_conflict, checkpoint_reserved, checkpoint_incompatible, no_initial_state, ' +
          'chaos_disabled, unavailable, or an engine refusal (insufficient_funds, …)',
      }),
      message: Type.String({ description: 'for people; not a contract' }),
      field: Type.Optional(Type.String({ description: 'the input field at fault' })),
    }),
  },
  { description: 'An admin error' },
);

const LedgerEntrySchema = Type.Object({
  kind: StringEnum(['deposit', 'withdraw']),
  asset: Type.String(),
  amount: Decimal('exact decimal'),
  reference: Type.Union([Type.String(), Type.Null()]),
  time: Time,
});

export const ReferenceConflictSchema = Type.Object(
  {
    error: Type.Object({
      code: Type.Literal('reference_conflict'),
      message: Type.String(),
      field: Type.Literal('reference'),
      recorded: LedgerEntrySchema,
    }),
  },
  { description: 'The reference was already used for another asset or amount; nothing was changed' },
);

/** An admin error answer, described for one status of one route. */
export const adminError = (description: string) => Type.Object(AdminErrorSchema.properties, { description });
const err = adminError;

/** Answers every admin route can give. */
const COMMON = {
  400: err('Malformed request (JSON that does not parse, a body that is not UTF-8)'),
  401: err('Missing or wrong bearer token (WWW-Authenticate: Bearer)'),
} as const;
/** Answers of every route that reads a JSON body. */
const WITH_BODY = {
  ...COMMON,
  413: err('Body larger than the configured limit'),
  415: err('Body sent with a Content-Type other than application/json'),
  422: err('Invalid input: `field` names the first wrong field'),
} as const;
const UNAVAILABLE = { 503: err('The store cannot accept changes right now (Retry-After: 1)') } as const;
const USER_NOT_FOUND = { 404: err('No such user') } as const;

/** Response map of a route: its own answers plus the shared ones. */
export const responses = (
  own: Record<number, TSchema>,
  options: { body?: boolean; writes?: boolean } = {},
): Record<number, TSchema> => {
  const shared: Record<number, TSchema> = options.body ? { ...WITH_BODY } : { ...COMMON };
  if (options.writes) Object.assign(shared, UNAVAILABLE);
  return Object.assign(shared, own);
};
export { USER_NOT_FOUND };

// ---- records ---------------------------------------------------------------------------------

export const AssetSchema = Type.Object({
  code: Type.String(),
  name: Type.String(),
  type: StringEnum(['crypto', 'fiat']),
  decimals: Type.Integer(),
});

export const MarketSchema = Type.Object({
  id: Type.Integer(),
  base: Type.String(),
  quote: Type.String(),
  altname: Type.String({ description: 'BTCEUR' }),
  wsname: Type.String({ description: 'BTC/EUR' }),
  pair_decimals: Type.Integer(),
  lot_decimals: Type.Integer(),
  ordermin: Decimal('minimum order volume'),
  maker_fee: Decimal('fraction, e.g. 0.00160000 = 0.16 %'),
  taker_fee: Decimal('fraction'),
});

export const UserSchema = Type.Object({
  id: Type.Integer(),
  email: Type.Union([Type.String(), Type.Null()]),
  created_at: Time,
});

const Scopes = Type.Array(StringEnum(['read', 'trade']));
const Allowlist = Type.Union([Type.Array(Type.String()), Type.Null()], {
  description: 'addresses or CIDR ranges allowed to use the key; null = any',
});

export const ApiKeySchema = Type.Object({
  api_key: Type.String(),
  user_id: Type.Integer(),
  scopes: Scopes,
  ip_allowlist: Allowlist,
  nonce_required: Type.Boolean(),
  created_at: Time,
  revoked_at: Type.Union([Time, Type.Null()]),
});

export const ApiKeyCreatedSchema = Type.Object(
  {
    api_key: Type.String(),
    api_secret: Type.String({ description: 'shown this once; never stored in the clear' }),
    user_id: Type.Integer(),
    scopes: Scopes,
    ip_allowlist: Allowlist,
    nonce_required: Type.Boolean(),
  },
  { description: 'Created. The secret is in this answer only.' },
);

export const BalanceSchema = Type.Object({
  asset: Type.String(),
  available: Decimal('exact decimal'),
  reserved: Decimal('held by open orders'),
  total: Decimal('available + reserved'),
});

export const LedgerResultSchema = Type.Object({
  user_id: Type.Integer(),
  asset: Type.String(),
  amount: Decimal('exact decimal'),
  reference: Type.Union([Type.String(), Type.Null()]),
  duplicate: Type.Boolean({ description: 'true: the reference was already applied; nothing changed' }),
  time: Type.String({ description: 'when the entry was applied (the earlier one for a duplicate)' }),
  balance: BalanceSchema,
});

export const LedgerCheckSchema = Type.Object(
  {
    ok: Type.Boolean({ description: 'every asset balances and no balance is negative' }),
    assets: Type.Array(
      Type.Object({
        asset: Type.String(),
        balances: Type.String({ description: 'sum of all balances (available + reserved)' }),
        fees: Type.String({ description: 'fees collected' }),
        net_deposits: Type.String({ description: 'deposits − withdrawals' }),
        difference: Type.String({ description: 'balances + fees − net_deposits; 0 when ok' }),
        negative_balances: Type.Integer(),
        ok: Type.Boolean(),
      }),
    ),
  },
  { description: 'Always 200: `ok` says whether the books balance' },
);

export const EngineStateSchema = Type.Object(
  {
    state_hash: Type.String({
      description:
        'SHA-256 (hex) of the engine state a snapshot restores (catalogue, counters, totals, balances, every resting order in time priority): equal on a replica or a restore of the same committed state',
    }),
    references_hash: Type.String({
      description: 'SHA-256 (hex) of the deposit/withdrawal references kept beside the engine',
    }),
    ok: Type.Boolean({ description: 'every internal invariant holds' }),
    violation: Type.Union([Type.String(), Type.Null()], {
      description: 'the first broken invariant, or null',
    }),
  },
  { description: 'Always 200: `ok` says whether the engine state is internally consistent' },
);

export const HealthSchema = Type.Object(
  {
    status: StringEnum(['ready', 'store unavailable', 'shutting down'], { description: 'as /readyz' }),
    uptime_seconds: Type.Number(),
    commits: Type.Object({
      count: Type.Integer({ description: 'group commits since start' }),
      failures: Type.Integer(),
      mean_ms: Type.Union([Type.Number(), Type.Null()]),
      p50_ms: Type.Union([Type.Number(), Type.Null()]),
      p95_ms: Type.Union([Type.Number(), Type.Null()]),
      p99_ms: Type.Union([Type.Number(), Type.Null()]),
      buckets: Type.Array(
        Type.Object({
          le_ms: Type.Union([Type.Number(), Type.Null()], { description: 'upper bound; null = +Inf' }),
          count: Type.Integer({ description: 'cumulative' }),
        }),
        {
          description:
            'the commit-duration histogram (cumulative, as Prometheus): two polls give the latency of the interval between them',
        },
      ),
    }),
    websocket: Type.Object({
      connections: Type.Integer(),
      subscriptions: Type.Integer(),
      refused_per_ip: Type.Integer(),
      refused_upgrade_rate: Type.Integer(),
    }),
    events: Type.Integer({ description: 'engine events committed since start' }),
    memory: Type.Object({ rss_bytes: Type.Integer(), heap_used_bytes: Type.Integer() }),
  },
  {
    description:
      'Figures from the metrics registry (the same values GET /metrics exposes), as JSON. Quantiles are estimated from the histogram buckets since start, as Prometheus histogram_quantile does.',
  },
);

export type AdminHealth = Static<typeof HealthSchema>;

// ---- requests --------------------------------------------------------------------------------

export const CreateAssetBody = Type.Object({
  code: Type.String({ pattern: '^[A-Z0-9]{2,12}$', description: '2 to 12 upper-case letters or digits' }),
  name: Type.String({ minLength: 1, maxLength: 64 }),
  type: StringEnum(['crypto', 'fiat']),
  decimals: Type.Integer({
    minimum: 0,
    maximum: MAX_ASSET_DECIMALS,
    description: `at most ${MAX_ASSET_DECIMALS}: every amount is at most 2^53 − 1 of the smallest unit, and an asset must be able to hold 100,000 units`,
  }),
});

export const CreateMarketBody = Type.Object({
  base: Type.String({ description: 'an existing asset code' }),
  quote: Type.String({ description: 'an existing asset code' }),
  pair_decimals: Type.Integer({ minimum: 0, maximum: 12, description: 'price precision' }),
  lot_decimals: Type.Integer({
    minimum: 0,
    description: "volume precision; at most the base asset's decimals",
  }),
  ordermin: Decimal('minimum order volume (> 0), at most lot_decimals decimals'),
  maker_fee: Type.Optional(Decimal('fraction, at most 8 decimals; default 0.0016')),
  taker_fee: Type.Optional(Decimal('fraction, at most 8 decimals; default 0.0026')),
});

export const CreateUserBody = Type.Object({
  email: Type.Optional(Type.Union([Type.String({ description: 'unique' }), Type.Null()])),
});

export const CreateApiKeyBody = Type.Object({
  scopes: Type.Optional(
    Type.Array(StringEnum(['read', 'trade']), { minItems: 1, description: 'default ["read", "trade"]' }),
  ),
  ip_allowlist: Type.Optional(
    Type.Union([Type.Array(Type.String()), Type.Null()], {
      description: 'addresses or CIDR ranges; omitted or null = any address',
    }),
  ),
  nonce_required: Type.Optional(
    Type.Union([Type.Boolean(), Type.Null()], {
      description: 'require a strictly increasing nonce in every signed body (default false)',
    }),
  ),
});

export const LedgerEntryBody = Type.Object({
  asset: Type.String({ description: 'asset code' }),
  amount: Decimal("> 0, at most the asset's decimals"),
  reference: Type.Optional(
    Type.Union([Type.String({ minLength: 1, maxLength: 128 }), Type.Null()], {
      description:
        'idempotency: the same reference with the same asset and amount is a duplicate (200, nothing changed); with another asset or amount, 409 reference_conflict',
    }),
  ),
});

export const UserIdParam = Type.Object({ id: Type.String({ description: 'numeric user id' }) });
export const ApiKeyParam = Type.Object({ key: Type.String({ description: 'the public API key' }) });

// ---- checkpoints -----------------------------------------------------------------------------

const CheckpointName = (description: string) =>
  Type.String({
    pattern: CHECKPOINT_NAME.source,
    description: `${description}: 1 to 64 letters, digits, '.', '_' or '-', starting with a letter or digit`,
  });

export const CheckpointSchema = Type.Object({
  name: Type.String(),
  created_at: Time,
  bytes: Type.Integer({ description: 'size of the saved database image' }),
});

export const CheckpointSavedSchema = Type.Object(
  {
    ...CheckpointSchema.properties,
    replaced: Type.Boolean({ description: 'true: a checkpoint of this name existed and was replaced' }),
  },
  { description: 'Saved (a checkpoint of the same name is replaced)' },
);

export const CheckpointRestoredSchema = Type.Object(
  {
    restored: Type.String({ description: 'the checkpoint restored' }),
    ledger: Type.Object(LedgerCheckSchema.properties, {
      description: 'the ledger check of the restored state',
    }),
  },
  { description: 'Restored and reloaded; every WebSocket connection was closed with 4200' },
);

export const SaveCheckpointBody = Type.Object({
  name: CheckpointName(`the checkpoint's name (not ${INITIAL_CHECKPOINT}, kept for reset)`),
});

export const CheckpointParam = Type.Object({ name: CheckpointName('a checkpoint name') });
