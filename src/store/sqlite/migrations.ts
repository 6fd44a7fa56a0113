/**
 * The SQLite schema as an ordered list of migrations. The database's `PRAGMA user_version` is the
 * number of the last migration applied; opening a database applies the missing ones in a single
 * transaction, so a crash mid-upgrade leaves the previous schema intact.
 *
 * Tables are STRICT: every amount, price, volume and time column is INTEGER, and STRICT makes
 * SQLite refuse a fractional value instead of silently storing a REAL.
 *
 * Foreign keys are DEFERRABLE INITIALLY DEFERRED so a commit may write its rows in any order;
 * they are still checked before the transaction commits. Balances, orders and trades do not
 * reference `users`: the engine knows user ids only as numbers, and users may be provisioned
 * outside this database.
 */
import type Database from 'better-sqlite3';

export interface Migration {
  readonly version: number;
  readonly description: string;
  readonly sql: string;
  /**
   * Data rewriting that SQL cannot do exactly (BigInt arithmetic), run after `sql` in the same
   * transaction. Self-contained: it reads and writes the tables as they are at this version and
   * calls no application code, which may change after it is written.
   */
  readonly upgrade?: (db: Database.Database) => void;
}

/** A canonical non-negative decimal integer held as TEXT (no sign, no leading zero): a CHECK. */
const digits = (column: string) =>
  `${column} TEXT NOT NULL CHECK (length(${column}) BETWEEN 1 AND 60 AND ${column} NOT GLOB '*[^0-9]*'
     AND (${column} = '0' OR substr(${column}, 1, 1) <> '0'))`;

const DEFERRED = 'DEFERRABLE INITIALLY DEFERRED';

/**
 * `column` is one of `values`, as a CHECK: comparisons, not `IN (…)`. SQLite evaluates an IN list
 * of four or more constants by building a temporary index of them, anew for every row written: the
 * order table's IN checks cost 6 µs of an 11 µs insert (docs/performance.md, v12).
 */
const oneOf = (column: string, values: readonly string[]): string =>
  `(${values.map((v) => `${column} = ${v}`).join(' OR ')})`;

/** The orders table's columns at v8, which v9 copies into its rebuilt table. */
const V8_ORDER_COLUMNS =
  'id, user_id, market_id, side, type, price, volume, executed, status, reason, open_time, close_time, ' +
  'cost, fee, reserved, fee_excess, time_in_force, expire_time, post_only, client_order_id, stp, priority';

/** The orders table's columns from v9 on, which v12 copies into its rebuilt table. */
const V9_ORDER_COLUMNS = `${V8_ORDER_COLUMNS}, trigger_price, trailing_unit, trailing_amount, trailing_best, triggered`;

const TRADE_COLUMNS =
  'id, market_id, price, volume, cost, taker_order_id, maker_order_id, taker_user_id, maker_user_id, ' +
  'taker_side, taker_type, taker_fee, maker_fee, time';

