/**
 * Checkpoints of the SQLite store: whole copies of the database, saved and restored while the
 * server runs.
 *
 * - On disk (`dir` given): `dir/NAME.db`, written by `VACUUM INTO` (one read transaction, so the
 *   copy is exactly a committed state, compacted) into a 0600 temporary file renamed into place:
 *   a crash never leaves half a checkpoint under its name. Each is a complete SQLite database of
 *   the same schema (it can seed a new DATA_DIR as a backup would).
 * - In memory (no `dir`: the in-memory test venue): `serialize()` images kept in a Map, so nothing
 *   is ever written to disk; they die with the process.
 *
 * A restore opens the checkpoint as a second connection and copies its state tables into the live
 * database inside one IMMEDIATE transaction: all of it or, on any failure, none. Users and API
 * keys are not state: they stay as they are, so every key keeps working after a restore.
 */
import {
  closeSync,
  mkdirSync,
  openSync,
  readdirSync,
  renameSync,
  rmSync,
  statSync,
  unlinkSync,
  utimesSync,
} from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import type { Micros } from '../../domain/types.js';
import { narrowToOwner, PRIVATE_DIR, PRIVATE_FILE } from '../../private-files.js';
import { CHECKPOINT_NAME, CheckpointError, type CheckpointInfo } from '../store.js';
import { guarded } from './errors.js';
import { SCHEMA_VERSION, schemaVersion } from './migrations.js';

/**
 * The venue state, rolled back by a restore. Not here: `users`, `api_keys` (credentials, and each
 * key's last nonce, which must never go back), `book_sequences` (advanced by one instead, see
 * ADVANCE_BOOK_SEQUENCES), `command_receipts` (answers to commands of the last minute or so, for
 * a gateway's resends: not venue state, and they keep answering what was sent) and SQLite's own
 * `sqlite_sequence`.
 */
export const STATE_TABLES = [
  'assets',
  'markets',
  'balances',
  'asset_totals',
  'orders',
  'trades',
  'candles',
  'ledger_entries',
  'idempotency_keys',
  'cancel_all_after',
  'meta',
] as const;

/**
 * The oldest schema version whose checkpoints restore here. Version 7 only added book_sequences,
 * which a restore keeps rather than copies (book sequences never go back, decision 77); version
 * 8 added the order controls' columns and the dead man's switches, version 9 the conditional
 * orders' columns (ADDED_COLUMNS, ADDED_TABLES), whose defaults are exactly what an older order
 * was. So checkpoints saved before an upgrade stay usable. (Each state table's columns are still
 * compared before anything is written.)
 */
const OLDEST_RESTORABLE_VERSION = 6;

/**
 * Columns later schema versions appended to a state table, oldest version first, whose defaults
 * say what the rows of an older checkpoint meant. v8: every older order is good till canceled,
 * without expiry, post-only or client id, with self-trade mode cancel-oldest. v9: every older
 * order is a limit or market order, without trigger or trailing offset, never triggered.
 */
const ADDED_COLUMNS: Readonly<Record<string, readonly (readonly string[])[]>> = {
  orders: [
    ['time_in_force', 'expire_time', 'post_only', 'client_order_id', 'stp', 'priority'],
    ['trigger_price', 'trailing_unit', 'trailing_amount', 'trailing_best', 'triggered'],
  ],
};
/** State tables a later schema version added: an older checkpoint has none of their rows (v8: no switch armed). */
const ADDED_TABLES: readonly string[] = ['cancel_all_after'];

const restorable = (version: number): boolean =>
  version >= OLDEST_RESTORABLE_VERSION && version <= SCHEMA_VERSION;

/**
 * Run in the restore's transaction, after the state tables are copied: every market of the
 * restored catalogue gets its book sequence plus one (1 when it had none), the persisted form of
 * decision 77. Rows of markets the checkpoint lacks are kept as they are.
 */
const ADVANCE_BOOK_SEQUENCES = `INSERT INTO main.book_sequences (market_id, sequence)
  SELECT id, 1 FROM main.markets WHERE true
  ON CONFLICT (market_id) DO UPDATE SET sequence = sequence + 1`;

const SUFFIX = '.db';

/**
 * At every start: the directory and every checkpoint in it (`initial.db` too) narrowed to the
 * owner, as the database is. Each is a whole copy of the venue, sealed secrets included; one
 * left readable by an older version or a restored backup would stay so for good otherwise.
 */
function narrowExisting(dir: string): void {
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return; // none saved yet: created 0700 with the first
  }
  narrowToOwner(dir, PRIVATE_DIR);
  for (const name of names) if (name.endsWith(SUFFIX)) narrowToOwner(join(dir, name), PRIVATE_FILE);
}

