/**
 * The commit journal: files of group commits, each made durable (fdatasync) before the server
 * acknowledges it. Writing one record and syncing one file costs a fraction of writing a commit's
 * rows, their indexes and the changed pages into SQLite; the journaled store (journaled-store.ts)
 * writes the journaled commits to the tables later, several at once. There are two files, used in
 * turns: new records go to one while the other's are being written to the tables, and a file
 * starts over from its first byte once all of its records are there.
 *
 * Each file is allocated once (PREALLOCATED_BYTES of zeros) and written over in place, like
 * SQLite's own WAL: a sync that only flushes data blocks is cheap, one that must also record a new
 * file size (an append, a truncation) commits the file system's journal and costs several times
 * more. A record is a 16-byte header (payload length, CRC-32 of the sequence number's 8 bytes and
 * the payload, sequence number; little-endian) followed by the payload, the commit as JSON.
 * Reading starts at the first byte and stops at the first record that is incomplete, fails its
 * CRC, or does not carry the number after its predecessor's: the remains of an earlier round
 * (lower numbers) or of a torn write. A record that was acknowledged was synced whole before,
 * after every record before it in the round, so it is always read back.
 */
import {
  closeSync,
  existsSync,
  fdatasync,
  fdatasyncSync,
  openSync,
  readFileSync,
  writeSync,
  writevSync,
} from 'node:fs';
import { dirname } from 'node:path';
import { crc32 } from 'node:zlib';
import type { Candle } from '../../market-data/candle.js';
import { PRIVATE_FILE } from '../../private-files.js';
import type { CommitBatch } from '../store.js';
import { StoreUnavailableError } from '../store.js';

/** The file's size when created: several rounds' worth of group commits; it grows should one need more. */
const PREALLOCATED_BYTES = 1 << 20;
const HEADER_BYTES = 16;
/** Larger than any group commit; a length above it can only be damage. */
const MAX_RECORD_BYTES = 1 << 30;

export interface JournalRecord {
  readonly seq: number;
  readonly batch: CommitBatch;
}

/** The journal files of the database at `databasePath`, used in turns (CommitJournal). */
export const journalPathsOf = (databasePath: string): readonly [string, string] => [
  `${databasePath}.commits`,
  `${databasePath}.commits2`,
];

/** The records of the journal files of the database at `databasePath` (those that exist), in number order. */
export function readJournal(databasePath: string): JournalRecord[] {
  return journalPathsOf(databasePath)
    .filter((path) => existsSync(path))
    .flatMap((path) => readRecords(readFileSync(path)).records)
    .sort((a, b) => a.seq - b.seq);
}

function checksum(seqBytes: Buffer, payload: Uint8Array): number {
  return crc32(payload, crc32(seqBytes));
}

/** The whole records of the current round at the start of `bytes`, and the bytes they take. */
export function readRecords(bytes: Buffer): { records: JournalRecord[]; validBytes: number } {
  const records: JournalRecord[] = [];
  let at = 0;
  while (bytes.length - at >= HEADER_BYTES) {
    const length = bytes.readUInt32LE(at);
    const crc = bytes.readUInt32LE(at + 4);
    const seqBytes = bytes.subarray(at + 8, at + 16);
    const end = at + HEADER_BYTES + length;
    if (length === 0 || length > MAX_RECORD_BYTES || end > bytes.length) break;
    const seq = Number(seqBytes.readBigUInt64LE(0));
    const previous = records[records.length - 1];
    if (previous !== undefined && seq !== previous.seq + 1) break;
    const payload = bytes.subarray(at + HEADER_BYTES, end);
    if (checksum(seqBytes, payload) !== crc) break;
    let batch: CommitBatch;
    try {
      batch = decode(payload);
    } catch {
      break;
    }
    records.push({ seq, batch });
    at = end;
  }
  return { records, validBytes: at };
}

/** Candles' sums are the only bigints of a commit: as decimal strings in JSON. */
interface JsonCandle extends Omit<Candle, 'volume' | 'quoteVolume' | 'notional'> {
  readonly volume: string;
  readonly quoteVolume: string;
  readonly notional: string;
}

function encode(batch: CommitBatch): Buffer {
  const candles: JsonCandle[] = batch.candles.map((c) => ({
    ...c,
    volume: c.volume.toString(),
    quoteVolume: c.quoteVolume.toString(),
    notional: c.notional.toString(),
  }));
  return Buffer.from(JSON.stringify({ ...batch, candles }));
}

