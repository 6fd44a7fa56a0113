/**
 * A small HTTP client for tests that drive a real server over the network: signed /v1 requests
 * (the interface's X-API-Key / X-API-Sign over the exact bytes sent), the admin API, and a
 * classification of failures that tells "no answer" (the request may or may not have been
 * applied) from an answer.
 */
import { signRequest } from '../../src/client/sign.js';
import { ADMIN_TOKEN } from './server-process.js';

export interface Trader {
  readonly userId: number;
  readonly apiKey: string;
  readonly apiSecret: string;
}

export interface Answer {
  readonly status: number;
  readonly headers: Headers;
  readonly text: string;
}

/** A response, or `undefined` when none arrived (connection refused, reset, closed mid-answer). */
export async function request(
  url: string,
  init: { method: string; headers?: Record<string, string>; body?: string; timeoutMs?: number },
): Promise<Answer | undefined> {
  try {
    const response = await fetch(url, {
      method: init.method,
      headers: init.headers,
      body: init.body,
      signal: AbortSignal.timeout(init.timeoutMs ?? 30_000),
    });
    // The body is part of the answer: a connection cut while it streams is "no answer".
    const text = await response.text();
    return { status: response.status, headers: response.headers, text };
  } catch (error) {
    if (isNoAnswer(error)) return undefined;
    throw error;
  }
}

function isNoAnswer(error: unknown): boolean {
  // undici reports every transport failure as TypeError('fetch failed', { cause }).
  if (error instanceof TypeError && error.message === 'fetch failed') return true;
  if (error instanceof Error && (error.name === 'TimeoutError' || error.name === 'AbortError')) return true;
  const code = (error as { code?: string } | undefined)?.code;
  return code === 'ECONNRESET' || code === 'ECONNREFUSED' || code === 'UND_ERR_SOCKET' || code === 'EPIPE';
}

/** A signed private /v1 request; `body` (an object) is serialized once and that text is signed. */
export function signed(
  base: string,
  trader: Trader,
  method: string,
  path: string,
  body?: unknown,
): Promise<Answer | undefined> {
  const text = body === undefined ? '' : JSON.stringify(body);
  return request(`${base}/v1${path}`, {
    method,
    headers: {
      'x-api-key': trader.apiKey,
      'x-api-sign': signRequest(method, text, trader.apiSecret),
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    ...(body === undefined ? {} : { body: text }),
  });
}

export async function admin(
  base: string,
  method: string,
  path: string,
  body?: unknown,
): Promise<{ status: number; body: unknown }> {
  const answer = await request(`${base}/admin/v1${path}`, {
    method,
    headers: {
      authorization: `Bearer ${ADMIN_TOKEN}`,
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  if (answer === undefined) throw new Error(`admin ${method} ${path}: no answer`);
  return { status: answer.status, body: answer.text === '' ? null : (JSON.parse(answer.text) as unknown) };
}

/** A new user with a read+trade key, funded through idempotent deposits (asset → decimal string). */
export async function provisionTrader(
  base: string,
  label: string,
  funds: Readonly<Record<string, string>>,
): Promise<Trader> {
  const user = await admin(base, 'POST', '/users', { email: `${label}@crash.test` });
  if (user.status !== 201) throw new Error(`create user: ${user.status} ${JSON.stringify(user.body)}`);
  const userId = (user.body as { id: number }).id;
  const key = await admin(base, 'POST', `/users/${userId}/api-keys`, { scopes: ['read', 'trade'] });
  if (key.status !== 201) throw new Error(`create key: ${key.status} ${JSON.stringify(key.body)}`);
  const { api_key, api_secret } = key.body as { api_key: string; api_secret: string };
  for (const [asset, amount] of Object.entries(funds)) {
    const r = await admin(base, 'POST', `/users/${userId}/deposits`, {
      asset,
      amount,
      reference: `${label}-${asset}`,
    });
    if (r.status !== 201 && r.status !== 200)
      throw new Error(`deposit: ${r.status} ${JSON.stringify(r.body)}`);
  }
  return { userId, apiKey: api_key, apiSecret: api_secret };
}

export interface MarketInfo {
  readonly id: number;
  readonly base: string;
  readonly quote: string;
  /** `BTC/EUR` */
  readonly pair: string;
  readonly pairDecimals: number;
  readonly lotDecimals: number;
}

export async function markets(base: string): Promise<MarketInfo[]> {
  const r = await admin(base, 'GET', '/markets');
  if (r.status !== 200) throw new Error(`markets: ${r.status}`);
  return marketInfos(r.body);
}

/** The markets of an admin `GET /markets` answer's body (whichever admin API answered it). */
export function marketInfos(body: unknown): MarketInfo[] {
  return (
    body as {
      data: { id: number; base: string; quote: string; pair_decimals: number; lot_decimals: number }[];
    }
  ).data.map((m) => ({
    id: m.id,
    base: m.base,
    quote: m.quote,
    pair: `${m.base}/${m.quote}`,
    pairDecimals: m.pair_decimals,
    lotDecimals: m.lot_decimals,
  }));
}

/** Runs `task` over `items` with at most `concurrency` at a time; results in input order. */
export async function mapLimit<T, R>(
  items: readonly T[],
  concurrency: number,
  task: (item: T) => Promise<R>,
): Promise<R[]> {
  const results: R[] = new Array(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const i = next++;
      results[i] = await task(items[i]!);
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, items.length) }, worker));
  return results;
}

/** Integer units (as a bigint) of a decimal string with at most `decimals` fraction digits. */
export function toUnits(text: string, decimals: number): bigint {
  const match = /^(-?)(\d+)(?:\.(\d+))?$/.exec(text);
  if (match === null) throw new Error(`not a decimal: ${text}`);
  const fraction = match[3] ?? '';
  if (fraction.length > decimals && !/^0*$/.test(fraction.slice(decimals)))
    throw new Error(`${text} has more than ${decimals} decimals`);
  const units = BigInt(match[2]! + fraction.slice(0, decimals).padEnd(decimals, '0'));
  return match[1] === '-' ? -units : units;
}

/** The decimal string of integer units. */
export function fromUnits(units: bigint | number, decimals: number): string {
  const value = BigInt(units);
  const negative = value < 0n;
  const digits = (negative ? -value : value).toString().padStart(decimals + 1, '0');
  const text = decimals === 0 ? digits : `${digits.slice(0, -decimals)}.${digits.slice(-decimals)}`;
  return negative ? `-${text}` : text;
}

/** mulberry32: a small seeded generator, so a failing run can be repeated with its seed. */
export function seededRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