interface MemoryCheckpoint {
  readonly image: Buffer;
  readonly createdAt: Micros;
}

export class SqliteCheckpoints {
  readonly #memory = new Map<string, MemoryCheckpoint>();

  constructor(
    private readonly db: Database.Database,
    /** Where checkpoint files go; undefined keeps them in memory. */
    private readonly dir: string | undefined,
  ) {
    if (dir !== undefined) narrowExisting(dir);
  }

  save(name: string, time: Micros): CheckpointInfo {
    checkName(name);
    if (this.dir === undefined) {
      const image = guarded(() => this.db.serialize());
      this.#memory.set(name, { image, createdAt: time });
      return { name, createdAt: time, bytes: image.length };
    }
    const dir = this.dir;
    return guarded(() => {
      mkdirSync(dir, { recursive: true, mode: 0o700 });
      const final = join(dir, `${name}${SUFFIX}`);
      // A leading dot: never listed, never a valid name, so never restored half-written.
      const temporary = join(dir, `.${name}.${process.pid}.tmp`);
      rmSync(temporary, { force: true });
      // VACUUM INTO writes into an empty file: created first, 0600 whatever the umask (it holds
      // balances and sealed secrets, like the database itself).
      closeSync(openSync(temporary, 'wx', 0o600));
      try {
        this.db.prepare('VACUUM INTO ?').run(temporary);
        const seconds = time / 1_000_000;
        utimesSync(temporary, seconds, seconds);
        renameSync(temporary, final);
      } catch (error) {
        rmSync(temporary, { force: true });
        throw error;
      }
      return { name, createdAt: time, bytes: statSync(final).size };
    });
  }

  restore(name: string): void {
    checkName(name);
    if (this.dir !== undefined) {
      this.#restoreFile(name, this.#path(name));
      return;
    }
    const source = this.#open(name);
    try {
      checkVersion(name, schemaVersion(source));
      const copies = STATE_TABLES.map((table) => this.#copier(source, table, name));
      const advance = this.db.prepare(ADVANCE_BOOK_SEQUENCES);
      this.#replace(name, () => {
        for (const copy of copies) copy();
        advance.run();
      });
    } finally {
      source.close();
    }
  }

  list(): CheckpointInfo[] {
    if (this.dir === undefined)
      return [...this.#memory]
        .map(([name, c]) => ({ name, createdAt: c.createdAt, bytes: c.image.length }))
        .sort(byName);
    const dir = this.dir;
    let files: string[];
    try {
      files = readdirSync(dir);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
      throw error;
    }
    const found: CheckpointInfo[] = [];
    for (const file of files) {
      if (!file.endsWith(SUFFIX)) continue;
      const name = file.slice(0, -SUFFIX.length);
      if (!CHECKPOINT_NAME.test(name)) continue;
      try {
        const stat = statSync(join(dir, file));
        if (stat.isFile())
          found.push({ name, createdAt: Math.round(stat.mtimeMs * 1000) as Micros, bytes: stat.size });
      } catch {
        // Deleted meanwhile: not listed.
      }
    }
    return found.sort(byName);
  }

  delete(name: string): boolean {
    checkName(name);
    if (this.dir === undefined) return this.#memory.delete(name);
    try {
      unlinkSync(join(this.dir, `${name}${SUFFIX}`));
      return true;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return false;
      throw error;
    }
  }

  /**
   * Runs `copy` in one IMMEDIATE transaction with foreign keys off, then checks them all once
   * before committing: enforced row by row, the deferred checks made a restore five times slower
   * (every DELETE of a market scans the orders and trades referring to it). The pragma cannot
   * change inside a transaction, hence around it; nothing else runs on the connection meanwhile.
   */
  #replace(name: string, copy: () => void): void {
    guarded(() => this.db.pragma('foreign_keys = OFF'));
    try {
      guarded(() =>
        this.db
          .transaction(() => {
            copy();
            if ((this.db.pragma('main.foreign_key_check') as unknown[]).length > 0)
              throw new CheckpointError(
                'incompatible',
                `Checkpoint ${name} holds rows that refer to nothing.`,
              );
          })
          .immediate(),
      );
    } finally {
      this.db.pragma('foreign_keys = ON');
    }
  }

  /** An in-memory checkpoint as a database of its own. */
  #open(name: string): Database.Database {
    const saved = this.#memory.get(name);
    if (saved === undefined) throw notFound(name);
    return new Database(saved.image);
  }

  /** The file of checkpoint `name`, which exists. */
  #path(name: string): string {
    const path = join(this.dir ?? '.', `${name}${SUFFIX}`);
    try {
      if (!statSync(path).isFile()) throw notFound(name);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') throw notFound(name);
      throw error;
    }
    return path;
  }

  /**
   * A file is attached to the live connection and copied table by table in SQL (no row passes
   * through JavaScript: `npm run bench:checkpoint`). ATTACH cannot run inside a transaction, so
   * it comes before the IMMEDIATE transaction and DETACH after it.
   */
  #restoreFile(name: string, path: string): void {
    guarded(() => this.db.prepare(`ATTACH DATABASE ? AS ${ATTACHED}`).run(path));
    try {
      checkVersion(name, this.db.pragma(`${ATTACHED}.user_version`, { simple: true }) as number);
      const statements = STATE_TABLES.map((table) => {
        const list = sameColumns(columnsOf(this.db, table), columnsOf(this.db, table, ATTACHED), table, name);
        return [
          this.db.prepare(`DELETE FROM main.${table}`),
          list === null
            ? undefined
            : this.db.prepare(`INSERT INTO main.${table} (${list}) SELECT ${list} FROM ${ATTACHED}.${table}`),
        ] as const;
      });
      const advance = this.db.prepare(ADVANCE_BOOK_SEQUENCES);
      this.#replace(name, () => {
        for (const [clear, copy] of statements) {
          clear.run();
          copy?.run();
        }
        advance.run();
      });
    } finally {
      guarded(() => this.db.exec(`DETACH DATABASE ${ATTACHED}`));
    }
  }

  /**
   * Checks a table's columns now (before the transaction) and returns what empties the live
   * table and fills it from the checkpoint. Values are read as BigInt where integers, so nothing
   * passes through a float.
   */
  #copier(source: Database.Database, table: string, name: string): () => void {
    const held = columnsOf(source, table);
    const list = sameColumns(columnsOf(this.db, table), held, table, name);
    const clear = this.db.prepare(`DELETE FROM ${table}`);
    if (list === null) return () => clear.run();
    const read = source.prepare(`SELECT ${list} FROM ${table}`).raw().safeIntegers();
    const insert = this.db.prepare(
      `INSERT INTO ${table} (${list}) VALUES (${held.map(() => '?').join(', ')})`,
    );
    return () => {
      clear.run();
      for (const row of read.iterate() as Iterable<unknown[]>) insert.run(...row);
    };
  }
}

