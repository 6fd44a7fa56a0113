/**
 * The one-writer rule. The process that runs the engine holds a session-level advisory lock on a
 * dedicated connection for as long as its store is open, and writes engine state only through
 * that connection: should the connection drop, the lock goes with it and so does the ability to
 * write. A second engine pointed at the same database fails to take the lock and refuses to open,
 * naming the holder as `pg_stat_activity` shows it (its `application_name`).
 */
import { createHash } from 'node:crypto';
import { hostname } from 'node:os';
import { setTimeout as delay } from 'node:timers/promises';
import type { ClientBase } from 'pg';

/** A signed 64-bit key derived from a name, as `pg_try_advisory_lock(bigint)` takes it (decimal text). */
export function lockKey(name: string): string {
  const digest = createHash('sha256').update(name).digest();
  return digest.readBigInt64BE(0).toString();
}

/** The writer's lock: one per database (advisory locks are scoped to the database). */
export const WRITER_LOCK_KEY = lockKey('openspot');
/** Serializes migrators (transaction-level), distinct from the writer lock. */
export const MIGRATION_LOCK_KEY = lockKey('openspot migrations');

/** How this process names itself to PostgreSQL (at most 63 bytes are kept). */
export const engineApplicationName = (): string => `openspot engine pid=${process.pid} host=${hostname()}`;
export const readerApplicationName = (): string => `openspot reader pid=${process.pid} host=${hostname()}`;

export class WriterLockHeldError extends Error {
  override readonly name = 'WriterLockHeldError';
}

/** pg_locks shows a bigint advisory key as classid (high 32 bits) and objid (low 32 bits), objsubid 1. */
function lockParts(key: string): [string, string] {
  const unsigned = BigInt.asUintN(64, BigInt(key));
  return [(unsigned >> 32n).toString(), (unsigned & 0xffff_ffffn).toString()];
}

/** Who holds the lock, as PostgreSQL sees them; undefined when nobody does (or we may not see). */
export async function lockHolder(
  client: Pick<ClientBase, 'query'>,
  key: string,
): Promise<string | undefined> {
  const [classid, objid] = lockParts(key);
  const result = await client.query<{
    pid: number;
    application_name: string | null;
    client_addr: string | null;
    backend_start: Date | null;
  }>(
    `SELECT a.pid, a.application_name, host(a.client_addr) AS client_addr, a.backend_start
     FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
     WHERE l.locktype = 'advisory' AND l.granted AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
       AND l.classid = $1::oid AND l.objid = $2::oid AND l.objsubid = 1`,
    [classid, objid],
  );
  const row = result.rows[0];
  if (row === undefined) return undefined;
  const name =
    row.application_name !== null && row.application_name !== '' ? row.application_name : 'an unnamed client';
  const from = row.client_addr !== null ? ` from ${row.client_addr}` : '';
  const since = row.backend_start !== null ? `, connected since ${row.backend_start.toISOString()}` : '';
  return `${name} (server process ${row.pid}${from}${since})`;
}

/** Takes the writer lock on `client` (undefined) or names who holds it, in one attempt. */
async function tryWriterLock(client: Pick<ClientBase, 'query'>): Promise<string | undefined> {
  const result = await client.query<{ locked: boolean }>(
    'SELECT pg_try_advisory_lock($1::bigint) AS locked',
    [WRITER_LOCK_KEY],
  );
  if (result.rows[0]?.locked === true) return undefined;
  return (await lockHolder(client, WRITER_LOCK_KEY)) ?? 'another process (not visible to this role)';
}

/**
 * Takes the writer lock on `client` (kept for the session) or throws WriterLockHeldError naming
 * the holder. Never waits: a second writer must fail at once, not queue behind the first.
 */
export async function acquireWriterLock(client: Pick<ClientBase, 'query'>, database: string): Promise<void> {
  const holder = await tryWriterLock(client);
  if (holder === undefined) return;
  throw new WriterLockHeldError(
    `PostgreSQL database ${database} already has a writer: ${holder}. ` +
      'Only one OpenSpot engine may write to a database; stop that one first.',
  );
}

export interface LockWaitOptions {
  /** Stops the wait: the promise rejects with the signal's reason (an AbortError by default). */
  readonly signal?: AbortSignal | undefined;
  /** Between two attempts, in milliseconds (default 200). */
  readonly pollMs?: number | undefined;
  /** Told who holds the lock: once when the wait starts, and again only if the holder changes. */
  readonly onWait?: ((holder: string) => void) | undefined;
}

export const DEFAULT_LOCK_POLL_MS = 200;

/**
 * Takes the writer lock on `client`, waiting while another engine has it (a standby). Polls
 * `pg_try_advisory_lock` rather than blocking in `pg_advisory_lock`: each attempt is a short
 * statement, so a connection of ours that died is noticed at the next attempt (not hours later,
 * inside a statement that never returns), an abort needs no cancel request to the server, and the
 * holder can be named while we wait. The price is at most `pollMs` added to a failover.
 */
export async function waitForWriterLock(
  client: Pick<ClientBase, 'query'>,
  options: LockWaitOptions = {},
): Promise<void> {
  const pollMs = options.pollMs ?? DEFAULT_LOCK_POLL_MS;
  if (!(pollMs > 0) || !Number.isFinite(pollMs)) throw new RangeError(`invalid pollMs: ${pollMs}`);
  const { signal } = options;
  let told: string | undefined;
  for (;;) {
    signal?.throwIfAborted();
    const holder = await tryWriterLock(client);
    if (holder === undefined) return;
    // Named by application name and server process: a reconnect of the same engine is a new holder.
    if (holder !== told) {
      told = holder;
      options.onWait?.(holder);
    }
    // Node's abortable timer rejects with an AbortError; the promised rejection is the signal's reason.
    await delay(pollMs, undefined, signal === undefined ? {} : { signal }).catch(() => {
      throw signal?.reason;
    });
  }
}
