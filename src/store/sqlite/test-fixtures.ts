/** Builders shared by the SQLite store tests: a temp directory per store, and plain domain rows. */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type {
  Amount,
  AssetCode,
  AssetSpec,
  FeeRate,
  MarketId,
  MarketSpec,
  Micros,
  OrderId,
  Price,
  TradeId,
  UserId,
  Volume,
} from '../../domain/types.js';
import type { AssetTotals, BalanceState, OrderState, Sequences, Trade } from '../../engine/types.js';
import type { Candle } from '../../market-data/candle.js';
import type { CommitBatch, LedgerEntry } from '../store.js';
import { SqliteStore, type SqliteStoreOptions } from './sqlite-store.js';

export interface TempStore {
  readonly store: SqliteStore;
  readonly dir: string;
  readonly path: string;
}

interface Cleanup {
  after(fn: () => void): void;
}

/** A store in a fresh temp directory, closed and removed when the test (context) ends. */
export function tempStore(t: Cleanup, options: Partial<SqliteStoreOptions> = {}): TempStore {
  const dir = mkdtempSync(join(tmpdir(), 'openspot-store-'));
  const path = join(dir, 'openspot.db');
  const store = SqliteStore.open({ ...options, path });
  t.after(() => {
    store.close();
    rmSync(dir, { recursive: true, force: true });
  });
  return { store, dir, path };
}

export const BTC = 'BTC' as AssetCode;
export const ETH = 'ETH' as AssetCode;
export const EUR = 'EUR' as AssetCode;
export const BTCEUR = 1 as MarketId;
export const ETHEUR = 2 as MarketId;
export const ALICE = 1 as UserId;
export const BOB = 2 as UserId;
export const CAROL = 3 as UserId;

export const ASSETS: readonly AssetSpec[] = [
  { code: BTC, name: 'Bitcoin', type: 'crypto', decimals: 8 },
  { code: EUR, name: 'Euro', type: 'fiat', decimals: 4 },
  { code: ETH, name: 'Ether', type: 'crypto', decimals: 10 },
];

export const MARKETS: readonly MarketSpec[] = [market(BTCEUR, BTC, EUR), market(ETHEUR, ETH, EUR)];

function market(id: MarketId, base: AssetCode, quote: AssetCode): MarketSpec {
  return {
    id,
    base,
    quote,
    pairDecimals: 1,
    lotDecimals: 8,
    ordermin: 10_000 as Volume,
    makerFee: 160_000 as FeeRate,
    takerFee: 260_000 as FeeRate,
  };
}

export const T0 = 1_700_000_000_000_000 as Micros;

export function order(id: number, fields: Partial<OrderState> = {}): OrderState {
  return {
    id: id as OrderId,
    userId: ALICE,
    marketId: BTCEUR,
    side: 'buy',
    type: 'limit',
    price: (500_000 + id) as Price,
    volume: 100_000_000 as Volume,
    executed: 0 as Volume,
    status: 'open',
    reason: null,
    openTime: (T0 + id) as Micros,
    closeTime: null,
    cost: 0 as Amount,
    fee: 0 as Amount,
    feeExcess: 0,
    reserved: 5_000_000 as Amount,
    ...fields,
  };
}

export function trade(id: number, fields: Partial<Trade> = {}): Trade {
  return {
    id: id as TradeId,
    marketId: BTCEUR,
    price: 500_000 as Price,
    volume: 1_000 as Volume,
    cost: 50 as Amount,
    takerOrderId: (1000 + id) as OrderId,
    makerOrderId: (2000 + id) as OrderId,
    takerUserId: ALICE,
    makerUserId: BOB,
    takerSide: 'buy',
    takerType: 'limit',
    takerFee: 1 as Amount,
    makerFee: 0 as Amount,
    time: (T0 + id * 1_000_000) as Micros,
    ...fields,
  };
}

export function balance(userId: UserId, asset: AssetCode, available: number, reserved = 0): BalanceState {
  return { userId, asset, available: available as Amount, reserved: reserved as Amount };
}

export function totals(asset: AssetCode, netDeposits: number, fees = 0): AssetTotals {
  return { asset, netDeposits: netDeposits as Amount, fees: fees as Amount };
}

export function ledger(fields: Partial<LedgerEntry> = {}): LedgerEntry {
  return {
    userId: ALICE,
    asset: EUR,
    kind: 'deposit',
    amount: 1_000_000 as Amount,
    reference: null,
    time: T0,
    ...fields,
  };
}

export function candle(start: number, fields: Partial<Candle> = {}): Candle {
  return {
    marketId: BTCEUR,
    interval: 1,
    start,
    open: 10 as Price,
    high: 12 as Price,
    low: 9 as Price,
    close: 11 as Price,
    volume: 3n,
    quoteVolume: 33n,
    notional: 32n,
    count: 2,
    ...fields,
  };
}

export interface BatchParts {
  readonly assets?: readonly AssetSpec[];
  readonly markets?: readonly MarketSpec[];
  readonly trades?: readonly Trade[];
  readonly orders?: readonly OrderState[];
  readonly balances?: readonly BalanceState[];
  readonly totals?: readonly AssetTotals[];
  readonly ledger?: readonly LedgerEntry[];
  readonly candles?: readonly Candle[];
  readonly sequences?: Sequences;
}

export function batch(parts: BatchParts): CommitBatch {
  return {
    events: [
      ...(parts.assets ?? []).map((asset) => ({ type: 'assetCreated' as const, asset })),
      ...(parts.markets ?? []).map((market) => ({ type: 'marketCreated' as const, market })),
      ...(parts.trades ?? []).map((trade) => ({ type: 'trade' as const, trade })),
    ],
    changes: {
      orders: parts.orders ?? [],
      balances: parts.balances ?? [],
      totals: parts.totals ?? [],
      levels: [],
      sequences: parts.sequences ?? { nextOrderId: 1, nextTradeId: 1, nextMarketId: 3 },
    },
    ledger: parts.ledger ?? [],
    candles: parts.candles ?? [],
  };
}

/** The catalogue every test starts from: three assets and two markets. */
export const CATALOGUE: BatchParts = { assets: ASSETS, markets: MARKETS };

/**
 * The orders behind `trades`, so the history holds no trade without its orders (as the engine
 * guarantees): each trade's taker and maker order, closed, owned by the trade's users.
 */
export function ordersOf(trades: readonly Trade[]): OrderState[] {
  return trades.flatMap((t) => [
    order(t.takerOrderId, {
      userId: t.takerUserId,
      marketId: t.marketId,
      side: t.takerSide,
      status: 'closed',
    }),
    order(t.makerOrderId, {
      userId: t.makerUserId,
      marketId: t.marketId,
      side: t.takerSide === 'buy' ? 'sell' : 'buy',
      status: 'closed',
    }),
  ]);
}
