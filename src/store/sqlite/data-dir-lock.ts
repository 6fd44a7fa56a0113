/**
 * One process per data directory. Two servers on one DATA_DIR (`npm start`, then `openspot
 * replay` with the same default `./data`) both write the same SQLite database: each engine then
 * commits from its own stale state (`UNIQUE constraint failed: trades.id`) and answers 503.
 *
 * The lock is `DATA_DIR/openspot.lock`, a small SQLite database this process holds under an
 * exclusive lock for its whole life (locking_mode=EXCLUSIVE: the lock taken by its one write is
 * kept until the connection closes). It is the kernel's lock (fcntl), so it goes with the process
 * however it ends, SIGKILL and power loss included: there is never a stale lock to clear by hand.
 * The holder's PID is the database's `user_version`, which anyone can read from the file header
 * without taking a lock, so a refused process names the one in the way.
 */
import { accessSync, closeSync, constants, openSync, readSync, realpathSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { StoreUnavailableError } from '../store.js';
import { toStoreError } from './errors.js';

export const LOCK_FILE = 'openspot.lock';
/** Where SQLite keeps `user_version` in the file header: 4 bytes, big-endian. */
const USER_VERSION_OFFSET = 60;

export class DataDirInUseError extends Error {
  override readonly name = 'DataDirInUseError';
}

export interface DataDirLock {
  /** Lets the next process take the directory (also done by the process's end, however it ends). */
  release(): void;
}

/**
 * The lock files this process holds. A second lock of one of them in this same process is refused
 * here, before the file is touched: closing any descriptor of a file drops every fcntl lock the
 * process has on it (POSIX), so reading the header as holderOf does would release our own lock.
 */
const heldHere = new Set<string>();

/** Takes DATA_DIR `dir` (which must exist) for this process, or throws DataDirInUseError naming the holder. */
export function lockDataDir(dir: string): DataDirLock {
  const path = join(realpathSync(dir), LOCK_FILE);
  if (heldHere.has(path)) throw inUse(dir, process.pid);
  assertWritableDir(dir);
  const db = new Database(path, { timeout: 0 });
  try {
    db.pragma('locking_mode = EXCLUSIVE');
    // No journal file beside the lock: its one write needs no rollback.
    db.pragma('journal_mode = MEMORY');
    db.exec('BEGIN EXCLUSIVE');
    db.pragma(`user_version = ${process.pid}`);
    db.exec('COMMIT');
  } catch (error) {
    db.close();
    if ((error as { code?: string }).code !== 'SQLITE_BUSY') throw toStoreError(error);
    throw inUse(dir, holderOf(path));
  }
  heldHere.add(path);
  return {
    release: () => {
      if (!db.open) return;
      db.close();
      heldHere.delete(path);
    },
  };
}

const inUse = (dir: string, holder: number | undefined) =>
  new DataDirInUseError(
    `${dir} is in use by another OpenSpot process${holder === undefined ? '' : ` (pid ${holder})`}: one process per DATA_DIR. Stop it, or give this one a DATA_DIR of its own (--data-dir, DATA_DIR).`,
  );

/** A read-only DATA_DIR (mount, permissions) is said as such, as the store says it of its file. */
function assertWritableDir(dir: string): void {
  try {
    accessSync(dir, constants.W_OK);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code ?? 'unknown error';
    throw new StoreUnavailableError(
      `store unavailable: the data directory ${dir} cannot be written (${code})`,
      {
        cause: error,
        reason: 'database file is read-only',
      },
    );
  }
}

/** The PID the holder wrote, read from the file header without any lock. */
function holderOf(path: string): number | undefined {
  let fd: number | undefined;
  try {
    fd = openSync(path, 'r');
    const header = Buffer.alloc(4);
    if (readSync(fd, header, 0, 4, USER_VERSION_OFFSET) !== 4) return undefined;
    const pid = header.readUInt32BE(0);
    return pid > 0 ? pid : undefined;
  } catch {
    return undefined;
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}
