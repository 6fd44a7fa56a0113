/**
 * The operator's bearer token: ADMIN_TOKEN when set, otherwise a random token generated once and
 * kept in DATA_DIR/admin-token (mode 0600). Compared in constant time.
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { chmodSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export interface AdminTokenSource {
  readonly token: string;
  /** Where the token lives when it was generated (undefined when it came from ADMIN_TOKEN). */
  readonly file: string | undefined;
  readonly generated: boolean;
}

export function resolveAdminToken(dataDir: string, fromEnv: string | undefined): AdminTokenSource {
  if (fromEnv !== undefined) return { token: fromEnv, file: undefined, generated: false };
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  const file = join(dataDir, 'admin-token');
  let generated = false;
  try {
    writeFileSync(file, `${randomBytes(32).toString('base64url')}\n`, { mode: 0o600, flag: 'wx' });
    generated = true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
  }
  if ((statSync(file).mode & 0o077) !== 0) chmodSync(file, 0o600);
  return { token: readFileSync(file, 'utf8').trim(), file, generated };
}

/** Constant-time check of an `Authorization: Bearer …` header (hashing first equalizes lengths). */
export function bearerMatches(header: string | undefined, token: string): boolean {
  const presented = header?.startsWith('Bearer ') ? header.slice(7) : '';
  const a = createHash('sha256').update(presented).digest();
  const b = createHash('sha256').update(token).digest();
  return timingSafeEqual(a, b) && presented.length > 0;
}