export const MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    description: 'initial schema',
    sql: `
      CREATE TABLE assets (
        code TEXT PRIMARY KEY,
        name TEXT NOT NULL,
        type TEXT NOT NULL CHECK (type IN ('crypto', 'fiat')),
        decimals INTEGER NOT NULL CHECK (decimals >= 0)
      ) STRICT;

      CREATE TABLE markets (
        id INTEGER PRIMARY KEY,
        base TEXT NOT NULL REFERENCES assets (code) ${DEFERRED},
        quote TEXT NOT NULL REFERENCES assets (code) ${DEFERRED},
        pair_decimals INTEGER NOT NULL,
        lot_decimals INTEGER NOT NULL,
        ordermin INTEGER NOT NULL,
        maker_fee INTEGER NOT NULL,
        taker_fee INTEGER NOT NULL,
        UNIQUE (base, quote)
      ) STRICT;

      CREATE TABLE balances (
        user_id INTEGER NOT NULL,
        asset TEXT NOT NULL REFERENCES assets (code) ${DEFERRED},
        available INTEGER NOT NULL CHECK (available >= 0),
        reserved INTEGER NOT NULL CHECK (reserved >= 0),
        PRIMARY KEY (user_id, asset)
      ) STRICT, WITHOUT ROWID;

      CREATE TABLE asset_totals (
        asset TEXT PRIMARY KEY REFERENCES assets (code) ${DEFERRED},
        net_deposits INTEGER NOT NULL,
        fees INTEGER NOT NULL
      ) STRICT, WITHOUT ROWID;

      CREATE TABLE orders (
        id INTEGER PRIMARY KEY,
        user_id INTEGER NOT NULL,
        market_id INTEGER NOT NULL REFERENCES markets (id) ${DEFERRED},
        side TEXT NOT NULL CHECK (side IN ('buy', 'sell')),
        type TEXT NOT NULL CHECK (type IN ('limit', 'market')),
        price INTEGER NOT NULL,
        volume INTEGER NOT NULL,
        executed INTEGER NOT NULL,
        status TEXT NOT NULL CHECK (status IN ('open', 'closed', 'canceled')),
        reason TEXT,
        open_time INTEGER NOT NULL,
        close_time INTEGER,
        cost INTEGER NOT NULL,
        fee INTEGER NOT NULL,
        reserved INTEGER NOT NULL
      ) STRICT;
      CREATE INDEX orders_by_user_status ON orders (user_id, status, id DESC);
      CREATE INDEX orders_by_user_market_status ON orders (user_id, market_id, status, id DESC);
      -- Restoring the book reads only open orders; a partial index keeps that read small.
      CREATE INDEX orders_open ON orders (id) WHERE status = 'open';

      CREATE TABLE trades (
        id INTEGER PRIMARY KEY,
        market_id INTEGER NOT NULL REFERENCES markets (id) ${DEFERRED},
        price INTEGER NOT NULL,
        volume INTEGER NOT NULL,
        cost INTEGER NOT NULL,
        taker_order_id INTEGER NOT NULL,
        maker_order_id INTEGER NOT NULL,
        taker_user_id INTEGER NOT NULL,
        maker_user_id INTEGER NOT NULL,
        taker_side TEXT NOT NULL CHECK (taker_side IN ('buy', 'sell')),
        taker_type TEXT NOT NULL CHECK (taker_type IN ('limit', 'market')),
        taker_fee INTEGER NOT NULL,
        maker_fee INTEGER NOT NULL,
        time INTEGER NOT NULL
      ) STRICT;
      CREATE INDEX trades_by_market ON trades (market_id, id DESC);
      -- Public trades "since" a time: without it, such a query walks the market's whole history.
      CREATE INDEX trades_by_market_time ON trades (market_id, time);
      CREATE INDEX trades_by_taker_user ON trades (taker_user_id, id DESC);
      CREATE INDEX trades_by_maker_user ON trades (maker_user_id, id DESC);
      CREATE INDEX trades_by_taker_order ON trades (taker_order_id);
      CREATE INDEX trades_by_maker_order ON trades (maker_order_id);

      CREATE TABLE candles (
        market_id INTEGER NOT NULL REFERENCES markets (id) ${DEFERRED},
        interval INTEGER NOT NULL,
        start INTEGER NOT NULL,
        open INTEGER NOT NULL,
        high INTEGER NOT NULL,
        low INTEGER NOT NULL,
        close INTEGER NOT NULL,
        volume INTEGER NOT NULL,
        quote_volume INTEGER NOT NULL,
        count INTEGER NOT NULL,
        PRIMARY KEY (market_id, interval, start)
      ) STRICT, WITHOUT ROWID;

      CREATE TABLE ledger_entries (
        id INTEGER PRIMARY KEY,
        user_id INTEGER NOT NULL,
        asset TEXT NOT NULL REFERENCES assets (code) ${DEFERRED},
        kind TEXT NOT NULL CHECK (kind IN ('deposit', 'withdrawal')),
        amount INTEGER NOT NULL CHECK (amount > 0),
        reference TEXT,
        time INTEGER NOT NULL
      ) STRICT;
      -- The idempotency key: one entry per reference; entries without a reference are never deduplicated.
      CREATE UNIQUE INDEX ledger_entries_by_reference
        ON ledger_entries (user_id, asset, kind, reference) WHERE reference IS NOT NULL;

      -- AUTOINCREMENT: a deleted user's id must never be handed to someone else.
      CREATE TABLE users (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        email TEXT UNIQUE,
        created_at INTEGER NOT NULL
      ) STRICT;

      CREATE TABLE api_keys (
        key TEXT PRIMARY KEY,
        user_id INTEGER NOT NULL REFERENCES users (id),
        sealed_secret TEXT NOT NULL,
        scopes TEXT NOT NULL,
        created_at INTEGER NOT NULL,
        revoked_at INTEGER
      ) STRICT;
      CREATE INDEX api_keys_by_user ON api_keys (user_id);

      CREATE TABLE meta (
        key TEXT PRIMARY KEY,
        value INTEGER NOT NULL
      ) STRICT, WITHOUT ROWID;
    `,
  },
  {
    version: 2,
    description: 'API key IP allow-lists and nonces',
    // last_nonce is TEXT, not INTEGER: a nonce may have up to 20 digits (beyond SQLite's 64-bit
    // integers). Kept in canonical form (no leading zero), so comparing the lengths, then the
    // texts byte by byte, is the numeric comparison (see acceptNonce).
    sql: `
      ALTER TABLE api_keys ADD COLUMN ip_allowlist TEXT
        CHECK (ip_allowlist IS NULL OR length(ip_allowlist) > 0);
      ALTER TABLE api_keys ADD COLUMN nonce_required INTEGER NOT NULL DEFAULT 0
        CHECK (nonce_required IN (0, 1));
      ALTER TABLE api_keys ADD COLUMN last_nonce TEXT
        CHECK (last_nonce IS NULL OR (
          length(last_nonce) BETWEEN 1 AND 20
          AND last_nonce NOT GLOB '*[^0-9]*'
          AND (last_nonce = '0' OR substr(last_nonce, 1, 1) <> '0')
        ));
    `,
  },
  {
    version: 3,
    description:
      'order indexes keyed by (user, id): cancelling or filling an order no longer moves its index entries',
    // The v1 indexes began (user, status, ...): every change of status moved the order's entries
    // to another part of two indexes, dirtying pages far from the ones the batch's new orders
    // touch. Keyed by (user, id), with status and market as trailing columns, an entry stays
    // where it is, next to the user's newest orders; open orders have a partial index of their
    // own (lists, counts), and orders_open (by id) still serves the restore.
    sql: `
      DROP INDEX orders_by_user_status;
      DROP INDEX orders_by_user_market_status;
      CREATE INDEX orders_by_user ON orders (user_id, id DESC, status, market_id);
      CREATE INDEX orders_open_by_user ON orders (user_id, id DESC, market_id) WHERE status = 'open';
    `,
  },
  {
    version: 4,
    description: 'candle sums as exact decimal TEXT, and the sum of price × volume the VWAP is computed from',
    // A candle's volume and quote volume add up trades without bound: they can pass 2^53 (the
    // exact range of the code's numbers) and even 2^63 (SQLite's INTEGER), so they are TEXT
    // holding canonical decimal digits, read back as BigInt. `notional` is Σ price × volume in
    // ticks × lots (up to ~2^106 per trade): the VWAP is notional / volume, exact, so it always
    // lies between the candle's low and high (before, it came from the rounded-down costs).
    sql: `
      CREATE TABLE candles_v4 (
        market_id INTEGER NOT NULL REFERENCES markets (id) ${DEFERRED},
        interval INTEGER NOT NULL,
        start INTEGER NOT NULL,
        open INTEGER NOT NULL,
        high INTEGER NOT NULL,
        low INTEGER NOT NULL,
        close INTEGER NOT NULL,
        ${digits('volume')},
        ${digits('quote_volume')},
        ${digits('notional')},
        count INTEGER NOT NULL,
        PRIMARY KEY (market_id, interval, start)
      ) STRICT, WITHOUT ROWID;
      INSERT INTO candles_v4
        SELECT market_id, interval, start, open, high, low, close,
               CAST(volume AS TEXT), CAST(quote_volume AS TEXT), '0', count
        FROM candles;
      DROP TABLE candles;
      ALTER TABLE candles_v4 RENAME TO candles;
    `,
    upgrade: computeCandleNotionals,
  },
  {
    version: 5,
    description: 'orders keep fee_excess: how far their fees, rounded up, exceed the exact fee',
    // Fees round up per order over its fills (docs/money.md); the next fill's rounding needs what
    // was charged beyond the exact fee, in 10^-8 quote units. Orders written before kept fees
    // rounded down, so a buy resting from then reserved only floor(cost × rate) for its fee. Such
    // a buy gets the largest excess, 10^8 - 1: its further fills then pay, together,
    // floor(their exact fee) (ceil((x - 10^8 + 1) / 10^8) = floor(x / 10^8)), which its
    // reservation covers. Other orders start at 0 and pay rounded-up fees from now on.
    sql: `
      ALTER TABLE orders ADD COLUMN fee_excess INTEGER NOT NULL DEFAULT 0
        CHECK (fee_excess >= 0 AND fee_excess < 100000000);
      UPDATE orders SET fee_excess = 99999999 WHERE status = 'open' AND side = 'buy';
    `,
  },
  {
    version: 6,
    description: 'idempotency keys of created orders; ledger references looked up whatever their asset',
    // A reference names one operator action per user and kind, so a reuse with another asset is
    // found too (the v1 unique index begins with the asset; it stays, older data may hold the
    // same reference under two assets). idempotency_keys holds, per user and Idempotency-Key,
    // the fingerprint of the order request and the order it created; it is written in the
    // order's own commit and pruned by time (the index on time keeps each pruning step small).
    sql: `
      CREATE INDEX ledger_entries_by_user_reference
        ON ledger_entries (user_id, kind, reference, id) WHERE reference IS NOT NULL;

      CREATE TABLE idempotency_keys (
        user_id INTEGER NOT NULL,
        key TEXT NOT NULL CHECK (length(key) BETWEEN 1 AND 255),
        fingerprint TEXT NOT NULL CHECK (length(fingerprint) = 64),
        order_id INTEGER NOT NULL,
        time INTEGER NOT NULL,
        PRIMARY KEY (user_id, key)
      ) STRICT;
      CREATE INDEX idempotency_keys_by_time ON idempotency_keys (time);
    `,
  },
  {
    version: 7,
    description:
      'book sequences: the order-book update sequence of each market, written with the batch that advanced it',
    // One row per market whose book ever changed since this version (a market without a row is at
    // 0: what a database of an older version holds for every market, since its sequences lived
    // only in memory). No foreign key to markets: a checkpoint restore keeps these rows (they must
    // never go back, decision 77) while it replaces the markets, which may then lack a market a
    // row names; should that market id be created again, its sequence goes on from the row.
    sql: `
      CREATE TABLE book_sequences (
        market_id INTEGER PRIMARY KEY,
        sequence INTEGER NOT NULL CHECK (sequence >= 0)
      ) STRICT;
    `,
  },
  {
    version: 8,
    description:
      "order controls: time in force, expiry, post-only, client order id, self-trade mode; dead man's switches",
    // Every existing order gets the defaults, which are exactly what it was: good till canceled,
    // no expiry (0), may take liquidity, no client id, self-trade mode cancel-oldest. A client id
    // is found again by (user, id), newest order first. `cancel_all_after` holds one row per user
    // whose dead man's switch is armed (a disarmed or fired switch has no row), so a restart
    // re-arms exactly the committed ones. `priority` is an open order's place in time priority
    // once an amend sent it to the back of a level (a number from the order id sequence, so always
    // above its own id); NULL means its id, as for every order before.
    sql: `
      ALTER TABLE orders ADD COLUMN time_in_force TEXT NOT NULL DEFAULT 'GTC'
        CHECK (time_in_force IN ('GTC', 'IOC', 'FOK', 'GTD'));
      ALTER TABLE orders ADD COLUMN expire_time INTEGER NOT NULL DEFAULT 0 CHECK (expire_time >= 0);
      ALTER TABLE orders ADD COLUMN post_only INTEGER NOT NULL DEFAULT 0 CHECK (post_only IN (0, 1));
      ALTER TABLE orders ADD COLUMN client_order_id TEXT
        CHECK (client_order_id IS NULL OR length(client_order_id) BETWEEN 1 AND 36);
      ALTER TABLE orders ADD COLUMN stp TEXT NOT NULL DEFAULT 'cancel-oldest'
        CHECK (stp IN ('cancel-oldest', 'cancel-newest', 'cancel-both', 'decrement'));
      ALTER TABLE orders ADD COLUMN priority INTEGER CHECK (priority IS NULL OR priority > id);
      CREATE INDEX orders_by_user_client_id ON orders (user_id, client_order_id, id DESC)
        WHERE client_order_id IS NOT NULL;

      CREATE TABLE cancel_all_after (
        user_id INTEGER PRIMARY KEY,
        trigger_time INTEGER NOT NULL CHECK (trigger_time > 0)
      ) STRICT;
    `,
  },
  {
    version: 9,
    description:
      'conditional orders: the five new order types, trigger price, trailing offset and best price, triggered',
    // SQLite cannot change a CHECK constraint in place, and the v1 one allows only limit and
    // market: the table is rebuilt (its rows copied as they are, every index made again). No
    // other table references orders, so nothing else moves. Every existing order is a limit or
    // market order: the new columns are NULL (no trigger, no trailing offset) and triggered 0.
    // `trigger_price` is a conditional order's trigger in ticks (a trailing stop's current one,
    // NULL until its first best price); `trailing_unit`/`trailing_amount` its offset (ticks or
    // basis points); `trailing_best` its best price so far; `triggered` 1 once it fired.
    sql: `
      CREATE TABLE orders_v9 (
        id INTEGER PRIMARY KEY,
        user_id INTEGER NOT NULL,
        market_id INTEGER NOT NULL REFERENCES markets (id) ${DEFERRED},
        side TEXT NOT NULL CHECK (side IN ('buy', 'sell')),
        type TEXT NOT NULL CHECK (type IN ('limit', 'market', 'stop-loss', 'take-profit',
          'stop-loss-limit', 'take-profit-limit', 'trailing-stop')),
        price INTEGER NOT NULL,
        volume INTEGER NOT NULL,
        executed INTEGER NOT NULL,
        status TEXT NOT NULL CHECK (status IN ('open', 'closed', 'canceled')),
        reason TEXT,
        open_time INTEGER NOT NULL,
        close_time INTEGER,
        cost INTEGER NOT NULL,
        fee INTEGER NOT NULL,
        reserved INTEGER NOT NULL,
        fee_excess INTEGER NOT NULL DEFAULT 0 CHECK (fee_excess >= 0 AND fee_excess < 100000000),
        time_in_force TEXT NOT NULL DEFAULT 'GTC' CHECK (time_in_force IN ('GTC', 'IOC', 'FOK', 'GTD')),
        expire_time INTEGER NOT NULL DEFAULT 0 CHECK (expire_time >= 0),
        post_only INTEGER NOT NULL DEFAULT 0 CHECK (post_only IN (0, 1)),
        client_order_id TEXT CHECK (client_order_id IS NULL OR length(client_order_id) BETWEEN 1 AND 36),
        stp TEXT NOT NULL DEFAULT 'cancel-oldest'
          CHECK (stp IN ('cancel-oldest', 'cancel-newest', 'cancel-both', 'decrement')),
        priority INTEGER CHECK (priority IS NULL OR priority > id),
        trigger_price INTEGER CHECK (trigger_price IS NULL OR trigger_price > 0),
        trailing_unit TEXT CHECK (trailing_unit IS NULL OR trailing_unit IN ('ticks', 'bps')),
        trailing_amount INTEGER CHECK (trailing_amount IS NULL OR trailing_amount > 0),
        trailing_best INTEGER CHECK (trailing_best IS NULL OR trailing_best > 0),
        triggered INTEGER NOT NULL DEFAULT 0 CHECK (triggered IN (0, 1)),
        CHECK ((trailing_unit IS NULL) = (trailing_amount IS NULL))
      ) STRICT;
      INSERT INTO orders_v9 (${V8_ORDER_COLUMNS}) SELECT ${V8_ORDER_COLUMNS} FROM orders;
      DROP TABLE orders;
      ALTER TABLE orders_v9 RENAME TO orders;
      CREATE INDEX orders_open ON orders (id) WHERE status = 'open';
      CREATE INDEX orders_by_user ON orders (user_id, id DESC, status, market_id);
      CREATE INDEX orders_open_by_user ON orders (user_id, id DESC, market_id) WHERE status = 'open';
      CREATE INDEX orders_by_user_client_id ON orders (user_id, client_order_id, id DESC)
        WHERE client_order_id IS NOT NULL;
      `,
  },
  {
    version: 10,
    description: 'command receipts: the answers of commands sent under an id, for resends after a failover',
    // One row per command a gateway sent under its unique id and the engine applied, written in
    // that command's own commit with the answer the engine sent; deleted some time after
    // `expires` (ms since the epoch), after which a request of that id is dropped as late.
    sql: `
      CREATE TABLE command_receipts (
        id TEXT PRIMARY KEY CHECK (length(id) = 22),
        expires INTEGER NOT NULL,
        reply TEXT NOT NULL
      ) STRICT, WITHOUT ROWID;
      CREATE INDEX command_receipts_by_expiry ON command_receipts (expires);
    `,
  },
  {
    version: 11,
    description: 'commit journal: the number of the last journaled group commit written to the tables',
    // The server acknowledges a group commit once it is appended to the commit journal (a file
    // beside the database, commit-journal.ts) and writes several journaled commits to the tables at
    // once; this row says which have been, in the same transaction. Not venue state: a checkpoint
    // neither saves nor restores it (checkpoints.ts, STATE_TABLES).
    sql: `
      CREATE TABLE journal_state (
        id INTEGER PRIMARY KEY CHECK (id = 1),
        applied INTEGER NOT NULL CHECK (applied >= 0)
      ) STRICT;
      INSERT INTO journal_state (id, applied) VALUES (1, 0);
    `,
  },
  {
    version: 12,
    description:
      'orders and trades: the same CHECK constraints, written as comparisons (IN lists cost SQLite a temporary index per row)',
    // Rebuilt as v9 did (rows copied as they are, every index made again; no table references
    // either). Every constraint allows exactly what it did: only its form changes.
    sql: `
      CREATE TABLE orders_v12 (
        id INTEGER PRIMARY KEY,
        user_id INTEGER NOT NULL,
        market_id INTEGER NOT NULL REFERENCES markets (id) ${DEFERRED},
        side TEXT NOT NULL CHECK ${oneOf('side', ["'buy'", "'sell'"])},
        type TEXT NOT NULL CHECK ${oneOf('type', ["'limit'", "'market'", "'stop-loss'", "'take-profit'", "'stop-loss-limit'", "'take-profit-limit'", "'trailing-stop'"])},
        price INTEGER NOT NULL,
        volume INTEGER NOT NULL,
        executed INTEGER NOT NULL,
        status TEXT NOT NULL CHECK ${oneOf('status', ["'open'", "'closed'", "'canceled'"])},
        reason TEXT,
        open_time INTEGER NOT NULL,
        close_time INTEGER,
        cost INTEGER NOT NULL,
        fee INTEGER NOT NULL,
        reserved INTEGER NOT NULL,
        fee_excess INTEGER NOT NULL DEFAULT 0 CHECK (fee_excess >= 0 AND fee_excess < 100000000),
        time_in_force TEXT NOT NULL DEFAULT 'GTC' CHECK ${oneOf('time_in_force', ["'GTC'", "'IOC'", "'FOK'", "'GTD'"])},
        expire_time INTEGER NOT NULL DEFAULT 0 CHECK (expire_time >= 0),
        post_only INTEGER NOT NULL DEFAULT 0 CHECK ${oneOf('post_only', ['0', '1'])},
        client_order_id TEXT CHECK (client_order_id IS NULL OR length(client_order_id) BETWEEN 1 AND 36),
        stp TEXT NOT NULL DEFAULT 'cancel-oldest'
          CHECK ${oneOf('stp', ["'cancel-oldest'", "'cancel-newest'", "'cancel-both'", "'decrement'"])},
        priority INTEGER CHECK (priority IS NULL OR priority > id),
        trigger_price INTEGER CHECK (trigger_price IS NULL OR trigger_price > 0),
        trailing_unit TEXT CHECK (trailing_unit IS NULL OR ${oneOf('trailing_unit', ["'ticks'", "'bps'"])}),
        trailing_amount INTEGER CHECK (trailing_amount IS NULL OR trailing_amount > 0),
        trailing_best INTEGER CHECK (trailing_best IS NULL OR trailing_best > 0),
        triggered INTEGER NOT NULL DEFAULT 0 CHECK ${oneOf('triggered', ['0', '1'])},
        CHECK ((trailing_unit IS NULL) = (trailing_amount IS NULL))
      ) STRICT;
      INSERT INTO orders_v12 (${V9_ORDER_COLUMNS}) SELECT ${V9_ORDER_COLUMNS} FROM orders;
      DROP TABLE orders;
      ALTER TABLE orders_v12 RENAME TO orders;
      CREATE INDEX orders_open ON orders (id) WHERE status = 'open';
      CREATE INDEX orders_by_user ON orders (user_id, id DESC, status, market_id);
      CREATE INDEX orders_open_by_user ON orders (user_id, id DESC, market_id) WHERE status = 'open';
      CREATE INDEX orders_by_user_client_id ON orders (user_id, client_order_id, id DESC)
        WHERE client_order_id IS NOT NULL;

      CREATE TABLE trades_v12 (
        id INTEGER PRIMARY KEY,
        market_id INTEGER NOT NULL REFERENCES markets (id) ${DEFERRED},
        price INTEGER NOT NULL,
        volume INTEGER NOT NULL,
        cost INTEGER NOT NULL,
        taker_order_id INTEGER NOT NULL,
        maker_order_id INTEGER NOT NULL,
        taker_user_id INTEGER NOT NULL,
        maker_user_id INTEGER NOT NULL,
        taker_side TEXT NOT NULL CHECK ${oneOf('taker_side', ["'buy'", "'sell'"])},
        taker_type TEXT NOT NULL CHECK ${oneOf('taker_type', ["'limit'", "'market'"])},
        taker_fee INTEGER NOT NULL,
        maker_fee INTEGER NOT NULL,
        time INTEGER NOT NULL
      ) STRICT;
      INSERT INTO trades_v12 (${TRADE_COLUMNS}) SELECT ${TRADE_COLUMNS} FROM trades;
      DROP TABLE trades;
      ALTER TABLE trades_v12 RENAME TO trades;
      CREATE INDEX trades_by_market ON trades (market_id, id DESC);
      CREATE INDEX trades_by_market_time ON trades (market_id, time);
      CREATE INDEX trades_by_taker_user ON trades (taker_user_id, id DESC);
      CREATE INDEX trades_by_maker_user ON trades (maker_user_id, id DESC);
      CREATE INDEX trades_by_taker_order ON trades (taker_order_id);
      CREATE INDEX trades_by_maker_order ON trades (maker_order_id);
    `,
  },
];

