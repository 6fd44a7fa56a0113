/**
 * The SQLite store of a server's DATA_DIR: group commits are acknowledged once they are in the
 * commit journal (commit-journal.ts: one appended record, one fdatasync), and written to the
 * tables several at a time, merged (merge-batches.ts): each changed order, balance and candle row
 * is then written once for several commits, and SQLite's transaction, its changed pages and its
 * sync are shared by all of them. That is most of what a signed order cost on the request path
 * (docs/performance.md, "The commit journal").
 *
 * Writing them is spread over the time the event loop would otherwise wait: a round of waiting
 * commits is one transaction whose statements run a few at a time while the next commit's sync is
 * in flight, so no request waits for the tables (docs/performance.md, "Rounds in the sync's shadow").
 *
 * Nothing acknowledged is ever missing from a read: every read of what commits write first writes
 * the journaled commits to the tables. Users, API keys and nonces are not part of the commits and
 * are read and written directly. At open, commits journaled but not yet in the tables (the process
 * stopped in between) are written to them before anything is read, then the journal is emptied.
 * The tables say which journaled commit they hold last (journal_state, in the same transaction),
 * so a commit is written to them exactly once.
 */

import type { MarketId, Micros, OrderId, TradeId, UserId } from '../../domain/types.js';
import type { EngineSnapshot, OrderState } from '../../engine/types.js';
import type { Candle, Interval } from '../../market-data/candle.js';
import type {
  BookSequence,
  CandleEnd,
  CheckpointInfo,
  CommitBatch,
  IdempotencyRecord,
  LedgerEntry,
  LedgerKind,
  NewApiKeyRecord,
  OrderFilter,
  Page,
  PublicTradeFilter,
  Store,
  TradeFilter,
} from '../store.js';
import { StoreUnavailableError } from '../store.js';
import { CommitJournal, type JournalRecord } from './commit-journal.js';
import { DiskReserve } from './disk-reserve.js';
import { journalForm, mergeBatches } from './merge-batches.js';
import { overlayLatestCandles, overlaySnapshot } from './snapshot-overlay.js';
import type { JournaledWrite, SqliteStore } from './sqlite-store.js';

/**
 * Journaled commits written to the tables in one round by default (SQLITE_JOURNAL_BATCHES): a
 * round starts once this many wait. More costs less CPU per order (rows merged across more
 * commits) and keeps more commits in memory and in the journal.
 */
const PROJECT_EVERY = 8;
/**
 * When commits stop coming for this long (ms), the waiting ones are written to the tables: a
 * quiet server's database file soon holds everything, for whoever reads it beside the server.
 */
const PROJECT_WHEN_IDLE_MS = 10;
/** Waiting after a failed attempt before the next (ms); a commit or a read tries at once. */
const RETRY_MS = 200;
/**
 * Statements of a round run per turn of the event loop: about 0.3 ms of them here (an order's
 * row with its indexes, a trade's), so a sync that completes meanwhile is answered soon.
 */
const STATEMENTS_PER_TURN = 32;
/** Rounds' worth of commits waiting beyond which the tables are written every turn (#behind). */
const BEHIND_ROUNDS = 4;

/** Journaled commits on their way to the tables: a transaction open across turns. */
interface Round {
  readonly write: JournaledWrite;
  /** How many of the waiting commits it writes (the first ones). */
  readonly count: number;
  /** The number of the last of them. */
  readonly lastSeq: number;
}

export interface JournaledStoreOptions {
  /** false: journal appends are not synced (SQLITE_SYNCHRONOUS=normal). */
  readonly sync?: boolean;
  /** Journaled commits written to the tables at once (default PROJECT_EVERY). */
  readonly projectEvery?: number;
  /** For tests: PROJECT_WHEN_IDLE_MS. */
  readonly projectWhenIdleMs?: number;
  /** For tests: STATEMENTS_PER_TURN. */
  readonly statementsPerTurn?: number;
}

