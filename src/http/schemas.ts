/**
 * JSON schemas of the wire records (spot-trading-interface.md, "Resources and their fields").
 * They serve three purposes: the serializers' return types are derived from them (so code and
 * schema cannot drift), Fastify validates requests against them, and the OpenAPI document is
 * generated from them.
 */
import { type Static, type TSchema, Type } from '@fastify/type-provider-typebox';

/** A string enum as one `{type: string, enum}` (clearer in OpenAPI than a union of constants). */
export const StringEnum = <const T extends readonly string[]>(
  values: T,
  options: { description?: string } = {},
) => Type.Unsafe<T[number]>({ type: 'string', enum: [...values], ...options });

const Decimal = (description?: string) =>
  Type.String({ pattern: '^[0-9]+(\\.[0-9]+)?$', ...(description === undefined ? {} : { description }) });

export const MoneySchema = Type.Object(
  { amount: Decimal(), currency: Type.String() },
  {
    description:
      'Exact decimal amount and its currency (asset code; a slash pair for prices inside order trades)',
  },
);
export type Money = Static<typeof MoneySchema>;

export const MarketSchema = Type.Object({
  altname: Type.String({ description: 'joined pair name, e.g. BTCEUR' }),
  wsname: Type.String({ description: 'slash pair name, e.g. BTC/EUR' }),
  classBase: Type.String(),
  base: Type.String(),
  classQuote: Type.String(),
  quote: Type.String(),
  pairDecimals: Type.Integer(),
  lotDecimals: Type.Integer(),
  ordermin: Decimal('minimum order volume'),
});
export type MarketRecord = Static<typeof MarketSchema>;

export const TickerSchema = Type.Object({
  ticker_id: Type.String(),
  base_currency: Type.String(),
  target_currency: Type.String(),
  last_price: Decimal(),
  base_volume: Decimal('base volume traded since 00:00 UTC'),
  target_volume: Decimal('quote volume traded since 00:00 UTC'),
  bid: Decimal(),
  ask: Decimal(),
  high: Decimal('highest trade price since 00:00 UTC'),
  low: Decimal('lowest trade price since 00:00 UTC'),
});
export type TickerRecord = Static<typeof TickerSchema>;

export const CandleSchema = Type.Object({
  time: Type.Number({ description: 'interval start, Unix seconds' }),
  open: Decimal(),
  high: Decimal(),
  low: Decimal(),
  close: Decimal(),
  vwap: Decimal(),
  volume: Decimal(),
  count: Type.Integer(),
});
export type CandleRecord = Static<typeof CandleSchema>;

const Level = Type.Array(Type.String(), { minItems: 2, maxItems: 2, description: '[price, quantity]' });
export const OrderBookSchema = Type.Object({
  ticker_id: Type.String(),
  timestamp: Type.Integer({ description: 'Unix seconds' }),
  bids: Type.Array(Level),
  asks: Type.Array(Level),
});
export type OrderBookRecord = Static<typeof OrderBookSchema>;

export const PublicTradeSchema = Type.Object({
  trade_id: Type.Integer(),
  price: Decimal(),
  base_volume: Decimal(),
  target_volume: Decimal(),
  trade_timestamp: Type.String({ description: 'Unix seconds' }),
  type: StringEnum(['buy', 'sell'], { description: 'taker side' }),
});
export type PublicTradeRecord = Static<typeof PublicTradeSchema>;

export const WalletEntrySchema = Type.Object({
  asset_id: Type.String(),
  asset_name: Type.String(),
  type: StringEnum(['crypto', 'fiat']),
  balance: Type.Object({ balance_total: Decimal(), balance_total_in_fiat: Decimal() }),
  pending: Type.Object({
    has_pending: Type.Boolean(),
    balance_pending: Decimal(),
    balance_pending_in_fiat: Decimal(),
  }),
  balance_currency: Type.String(),
});
export type WalletEntryRecord = Static<typeof WalletEntrySchema>;

const Side = StringEnum(['buy', 'sell']);
const OrderTypeSchema = StringEnum(['limit', 'market']);
/** An order's type: the two plain ones and the five conditional ones (Kraken's names). */
const AnyOrderTypeSchema = StringEnum([
  'limit',
  'market',
  'stop-loss',
  'take-profit',
  'stop-loss-limit',
  'take-profit-limit',
  'trailing-stop',
]);
const NullableMoney = (description: string) => Type.Union([MoneySchema, Type.Null()], { description });
const Timestamp = Type.String({ description: 'UTC, YYYY-MM-DD HH:MM:SS' });

export const ExecutionSchema = Type.Object({
  id: Type.Integer(),
  timestamp: Timestamp,
  type: Side,
  volume: MoneySchema,
  price: MoneySchema,
  cost: MoneySchema,
  transaction_id: Type.String(),
});
export type ExecutionRecord = Static<typeof ExecutionSchema>;