/**
 * v4: the notional (Σ price × volume) of every existing candle, replayed exactly from the trades
 * as the aggregator built the candle: trades in id order; a trade opens a new candle when its
 * interval start is after the current one's, otherwise it joins the current one (a clock stepped
 * back). A candle whose trades are not all there (its replayed volume differs) gets close × volume:
 * its VWAP then shows the close, which at least lies within its low and high.
 */
function computeCandleNotionals(db: Database.Database): void {
  const intervals = [1, 5, 15, 30, 60, 240, 1440, 10080, 21600];
  const updates: Array<[string, number, number, number, string]> = [];
  const markets = db.prepare<[], number>('SELECT DISTINCT market_id FROM candles').pluck().all();
  const trades = db.prepare<[number], { price: number; volume: number; time: number }>(
    'SELECT price, volume, time FROM trades WHERE market_id = ? ORDER BY id',
  );
  for (const market of markets) {
    const current = new Map<number, { start: number; volume: bigint; notional: bigint }>();
    const close = (interval: number) => {
      const c = current.get(interval);
      if (c !== undefined)
        updates.push([c.notional.toString(), market, interval, c.start, c.volume.toString()]);
    };
    for (const t of trades.iterate(market)) {
      const seconds = Math.floor(t.time / 1_000_000);
      for (const interval of intervals) {
        const length = interval * 60;
        const start = Math.floor(seconds / length) * length;
        const c = current.get(interval);
        if (c === undefined || start > c.start) {
          close(interval);
          current.set(interval, {
            start,
            volume: BigInt(t.volume),
            notional: BigInt(t.price) * BigInt(t.volume),
          });
        } else {
          c.volume += BigInt(t.volume);
          c.notional += BigInt(t.price) * BigInt(t.volume);
        }
      }
    }
    for (const interval of intervals) close(interval);
  }
  const update = db.prepare<[string, number, number, number, string]>(
    'UPDATE candles SET notional = ? WHERE market_id = ? AND interval = ? AND start = ? AND volume = ?',
  );
  for (const row of updates) update.run(...row);
  const missing = db
    .prepare<[], { market_id: number; interval: number; start: number; close: number; volume: string }>(
      "SELECT market_id, interval, start, close, volume FROM candles WHERE notional = '0' AND volume <> '0'",
    )
    .all();
  const fallback = db.prepare<[string, number, number, number]>(
    'UPDATE candles SET notional = ? WHERE market_id = ? AND interval = ? AND start = ?',
  );
  for (const c of missing)
    fallback.run((BigInt(c.close) * BigInt(c.volume)).toString(), c.market_id, c.interval, c.start);
}

