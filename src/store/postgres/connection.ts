/**
 * Driver set-up shared by the store, the migrations and the CLI: the URL check, exact type
 * parsing, and which driver errors mean "the database is away" (StoreUnavailableError, answered
 * 503) rather than a bug or a constraint violation.
 */
import pg from 'pg';
import { StoreUnavailableError } from '../store.js';

export { databaseName, parseDatabaseUrl, redactUrl } from './url.js';

const INT8_OID = 20;
const NUMERIC_OID = 1700;

/**
 * bigint columns hold amounts the engine keeps as safe integers: read back as numbers, exactly,
 * or refused (a value beyond 2^53 - 1 cannot have been written by this code). numeric (candle
 * sums, nonces) stays decimal text, read as BigInt where needed. Per connection, not global: no
 * other user of the driver in the process is affected.
 */
export const EXACT_TYPES = {
  getTypeParser(oid: number, format?: 'text' | 'binary') {
    if (oid === INT8_OID && format !== 'binary') return parseSafeInteger;
    if (oid === NUMERIC_OID && format !== 'binary') return (text: string) => text;
    return pg.types.getTypeParser(oid, format ?? 'text');
  },
} as unknown as pg.CustomTypesConfig;

export interface ReadPoolSettings {
  readonly url: string;
  readonly applicationName: string;
  readonly size: number;
  readonly connectTimeoutMs: number;
}

/**
 * The pool of reads and credential writes, as both the engine's store and a gateway's reader open
 * it: exact types, TCP keep-alives, and an idle pooled connection that dies is discarded by the
 * pool (without an 'error' listener that event would end the process).
 */
export function openReadPool(settings: ReadPoolSettings): pg.Pool {
  const pool = new pg.Pool({
    connectionString: settings.url,
    application_name: settings.applicationName,
    max: settings.size,
    connectionTimeoutMillis: settings.connectTimeoutMs,
    keepAlive: true,
    types: EXACT_TYPES,
  });
  pool.on('error', () => undefined);
  return pool;
}

function parseSafeInteger(text: string): number {
  const value = Number(text);
  if (!Number.isSafeInteger(value))
    throw new RangeError(`bigint ${text} is beyond the exact range of numbers`);
  return value;
}

/**
 * SQLSTATE classes meaning the server or the connection is unavailable: 08 connection exception,
 * 53 insufficient resources (disk full, too many connections), 57P admin shutdown / crash /
 * cannot connect now, 58 system error (I/O), 40001/40P01 are not here: a serialization failure is
 * retried by nobody here and never happens in a single-writer commit.
 */
const UNAVAILABLE_SQLSTATE = /^(08|53|57P|58)/;
const UNAVAILABLE_NODE = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'EPIPE',
  'ETIMEDOUT',
  'ENOTFOUND',
  'EHOSTUNREACH',
  'EAI_AGAIN',
]);

/**
 * `ALTER DATABASE … ALLOW_CONNECTIONS false` (or `datallowconn` off): SQLSTATE 55000, a class
 * that otherwise means a caller's mistake, so it is recognised by its message as well.
 */
const NOT_ACCEPTING = /is not currently accepting connections/i;

export function isUnavailable(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  if (error instanceof StoreUnavailableError) return true;
  const code = (error as { code?: unknown }).code;
  // 08P01 (protocol violation) is a bug of the caller, not the database being away.
  if (code === '08P01') return false;
  if (code === '55000' && NOT_ACCEPTING.test(error.message)) return true;
  if (typeof code === 'string' && (UNAVAILABLE_SQLSTATE.test(code) || UNAVAILABLE_NODE.has(code)))
    return true;
  // The driver's own messages when the socket goes away or a pool wait times out.
  return /Connection terminated|connection timeout|Query read timeout|Client has encountered a connection error|not queryable|timeout exceeded when trying to connect/i.test(
    error.message,
  );
}

/** The error callers should see: an unreachable database becomes StoreUnavailableError. */
export function toStoreError(error: unknown): unknown {
  if (error instanceof StoreUnavailableError || !isUnavailable(error)) return error;
  const message = error instanceof Error ? error.message : String(error);
  return new StoreUnavailableError(`store unavailable: PostgreSQL: ${message}`, {
    cause: error,
    reason: postgresReason(error),
  });
}

/**
 * What /readyz says while PostgreSQL is away (StoreUnavailableError.reason): a fixed phrase per
 * kind of trouble, never the driver's message (which names hosts).
 */
export function postgresReason(error: unknown): string {
  const code = (error as { code?: unknown } | undefined)?.code;
  const message = error instanceof Error ? error.message : '';
  if (code === '55000' && NOT_ACCEPTING.test(message)) return 'database refuses connections';
  if (code === '53300') return 'database refuses connections (too many connections)';
  if (code === '53100') return 'database disk full';
  if (code === '57P03') return 'database starting up or shutting down';
  if (code === '57P01' || code === '57P02' || code === 'ECONNRESET' || code === 'EPIPE')
    return 'database connection lost';
  if (typeof code === 'string' && code.startsWith('58')) return 'database I/O error';
  if (typeof code === 'string' && UNAVAILABLE_NODE.has(code)) return 'database unreachable';
  if (/Connection terminated|Client has encountered a connection error|not queryable/i.test(message))
    return 'database connection lost';
  if (/timeout/i.test(message)) return 'database not answering';
  return 'database unavailable';
}

export async function guarded<T>(operation: () => Promise<T>): Promise<T> {
  try {
    return await operation();
  } catch (error) {
    throw toStoreError(error);
  }
}