export const OrderSchema = Type.Object({
  id: Type.Integer(),
  user_id: Type.Integer(),
  transaction_id: Type.String(),
  status: StringEnum(['open', 'closed', 'canceled']),
  open_time: Type.String({ description: 'Unix seconds with 4 decimals' }),
  close_time: Type.Union([Type.String(), Type.Null()]),
  expire_time: Type.String(),
  reason: Type.Union([Type.String(), Type.Null()]),
  pair: Type.String(),
  type: Side,
  order_type: AnyOrderTypeSchema,
  description: Type.Object({
    pair: Type.String(),
    type: Side,
    close: Type.String(),
    order: Type.String(),
    price: Type.String({
      description: 'the limit price as ordered (0 for market); the trigger price of a conditional order',
    }),
    leverage: Type.String(),
    orderType: AnyOrderTypeSchema,
    secondaryPrice: Type.Union([Type.String(), Type.Null()], {
      description: 'the limit price of stop-loss-limit and take-profit-limit (Kraken price2); null otherwise',
    }),
  }),
  volume: MoneySchema,
  volume_executed: MoneySchema,
  fee: Type.Union([MoneySchema, Type.Null()]),
  price: Type.Object(MoneySchema.properties, {
    description:
      "a limit order's limit price; a market order's average execution price (0 before any); a conditional " +
      "order's trigger price (a trailing stop's current one, which moves)",
  }),
  secondary_price: NullableMoney(
    'the limit price of stop-loss-limit and take-profit-limit (Kraken price2); null otherwise',
  ),
  limit_price: NullableMoney('the limit price of stop-loss-limit and take-profit-limit; null otherwise'),
  cost: Type.Union([MoneySchema, Type.Null()]),
  asset_pair: Type.Object({
    id: Type.Integer(),
    name: Type.String(),
    display_name: Type.String(),
    base_name: Type.String(),
    quote_name: Type.String(),
  }),
  trigger_conditions: Type.String({
    description:
      'what a conditional order waits for, in words (e.g. "last price <= 58000.0", "triggered: last price <= ' +
      '58000.0"); "none" for limit and market orders',
  }),
  trades: Type.Array(ExecutionSchema),
  client_order_id: Type.Union([Type.String(), Type.Null()], {
    description: "the client's own id of the order (1 to 36 of A-Z a-z 0-9 _ -), null when none",
  }),
  time_in_force: Type.Optional(
    StringEnum(['IOC', 'FOK', 'GTD'], {
      description: 'present only when not GTC (the default); a GTD order shows its expiry in expire_time',
    }),
  ),
  post_only: Type.Optional(
    Type.Literal(true, { description: 'present only on a post-only order (it may only add liquidity)' }),
  ),
  stp: Type.Optional(
    StringEnum(['cancel-newest', 'cancel-both', 'decrement'], {
      description: 'self-trade prevention mode, present only when not cancel-oldest (the default)',
    }),
  ),
});
export type OrderRecord = Static<typeof OrderSchema>;

export const UserTradeSchema = Type.Object({
  id: Type.Integer(),
  timestamp: Timestamp,
  type: Side,
  order_id: Type.Integer(),
  order_type: OrderTypeSchema,
  pair_id: Type.Integer(),
  pair: Type.String(),
  volume: MoneySchema,
  price: MoneySchema,
  cost: MoneySchema,
  fee: MoneySchema,
  transaction_id: Type.String(),
  leverage: Type.Null(),
});
export type UserTradeRecord = Static<typeof UserTradeSchema>;

export const MetaSchema = Type.Object({
  current_page: Type.Integer(),
  from: Type.Union([Type.Integer(), Type.Null()]),
  to: Type.Union([Type.Integer(), Type.Null()]),
  path: Type.String(),
  per_page: Type.Integer(),
  total: Type.Integer(),
  last_page: Type.Integer(),
});
export type Meta = Static<typeof MetaSchema>;

/** The private success envelope; `code` repeats the HTTP status. */
export const Envelope = <T extends TSchema>(data: T) =>
  Type.Object({ success: Type.Literal(true), message: Type.String(), data, code: Type.Integer() });
export const PagedEnvelope = <T extends TSchema>(item: T) =>
  Type.Object({
    success: Type.Literal(true),
    message: Type.String(),
    data: Type.Array(item),
    code: Type.Integer(),
    meta: Type.Optional(MetaSchema),
  });
export const BareEnvelope = Type.Object({
  success: Type.Literal(true),
  message: Type.String(),
  code: Type.Integer(),
});

// Error bodies, for the OpenAPI document.
export const ErrorASchema = Type.Object({
  success: Type.Literal(false),
  error: Type.Object({ message: Type.String(), code: Type.Integer() }),
});
export const ErrorBSchema = Type.Object({
  success: Type.Literal(false),
  error: Type.Object({
    message: Type.String(),
    validations: Type.Array(Type.String()),
    code: Type.Integer(),
  }),
});
export const ErrorCSchema = Type.Object({
  success: Type.Literal(false),
  message: Type.String(),
  error: Type.Object({ message: Type.String(), code: Type.Integer() }),
});
export const ErrorDSchema = Type.Object({
  message: Type.String(),
  errors: Type.Record(Type.String(), Type.Array(Type.String())),
});
export const ErrorESchema = Type.Object({ error: Type.String() });
