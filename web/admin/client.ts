/**
 * The console's only way to the server: the admin API (/admin/v1) with the admin token as the
 * bearer token, and /readyz. Relative URLs only (the page talks to its own origin). The token
 * lives in sessionStorage — it dies with the tab — and is sent nowhere but the Authorization
 * header: no cookie, no query string, no server-side session.
 */

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

// The admin API's records (src/admin/schemas.ts).
export interface Asset {
  readonly code: string;
  readonly name: string;
  readonly type: 'crypto' | 'fiat';
  readonly decimals: number;
}
export interface Market {
  readonly id: number;
  readonly base: string;
  readonly quote: string;
  readonly altname: string;
  readonly wsname: string;
  readonly pair_decimals: number;
  readonly lot_decimals: number;
  readonly ordermin: string;
  readonly maker_fee: string;
  readonly taker_fee: string;
}
export interface User {
  readonly id: number;
  readonly email: string | null;
  readonly created_at: string;
}
export interface ApiKey {
  readonly api_key: string;
  readonly user_id: number;
  readonly scopes: readonly string[];
  readonly ip_allowlist: readonly string[] | null;
  readonly nonce_required: boolean;
  readonly created_at: string;
  readonly revoked_at: string | null;
}
export interface ApiKeyCreated {
  readonly api_key: string;
  readonly api_secret: string;
  readonly user_id: number;
  readonly scopes: readonly string[];
}
export interface Balance {
  readonly asset: string;
  readonly available: string;
  readonly reserved: string;
  readonly total: string;
}
export interface LedgerResult {
  readonly user_id: number;
  readonly asset: string;
  readonly amount: string;
  readonly reference: string | null;
  readonly duplicate: boolean;
  readonly time: string;
  readonly balance: Balance;
}
export interface LedgerCheck {
  readonly ok: boolean;
  readonly assets: readonly {
    readonly asset: string;
    readonly balances: string;
    readonly fees: string;
    readonly net_deposits: string;
    readonly difference: string;
    readonly negative_balances: number;
    readonly ok: boolean;
  }[];
}
export interface Health {
  readonly status: string;
  readonly uptime_seconds: number;
  readonly commits: {
    readonly count: number;
    readonly failures: number;
    readonly mean_ms: number | null;
    readonly p50_ms: number | null;
    readonly p95_ms: number | null;
    readonly p99_ms: number | null;
    readonly buckets: readonly { readonly le_ms: number | null; readonly count: number }[];
  };
  readonly websocket: {
    readonly connections: number;
    readonly subscriptions: number;
    readonly refused_per_ip: number;
    readonly refused_upgrade_rate: number;
  };
  readonly events: number;
  readonly memory: { readonly rss_bytes: number; readonly heap_used_bytes: number };
}
export interface List<T> {
  readonly data: readonly T[];
}
