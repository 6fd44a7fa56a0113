/**
 * The reads and the credential writes of the PostgreSQL store, over a connection pool, shared by
 * the engine's store (postgres-store.ts, which adds the writer lock and the commit log) and by the
 * gateways' reader (reader.ts, which adds nothing that writes engine state).
 *
 * Everything here is safe to run from any number of processes at once: history reads see
 * committed rows only, and the credential writes (users, API keys, nonces) are single SQL
 * statements whose atomicity PostgreSQL provides, not an in-memory lock of one process (a nonce is
 * one conditional UPDATE: two processes racing with the same nonce are serialized by its row lock).
 */
import type pg from 'pg';
import type { MarketId, Micros, OrderId, OrderStatus, TradeId, UserId } from '../../domain/types.js';
import type { BalanceState, OrderState, Trade } from '../../engine/types.js';
import type { Candle, Interval } from '../../market-data/candle.js';
import { ApiKeyCache } from '../api-key-cache.js';
import type { BalanceQueries, CredentialStore, HistoryQueries } from '../ports.js';
import {
  type ApiKeyRow,
  apiKeyFromRow,
  type BalanceRow,
  balanceFromRow,
  type CandleRow,
  candleFromRow,
  encodeIpAllowlist,
  encodeScopes,
  type LedgerRow,
  ledgerFromRow,
  ORDER_COLUMNS,
  type OrderRow,
  orderFromRow,
  TRADE_COLUMNS,
  type TradeRow,
  tradeFromRow,
  type UserRow,
  userFromRow,
  userTradeFromRow,
} from '../sqlite/rows.js';
import {
  type ApiKeyRecord,
  CANONICAL_NONCE,
  type LedgerEntry,
  type LedgerKind,
  type NewApiKeyRecord,
  type OrderFilter,
  type Page,
  type PublicTradeFilter,
  StoreUnavailableError,
  type TradeFilter,
  type UserRecord,
  type UserTrade,
} from '../store.js';
import { guarded } from './connection.js';

const OPEN_STATUSES: readonly OrderStatus[] = ['open'];
const DONE_STATUSES: readonly OrderStatus[] = ['closed', 'canceled'];

const API_KEY_SELECT =
  'key, user_id, sealed_secret, scopes, created_at, revoked_at, ip_allowlist, nonce_required::int AS nonce_required';
const CANDLE_SELECT =
  'market_id, interval, start, open, high, low, close, volume, quote_volume, notional, count';
export const LEDGER_SELECT = 'user_id, asset, kind, amount, reference, time';

export class PostgresQueries implements HistoryQueries, CredentialStore, BalanceQueries {
  protected readonly pool: pg.Pool;
  protected closed = false;
  /**
   * API key records by key. How long one is trusted is the subclass's choice: the engine's store
   * keeps them until a write through it (revocations go through it), a gateway's reader for a
   * short time (a key revoked through another process must stop working within a second).
   */
  readonly #apiKeys: ApiKeyCache;

  protected constructor(pool: pg.Pool, apiKeyCacheMs: number, now: () => number = () => performance.now()) {
    this.pool = pool;
    this.#apiKeys = new ApiKeyCache(apiKeyCacheMs, now);
  }

  async balancesOf(userId: UserId): Promise<BalanceState[]> {
    const rows = await this.rows<BalanceRow>(
      'SELECT user_id, asset, available, reserved FROM balances WHERE user_id = $1 ORDER BY asset COLLATE "C"',
      [userId],
    );
    return rows.map(balanceFromRow);
  }

  // ------------------------------------------------------------ history

  async getOrder(id: OrderId): Promise<OrderState | undefined> {
    const [row] = await this.rows<OrderRow>(`SELECT ${ORDER_COLUMNS} FROM orders WHERE id = $1`, [id]);
    return row && orderFromRow(row);
  }