/** The schema name a file checkpoint is attached under while it is restored. */
const ATTACHED = 'openspot_checkpoint';

function columnsOf(db: Database.Database, table: string, schema = 'main'): string[] {
  return (db.pragma(`${schema}.table_info(${table})`) as Array<{ name: string }>).map((c) => c.name);
}

/**
 * The quoted list of the columns to copy, when the checkpoint's table has the live table's
 * columns in order (or all but those a later version appended, ADDED_COLUMNS, which then take
 * their defaults); null when the checkpoint predates the whole table (ADDED_TABLES): nothing to
 * copy, the live table is only emptied.
 */
function sameColumns(
  wanted: readonly string[],
  held: readonly string[],
  table: string,
  name: string,
): string | null {
  if (held.length === 0 && ADDED_TABLES.includes(table)) return null;
  // Today's layout, or one that lacks the columns of the last k versions that added some.
  const layouts = [wanted.join(',')];
  let length = wanted.length;
  for (const added of [...(ADDED_COLUMNS[table] ?? [])].reverse()) {
    length -= added.length;
    layouts.push(wanted.slice(0, length).join(','));
  }
  const same = layouts.includes(held.join(','));
  if (held.length === 0 || !same)
    throw new CheckpointError('incompatible', `Checkpoint ${name} has another layout of table ${table}.`);
  return held.map((c) => `"${c}"`).join(', ');
}

function checkVersion(name: string, version: number): void {
  if (!restorable(version))
    throw new CheckpointError(
      'incompatible',
      `Checkpoint ${name} has schema version ${version}; this release restores versions ${OLDEST_RESTORABLE_VERSION} to ${SCHEMA_VERSION} only.`,
    );
}

function checkName(name: string): void {
  if (typeof name !== 'string' || !CHECKPOINT_NAME.test(name))
    throw new CheckpointError(
      'invalid_name',
      "A checkpoint name is 1 to 64 letters, digits, '.', '_' or '-', starting with a letter or digit.",
    );
}

const notFound = (name: string) => new CheckpointError('not_found', `No checkpoint named ${name}.`);

const byName = (a: CheckpointInfo, b: CheckpointInfo): number =>
  a.name < b.name ? -1 : a.name > b.name ? 1 : 0;
