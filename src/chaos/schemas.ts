/**
 * The OpenAPI entries of `/admin/v1/chaos` (docs/chaos.md): the fault sets as the handlers accept
 * and answer them. Like every admin schema they document and are not enforced (interface decision
 * H90): parseFaultSet checks the input by hand and answers one 422 naming the first wrong field.
 * The bounds come from the validation's own constants, so the two cannot drift apart.
 */
import { type TSchema, Type } from '@fastify/type-provider-typebox';
import { adminError, responses } from '../admin/schemas.js';
import { COUNT, DEFAULT_HOLD_MS, MAX_ROUTES, MILLIS, RATE, RETRY_AFTER, ROUTE } from './faults.js';

/**
 * A fault set's kinds. `input`: as a PUT or POST body takes them (fields with a default may be
 * left out, an unknown field is refused, `null` removes the kind); otherwise as an answer shows
 * them (defaults filled in).
 */
function faultSet(input: boolean): TSchema {
  const defaulted = <T extends TSchema>(schema: T) => (input ? Type.Optional(schema) : schema);
  const ms = (description: string) =>
    Type.Integer({ minimum: MILLIS.min, maximum: MILLIS.max, description: `milliseconds; ${description}` });
  const rate = (description: string) => Type.Number({ minimum: RATE.min, maximum: RATE.max, description });
  const common = {
    count: Type.Optional(
      Type.Integer({
        minimum: COUNT.min,
        maximum: COUNT.max,
        description: 'applies this many times, then removes itself (what is left, in an answer)',
      }),
    ),
  };
  const routed = {
    routes: Type.Optional(
      Type.Array(Type.String({ pattern: ROUTE.source }), {
        minItems: 1,
        maxItems: MAX_ROUTES,
        description:
          'only these routes, as the API declares them ("POST /v1/orders", "DELETE /v1/orders/:order_id"); absent: every /v1 route',
      }),
    ),
  };
  const kind = (properties: Record<string, TSchema>, description: string) => {
    const fault = Type.Object(
      { ...properties, ...common },
      input ? { additionalProperties: false, description } : { description },
    );
    return Type.Optional(input ? Type.Union([fault, Type.Null()], { description }) : fault);
  };
  const properties = {
    latency: kind(
      {
        ms: ms('added to every matched /v1 request'),
        jitter_ms: defaulted(ms('plus uniform 0…jitter_ms; default 0')),
        ...routed,
      },
      'REST requests wait before being handled',
    ),
    errors: kind(
      {
        rate: rate('share of requests refused'),
        status: defaulted(Type.Union([Type.Literal(503), Type.Literal(429)], { description: 'default 503' })),
        retry_after: defaulted(
          Type.Integer({
            minimum: RETRY_AFTER.min,
            maximum: RETRY_AFTER.max,
            description: 'seconds, sent as Retry-After; default 1',
          }),
        ),
        ...routed,
      },
      'A share of REST requests is refused before being handled',
    ),
    timeouts: kind(
      {
        rate: rate('share of accepted order placements and cancellations'),
        hold_ms: defaulted(ms(`connection held, then destroyed; default ${DEFAULT_HOLD_MS}`)),
      },
      'Committed, and the answer never sent',
    ),
    ws_delay: kind(
      {
        ms: ms('added to every WebSocket frame'),
        jitter_ms: defaulted(ms('plus uniform 0…jitter_ms; default 0')),
      },
      'WebSocket frames wait (order kept)',
    ),
    book_updates: kind(
      {
        drop: defaulted(rate('share dropped; default 0')),
        duplicate: defaulted(rate('share sent twice; default 0')),
        reorder: defaulted(rate('share held back behind the next one; default 0')),
      },
      'Shares of order-book updates dropped, duplicated or reordered (adding up to at most 1)',
    ),
    disconnects: kind(
      {
        rate: rate('probability, each second, that a connection is closed'),
        code: defaulted(
          Type.Union([Type.Literal(4200), Type.Literal(4201)], { description: 'default 4200' }),
        ),
      },
      'WebSocket connections are closed',
    ),
  };
  return input
    ? Type.Object(properties, { additionalProperties: false })
    : Type.Object(properties, { description: 'At most one fault of each kind' });
}

export const FaultSetSchema = faultSet(false);

export const ChaosStateSchema = Type.Object(
  {
    allowed: Type.Boolean({
      description: 'false: the configuration refuses faults (production without CHAOS=on)',
    }),
    everyone: FaultSetSchema,
    keys: Type.Record(Type.String(), FaultSetSchema, { description: 'each API key’s own faults' }),
  },
  { description: 'The faults in force after the call' },
);

export const ChaosBody = Type.Object(
  {
    api_key: Type.Optional(
      Type.String({ description: 'an existing API key (revoked or not); absent: everyone' }),
    ),
    faults: Type.Optional(
      Type.Union([faultSet(true), Type.Null()], { description: 'absent or null: no fault' }),
    ),
  },
  { additionalProperties: false },
);

export const ChaosQuery = Type.Object({
  api_key: Type.Optional(Type.String({ description: "clear this key's faults only; absent: every fault" })),
});

const DISABLED = {
  403: adminError('chaos_disabled: fault injection is off (NODE_ENV=production without CHAOS=on)'),
};

export const chaosResponses = {
  read: responses({ 200: ChaosStateSchema }),
  write: responses({ 200: ChaosStateSchema, ...DISABLED }, { body: true }),
};
