/**
 * DATABASE_URL handling without the driver: the configuration checks the URL at start even when
 * nothing connects yet, and messages name the database, never the credentials.
 */

/**
 * Checks a DATABASE_URL: postgres:// or postgresql://, with a host and a database name. Returns
 * it unchanged; the message of a refusal never repeats the URL (it may hold a password).
 */
export function parseDatabaseUrl(text: string, variable = 'DATABASE_URL'): string {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new Error(`${variable} is not a URL (expected postgres://user@host:5432/database)`);
  }
  if (url.protocol !== 'postgres:' && url.protocol !== 'postgresql:')
    throw new Error(`${variable} must start with postgres:// or postgresql:// (got ${url.protocol}//)`);
  if (url.hostname === '' && !url.searchParams.has('host'))
    throw new Error(`${variable} names no host (expected postgres://user@host:5432/database)`);
  if (databaseName(text) === '') throw new Error(`${variable} names no database (…/database at the end)`);
  return text;
}

/** The database a URL names (for messages: never the credentials). */
export function databaseName(url: string): string {
  try {
    return decodeURIComponent(new URL(url).pathname.replace(/^\//, ''));
  } catch {
    return '';
  }
}

/** The URL without its password, for logs and messages. */
export function redactUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password !== '') u.password = '***';
    return u.toString();
  } catch {
    return '(invalid URL)';
  }
}
