/**
 * Shared pieces of the fuzz tests (test code only): a raw HTTP client on `node:http` that sends
 * exactly what it is given (duplicate headers, raw paths, arbitrary body bytes), a raw TCP client
 * for what `node:http` refuses to send at all, the interface's error shapes as predicates, seeds,
 * and a few arbitraries shared by both files. Every wait is bounded.
 */
import { Agent, type IncomingHttpHeaders, type OutgoingHttpHeaders, request } from 'node:http';
import { connect } from 'node:net';
import fc from 'fast-check';

// ---------------------------------------------------------------------------------------------
// Seeds and run counts.

/** Base seed of every property; FUZZ_SEED overrides it (each property adds its own offset). */
export const BASE_SEED = Number(process.env.FUZZ_SEED ?? 20_240_917);
/** Multiplies every property's run count (FUZZ_RUNS=10 for a long local session). */
export const RUN_FACTOR = Number(process.env.FUZZ_RUNS ?? 1);

/**
 * The time budget of a fuzz test that runs a property per endpoint (dozens of properties, each
 * a few hundred requests): minutes on a loaded machine, more with FUZZ_RUNS.
 */
export const ENDPOINTS_FUZZ_TIMEOUT_MS = Math.max(1, RUN_FACTOR) * 600_000;

/** fast-check parameters of one property: a fixed seed (printed by the caller) and bounded runs. */
export function fuzzParams(offset: number, runs: number): { seed: number; numRuns: number } {
  return { seed: BASE_SEED + offset, numRuns: Math.max(1, Math.round(runs * RUN_FACTOR)) };
}

// ---------------------------------------------------------------------------------------------
// Raw HTTP.

export interface RawResponse {
  readonly status: number;
  readonly headers: IncomingHttpHeaders;
  readonly text: string;
  /** The parsed body; undefined when it is empty or not JSON (`jsonError` says why). */
  readonly json: unknown;
  readonly jsonError: string | undefined;
}

export interface RawRequest {
  readonly method: string;
  /** Sent as is (node:http only refuses characters outside \u0021-\u00ff). */
  readonly path: string;
  readonly headers?: OutgoingHttpHeaders;
  readonly body?: Buffer | undefined;
  /** A fresh connection closed after the answer (for requests the server may answer early). */
  readonly fresh?: boolean;
  /** Sent with `Transfer-Encoding: chunked` instead of a Content-Length. */
  readonly chunked?: boolean;
}

/** One keep-alive connection at a time: requests of a property go one after the other. */
export const keepAlive = new Agent({ keepAlive: true, maxSockets: 4 });

export function parseBody(text: string): { json: unknown; jsonError: string | undefined } {
  if (text === '') return { json: undefined, jsonError: 'empty body' };
  try {
    return { json: JSON.parse(text) as unknown, jsonError: undefined };
  } catch (error) {
    return { json: undefined, jsonError: (error as Error).message };
  }
}

function once(base: URL, req: RawRequest, timeoutMs: number): Promise<RawResponse & { reused: boolean }> {
  return new Promise((resolve, reject) => {
    let settled = false;
    const outgoing = request(
      {
        host: base.hostname,
        port: Number(base.port),
        method: req.method,
        path: req.path,
        headers: {
          ...(req.fresh === true ? { connection: 'close' } : {}),
          ...req.headers,
          // Node frames a DELETE body only when told to: say chunked explicitly.
          ...(req.body === undefined
            ? {}
            : req.chunked === true
              ? { 'transfer-encoding': 'chunked' }
              : { 'content-length': String(req.body.length) }),
        },
        agent: req.fresh === true ? false : keepAlive,
        timeout: timeoutMs,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('error', (error) => {
          if (!settled) {
            settled = true;
            reject(error);
          }
        });
        res.on('end', () => {
          if (settled) return;
          settled = true;
          const text = Buffer.concat(chunks).toString('utf8');
          resolve({
            status: res.statusCode ?? 0,
            headers: res.headers,
            text,
            ...parseBody(text),
            reused: outgoing.reusedSocket,
          });
        });
      },
    );
    outgoing.on('timeout', () => outgoing.destroy(new Error(`no answer within ${timeoutMs} ms`)));
    outgoing.on('error', (error) => {
      // A server answering early (413) may close before the whole body was written: the answer
      // already arrived, or arrives on this same socket; only a request without answer fails.
      if (settled) return;
      if ((error as NodeJS.ErrnoException).code === 'EPIPE') return;
      settled = true;
      (error as Error & { reused?: boolean }).reused = outgoing.reusedSocket;
      reject(error);
    });
    if (req.body === undefined) outgoing.end();
    else outgoing.end(req.body);
  });
}

