import Database from 'better-sqlite3';
import { StoreUnavailableError } from '../store.js';

/**
 * Result codes meaning "the storage can't take this write now" (disk full, I/O error, read-only
 * file, lock held elsewhere past the busy timeout), as opposed to a bug or a constraint violation.
 * Extended codes (SQLITE_IOERR_FSYNC, SQLITE_READONLY_DBMOVED, ...) share the primary prefix.
 */
const UNAVAILABLE = /^SQLITE_(FULL|IOERR|READONLY|CANTOPEN|BUSY|NOLFS|PROTOCOL)(_|$)/;

export function isUnavailable(error: unknown): error is InstanceType<typeof Database.SqliteError> {
  return error instanceof Database.SqliteError && UNAVAILABLE.test(error.code);
}

/** The error callers should see: I/O-type SQLite failures become StoreUnavailableError, others pass through. */
export function toStoreError(error: unknown): unknown {
  if (!isUnavailable(error)) return error;
  return new StoreUnavailableError(`store unavailable: ${error.message} (${error.code})`, {
    cause: error,
    reason: sqliteReason(error.code),
  });
}

/** The /readyz reason of an SQLite result code (StoreUnavailableError.reason). */
export function sqliteReason(code: string): string {
  if (code.startsWith('SQLITE_FULL')) return 'disk full';
  if (code.startsWith('SQLITE_READONLY')) return 'database file is read-only';
  if (code.startsWith('SQLITE_BUSY')) return 'database file locked by another process';
  if (code.startsWith('SQLITE_CANTOPEN')) return 'database file cannot be opened';
  return 'database file I/O error';
}

export function guarded<T>(operation: () => T): T {
  try {
    return operation();
  } catch (error) {
    throw toStoreError(error);
  }
}
