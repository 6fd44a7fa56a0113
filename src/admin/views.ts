/** The admin API's output records (snake_case JSON, decimals as strings). */
import { formatBigUnits, formatUnits } from '../domain/money.js';
import { type AssetSpec, FEE_RATE_DECIMALS, type MarketSpec } from '../domain/types.js';
import type { Engine } from '../engine/engine.js';
import type { BalanceState } from '../engine/types.js';
import type { ApiKeyRecord, LedgerEntry, UserRecord } from '../store/store.js';

export const assetView = (a: AssetSpec) => ({
  code: a.code,
  name: a.name,
  type: a.type,
  decimals: a.decimals,
});

export const marketView = (m: MarketSpec) => ({
  id: m.id,
  base: m.base,
  quote: m.quote,
  altname: `${m.base}${m.quote}`,
  wsname: `${m.base}/${m.quote}`,
  pair_decimals: m.pairDecimals,
  lot_decimals: m.lotDecimals,
  ordermin: formatUnits(m.ordermin, m.lotDecimals),
  maker_fee: formatUnits(m.makerFee, FEE_RATE_DECIMALS),
  taker_fee: formatUnits(m.takerFee, FEE_RATE_DECIMALS),
});

export const isoMicros = (micros: number): string => new Date(Math.floor(micros / 1000)).toISOString();

export const userView = (u: UserRecord) => ({ id: u.id, email: u.email, created_at: isoMicros(u.createdAt) });

export const apiKeyView = (k: ApiKeyRecord) => ({
  api_key: k.key,
  user_id: k.userId,
  scopes: k.scopes,
  ip_allowlist: k.ipAllowlist,
  nonce_required: k.nonceRequired,
  created_at: isoMicros(k.createdAt),
  revoked_at: k.revokedAt === null ? null : isoMicros(k.revokedAt),
});

/** A deposit or withdrawal as recorded (a reference conflict shows it). */
export const ledgerEntryView = (e: LedgerEntry, decimals: number) => ({
  kind: e.kind,
  asset: e.asset,
  amount: formatUnits(e.amount, decimals),
  reference: e.reference,
  time: isoMicros(e.time),
});

export const balanceView = (b: BalanceState, decimals: number) => ({
  asset: b.asset,
  available: formatUnits(b.available, decimals),
  reserved: formatUnits(b.reserved, decimals),
  total: formatUnits(b.available + b.reserved, decimals),
});

export const auditView = (rows: ReturnType<Engine['audit']>, decimalsOf: (code: string) => number) => {
  const assets = rows.map((r) => {
    const d = decimalsOf(r.asset);
    return {
      asset: r.asset,
      balances: formatBigUnits(r.held, d),
      fees: formatBigUnits(r.fees, d),
      net_deposits: formatBigUnits(r.netDeposits, d),
      difference: formatBigUnits(r.held + r.fees - r.netDeposits, d),
      negative_balances: r.negative,
      ok: r.ok,
    };
  });
  return { ok: assets.every((a) => a.ok), assets };
};