export class JournaledSqliteStore implements Store {
  readonly #tables: SqliteStore;
  readonly #journal: CommitJournal;
  /** Room kept for the waiting commits, should the disk fill up (disk-reserve.ts). */
  readonly #reserve: DiskReserve;
  readonly #projectEvery: number;
  readonly #idleMs: number;
  readonly #statementsPerTurn: number;
  /** The journaled commits not yet in the tables, in order; the last is number `#seq`. */
  #waiting: JournalRecord[] = [];
  /** The number of the last commit journaled (durable, or being synced when `#syncing`). */
  #seq: number;
  /** The number of the last commit the tables hold. */
  #applied: number;
  /**
   * The number of the last commit the tables hold durably: a round commits without a sync, and
   * its commits stay in the journal until the log's sync (#syncTables) has made them durable.
   */
  #durable: number;
  /** The log's sync in flight (#syncTables), and whether another is wanted after it. */
  #tablesSyncing = false;
  #tablesSyncAgain = false;
  /** The waiting commits being written to the tables, a few statements per turn. */
  #round: Round | undefined;
  /** Commits stopped coming: every waiting one is being written, rounds every turn. */
  #draining = false;
  #syncing = false;
  /** The Idempotency-Key records of the waiting commits, the newest of each user and key. */
  #waitingKeys = new Map<string, IdempotencyRecord>();
  #scheduled: NodeJS.Immediate | undefined;
  #timer: NodeJS.Timeout | undefined;
  /** Why the last attempt to write the waiting commits to the tables failed, until one succeeds. */
  #failure: unknown;
  #closed = false;

  private constructor(
    tables: SqliteStore,
    journal: CommitJournal,
    reserve: DiskReserve,
    applied: number,
    seq: number,
    options: JournaledStoreOptions,
  ) {
    this.#tables = tables;
    this.#journal = journal;
    this.#reserve = reserve;
    this.#applied = applied;
    this.#durable = applied;
    this.#seq = seq;
    this.#projectEvery = options.projectEvery ?? PROJECT_EVERY;
    this.#idleMs = options.projectWhenIdleMs ?? PROJECT_WHEN_IDLE_MS;
    this.#statementsPerTurn = options.statementsPerTurn ?? STATEMENTS_PER_TURN;
  }

