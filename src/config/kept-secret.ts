/**
 * A secret only this server uses (the admin token, the WebSocket app secret): the value given in
 * the environment when there is one, otherwise 256 random bits generated at the first start and
 * kept in a file of DATA_DIR (mode 0600, directory 0700), so it survives restarts. Never a
 * built-in default: a default published with the code is a secret everybody knows.
 */
import { randomBytes } from 'node:crypto';
import { chmodSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export interface KeptSecret {
  readonly value: string;
  /** The file holding it when it was not given in the environment. */
  readonly file: string | undefined;
  /** True when this call created it. */
  readonly generated: boolean;
}

export function keptSecret(dataDir: string, fileName: string, fromEnv: string | undefined): KeptSecret {
  if (fromEnv !== undefined && fromEnv !== '') return { value: fromEnv, file: undefined, generated: false };
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  const file = join(dataDir, fileName);
  let generated = false;
  try {
    // 'wx': two processes starting at once cannot both generate; the loser reads the winner's.
    writeFileSync(file, `${randomBytes(32).toString('base64url')}\n`, { mode: 0o600, flag: 'wx' });
    generated = true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
  }
  if ((statSync(file).mode & 0o077) !== 0) chmodSync(file, 0o600);
  const value = readFileSync(file, 'utf8').trim();
  if (value === '') throw new Error(`${file} is empty: delete it to have a new secret generated.`);
  return { value, file, generated };
}