function decode(payload: Buffer): CommitBatch {
  const parsed = JSON.parse(payload.toString('utf8')) as Omit<CommitBatch, 'candles'> & {
    candles: JsonCandle[];
  };
  const candles: Candle[] = parsed.candles.map((c) => ({
    ...c,
    volume: BigInt(c.volume),
    quoteVolume: BigInt(c.quoteVolume),
    notional: BigInt(c.notional),
  }));
  return { ...parsed, candles };
}

/** In /readyz's fixed vocabulary (errors.ts, sqliteReason). */
function reasonOf(code: string | undefined): string {
  if (code === 'ENOSPC' || code === 'EDQUOT') return 'disk full';
  if (code === 'EPERM' || code === 'EACCES' || code === 'EROFS') return 'database file is read-only';
  return 'database file I/O error';
}

function unavailable(message: string, cause: unknown): StoreUnavailableError {
  const code = (cause as NodeJS.ErrnoException | undefined)?.code;
  return new StoreUnavailableError(`store unavailable: ${message}${code === undefined ? '' : ` (${code})`}`, {
    cause,
    reason: reasonOf(code),
  });
}

/** Where a record was written: what `sync` and `abandon` are given. */
export interface JournalWrite {
  readonly file: JournalFile;
  readonly start: number;
}

/**
 * The journal's two files, used in turns: a round of records is written to one while the journaled
 * store writes the other's to the tables (journaled-store.ts), and a file starts over from its
 * first byte only once every record in it is in the tables. Each file is read from its first byte
 * (readRecords); the journal is both files' records in number order.
 */
export class CommitJournal {
  readonly #files: readonly [JournalFile, JournalFile];
  #active: JournalFile;

  private constructor(files: readonly [JournalFile, JournalFile]) {
    this.#files = files;
    // Records go on after the newest; the other file's are older.
    this.#active = files[0].lastSeq >= files[1].lastSeq ? files[0] : files[1];
  }

  /**
   * Opens (creating them, owner-only) the journal files of the database at `databasePath` and
   * returns their records, in number order. `sync` false: records are written but not synced (they
   * survive the process crashing, not the machine: SQLITE_SYNCHRONOUS=normal).
   */
  static open(databasePath: string, sync = true): { journal: CommitJournal; records: JournalRecord[] } {
    const [pathA, pathB] = journalPathsOf(databasePath);
    const a = JournalFile.open(pathA, sync);
    let b: ReturnType<typeof JournalFile.open>;
    try {
      b = JournalFile.open(pathB, sync);
    } catch (error) {
      a.file.close();
      throw error;
    }
    return {
      journal: new CommitJournal([a.file, b.file]),
      records: [...a.records, ...b.records].sort((x, y) => x.seq - y.seq),
    };
  }

  /** Writes the commit numbered `seq` and makes it durable; throws StoreUnavailableError when it cannot. */
  append(seq: number, batch: CommitBatch): void {
    this.#active.append(seq, encode(batch));
  }

  /**
   * Writes the commit numbered `seq` after the others, not yet durable (`sync`). Throws
   * StoreUnavailableError when it cannot.
   */
  write(seq: number, batch: CommitBatch): JournalWrite {
    const file = this.#active;
    return { file, start: file.write(seq, encode(batch)) };
  }

  /** Makes `written` and every record written before it durable (on libuv's thread pool: the event loop goes on). */
  sync(written: JournalWrite): Promise<void> {
    return written.file.sync();
  }

  /**
   * Takes back `written` (and any record after it in its file) when it could not be made durable:
   * it was answered as failed, so it must not be read back as a commit after a restart.
   */
  abandon(written: JournalWrite): void {
    written.file.abandon(written.start);
  }

  /**
   * The records written from now on go to the other file, from its first byte, when every record
   * in it is in the tables (numbered `applied` or lower); otherwise they go on in this one. Called
   * as the records written so far start on their way to the tables: once they are there, this file
   * is free again.
   */
  turn(applied: number): void {
    const other = this.#active === this.#files[0] ? this.#files[1] : this.#files[0];
    if (other.lastSeq > applied || !other.restart()) return;
    this.#active = other;
  }