  async findOrderByClientId(userId: UserId, clientOrderId: string): Promise<OrderState | undefined> {
    const [row] = await this.rows<OrderRow>(
      `SELECT ${ORDER_COLUMNS} FROM orders WHERE user_id = $1 AND client_order_id = $2 ORDER BY id DESC LIMIT 1`,
      [userId, clientOrderId],
    );
    return row && orderFromRow(row);
  }

  async listOrders(filter: OrderFilter, page?: Page): Promise<OrderState[]> {
    const { limit, offset } = checkPage(page);
    const [where, params] = orderConditions(filter);
    const rows = await this.rows<OrderRow>(
      `SELECT ${ORDER_COLUMNS} FROM orders WHERE ${where} ORDER BY id DESC LIMIT $${params.length + 1} OFFSET $${params.length + 2}`,
      [...params, limit, offset],
    );
    return rows.map(orderFromRow);
  }

  async countOrders(filter: OrderFilter): Promise<number> {
    const [where, params] = orderConditions(filter);
    const [row] = await this.rows<{ n: number }>(`SELECT count(*) AS n FROM orders WHERE ${where}`, params);
    return row?.n ?? 0;
  }

  async tradesOfOrders(ids: readonly OrderId[]): Promise<Map<OrderId, Trade[]>> {
    const result = new Map<OrderId, Trade[]>(ids.map((id) => [id, []]));
    if (result.size === 0) return result;
    const rows = await this.rows<TradeRow>(
      `SELECT ${TRADE_COLUMNS} FROM trades WHERE taker_order_id = ANY($1::bigint[]) OR maker_order_id = ANY($1::bigint[])
       ORDER BY id`,
      [[...result.keys()]],
    );
    for (const row of rows) {
      const trade = tradeFromRow(row);
      result.get(trade.takerOrderId)?.push(trade);
      result.get(trade.makerOrderId)?.push(trade);
    }
    return result;
  }

  async getUserTrade(userId: UserId, id: TradeId): Promise<UserTrade | undefined> {
    const [row] = await this.rows<TradeRow>(
      `SELECT ${TRADE_COLUMNS} FROM trades WHERE id = $1 AND (taker_user_id = $2 OR maker_user_id = $2)`,
      [id, userId],
    );
    return row && userTradeFromRow(row, userId);
  }

  async listUserTrades(filter: TradeFilter, page?: Page): Promise<UserTrade[]> {
    const { limit, offset } = checkPage(page);
    const [market, params] = userTradeConditions(filter);
    const n = params.length;
    // Each arm stops at limit + offset rows (its index walk, newest first); the union is then cut.
    const arm = (role: 'taker' | 'maker') =>
      `(SELECT ${TRADE_COLUMNS} FROM trades WHERE ${role}_user_id = $1${market}
        ORDER BY id DESC LIMIT $${n + 1}::bigint + $${n + 2}::bigint)`;
    const rows = await this.rows<TradeRow>(
      `${arm('taker')} UNION ALL ${arm('maker')} ORDER BY id DESC LIMIT $${n + 1} OFFSET $${n + 2}`,
      [...params, limit, offset],
    );
    return rows.map((row) => userTradeFromRow(row, filter.userId));
  }

  async countUserTrades(filter: TradeFilter): Promise<number> {
    const [market, params] = userTradeConditions(filter);
    const count = (role: 'taker' | 'maker') =>
      `(SELECT count(*) FROM trades WHERE ${role}_user_id = $1${market})`;
    const [row] = await this.rows<{ n: number }>(`SELECT ${count('taker')} + ${count('maker')} AS n`, params);
    return row?.n ?? 0;
  }

  async listPublicTrades(filter: PublicTradeFilter): Promise<Trade[]> {
    const limit = filter.limit === undefined ? null : checkCount(filter.limit, 'limit');
    const since = filter.since === undefined ? '' : ' AND time >= $4';
    const params: unknown[] = [filter.marketId, filter.takerSide ?? null, limit];
    if (filter.since !== undefined) params.push(filter.since);
    const rows = await this.rows<TradeRow>(
      `SELECT ${TRADE_COLUMNS} FROM trades WHERE market_id = $1${since} AND ($2::text IS NULL OR taker_side = $2)
       ORDER BY id DESC LIMIT $3`,
      params,
    );
    return rows.map(tradeFromRow);
  }