/**
 * Sends one request. A request that fails on a reused keep-alive socket (the server closed it
 * between two requests, e.g. after an early 413) is retried once on a fresh connection; any
 * other failure is a failure (the server must answer every request).
 */
export async function rawRequest(base: URL, req: RawRequest, timeoutMs = 10_000): Promise<RawResponse> {
  try {
    return await once(base, req, timeoutMs);
  } catch (error) {
    if ((error as { reused?: boolean }).reused !== true) throw error;
    return once(base, { ...req, fresh: true }, timeoutMs);
  }
}

export interface TcpResponse {
  readonly statusLine: string;
  readonly status: number | undefined;
  readonly headers: string;
  readonly body: string;
}

/**
 * Writes raw bytes on a fresh TCP connection and collects what comes back until the server
 * closes the connection (or `idleMs` pass without anything arriving, then we close it).
 */
export function rawTcp(base: URL, bytes: Buffer, idleMs = 400): Promise<TcpResponse> {
  return new Promise((resolve) => {
    const socket = connect(Number(base.port), base.hostname);
    socket.setNoDelay(true);
    const chunks: Buffer[] = [];
    let timer: NodeJS.Timeout | undefined;
    const arm = () => {
      clearTimeout(timer);
      timer = setTimeout(() => socket.destroy(), idleMs);
    };
    socket.on('connect', () => {
      socket.write(bytes, () => arm());
    });
    socket.on('data', (chunk: Buffer) => {
      chunks.push(chunk);
      arm();
    });
    socket.on('error', () => {});
    socket.on('close', () => {
      clearTimeout(timer);
      const text = Buffer.concat(chunks).toString('latin1');
      const end = text.indexOf('\r\n\r\n');
      const head = end === -1 ? text : text.slice(0, end);
      const statusLine = head.split('\r\n', 1)[0] ?? '';
      const match = /^HTTP\/1\.[01] (\d{3})/.exec(statusLine);
      resolve({
        statusLine,
        status: match === null ? undefined : Number(match[1]),
        headers: head,
        body: end === -1 ? '' : text.slice(end + 4),
      });
    });
    arm();
  });
}

// ---------------------------------------------------------------------------------------------
// Error shapes (spot-trading-interface.md, "Errors"), checked exactly: no extra fields.

const isRecord = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);
const keysAre = (v: Record<string, unknown>, keys: readonly string[]): boolean => {
  const own = Object.keys(v).sort();
  return own.length === keys.length && [...keys].sort().every((k, i) => own[i] === k);
};
const isStringArray = (v: unknown): v is string[] =>
  Array.isArray(v) && v.every((s) => typeof s === 'string');

export type Shape = 'A' | 'B' | 'C' | 'D' | 'E' | 'admin';

/** A: `{success:false, error:{message, code}}` with code = status. */
export function isShapeA(body: unknown, status: number): boolean {
  return (
    isRecord(body) &&
    keysAre(body, ['success', 'error']) &&
    body.success === false &&
    isRecord(body.error) &&
    keysAre(body.error, ['message', 'code']) &&
    typeof body.error.message === 'string' &&
    body.error.code === status
  );
}

/** B: `{success:false, error:{message, validations: string[], code}}` with code = status. */
export function isShapeB(body: unknown, status: number): boolean {
  return (
    isRecord(body) &&
    keysAre(body, ['success', 'error']) &&
    body.success === false &&
    isRecord(body.error) &&
    keysAre(body.error, ['message', 'validations', 'code']) &&
    typeof body.error.message === 'string' &&
    isStringArray(body.error.validations) &&
    body.error.validations.length > 0 &&
    body.error.code === status
  );
}

/** C: `{success:false, message, error:{message, code}}` with code = status. */
export function isShapeC(body: unknown, status: number): boolean {
  return (
    isRecord(body) &&
    keysAre(body, ['success', 'message', 'error']) &&
    body.success === false &&
    typeof body.message === 'string' &&
    isRecord(body.error) &&
    keysAre(body.error, ['message', 'code']) &&
    body.error.message === body.message &&
    body.error.code === status
  );
}

/** D: `{message, errors: {field: [string, …]}}`, at least one field, each with messages. */
export function isShapeD(body: unknown): boolean {
  return (
    isRecord(body) &&
    keysAre(body, ['message', 'errors']) &&
    typeof body.message === 'string' &&
    isRecord(body.errors) &&
    Object.keys(body.errors).length > 0 &&
    Object.values(body.errors).every((m) => isStringArray(m) && m.length > 0)
  );
}

