/**
 * The console's only way to the server: the admin API (/admin/v1) with the admin token as the
 * bearer token, and /readyz. Relative URLs only (the page talks to its own origin). The token
 * lives in sessionStorage — it dies with the tab — and is sent nowhere but the Authorization
 * header: no cookie, no query string, no server-side session.
 */

import type { Static } from '@fastify/type-provider-typebox';
import type {
  ApiKeyCreatedSchema,
  ApiKeySchema,
  AssetSchema,
  BalanceSchema,
  HealthSchema,
  LedgerCheckSchema,
  LedgerResultSchema,
  MarketSchema,
  UserSchema,
} from '../../src/admin/schemas.js';

const TOKEN_KEY = 'openspot.admin-token';
export const ADMIN_BASE = '/admin/v1';

export function storedToken(): string | null {
  try {
    return sessionStorage.getItem(TOKEN_KEY);
  } catch {
    return null;
  }
}

export function storeToken(token: string | null): void {
  try {
    if (token === null) sessionStorage.removeItem(TOKEN_KEY);
    else sessionStorage.setItem(TOKEN_KEY, token);
  } catch {
    // Storage refused (private mode quotas): the token then lives in memory only.
  }
}

/** A deposit or withdrawal as the server recorded it (a reference conflict carries one). */
export interface RecordedEntry {
  readonly kind: 'deposit' | 'withdraw';
  readonly asset: string;
  readonly amount: string;
  readonly reference: string | null;
  readonly time: string;
}

/** A non-2xx answer of the admin API: `{"error": {"code", "message", "field"?, "recorded"?}}`. */
export class AdminError extends Error {
  override readonly name = 'AdminError';
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly field: string | undefined,
    readonly recorded: RecordedEntry | undefined,
  ) {
    super(message);
  }

  static of(status: number, body: unknown): AdminError {
    const error = (body as { error?: unknown } | null)?.error;
    if (typeof error === 'object' && error !== null) {
      const e = error as { code?: unknown; message?: unknown; field?: unknown; recorded?: unknown };
      return new AdminError(
        status,
        typeof e.code === 'string' ? e.code : 'error',
        typeof e.message === 'string' ? e.message : `HTTP ${status}`,
        typeof e.field === 'string' ? e.field : undefined,
        typeof e.recorded === 'object' && e.recorded !== null ? (e.recorded as RecordedEntry) : undefined,
      );
    }
    const text = typeof error === 'string' ? error : `The server answered HTTP ${status}.`;
    return new AdminError(status, 'error', text, undefined, undefined);
  }
}

async function parse(response: Response): Promise<unknown> {
  const text = await response.text();
  if (text === '') return null;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
  }
}

export interface Answer<T> {
  readonly status: number;
  readonly body: T;
}

export class AdminClient {
  readonly #token: string;
  /** Called on a 401: the token was refused (rotated, mistyped), so the console signs out. */
  readonly #onUnauthorized: () => void;

  constructor(token: string, onUnauthorized: () => void) {
    this.#token = token;
    this.#onUnauthorized = onUnauthorized;
  }

  /** One admin call; resolves with status and body on 2xx, rejects with AdminError otherwise. */
  async send<T>(method: 'GET' | 'POST' | 'DELETE', path: string, body?: unknown): Promise<Answer<T>> {
    const headers: Record<string, string> = {
      Accept: 'application/json',
      Authorization: `Bearer ${this.#token}`,
    };
    if (body !== undefined) headers['Content-Type'] = 'application/json';
    let response: Response;
    try {
      response = await fetch(`${ADMIN_BASE}${path}`, {
        method,
        headers,
        cache: 'no-store',
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
    } catch {
      throw new AdminError(0, 'network', 'The server could not be reached.', undefined, undefined);
    }
    const parsed = await parse(response);
    if (response.status === 401) this.#onUnauthorized();
    if (!response.ok) throw AdminError.of(response.status, parsed);
    return { status: response.status, body: parsed as T };
  }

  async get<T>(path: string): Promise<T> {
    return (await this.send<T>('GET', path)).body;
  }
}

/** /readyz needs no token; it answers 200 or 503 with `{status}`. */
export async function readiness(): Promise<{ ready: boolean; status: string }> {
  try {
    const response = await fetch('/readyz', { cache: 'no-store', headers: { Accept: 'application/json' } });
    const body = (await parse(response)) as { status?: unknown } | null;
    return {
      ready: response.ok,
      status: typeof body?.status === 'string' ? body.status : `HTTP ${response.status}`,
    };
  } catch {
    return { ready: false, status: 'unreachable' };
  }
}

// The admin API's records: the very schemas its OpenAPI entries are generated from
// (src/admin/schemas.ts), so the console and the document cannot drift apart. Type-only imports:
// nothing of the server reaches the bundle.
export type Asset = Static<typeof AssetSchema>;
export type Market = Static<typeof MarketSchema>;
export type User = Static<typeof UserSchema>;
export type ApiKey = Static<typeof ApiKeySchema>;
export type ApiKeyCreated = Static<typeof ApiKeyCreatedSchema>;
export type Balance = Static<typeof BalanceSchema>;
export type LedgerResult = Static<typeof LedgerResultSchema>;
export type LedgerCheck = Static<typeof LedgerCheckSchema>;
export type Health = Static<typeof HealthSchema>;