  async listCandles(marketId: MarketId, interval: Interval, since: number, limit: number): Promise<Candle[]> {
    const rows = await this.rows<CandleRow>(
      `SELECT ${CANDLE_SELECT} FROM (
         SELECT ${CANDLE_SELECT} FROM candles WHERE market_id = $1 AND interval = $2 AND start > $3
         ORDER BY start DESC LIMIT $4
       ) recent ORDER BY start`,
      [marketId, interval, since, checkCount(limit, 'limit')],
    );
    return rows.map(candleFromRow);
  }

  async latestCandles(marketId: MarketId): Promise<Candle[]> {
    const rows = await this.rows<CandleRow>(
      `SELECT DISTINCT ON (interval) ${CANDLE_SELECT} FROM candles WHERE market_id = $1 ORDER BY interval, start DESC`,
      [marketId],
    );
    return rows.map(candleFromRow);
  }

  async findLedgerEntry(
    userId: UserId,
    kind: LedgerKind,
    reference: string,
  ): Promise<LedgerEntry | undefined> {
    if (hasNul(reference)) return undefined;
    const [row] = await this.rows<LedgerRow>(
      `SELECT ${LEDGER_SELECT} FROM ledger_entries WHERE user_id = $1 AND kind = $2 AND reference = $3
       ORDER BY id LIMIT 1`,
      [userId, kind, reference],
    );
    return row && ledgerFromRow(row);
  }

  // ------------------------------------------------------------ credentials

  async createUser(email: string | null, time: Micros): Promise<UserRecord> {
    const [row] = await this.rows<UserRow>(
      'INSERT INTO users (email, created_at) VALUES ($1, $2) RETURNING id, email, created_at',
      [email, time],
    );
    if (row === undefined) throw new Error('INSERT ... RETURNING returned no row');
    return userFromRow(row);
  }

  async getUser(id: UserId): Promise<UserRecord | undefined> {
    const [row] = await this.rows<UserRow>('SELECT id, email, created_at FROM users WHERE id = $1', [id]);
    return row && userFromRow(row);
  }

  async listUsers(): Promise<UserRecord[]> {
    return (await this.rows<UserRow>('SELECT id, email, created_at FROM users ORDER BY id')).map(userFromRow);
  }

