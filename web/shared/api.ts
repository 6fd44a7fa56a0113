/**
 * A tiny fetch client for the pages: public and signed requests to the exchange's own origin
 * (relative URLs only, so a page never talks to another host), JSON in and out, and errors kept
 * whole so a form can show Laravel's per-field messages (shape D) next to its fields.
 */
import { createSigner } from './sign.js';

export const API_BASE = '/v1';

export interface Credentials {
  readonly apiKey: string;
  readonly apiSecret: string;
}

/** A non-2xx answer: the status and the parsed body, whatever its shape. */
export class ApiError extends Error {
  override readonly name = 'ApiError';
  constructor(
    readonly status: number,
    readonly body: unknown,
  ) {
    super(errorText(status, body));
  }

  /** Shape D's `errors` (field → messages); empty for other shapes. */
  get fieldErrors(): Readonly<Record<string, readonly string[]>> {
    const errors = (this.body as { errors?: unknown } | null)?.errors;
    return typeof errors === 'object' && errors !== null ? (errors as Record<string, string[]>) : {};
  }
}

/** The human message of any of the interface's error shapes (A to E). */
export function errorText(status: number, body: unknown): string {
  if (typeof body === 'object' && body !== null) {
    const b = body as { message?: unknown; error?: unknown };
    if (typeof b.message === 'string') return b.message;
    if (typeof b.error === 'string') return b.error;
    if (typeof b.error === 'object' && b.error !== null) {
      const inner = b.error as { message?: unknown; validations?: unknown };
      if (Array.isArray(inner.validations) && inner.validations.length > 0)
        return inner.validations.join(' ');
      if (typeof inner.message === 'string') return inner.message;
    }
  }
  return `HTTP ${status}`;
}

export type Query = Readonly<Record<string, string | number | readonly string[] | undefined>>;

export function queryString(query: Query | undefined): string {
  if (query === undefined) return '';
  const params = new URLSearchParams();
  for (const [name, value] of Object.entries(query)) {
    if (value === undefined) continue;
    if (Array.isArray(value)) for (const item of value) params.append(name, item);
    else params.append(name, String(value));
  }
  const text = params.toString();
  return text === '' ? '' : `?${text}`;
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

/** GET a public endpoint of the API; resolves with the parsed body, rejects with ApiError. */
export async function publicGet<T>(path: string, query?: Query, signal?: AbortSignal): Promise<T> {
  const response = await fetch(`${API_BASE}${path}${queryString(query)}`, {
    headers: { Accept: 'application/json' },
    signal,
  });
  const body = await parse(response);
  if (!response.ok) throw new ApiError(response.status, body);
  return body as T;
}

/** Signs requests for one API key; the secret stays in this object and WebCrypto's key. */
export class SignedClient {
  readonly #apiKey: string;
  readonly #signer: Promise<(method: string, body: string) => Promise<string>>;

  constructor(credentials: Credentials) {
    this.#apiKey = credentials.apiKey;
    this.#signer = createSigner(credentials.apiSecret);
  }

  get apiKey(): string {
    return this.#apiKey;
  }

  #nonce = 0n;

  /**
   * A `nonce` for the next signed body: microseconds since the epoch, and strictly above the last
   * one this page used. Keys created with `nonce_required` need one in every body (a reload keeps
   * counting up with the clock); other keys ignore it, so the page always sends one.
   */
  nextNonce(): string {
    const now = BigInt(Date.now()) * 1000n;
    this.#nonce = now > this.#nonce ? now : this.#nonce + 1n;
    return this.#nonce.toString();
  }

  /**
   * A signed request. The body is serialized once, and that very string is signed and sent
   * (the signature covers the exact bytes); `rawBody` sends a string already serialized.
   */
  async send(
    method: 'GET' | 'POST' | 'DELETE' | 'PATCH',
    path: string,
    options: { query?: Query; body?: unknown; rawBody?: string; headers?: Record<string, string> } = {},
  ): Promise<{ status: number; body: unknown; headers: Headers }> {
    const body = options.rawBody ?? (options.body === undefined ? '' : JSON.stringify(options.body));
    const sign = await this.#signer;
    const headers: Record<string, string> = {
      ...options.headers,
      Accept: 'application/json',
      'X-API-Key': this.#apiKey,
      'X-API-Sign': await sign(method, body),
    };
    if (body !== '') headers['Content-Type'] = 'application/json';
    const response = await fetch(`${API_BASE}${path}${queryString(options.query)}`, {
      method,
      headers,
      ...(body === '' ? {} : { body }),
    });
    const parsed = await parse(response);
    if (!response.ok) throw new ApiError(response.status, parsed);
    return { status: response.status, body: parsed, headers: response.headers };
  }

  /** A signed request answered with JSON: the parsed body. */
  async request<T>(
    method: 'GET' | 'POST' | 'DELETE' | 'PATCH',
    path: string,
    options: { query?: Query; body?: unknown; rawBody?: string } = {},
  ): Promise<T> {
    return (await this.send(method, path, options)).body as T;
  }
}

/** The pages' own settings (src/http/pages.ts, GET /ui/config.json). */
export interface PageConfig {
  /** Pusher application key (public) of the exchange's WebSocket server. */
  readonly ws_app_key: string;
  /** Valuation currency of the wallet's `_in_fiat` fields. */
  readonly balance_currency: string;
  /** The demo account may be fetched by this client (development, loopback). */
  readonly demo_available: boolean;
}

export async function pageConfig(): Promise<PageConfig> {
  const response = await fetch('/ui/config.json', { headers: { Accept: 'application/json' } });
  const body = await parse(response);
  if (!response.ok) throw new ApiError(response.status, body);
  return body as PageConfig;
}
