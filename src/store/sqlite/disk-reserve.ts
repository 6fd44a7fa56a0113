/**
 * Room on the disk kept for the commits the journaled store has acknowledged but not yet written
 * to the tables (journaled-store.ts): a file of RESERVE_BYTES zeros beside the database. Should
 * the disk fill up, the store deletes it and writes those commits to the tables in the room it
 * freed; until the file can be written whole again, new commits are refused (503), as they would
 * be without a journal. Without it a full disk could leave acknowledged commits that no table
 * can take, and a server that cannot start until someone frees space.
 */
import {
  closeSync,
  existsSync,
  fdatasyncSync,
  openSync,
  rmSync,
  statSync,
  truncateSync,
  writeSync,
} from 'node:fs';
import { PRIVATE_FILE } from '../../private-files.js';
import { StoreUnavailableError } from '../store.js';

/** Several times what writing PROJECT_EVERY group commits to the tables adds to the WAL. */
export const RESERVE_BYTES = 4 << 20;

export class DiskReserve {
  readonly #path: string;
  #held: boolean;

  private constructor(path: string, held: boolean) {
    this.#path = path;
    this.#held = held;
  }

  /** The reserve at `path`, written now if it is not whole (not at all on a full disk: ensure says so). */
  static open(path: string): DiskReserve {
    const reserve = new DiskReserve(path, whole(path));
    try {
      reserve.ensure();
    } catch {
      // Refused at the first commit instead: a server on a full disk still starts and serves reads.
    }
    return reserve;
  }

  /** Makes sure the room is kept; throws StoreUnavailableError (disk full) when it cannot be. */
  ensure(): void {
    if (this.#held) return;
    const before = sizeOf(this.#path);
    try {
      const fd = openSync(this.#path, 'a+', PRIVATE_FILE);
      try {
        const zeros = Buffer.alloc(1 << 20);
        for (let at = 0; at < RESERVE_BYTES; at += zeros.length) writeSync(fd, zeros, 0, zeros.length, at);
        fdatasyncSync(fd);
      } finally {
        closeSync(fd);
      }
    } catch (error) {
      // Back to what it was: what is left of a reserve released once is kept for a restart.
      if (before === 0) rmSync(this.#path, { force: true });
      else truncateSync(this.#path, before);
      const code = (error as NodeJS.ErrnoException).code;
      throw new StoreUnavailableError(
        `store unavailable: no room for the commit journal's reserve (${code})`,
        {
          cause: error,
          reason: code === 'ENOSPC' ? 'disk full' : 'database file I/O error',
        },
      );
    }
    this.#held = true;
  }

  /**
   * Gives half of the room back to the disk (the other half is for opening the database again,
   * should the server restart before the disk has room: openWithReserve); false when none is kept.
   */
  release(): boolean {
    if (!this.#held) return false;
    truncateSync(this.#path, RESERVE_BYTES / 2);
    this.#held = false;
    return true;
  }
}

function sizeOf(path: string): number {
  try {
    return statSync(path).size;
  } catch {
    return 0;
  }
}

const whole = (path: string): boolean => sizeOf(path) === RESERVE_BYTES;

/**
 * `open()`, and should it fail for want of room (SQLite must create its shared-memory file when it
 * opens a database), once more after giving the rest of the reserve at `path` back to the disk.
 */
export function openWithReserve<T>(path: string, open: () => T): T {
  try {
    return open();
  } catch (error) {
    if (!(error instanceof StoreUnavailableError) || !existsSync(path)) throw error;
    rmSync(path, { force: true });
    return open();
  }
}