  /**
   * The store over `tables` (an SQLite store opened on `databasePath`) with its journal: writes the
   * commits the journal holds beyond the tables' last to them first.
   */
  static open(
    tables: SqliteStore,
    databasePath: string,
    options: JournaledStoreOptions = {},
  ): JournaledSqliteStore {
    const { journal, records } = CommitJournal.open(databasePath, options.sync ?? true);
    try {
      const applied = tables.journalApplied();
      const store = new JournaledSqliteStore(
        tables,
        journal,
        DiskReserve.open(reservePathOf(databasePath)),
        applied,
        Math.max(applied, records[records.length - 1]?.seq ?? 0),
        options,
      );
      store.#waiting = recordsAfter(records, applied);
      for (const record of store.#waiting) store.#noteKeys(record.batch);
      // What the tables say they hold may be a round a crashed process committed without syncing.
      tables.syncJournaledWritesNow();
      store.#project();
      return store;
    } catch (error) {
      journal.close();
      throw error;
    }
  }

  /** Journals `batch` and makes it durable before it returns (the synchronous port). */
  commit(batch: CommitBatch): void {
    const form = this.#admit(batch);
    const seq = this.#seq + 1;
    this.#journal.append(seq, form);
    this.#seq = seq;
    this.#journaled(seq, form);
  }

  /**
   * Journals `batch`; resolves once it is durable. The sync runs on libuv's thread pool, so the
   * event loop reads and checks the next requests meanwhile. One commit at a time (the sequencer's
   * way): a second while one is pending is refused.
   */
  async commitAsync(batch: CommitBatch): Promise<void> {
    if (this.#syncing) throw new Error('a commit is already pending: commits are made one at a time');
    const form = this.#admit(batch);
    const seq = this.#seq + 1;
    const written = this.#journal.write(seq, form);
    this.#seq = seq;
    this.#syncing = true;
    try {
      const synced = this.#journal.sync(written);
      this.#pump();
      await synced;
    } catch (error) {
      this.#journal.abandon(written);
      this.#seq = seq - 1;
      throw error;
    } finally {
      this.#syncing = false;
    }
    this.#journaled(seq, form);
  }

  /**
   * The journal form of `batch`, when the tables take the waiting commits and the disk has room
   * kept for the next ones: a commit is acknowledged only when the tables can be given it later.
   */
  #admit(batch: CommitBatch): CommitBatch {
    if (this.#closed) throw new StoreUnavailableError('store unavailable: closed');
    if (this.#failure !== undefined) this.#project();
    this.#reserve.ensure();
    return journalForm(batch);
  }

  /** Commit `seq` is durable in the journal: it waits for the tables. */
  #journaled(seq: number, form: CommitBatch): void {
    this.#waiting.push({ seq, batch: form });
    this.#noteKeys(form);
    this.#draining = false;
    // Once commits stop coming, everything waiting is written (#idle).
    if (this.#timer === undefined) this.#timer = setTimeout(this.#idle, this.#idleMs).unref();
    else this.#timer.refresh();
    if (this.#behind()) this.#pump();
  }

  /**
   * More waiting than the sync windows write (a disk whose sync is too quick to hide them, or
   * synchronous commits): the tables are then written a few statements every turn.
   */
  #behind(): boolean {
    return this.#waiting.length >= BEHIND_ROUNDS * this.#projectEvery;
  }

  /**
   * Keeps the tables being written while a commit's sync is in flight (the event loop has nothing
   * else to do then but read requests), while behind, or once commits stopped coming (#idle): one
   * step per turn (#step).
   */
  #pump(): void {
    if (this.#scheduled !== undefined || this.#closed) return;
    const work =
      this.#round !== undefined || this.#waiting.length >= (this.#draining ? 1 : this.#projectEvery);
    if (work && (this.#syncing || this.#draining || this.#behind()))
      this.#scheduled = setImmediate(this.#step);
  }

  /**
   * One step of writing the waiting commits to the tables: a round (Round) starts once
   * `projectEvery` of them wait (any number once commits stopped coming), merged into one
   * transaction whose statements then run `statementsPerTurn` at a time, and commits when they
   * have all run. When the sync is over, the step waits for the next one: the replies of the
   * synced commit go first.
   */
  readonly #step = (): void => {
    this.#scheduled = undefined;
    if (!this.#syncing && !this.#draining && !this.#behind()) return;
    const round = this.#round;
    try {
      if (round === undefined) this.#startRound();
      else if (round.write.step(this.#statementsPerTurn)) {
        round.write.commit();
        this.#round = undefined;
        this.#roundWritten(round.count, round.lastSeq, false);
      }
    } catch {
      // Rolled back; the commits are still journaled and waiting. Written at once by the path
      // that handles a full disk and keeps the failure for the next read and commit to see.
      this.#round = undefined;
      this.#projectLater();
      return;
    }
    this.#pump();
  };

  /**
   * Starts a round with the commits waiting, when enough do. New commits go to the journal's other
   * file meanwhile, so this one is free once the round is written.
   */
  #startRound(): void {
    const last = this.#waiting[this.#waiting.length - 1];
    if (last === undefined || (!this.#draining && this.#waiting.length < this.#projectEvery)) return;
    const write = this.#tables.startJournaledWrite(mergeBatches(this.#waiting.map((r) => r.batch)), last.seq);
    this.#journal.turn(this.#durable);
    this.#round = { write, count: this.#waiting.length, lastSeq: last.seq };
  }

  /**
   * The first `count` waiting commits, up to number `lastSeq`, are in the tables: durably, or
   * once the log is synced (#syncTables).
   */
  #roundWritten(count: number, lastSeq: number, durable: boolean): void {
    this.#applied = lastSeq;
    if (durable) this.#durable = lastSeq;
    else this.#syncTables();
    this.#waiting = this.#waiting.slice(count);
    this.#waitingKeys.clear();
    for (const record of this.#waiting) this.#noteKeys(record.batch);
    if (this.#waiting.length === 0) this.#draining = false;
    this.#clearWhenDurable();
  }

  /** Syncs the tables' log (off the event loop); then what the tables held before is durable. */
  #syncTables(): void {
    if (this.#tablesSyncing) {
      this.#tablesSyncAgain = true;
      return;
    }
    const target = this.#applied;
    this.#tablesSyncing = true;
    this.#tables.syncJournaledWrites().then(
      () => {
        this.#tablesSyncing = false;
        if (target > this.#durable) this.#durable = target;
        this.#again();
        this.#clearWhenDurable();
      },
      () => {
        // Not durable yet: they stay in the journal, and the next round's sync tries again.
        this.#tablesSyncing = false;
        this.#again();
      },
    );
  }

  #again(): void {
    if (!this.#tablesSyncAgain || this.#closed) return;
    this.#tablesSyncAgain = false;
    this.#syncTables();
  }

  /**
   * Starts the journal over once every commit in it is durably in the tables. A record being
   * synced stays: it is not in the tables yet.
   */
  #clearWhenDurable(): void {
    if (
      this.#waiting.length === 0 &&
      !this.#syncing &&
      this.#round === undefined &&
      this.#durable >= this.#seq
    )
      this.#journal.clear();
  }

  /** Commits the round in progress, if any, at once: before anything else uses the connection. */
  #finishRound(): void {
    const round = this.#round;
    if (round === undefined) return;
    this.#round = undefined;
    if (this.#scheduled !== undefined) clearImmediate(this.#scheduled);
    this.#scheduled = undefined;
    try {
      round.write.commit();
    } catch {
      // Rolled back: its commits still wait, for #project (which reports why it fails).
      return;
    }
    this.#roundWritten(round.count, round.lastSeq, false);
  }

  #noteKeys(form: CommitBatch): void {
    for (const record of form.idempotencyKeys ?? [])
      this.#waitingKeys.set(idempotencyId(record.userId, record.key), record);
  }

  /**
   * Commits stopped coming for a while (unless one is being synced): everything waiting is
   * written, still a round at a time, a few statements per turn, in case they start again.
   */
  readonly #idle = (): void => {
    if (this.#syncing) {
      this.#timer?.refresh();
      return;
    }
    this.#draining = true;
    this.#pump();
  };

  readonly #projectLater = (): void => {
    try {
      this.#project();
    } catch {
      // Kept in #failure: the next read reports it, the next commit tries again.
    }
  };

  /** Writes every waiting journaled commit to the tables; throws when they refuse. */
  #project(): void {
    this.#finishRound();
    if (this.#scheduled !== undefined) clearImmediate(this.#scheduled);
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#scheduled = undefined;
    this.#timer = undefined;
    const last = this.#waiting[this.#waiting.length - 1];
    if (last === undefined || this.#closed) return;
    const merged = mergeBatches(this.#waiting.map((r) => r.batch));
    try {
      try {
        this.#tables.commitJournaled(merged, last.seq);
      } catch (error) {
        // The disk filled up: the room kept for this is given back, and the commits written with
        // it; new ones are refused until the room can be kept again (#admit).
        if (!isDiskFull(error) || !this.#reserve.release()) throw error;
        this.#tables.commitJournaled(merged, last.seq);
      }
    } catch (error) {
      this.#failure = error;
      this.#timer = setTimeout(this.#projectLater, RETRY_MS).unref();
      throw error;
    }
    this.#failure = undefined;
    // Synced (the configured way), and with it every round committed before.
    this.#roundWritten(this.#waiting.length, last.seq, true);
  }

  /**
   * `read` of the tables with every acknowledged commit; while the tables refuse the waiting
   * ones, `read` of the tables as they are, with `add` putting the waiting commits on top
   * (without `add`: as the tables are).
   */
  #orWaiting<T>(read: (tables: SqliteStore) => T, add?: (fromTables: T, waiting: CommitBatch) => T): T {
    try {
      return read(this.#fresh());
    } catch (error) {
      if (!(error instanceof StoreUnavailableError) || this.#waiting.length === 0) throw error;
      const fromTables = read(this.#tables);
      return add === undefined
        ? fromTables
        : add(fromTables, mergeBatches(this.#waiting.map((r) => r.batch)));
    }
  }

  /** The tables with every acknowledged commit: what each read of committed state reads. */
  #fresh(): SqliteStore {
    this.#project();
    return this.#tables;
  }

  loadSnapshot(): EngineSnapshot {
    return this.#orWaiting((tables) => tables.loadSnapshot(), overlaySnapshot);
  }
  // What the sequencer reloads after a failed commit (with the snapshot): answered from the
  // tables and the waiting commits while the tables refuse those, so commands can be refused
  // from exactly the acknowledged state. The read models (recent trades, candles) may then lag.
  loadBookSequences(): BookSequence[] {
    return this.#orWaiting(
      (tables) => tables.loadBookSequences(),
      (sequences, merged) => {
        const byMarket = new Map(sequences.map((s) => [s.marketId, s]));
        for (const s of merged.bookSequences ?? []) byMarket.set(s.marketId, s);
        return [...byMarket.values()].sort((a, b) => a.marketId - b.marketId);
      },
    );
  }
  loadLedgerReferences(): LedgerEntry[] {
    return this.#orWaiting(
      (tables) => tables.loadLedgerReferences(),
      (entries, merged) => [...entries, ...merged.ledger],
    );
  }
  findLedgerEntry(userId: UserId, kind: LedgerKind, reference: string) {
    return this.#fresh().findLedgerEntry(userId, kind, reference);
  }
  /**
   * Asked before every order placed under an Idempotency-Key: answered from the waiting commits'
   * records (the newest), then from the tables, without writing the waiting commits to them (a
   * record they hold is never older than one in the tables).
   */
  findIdempotencyRecord(userId: UserId, key: string): IdempotencyRecord | undefined {
    return (
      this.#waitingKeys.get(idempotencyId(userId, key)) ?? this.#tables.findIdempotencyRecord(userId, key)
    );
  }
  loadCommandReceipts(notBefore: number) {
    return this.#fresh().loadCommandReceipts(notBefore);
  }
  getOrder(id: OrderId): OrderState | undefined {
    try {
      return this.#fresh().getOrder(id);
    } catch (error) {
      if (!(error instanceof StoreUnavailableError)) throw error;
      for (let i = this.#waiting.length - 1; i >= 0; i--) {
        const order = this.#waiting[i]?.batch.changes.orders.find((o) => o.id === id);
        if (order !== undefined) return order;
      }
      return this.#tables.getOrder(id);
    }
  }
  findOrderByClientId(userId: UserId, clientOrderId: string) {
    return this.#fresh().findOrderByClientId(userId, clientOrderId);
  }
  listOrders(filter: OrderFilter, page?: Page) {
    return this.#fresh().listOrders(filter, page);
  }
  countOrders(filter: OrderFilter) {
    return this.#fresh().countOrders(filter);
  }
  tradesOfOrders(ids: readonly OrderId[]) {
    return this.#fresh().tradesOfOrders(ids);
  }
  getUserTrade(userId: UserId, id: TradeId) {
    return this.#fresh().getUserTrade(userId, id);
  }
  listUserTrades(filter: TradeFilter, page?: Page) {
    return this.#fresh().listUserTrades(filter, page);
  }
  countUserTrades(filter: TradeFilter) {
    return this.#fresh().countUserTrades(filter);
  }
  listPublicTrades(filter: PublicTradeFilter) {
    return this.#orWaiting((tables) => tables.listPublicTrades(filter));
  }
  listCandles(
    marketId: MarketId,
    interval: Interval,
    since: number,
    limit: number,
    keep?: CandleEnd,
  ): Candle[] {
    return this.#orWaiting((tables) => tables.listCandles(marketId, interval, since, limit, keep));
  }
  latestCandles(marketId: MarketId): Candle[] {
    return this.#orWaiting(
      (tables) => tables.latestCandles(marketId),
      (latest, merged) => overlayLatestCandles(latest, merged, marketId),
    );
  }

  // Credentials are not part of the group commits: read and written directly (a write after the
  // round in progress is committed: it must not join that round's transaction).
  createUser(email: string | null, time: Micros) {
    this.#finishRound();
    return this.#tables.createUser(email, time);
  }
  getUser(id: UserId) {
    return this.#tables.getUser(id);
  }
  listUsers() {
    return this.#tables.listUsers();
  }
  createApiKey(record: NewApiKeyRecord): void {
    this.#finishRound();
    this.#tables.createApiKey(record);
  }
  getApiKey(key: string) {
    return this.#tables.getApiKey(key);
  }
  cachedApiKey(key: string) {
    return this.#tables.cachedApiKey(key);
  }
  listApiKeys(userId: UserId) {
    return this.#tables.listApiKeys(userId);
  }
  revokeApiKey(key: string, time: Micros): boolean {
    this.#finishRound();
    return this.#tables.revokeApiKey(key, time);
  }
  acceptNonce(key: string, nonce: string): boolean {
    this.#finishRound();
    return this.#tables.acceptNonce(key, nonce);
  }

  // A checkpoint copies the committed state: every journaled commit first.
  saveCheckpoint(name: string, time: Micros): CheckpointInfo {
    return this.#fresh().saveCheckpoint(name, time);
  }
  restoreCheckpoint(name: string): void {
    this.#fresh().restoreCheckpoint(name);
  }
  listCheckpoints(): CheckpointInfo[] {
    return this.#tables.listCheckpoints();
  }
  deleteCheckpoint(name: string): boolean {
    this.#finishRound();
    return this.#tables.deleteCheckpoint(name);
  }

  /** Writes the waiting commits to the tables (they stay journaled if that fails), then closes. */
  close(): void {
    if (this.#closed) return;
    try {
      this.#project();
      if (this.#durable < this.#applied) this.#tables.syncJournaledWritesNow();
    } catch {
      // They stay in the journal: the next open writes them to the tables.
    } finally {
      this.#closed = true;
      this.#journal.close();
      this.#tables.close();
    }
  }
}

export const reservePathOf = (databasePath: string): string => `${databasePath}.reserve`;

const isDiskFull = (error: unknown): boolean =>
  error instanceof StoreUnavailableError && error.reason === 'disk full';

const idempotencyId = (userId: UserId, key: string): string => `${userId}\u0000${key}`;

/** The records numbered after `applied`, which must follow it without a gap. */
function recordsAfter(records: readonly JournalRecord[], applied: number): JournalRecord[] {
  const missing = records.filter((r) => r.seq > applied);
  missing.forEach((record, i) => {
    if (record.seq !== applied + i + 1)
      throw new Error(
        `the commit journal does not follow the database: its tables hold commits up to ${applied}, the journal's next is ${record.seq}. ` +
          'If the database was replaced (a backup restored), delete its old journal (openspot.db.commits and openspot.db.commits2) and start again',
      );
  });
  return missing;
}
