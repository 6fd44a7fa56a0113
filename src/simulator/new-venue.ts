/**
 * `openspot simulate`: a new venue in DATA_DIR, filled with simulated history (history.ts).
 *
 * Only a new venue: a database holding trading would get a second, contradicting past, and a
 * running server keeps its state in memory and would overwrite (or be corrupted by) what is
 * written under it. So:
 * - DATA_DIR must hold no `openspot.db` (nor its `-wal`/`-shm` companions, which a running
 *   server, or one that did not stop cleanly, leaves next to it). Every server that ever started
 *   on DATA_DIR created `openspot.db`, so this also refuses the data directory of a running server.
 * - The history is written into a private file of its own (`openspot.db.simulating-<pid>`), never
 *   into `openspot.db`: a server started meanwhile cannot see it half written, and an interrupted
 *   run leaves nothing behind.
 * - At the end that file becomes `openspot.db` by a hard link, which fails if the name was taken
 *   meanwhile (a server started during the run): then nothing is changed and the run is refused.
 */
import { existsSync, linkSync, mkdirSync, renameSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import type { CatalogueFile } from '../config/default-catalogue.js';
import type { Micros } from '../domain/types.js';
import { seedCatalogue } from '../sequencer/seed.js';
import { openExchange } from '../sequencer/sequencer.js';
import { asyncStore } from '../store/async-store.js';
import { lockDataDir } from '../store/sqlite/data-dir-lock.js';
import { SqliteStore } from '../store/sqlite/sqlite-store.js';
import { type HistorySummary, simulatedClock, simulateHistory } from './history.js';
import { DEFAULT_REFERENCE_PRICES } from './index.js';

export const DATABASE_FILE = 'openspot.db';
export const MAX_DAYS = 31;

/** DATA_DIR already holds a venue (or a server runs on it): nothing was written. */
export class NotANewVenueError extends Error {
  override readonly name = 'NotANewVenueError';
}

export interface NewVenueOptions {
  readonly dataDir: string;
  /** Whole days of history ending at `now`, 1 to MAX_DAYS. */
  readonly days: number;
  readonly seed?: number;
  /** CATALOGUE_FILE's path or a catalogue; default: the default catalogue. */
  readonly catalogue?: string | CatalogueFile;
  readonly referencePrices?: Readonly<Record<string, string>>;
  /** The end of the history. Default: the wall clock when the run starts. */
  readonly now?: Micros;
  readonly stepSeconds?: number;
  readonly signal?: AbortSignal;
  readonly onProgress?: (done: number, total: number) => void;
}

export interface NewVenueSummary extends HistorySummary {
  readonly database: string;
  readonly from: Micros;
  readonly to: Micros;
  /** Wall-clock milliseconds the run took. */
  readonly elapsedMs: number;
}

/** Throws NotANewVenueError when DATA_DIR holds a database (see the module comment). */
export function assertNewVenue(dataDir: string): void {
  const found = [DATABASE_FILE, `${DATABASE_FILE}-wal`, `${DATABASE_FILE}-shm`].filter((name) =>
    existsSync(join(dataDir, name)),
  );
  if (found.length === 0) return;
  throw new NotANewVenueError(
    `${dataDir} already holds a venue (${found.join(', ')}): simulate fills only a new one, and a server may be running on it. ` +
      'Use an empty DATA_DIR (--data-dir), or stop the server and delete openspot.db* to start the venue over.',
  );
}

export async function simulateNewVenue(options: NewVenueOptions): Promise<NewVenueSummary> {
  if (!Number.isInteger(options.days) || options.days < 1 || options.days > MAX_DAYS)
    throw new RangeError(`--days must be a whole number from 1 to ${MAX_DAYS}`);
  const started = Date.now();
  mkdirSync(options.dataDir, { recursive: true, mode: 0o700 });
  // A server starting on this DATA_DIR meanwhile is refused until the history is in place.
  const lock = lockDataDir(options.dataDir);
  try {
    return await simulateLocked(options, started);
  } finally {
    lock.release();
  }
}

async function simulateLocked(options: NewVenueOptions, started: number): Promise<NewVenueSummary> {
  assertNewVenue(options.dataDir);
  const to = options.now ?? ((Date.now() * 1000) as Micros);
  const from = (to - options.days * 86_400_000_000) as Micros;
  const database = join(options.dataDir, DATABASE_FILE);
  const draft = join(options.dataDir, `${DATABASE_FILE}.simulating-${process.pid}`);
  const removeDraft = () => {
    for (const suffix of ['', '-wal', '-shm']) rmSync(`${draft}${suffix}`, { force: true });
  };
  removeDraft();
  try {
    // NORMAL: the draft is worth nothing until it is complete, so no fsync per commit.
    const store = SqliteStore.open({ path: draft, synchronous: 'NORMAL' });
    const clock = simulatedClock(from);
    const exchange = await openExchange({ store: asyncStore(store), clock });
    let summary: HistorySummary;
    try {
      await seedCatalogue(exchange, options.catalogue);
      summary = await simulateHistory({
        exchange,
        store,
        clock,
        from,
        to,
        seed: options.seed ?? 1,
        referencePrices: { ...DEFAULT_REFERENCE_PRICES, ...options.referencePrices },
        ...(options.stepSeconds === undefined ? {} : { stepSeconds: options.stepSeconds }),
        ...(options.signal === undefined ? {} : { signal: options.signal }),
        ...(options.onProgress === undefined ? {} : { onProgress: options.onProgress }),
      });
    } finally {
      await exchange.close();
      // Closing the last connection checkpoints the WAL into the file and removes it.
      store.close();
    }
    publish(draft, database);
    return { ...summary, database, from, to, elapsedMs: Date.now() - started };
  } finally {
    removeDraft();
  }
}

/** Gives the draft the database's name unless that name was taken meanwhile. */
function publish(draft: string, database: string): void {
  const taken = () =>
    new NotANewVenueError(
      `${database} appeared while the history was simulated (a server started on this DATA_DIR?): nothing was changed.`,
    );
  try {
    linkSync(draft, database);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'EEXIST') throw taken();
    // A file system without hard links: the check and the rename are then two steps.
    if (existsSync(database)) throw taken();
    renameSync(draft, database);
  }
}
