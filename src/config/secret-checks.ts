/**
 * The checks on secrets that belong to the configuration, so that a bad one stops the process
 * with exit status 2 before it writes anything (no database, no catalogue, no key file): the
 * admin token a network-facing bind needs, the form of SECRETS_KEY, and, in production, the
 * example values the documentation and deploy/ show, which an operator may have copied as they
 * stand (docs/security.md, "Secrets").
 */
import { decodeKey } from '../auth/vault.js';

type Env = Readonly<Record<string, string | undefined>>;

/**
 * What every example secret in this repository carries (deploy/systemd/*.env.example,
 * docs/operations.md): a value holding it was never replaced.
 */
const PLACEHOLDER_MARKER = 'change-me';
/** Placeholders written in prose rather than as values: `<32+ random chars>`, `…`, `...`. */
const PROSE_PLACEHOLDER = /^<.*>$|…|\.\.\./;

/** The secrets a process may be given, and the URL whose password is one. */
const SECRET_VARIABLES = ['ADMIN_TOKEN', 'WS_APP_SECRET', 'SECRETS_KEY'] as const;
const URL_VARIABLES = ['DATABASE_URL', 'REDIS_URL'] as const;

export const isLoopback = (host: string): boolean =>
  host === 'localhost' || host === '::1' || host.startsWith('127.') || host === '[::1]';

/** Why the admin token is missing when it may not be; undefined when it is fine. */
export function adminTokenProblem(host: string, adminToken: string | undefined): string | undefined {
  return !isLoopback(host) && adminToken === undefined
    ? 'ADMIN_TOKEN must be set when HOST is not a loopback address (the admin API would be reachable from the network).'
    : undefined;
}

/** Why SECRETS_KEY cannot be used (never echoing it); undefined when unset or fine. */
export function secretsKeyProblem(value: string | undefined): string | undefined {
  if (value === undefined || value.trim() === '') return undefined;
  try {
    decodeKey(value, 'SECRETS_KEY');
    return undefined;
  } catch (error) {
    return `${error instanceof Error ? error.message : String(error)} (openssl rand -base64 32 makes one).`;
  }
}

/**
 * In production: the variables whose value is an example's, named (never their values). A
 * password inside DATABASE_URL or REDIS_URL counts as a secret too.
 */
export function placeholderSecrets(env: Env): string[] {
  const named: string[] = [];
  for (const name of SECRET_VARIABLES) {
    const value = env[name]?.trim();
    if (value && (value.toLowerCase().includes(PLACEHOLDER_MARKER) || PROSE_PLACEHOLDER.test(value)))
      named.push(name);
  }
  for (const name of URL_VARIABLES) {
    const password = passwordOf(env[name]);
    if (password?.toLowerCase().includes(PLACEHOLDER_MARKER)) named.push(`${name} (its password)`);
  }
  return named;
}

function passwordOf(url: string | undefined): string | undefined {
  if (url === undefined || url.trim() === '') return undefined;
  try {
    return decodeURIComponent(new URL(url.trim()).password);
  } catch {
    return undefined; // not a URL: its own check says so
  }
}
