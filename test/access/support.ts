/**
 * Helpers for the access-control tests: signed requests, replayable byte for byte.
 */
import { signRequest } from '../../src/client/sign.js';
import type { TestServer } from '../support/server-fixture.js';

export interface Credentials {
  readonly apiKey: string;
  readonly apiSecret: string;
}

export interface SignedRequest {
  readonly method: string;
  readonly path: string;
  readonly body: string;
  readonly headers: Record<string, string>;
}

/** A signed request, built once so the very same bytes and signature can be sent again. */
export function signed(
  who: Credentials,
  method: string,
  path: string,
  body: unknown = undefined,
  contentType = 'application/json',
): SignedRequest {
  const text = body === undefined ? '' : typeof body === 'string' ? body : JSON.stringify(body);
  return {
    method,
    path,
    body: text,
    headers: {
      accept: 'application/json',
      ...(text === '' ? {} : { 'content-type': contentType }),
      'x-api-key': who.apiKey,
      'x-api-sign': signRequest(method, text, who.apiSecret),
    },
  };
}

export interface Answer {
  readonly status: number;
  readonly retryAfter: string | null;
  readonly location: string | null;
  readonly body: unknown;
}

export async function send(t: Pick<TestServer, 'url'>, request: SignedRequest): Promise<Answer> {
  return answer(
    await fetch(`${t.url}${request.path}`, {
      method: request.method,
      headers: request.headers,
      body: request.body === '' ? undefined : request.body,
      signal: AbortSignal.timeout(10_000),
    }),
  );
}

export async function get(url: string, headers: Record<string, string> = {}): Promise<Answer> {
  return answer(await fetch(url, { headers, signal: AbortSignal.timeout(10_000) }));
}

async function answer(response: Response): Promise<Answer> {
  const text = await response.text();
  return {
    status: response.status,
    retryAfter: response.headers.get('retry-after'),
    location: response.headers.get('location'),
    body: text === '' ? null : (JSON.parse(text) as unknown),
  };
}

export const call = (
  t: Pick<TestServer, 'url'>,
  who: Credentials,
  method: string,
  path: string,
  body?: unknown,
) => send(t, signed(who, method, path, body));

export const limitOrder = (price: string, extra: Record<string, unknown> = {}) => ({
  order_direction: 'buy',
  order_type: 'limit',
  pair: 'BTC/EUR',
  volume: '0.001',
  price,
  ...extra,
});

/** Ids of the caller's open orders. */
export async function openOrderIds(t: Pick<TestServer, 'url'>, who: Credentials): Promise<number[]> {
  const r = await call(t, who, 'GET', '/v1/open-orders');
  if (r.status !== 200) throw new Error(`open-orders answered ${r.status}: ${JSON.stringify(r.body)}`);
  return (r.body as { data: { id: number }[] }).data.map((o) => o.id).sort((a, b) => a - b);
}

export const orderIdOf = (answer: Answer): number => {
  const match = /\/orders\/(\d+)$/.exec(answer.location ?? '');
  if (match === null) throw new Error(`no order id in ${JSON.stringify(answer)}`);
  return Number(match[1]);
};

/** A key for an existing user, created through the admin API with the given options. */
export async function createKey(
  t: TestServer,
  userId: number,
  options: Record<string, unknown>,
): Promise<Credentials & { view: Record<string, unknown> }> {
  const r = await t.admin('POST', `/users/${userId}/api-keys`, options);
  if (r.status !== 201) throw new Error(`key creation answered ${r.status}: ${JSON.stringify(r.body)}`);
  const view = r.body as Record<string, unknown>;
  return { apiKey: String(view.api_key), apiSecret: String(view.api_secret), view };
}

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