  async createApiKey(record: NewApiKeyRecord): Promise<void> {
    this.#apiKeys.forget(record.key);
    const scopes = encodeScopes(record.scopes);
    const ipAllowlist = encodeIpAllowlist(record.ipAllowlist);
    await this.rows(
      `INSERT INTO api_keys (key, user_id, sealed_secret, scopes, created_at, revoked_at, ip_allowlist, nonce_required)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
      [
        record.key,
        record.userId,
        record.sealedSecret,
        scopes,
        record.createdAt,
        record.revokedAt,
        ipAllowlist,
        record.nonceRequired === true,
      ],
    );
  }

  cachedApiKey(key: string): ApiKeyRecord | undefined {
    return this.#apiKeys.get(key);
  }

  async getApiKey(key: string): Promise<ApiKeyRecord | undefined> {
    if (hasNul(key)) return undefined;
    const cached = this.#apiKeys.get(key);
    if (cached !== undefined) return cached;
    const [row] = await this.rows<ApiKeyRow>(`SELECT ${API_KEY_SELECT} FROM api_keys WHERE key = $1`, [key]);
    return row && this.#apiKeys.remember(apiKeyFromRow(row));
  }

  async listApiKeys(userId: UserId): Promise<ApiKeyRecord[]> {
    const rows = await this.rows<ApiKeyRow>(
      `SELECT ${API_KEY_SELECT} FROM api_keys WHERE user_id = $1 ORDER BY created_at, position`,
      [userId],
    );
    return rows.map(apiKeyFromRow);
  }

  async revokeApiKey(key: string, time: Micros): Promise<boolean> {
    if (hasNul(key)) return false;
    this.#apiKeys.forget(key);
    const result = await guarded(() =>
      this.pool.query('UPDATE api_keys SET revoked_at = $1 WHERE key = $2 AND revoked_at IS NULL', [
        time,
        key,
      ]),
    );
    // Dropped again: a read racing the update may have cached the record as it was before.
    this.#apiKeys.forget(key);
    return (result.rowCount ?? 0) > 0;
  }

  async acceptNonce(key: string, nonce: string): Promise<boolean> {
    if (typeof nonce !== 'string' || !CANONICAL_NONCE.test(nonce))
      throw new RangeError(`invalid nonce: ${JSON.stringify(nonce)}`);
    if (hasNul(key)) return false;
    // One conditional UPDATE, committed (synchronous_commit) before it returns: a row lock makes
    // two requests with the same nonce serialize, and the second finds last_nonce already equal.
    const result = await guarded(() =>
      this.pool.query(
        `UPDATE api_keys SET last_nonce = $2::numeric
         WHERE key = $1 AND revoked_at IS NULL AND (last_nonce IS NULL OR last_nonce < $2::numeric)`,
        [key, nonce],
      ),
    );
    return (result.rowCount ?? 0) > 0;
  }

  protected async rows<R extends pg.QueryResultRow>(text: string, values?: unknown[]): Promise<R[]> {
    if (this.closed) throw new StoreUnavailableError('store unavailable: the store is closed');
    const result = await guarded(() => this.pool.query<R>(text, values));
    return result.rows;
  }

  /** Several reads from one snapshot of the database. */
  protected async readTransaction<T>(read: (client: pg.PoolClient) => Promise<T>): Promise<T> {
    if (this.closed) throw new StoreUnavailableError('store unavailable: the store is closed');
    return guarded(async () => {
      const client = await this.pool.connect();
      let broken = false;
      try {
        await client.query('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY');
        const value = await read(client);
        await client.query('COMMIT');
        return value;
      } catch (error) {
        broken = true;
        throw error;
      } finally {
        // A connection that failed mid-transaction is not handed out again.
        client.release(broken);
      }
    });
  }
}

/**
 * PostgreSQL text cannot hold a NUL character (SQLite's can): no stored key or reference has one,
 * so a lookup by such a string finds nothing, as it would on SQLite, instead of failing.
 */
export const hasNul = (text: string): boolean => text.includes('\u0000');

function orderConditions(filter: OrderFilter): [string, unknown[]] {
  const params: unknown[] = [filter.userId];
  const status = filter.status === 'open' ? OPEN_STATUSES : DONE_STATUSES;
  let where = `user_id = $1 AND status ${status.length === 1 ? `= '${status[0]}'` : `IN (${status.map((s) => `'${s}'`).join(', ')})`}`;
  if (filter.marketId !== undefined) {
    params.push(filter.marketId);
    where += ` AND market_id = $${params.length}`;
  }
  return [where, params];
}

/** An empty market list matches nothing; undefined means no filter. */
function userTradeConditions(filter: TradeFilter): [string, unknown[]] {
  if (filter.marketIds === undefined) return ['', [filter.userId]];
  return [' AND market_id = ANY($2::bigint[])', [filter.userId, [...filter.marketIds]]];
}

function checkCount(value: number, name: string): number {
  if (!Number.isSafeInteger(value) || value < 0) throw new RangeError(`invalid ${name}: ${value}`);
  return value;
}

/** LIMIT NULL is no limit in PostgreSQL. */
function checkPage(page: Page | undefined): { limit: number | null; offset: number } {
  if (page === undefined) return { limit: null, offset: 0 };
  return { limit: checkCount(page.limit, 'page limit'), offset: checkCount(page.offset, 'page offset') };
}