/** E: `{error: string}`, optionally with an exact text. */
export function isShapeE(body: unknown, text?: string | RegExp): boolean {
  if (!isRecord(body) || !keysAre(body, ['error']) || typeof body.error !== 'string') return false;
  if (text === undefined) return true;
  return typeof text === 'string' ? body.error === text : text.test(body.error);
}

/** The admin API's errors: `{error:{code, message, field?}}`. */
export function isAdminError(body: unknown): boolean {
  if (!isRecord(body) || !keysAre(body, ['error']) || !isRecord(body.error)) return false;
  const e = body.error;
  const keysOk =
    keysAre(e, ['code', 'message']) ||
    keysAre(e, ['code', 'message', 'field']) ||
    // A reused deposit/withdrawal reference also shows the entry as recorded.
    (e.code === 'reference_conflict' &&
      keysAre(e, ['code', 'message', 'field', 'recorded']) &&
      isRecord(e.recorded) &&
      keysAre(e.recorded, ['kind', 'asset', 'amount', 'reference', 'time']));
  return (
    keysOk &&
    typeof e.code === 'string' &&
    typeof e.message === 'string' &&
    (e.field === undefined || typeof e.field === 'string')
  );
}

export const INVALID_REQUEST = 'Invalid request';
export const INVALID_SIGNATURE = 'Invalid Signature';
export const ACCESS_DENIED = 'Access Denied';
export const PAYLOAD_TOO_LARGE = 'Payload Too Large';

/** For assertion messages: what was sent and what came back, shortened. */
export function describeExchange(req: RawRequest, res: { status: number; text: string }): string {
  const body = req.body === undefined ? '' : req.body.toString('latin1');
  const short = (s: string, n: number) => (s.length > n ? `${s.slice(0, n)}…(${s.length})` : s);
  const headers = Object.fromEntries(
    Object.entries(req.headers ?? {}).map(([k, v]) => [k, short(String(v), 120)]),
  );
  return `${req.method} ${short(req.path, 300)} headers=${JSON.stringify(headers)} body=${JSON.stringify(
    short(body, 300),
  )} → ${res.status} ${short(res.text, 400)}`;
}

// ---------------------------------------------------------------------------------------------
// Shared arbitraries.

/** encodeURIComponent that never throws (lone surrogates are written as escaped UTF-8 of U+FFFD). */
export function encode(text: string): string {
  try {
    return encodeURIComponent(text);
  } catch {
    return encodeURIComponent(text.replace(/[\uD800-\uDFFF]/g, '\uFFFD'));
  }
}

const hex = (b: number) => b.toString(16).toUpperCase().padStart(2, '0');

/** Random bytes as percent escapes: mostly invalid UTF-8 once decoded. */
export const percentBytes = fc
  .uint8Array({ minLength: 1, maxLength: 6 })
  .map((bytes) => [...bytes].map((b) => `%${hex(b)}`).join(''));

/** Printable ASCII and Latin-1 (what node:http lets through in a header value). */
export const headerValue = (maxLength: number) =>
  fc.string({
    unit: fc
      .integer({ min: 0x20, max: 0xff })
      .filter((c) => c !== 0x7f)
      .map((c) => String.fromCharCode(c)),
    maxLength,
  });

/** Headers that change how a message is framed or answered at the protocol level: not fuzzed here. */
const FRAMING = new Set([
  'host',
  'content-length',
  'transfer-encoding',
  'connection',
  'expect',
  'upgrade',
  'te',
  'trailer',
  'keep-alive',
  'content-type',
]);

/** Header names (tokens), including the ones the server reads. */
export const headerName = fc.oneof(
  fc.stringMatching(/^[a-z][a-z0-9-]{0,24}$/).filter((name) => !FRAMING.has(name)),
  fc.constantFrom(
    'x-api-key',
    'x-api-sign',
    'accept',
    'accept-charset',
    'accept-encoding',
    'authorization',
    'x-forwarded-for',
    'x-forwarded-proto',
    'x-forwarded-host',
    'x-http-method-override',
    'origin',
    'cookie',
    'if-none-match',
    'range',
    'expect-ct',
    'x-request-id',
  ),
);

/** JSON text of deep nesting: `[[[…]]]` or `{"a":{"a":…}}`. */
export function deepJson(levels: number, kind: 'array' | 'object'): string {
  return kind === 'array'
    ? `${'['.repeat(levels)}${']'.repeat(levels)}`
    : `${'{"a":'.repeat(levels)}1${'}'.repeat(levels)}`;
}

/** JSON.stringify for values holding BigInts (the engine's audit). */
export const stableJson = (value: unknown): string =>
  JSON.stringify(value, (_key, v: unknown) => (typeof v === 'bigint' ? `${v}n` : v));

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