export const SCHEMA_VERSION: number = MIGRATIONS[MIGRATIONS.length - 1]?.version ?? 0;

export function schemaVersion(db: Database.Database): number {
  return db.pragma('user_version', { simple: true }) as number;
}

/**
 * Brings the schema up to SCHEMA_VERSION. Returns the versions applied (empty when up to date).
 * Refuses a database written by a newer release: running old code on it could corrupt it.
 */
export function migrate(db: Database.Database, migrations: readonly Migration[] = MIGRATIONS): number[] {
  assertOrdered(migrations);
  const target = migrations[migrations.length - 1]?.version ?? 0;
  const apply = db.transaction((): number[] => {
    // Read inside the transaction so two processes opening the same file cannot both migrate.
    const current = schemaVersion(db);
    if (current > target)
      throw new Error(`database schema version ${current} is newer than this release supports (${target})`);
    const pending = migrations.filter((m) => m.version > current);
    for (const migration of pending) {
      db.exec(migration.sql);
      migration.upgrade?.(db);
      // user_version lives in the database header and is rolled back with the transaction.
      db.pragma(`user_version = ${migration.version}`);
    }
    return pending.map((m) => m.version);
  });
  return apply.immediate();
}

function assertOrdered(migrations: readonly Migration[]): void {
  migrations.forEach((m, i) => {
    if (!Number.isSafeInteger(m.version) || m.version !== i + 1)
      throw new Error(`migration ${i} has version ${m.version}; versions must be 1, 2, 3, ...`);
  });
}
