/**
 * Files and directories that hold balances, orders, keys and tokens are the owner's alone: created
 * 0600 (files) and 0700 (directories) whatever the umask, and narrowed to that at every start when
 * found open to others (an older version, a restored backup, a directory made by hand with
 * mkdir's 0755), rather than only when this process happened to create them.
 */
import { chmodSync, mkdirSync, statSync } from 'node:fs';

export const PRIVATE_FILE = 0o600;
export const PRIVATE_DIR = 0o700;

/**
 * Takes group and other permissions away from `path` when it has any. Absent, or not this
 * user's to change: left as it is, for whoever opens it next to report.
 */
export function narrowToOwner(path: string, mode: typeof PRIVATE_FILE | typeof PRIVATE_DIR): void {
  try {
    if ((statSync(path).mode & 0o077) !== 0) chmodSync(path, mode);
  } catch {
    // absent or not ours
  }
}

/** `dir`, created 0700 when missing, narrowed to 0700 when found open to others. */
export function privateDirectory(dir: string): void {
  mkdirSync(dir, { recursive: true, mode: PRIVATE_DIR });
  narrowToOwner(dir, PRIVATE_DIR);
}