  /**
   * Starts a new round once every record of both files is in the tables: the next record goes to
   * the first byte (nothing is synced: read back, an old round's records are applied already).
   */
  clear(): void {
    this.#active.restart();
  }

  close(): void {
    for (const file of this.#files) file.close();
  }
}

/** One file of the journal. */
class JournalFile {
  readonly #fd: number;
  readonly #sync: boolean;
  /** Where the next record goes: the end of the current round's records. */
  #tail: number;
  /** Set when a failed write could not be erased: the next append erases it first. */
  #tornTail = false;
  /** The highest number of any record in the file: all are in the tables once the tables hold it. */
  lastSeq: number;

  private constructor(fd: number, tail: number, lastSeq: number, sync: boolean) {
    this.#fd = fd;
    this.#tail = tail;
    this.lastSeq = lastSeq;
    this.#sync = sync;
  }

  /** Opens (creating it, owner-only, preallocated) the file at `path`; its current round's records. */
  static open(path: string, sync: boolean): { file: JournalFile; records: JournalRecord[] } {
    const created = !existsSync(path);
    const fd = openSync(path, created ? 'w+' : 'r+', PRIVATE_FILE);
    try {
      if (created) {
        const zeros = Buffer.alloc(1 << 20);
        for (let at = 0; at < PREALLOCATED_BYTES; at += zeros.length)
          writeSync(fd, zeros, 0, zeros.length, at);
        fdatasyncSync(fd);
        syncDirectory(dirname(path));
      }
      // A round's records are numbered above every earlier round's, which the reading stops at.
      const { records, validBytes } = readRecords(readFileSync(fd));
      return { file: new JournalFile(fd, validBytes, records[records.length - 1]?.seq ?? 0, sync), records };
    } catch (error) {
      closeSync(fd);
      throw error;
    }
  }

  append(seq: number, payload: Buffer): void {
    const start = this.write(seq, payload);
    if (!this.#sync) return;
    try {
      fdatasyncSync(this.#fd);
    } catch (error) {
      this.abandon(start);
      throw unavailable('the commit journal could not be synced', error);
    }
  }

  /** Writes the record; returns where it starts. */
  write(seq: number, payload: Buffer): number {
    if (this.#tornTail) this.#erase();
    const header = Buffer.allocUnsafe(HEADER_BYTES);
    header.writeUInt32LE(payload.length, 0);
    header.writeBigUInt64LE(BigInt(seq), 8);
    header.writeUInt32LE(checksum(header.subarray(8, 16), payload), 4);
    const start = this.#tail;
    try {
      const written = writevSync(this.#fd, [header, payload], start);
      if (written !== HEADER_BYTES + payload.length) throw new Error(`short write: ${written} bytes`);
    } catch (error) {
      this.abandon(start);
      throw unavailable('the commit journal could not be written', error);
    }
    this.#tail = start + HEADER_BYTES + payload.length;
    if (seq > this.lastSeq) this.lastSeq = seq;
    return start;
  }

  sync(): Promise<void> {
    if (!this.#sync) return Promise.resolve();
    return new Promise((resolve, reject) =>
      fdatasync(this.#fd, (error) =>
        error === null ? resolve() : reject(unavailable('the commit journal could not be synced', error)),
      ),
    );
  }

  abandon(start: number): void {
    this.#tail = start;
    this.#tornTail = true;
    try {
      this.#erase();
    } catch {
      // erased before the next write
    }
  }

  /** The next record goes to the first byte; false while a failed write waits to be erased. */
  restart(): boolean {
    if (this.#tornTail) return false;
    this.#tail = 0;
    return true;
  }

  close(): void {
    closeSync(this.#fd);
  }

  /** Zeroes the header a failed write may have left at the tail, durably. */
  #erase(): void {
    try {
      writeSync(this.#fd, Buffer.alloc(HEADER_BYTES), 0, HEADER_BYTES, this.#tail);
      fdatasyncSync(this.#fd);
    } catch (error) {
      throw unavailable('a failed commit could not be erased from the commit journal', error);
    }
    this.#tornTail = false;
  }
}

/** A new file's directory entry is durable only once its directory is synced. */
function syncDirectory(dir: string): void {
  const fd = openSync(dir, 'r');
  try {
    fdatasyncSync(fd);
  } finally {
    closeSync(fd);
  }
}
