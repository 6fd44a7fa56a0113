/**
 * Where trader commands connect and with which key. One rule for every setting, most specific
 * first: command-line flag > the profile named by --profile > environment > the default profile
 * file (~/.config/openspot/profile.json) > built-in default.
 *
 * A profile is JSON `{url, api_key, api_secret}` (optionally `ws_app_key`, and
 * `nonce_required: true` for a key created with nonces — as the admin API's key view shows it; in
 * the environment OPENSPOT_NONCE=true); the demo's DATA_DIR/demo-credentials.json has this shape,
 * so it can be used as a profile directly.
 */
import { existsSync, readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';

export interface TraderTarget {
  /** `{base_url}`, ending in /v1. */
  readonly baseUrl: string;
  readonly apiKey: string | undefined;
  readonly apiSecret: string | undefined;
  /** The WebSocket application key, for `book --watch`. */
  readonly wsAppKey: string;
  /** The key requires nonces: signed bodies carry one, and cancellations send a signed body. */
  readonly nonce: boolean;
  /** Which profile file was read, if any (for error messages). */
  readonly profileFile: string | undefined;
}

interface Profile {
  readonly url?: string;
  readonly api_key?: string;
  readonly api_secret?: string;
  readonly ws_app_key?: string;
  readonly nonce_required?: boolean;
}

export const DEFAULT_WS_APP_KEY = 'openspot-key';
export const defaultProfilePath = (): string => join(homedir(), '.config', 'openspot', 'profile.json');

/** The admin commands' --url/OPENSPOT_URL is the server root; trader commands need `<root>/v1`. */
export function v1Url(url: string): string {
  const trimmed = url.trim().replace(/\/+$/, '');
  return trimmed.endsWith('/v1') ? trimmed : `${trimmed}/v1`;
}

function readProfile(file: string): Profile {
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFileSync(file, 'utf8'));
  } catch (error) {
    throw new Error(`cannot read profile ${file}: ${error instanceof Error ? error.message : String(error)}`);
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed))
    throw new Error(`profile ${file} must hold a JSON object {url, api_key, api_secret}`);
  const profile = parsed as Record<string, unknown>;
  for (const field of ['url', 'api_key', 'api_secret', 'ws_app_key'])
    if (profile[field] !== undefined && typeof profile[field] !== 'string')
      throw new Error(`profile ${file}: "${field}" must be a string`);
  if (profile.nonce_required !== undefined && typeof profile.nonce_required !== 'boolean')
    throw new Error(`profile ${file}: "nonce_required" must be true or false`);
  return profile as Profile;
}

const nonEmpty = (value: string | undefined): string | undefined =>
  value === undefined || value.trim() === '' ? undefined : value.trim();

export function resolveTrader(
  flags: { url?: string; profile?: string; appKey?: string },
  env: NodeJS.ProcessEnv = process.env,
  defaultProfile: string = defaultProfilePath(),
): TraderTarget {
  const explicit = flags.profile === undefined ? undefined : readProfile(flags.profile);
  const fallbackFile = explicit === undefined && existsSync(defaultProfile) ? defaultProfile : undefined;
  const fallback = fallbackFile === undefined ? undefined : readProfile(fallbackFile);
  const pick = (
    flag: string | undefined,
    field: Exclude<keyof Profile, 'nonce_required'>,
    envName: string,
  ): string | undefined =>
    nonEmpty(flag) ?? nonEmpty(explicit?.[field]) ?? nonEmpty(env[envName]) ?? nonEmpty(fallback?.[field]);
  const pickFlag = (field: 'nonce_required', envName: string): boolean => {
    const fromEnv = nonEmpty(env[envName])?.toLowerCase();
    if (fromEnv !== undefined && !['true', '1', 'false', '0'].includes(fromEnv))
      throw new Error(`${envName} must be true or false, got "${env[envName]}"`);
    return (
      explicit?.[field] ??
      (fromEnv === undefined ? undefined : fromEnv === 'true' || fromEnv === '1') ??
      fallback?.[field] ??
      false
    );
  };
  const url = pick(flags.url, 'url', 'OPENSPOT_URL') ?? `http://127.0.0.1:${env.PORT ?? 8080}`;
  return {
    baseUrl: v1Url(url),
    apiKey: pick(undefined, 'api_key', 'OPENSPOT_API_KEY'),
    apiSecret: pick(undefined, 'api_secret', 'OPENSPOT_API_SECRET'),
    wsAppKey: pick(flags.appKey, 'ws_app_key', 'OPENSPOT_WS_APP_KEY') ?? DEFAULT_WS_APP_KEY,
    nonce: pickFlag('nonce_required', 'OPENSPOT_NONCE'),
    profileFile: flags.profile ?? fallbackFile,
  };
}
