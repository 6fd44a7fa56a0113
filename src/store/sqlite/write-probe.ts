/**
 * The write probe's row (CommitBatch.writeProbe). After a failed commit the exchange probes the
 * store until a write succeeds; an empty commit writes no page at all (it rewrites the sequence
 * rows with the values they hold), so it succeeds in a WAL that filled the disk, while every real
 * commit, which writes a handful of pages or more, fails. The probe therefore also rewrites this row: a blob
 * as large as a real commit, with new contents each time so every one of its pages is written
 * again. Its size never changes, so the database does not grow per probe: the WAL takes the new
 * pages until the next checkpoint, as it does for any commit.
 *
 * The table holds no state (nothing reads it, the copy to PostgreSQL and the checkpoints' contents
 * ignore what is in it), so it is created when the store opens rather than by a numbered
 * migration, which would have to be mirrored on PostgreSQL.
 */
import type Database from 'better-sqlite3';

/**
 * 128 KiB: 32 pages of 4 KiB (33 WAL frames with the table's leaf). Measured on the exchange: an
 * order that rests writes 7 pages, one that trades against one maker 16 (trade, candles, both
 * users' balances); the margin covers a batch of several such orders. The probe succeeds only
 * where such a commit fits too.
 */
export const WRITE_PROBE_BYTES = 128 * 1024;

/** Creates the row when missing (a database from before the probe existed). A writable store only. */
export function ensureWriteProbe(db: Database.Database): void {
  db.exec(`
    CREATE TABLE IF NOT EXISTS write_probe (
      id INTEGER PRIMARY KEY CHECK (id = 1),
      filler BLOB NOT NULL
    ) STRICT;
    INSERT OR IGNORE INTO write_probe (id, filler) VALUES (1, zeroblob(${WRITE_PROBE_BYTES}));
  `);
}

/** Rewrites every page of the row, inside the probe's commit. */
export function prepareWriteProbe(db: Database.Database): () => void {
  const rewrite = db.prepare<[number]>('UPDATE write_probe SET filler = randomblob(?) WHERE id = 1');
  return () => {
    rewrite.run(WRITE_PROBE_BYTES);
  };
}
