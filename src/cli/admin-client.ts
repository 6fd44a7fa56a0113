/** A small HTTP client for the admin API, used by the CLI. */
import { existsSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';

interface ErrorDetail {
  readonly message?: string;
  readonly field?: string;
  /** A reference conflict's entry as recorded (see the admin API's ledger routes). */
  readonly recorded?: { kind?: string; asset?: string; amount?: string; reference?: string; time?: string };
}

export class AdminApiError extends Error {
  constructor(
    readonly status: number,
    readonly body: unknown,
  ) {
    const detail = (body as { error?: ErrorDetail } | null)?.error;
    const r = detail?.recorded;
    super(
      detail?.message
        ? `${detail.message}${detail.field ? ` (${detail.field})` : ''}${
            r ? `\nrecorded: ${r.kind} of ${r.amount} ${r.asset}, reference ${r.reference}, at ${r.time}` : ''
          }`
        : `HTTP ${status}`,
    );
  }
}

export interface AdminTarget {
  readonly url: string;
  readonly token: string;
}

/** URL from --url, OPENSPOT_URL or the default; token from --token, ADMIN_TOKEN or DATA_DIR/admin-token. */
export function resolveTarget(
  opts: { url?: string; token?: string; dataDir?: string },
  env = process.env,
): AdminTarget {
  const url = (opts.url ?? env.OPENSPOT_URL ?? `http://127.0.0.1:${env.PORT ?? 8080}`).replace(/\/+$/, '');
  let token = opts.token ?? env.ADMIN_TOKEN;
  if (token === undefined || token === '') {
    const file = join(resolve(opts.dataDir ?? env.DATA_DIR ?? './data'), 'admin-token');
    if (!existsSync(file))
      throw new Error(`No admin token: pass --token, set ADMIN_TOKEN, or run where ${file} exists.`);
    token = readFileSync(file, 'utf8').trim();
  }
  return { url, token };
}

export async function adminRequest(
  target: AdminTarget,
  method: string,
  path: string,
  body?: unknown,
): Promise<unknown> {
  let response: Response;
  try {
    response = await fetch(`${target.url}/admin/v1${path}`, {
      method,
      headers: {
        authorization: `Bearer ${target.token}`,
        accept: 'application/json',
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  } catch (error) {
    throw unreachable(target.url, error);
  }
  const text = await response.text();
  const parsed: unknown = text === '' ? null : JSON.parse(text);
  if (!response.ok) throw new AdminApiError(response.status, parsed);
  return parsed;
}

/** How to point the CLI at a server, said whenever it could not reach one. */
export const URL_HINT =
  'Is the server running there? Pass --url URL or set OPENSPOT_URL (the default is http://127.0.0.1:$PORT, PORT defaulting to 8080).';

/**
 * fetch says only "fetch failed": the error names the URL tried, the reason (ECONNREFUSED, a
 * DNS failure…) from its cause, and how to choose another URL.
 */
export function unreachable(url: string, error: unknown): Error {
  const cause = error instanceof Error ? (error.cause as { code?: unknown } | undefined)?.code : undefined;
  const reason = typeof cause === 'string' ? cause : error instanceof Error ? error.message : String(error);
  return new Error(`could not reach the server at ${url} (${reason}). ${URL_HINT}`, { cause: error });
}
