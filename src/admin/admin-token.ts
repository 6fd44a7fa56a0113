/**
 * The operator's bearer token: ADMIN_TOKEN when set, otherwise a random token generated once and
 * kept in DATA_DIR/admin-token (mode 0600). Compared in constant time.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import { keptSecret } from '../config/kept-secret.js';

export interface AdminTokenSource {
  readonly token: string;
  /** Where the token lives when it was generated (undefined when it came from ADMIN_TOKEN). */
  readonly file: string | undefined;
  readonly generated: boolean;
}

export function resolveAdminToken(dataDir: string, fromEnv: string | undefined): AdminTokenSource {
  const { value, file, generated } = keptSecret(dataDir, 'admin-token', fromEnv);
  return { token: value, file, generated };
}

/** Constant-time check of an `Authorization: Bearer …` header (hashing first equalizes lengths). */
export function bearerMatches(header: string | undefined, token: string): boolean {
  const presented = header?.startsWith('Bearer ') ? header.slice(7) : '';
  const a = createHash('sha256').update(presented).digest();
  const b = createHash('sha256').update(token).digest();
  return timingSafeEqual(a, b) && presented.length > 0;
}
