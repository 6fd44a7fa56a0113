/**
 * Per-key access policy, checked after the signature (src/http/authenticate.ts): the key's IP
 * allow-list, then (for keys created with `nonce_required`) the replay guard.
 *
 * Nonces. The interface signs only the method and the body, so a captured request is valid for
 * ever. A nonce-required key must put a `nonce` field in every body it signs — a JSON string of
 * 1 to 20 decimal digits, or a JSON integer up to 2^53 − 1 — strictly greater than the last nonce
 * the key used; the store accepts it atomically and durably (Store.acceptNonce), so the same
 * signed body is accepted at most once. GET requests carry no body, hence no nonce, and stay
 * replayable (docs/security.md). Every other request of such a key must have a body with a nonce:
 * a body-less DELETE signs only "DELETE{}", which would be valid for every order id, so it is
 * refused (the route then also requires the body's `order_id` to match the path).
 *
 * IP allow-lists. Exact addresses and CIDR blocks, IPv4 and IPv6, matched with node:net's
 * BlockList (which also matches IPv4-mapped IPv6 addresses, `::ffff:10.1.2.3`, against IPv4 rules
 * and the reverse).
 */
import { BlockList, isIP } from 'node:net';
import type { CredentialStore } from '../store/ports.js';
import { type ApiKeyRecord, CANONICAL_NONCE } from '../store/store.js';

export const ACCESS_DENIED = 'Access Denied';
export const INVALID_NONCE = 'Invalid Nonce';
export const INVALID_REQUEST = 'Invalid request';

/** Most entries one key's allow-list may hold. */
export const MAX_ALLOWLIST_ENTRIES = 64;
/** Most digits of a nonce: 20 digits hold any unsigned 64-bit value. */
export const MAX_NONCE_DIGITS = 20;

// ------------------------------------------------------------------------------------------
// IP allow-lists

export interface IpRule {
  readonly family: 4 | 6;
  readonly address: string;
  /** Undefined for a single address. */
  readonly prefix: number | undefined;
  /** The canonical text stored: the address (IPv6 lower-cased), then `/prefix` if any. */
  readonly text: string;
}

/**
 * One allow-list entry: `203.0.113.7`, `10.0.0.0/8`, `2001:db8::1`, `2001:db8::/32`,
 * `::ffff:10.0.0.0/104`. Refused: zone ids (`fe80::1%eth0`), prefixes with leading zeros or out of
 * range, and blocks with host bits set (`10.1.2.3/8`: most likely a typo for `10.1.2.3/32`, and
 * silently widening it to 10.0.0.0/8 would grant more than was asked).
 */
export function parseIpRule(input: string): IpRule | undefined {
  if (typeof input !== 'string' || input.length === 0 || input.length > 64) return undefined;
  const slash = input.indexOf('/');
  const address = (slash < 0 ? input : input.slice(0, slash)).toLowerCase();
  const prefixText = slash < 0 ? undefined : input.slice(slash + 1);
  if (address.includes('%')) return undefined;
  const family = isIP(address);
  if (family !== 4 && family !== 6) return undefined;
  let prefix: number | undefined;
  if (prefixText !== undefined) {
    if (!/^(?:0|[1-9][0-9]{0,2})$/.test(prefixText)) return undefined;
    prefix = Number(prefixText);
    if (prefix > (family === 4 ? 32 : 128)) return undefined;
    const bits = family === 4 ? ipv4Bits(address) : ipv6Bits(address);
    if (bits.slice(prefix).includes('1')) return undefined;
  }
  return { family, address, prefix, text: prefix === undefined ? address : `${address}/${prefix}` };
}

export type AllowlistParse =
  | { readonly ok: true; readonly value: string[] | null }
  | { readonly ok: false; readonly message: string };

/**
 * The admin API's `ip_allowlist`: absent or null means any address; otherwise a non-empty array
 * (an empty one would lock the key out) of at most MAX_ALLOWLIST_ENTRIES valid entries, returned
 * canonical and without duplicates.
 */
export function parseAllowlist(value: unknown): AllowlistParse {
  if (value === undefined || value === null) return { ok: true, value: null };
  if (!Array.isArray(value) || value.length === 0 || value.length > MAX_ALLOWLIST_ENTRIES) {
    return {
      ok: false,
      message: `The ip_allowlist must be null or an array of 1 to ${MAX_ALLOWLIST_ENTRIES} IP addresses or CIDR blocks.`,
    };
  }
  const rules: string[] = [];
  for (const entry of value) {
    const rule = typeof entry === 'string' ? parseIpRule(entry.trim()) : undefined;
    if (rule === undefined) {
      const shown = typeof entry === 'string' ? JSON.stringify(entry.slice(0, 64)) : typeof entry;
      return {
        ok: false,
        message: `The ip_allowlist entry ${shown} is not an IPv4/IPv6 address or a CIDR block without host bits.`,
      };
    }
    if (!rules.includes(rule.text)) rules.push(rule.text);
  }
  return { ok: true, value: rules };
}

/** BlockLists built once per allow-list array (the store caches records, so the array is reused). */
const compiled = new WeakMap<readonly string[], BlockList>();

export function compileAllowlist(list: readonly string[]): BlockList {
  let blockList = compiled.get(list);
  if (blockList !== undefined) return blockList;
  blockList = new BlockList();
  for (const entry of list) {
    const rule = parseIpRule(entry);
    // A stored entry that no longer parses matches nothing (never everything).
    if (rule === undefined) continue;
    const type = rule.family === 4 ? 'ipv4' : 'ipv6';
    if (rule.prefix === undefined) blockList.addAddress(rule.address, type);
    else blockList.addSubnet(rule.address, rule.prefix, type);
  }
  compiled.set(list, blockList);
  return blockList;
}

/** Whether `ip` (the request's address, as Fastify's `request.ip` gives it) is on the list; null allows all. */
export function ipAllowed(list: readonly string[] | null, ip: string): boolean {
  if (list === null) return true;
  if (typeof ip !== 'string') return false;
  const zone = ip.indexOf('%');
  const address = zone < 0 ? ip : ip.slice(0, zone);
  const family = isIP(address);
  if (family === 0) return false;
  try {
    return compileAllowlist(list).check(address, family === 4 ? 'ipv4' : 'ipv6');
  } catch {
    return false;
  }
}

function ipv4Bits(address: string): string {
  return address
    .split('.')
    .map((octet) => Number(octet).toString(2).padStart(8, '0'))
    .join('');
}

/** The 128 bits of an IPv6 address already validated by isIP (embedded IPv4 tail and `::` allowed). */
function ipv6Bits(address: string): string {
  let text = address;
  const v4 = /(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (v4 !== null) {
    const bits = ipv4Bits(v4[1]!);
    const group = (from: number) => Number.parseInt(bits.slice(from, from + 16), 2).toString(16);
    text = `${text.slice(0, v4.index)}${group(0)}:${group(16)}`;
  }
  const groups = (part: string): string[] => (part === '' ? [] : part.split(':'));
  const [left = '', right] = text.split('::');
  const head = groups(left);
  const tail = right === undefined ? [] : groups(right);
  const all =
    right === undefined
      ? head
      : [...head, ...Array<string>(8 - head.length - tail.length).fill('0'), ...tail];
  return all.map((group) => Number.parseInt(group, 16).toString(2).padStart(16, '0')).join('');
}

// ------------------------------------------------------------------------------------------
// Nonces

/**
 * A nonce value in canonical form (decimal digits, no leading zero), or undefined when it is not
 * one: a string of 1 to 20 decimal digits, or a JSON integer from 0 to 2^53 − 1 (beyond that a
 * JSON number has already lost digits when parsed, so larger nonces must be sent as strings).
 */
export function parseNonce(value: unknown): string | undefined {
  let digits: string;
  if (typeof value === 'string') {
    if (value.length === 0 || value.length > MAX_NONCE_DIGITS || !/^[0-9]+$/.test(value)) return undefined;
    digits = value.replace(/^0+(?=.)/, '');
  } else if (typeof value === 'number') {
    if (!Number.isSafeInteger(value) || value < 0) return undefined;
    digits = String(Math.abs(value)); // Math.abs: -0 is 0
  } else return undefined;
  return CANONICAL_NONCE.test(digits) ? digits : undefined;
}

/** Numeric comparison of two canonical nonces (what the store's UPDATE does in SQL). */
export function compareNonces(a: string, b: string): -1 | 0 | 1 {
  if (a.length !== b.length) return a.length < b.length ? -1 : 1;
  return a === b ? 0 : a < b ? -1 : 1;
}

export type BodyNonce =
  /** No body to carry one: GET/HEAD, or an empty body. */
  | { readonly kind: 'no-body' }
  /** Bytes that are not UTF-8 JSON (or form data): the route refuses them as malformed anyway. */
  | { readonly kind: 'malformed' }
  /** A body without a usable `nonce`. */
  | { readonly kind: 'invalid' }
  | { readonly kind: 'nonce'; readonly value: string };

const utf8 = new TextDecoder('utf-8', { fatal: true });

/** Methods whose body is never read, hence never signed (authenticate signs them as `{}`). */
const carriesNoBody = (method: string): boolean => {
  const upper = method.toUpperCase();
  return upper === 'GET' || upper === 'HEAD';
};

const isFormType = (contentType: string | undefined): boolean =>
  (contentType ?? '').split(';', 1)[0]!.trim().toLowerCase() === 'application/x-www-form-urlencoded';

/**
 * The `nonce` of a signed body, read from the exact bytes that were signed. JSON bodies must be
 * an object with a `nonce` member; form bodies (POST /broadcasting/auth accepts them) must hold
 * exactly one `nonce` parameter.
 */
export function nonceOfBody(method: string, rawBody: Buffer, contentType?: string): BodyNonce {
  if (carriesNoBody(method) || rawBody.length === 0) return { kind: 'no-body' };
  let text: string;
  try {
    text = utf8.decode(rawBody);
  } catch {
    return { kind: 'malformed' };
  }
  if (isFormType(contentType)) {
    const values = new URLSearchParams(text).getAll('nonce');
    const value = values.length === 1 ? parseNonce(values[0]) : undefined;
    return value === undefined ? { kind: 'invalid' } : { kind: 'nonce', value };
  }
  let body: unknown;
  try {
    // TextDecoder already dropped a leading byte order mark, as Fastify's parser does.
    body = JSON.parse(text);
  } catch {
    return { kind: 'malformed' };
  }
  if (typeof body !== 'object' || body === null || Array.isArray(body) || !Object.hasOwn(body, 'nonce'))
    return { kind: 'invalid' };
  const value = parseNonce((body as { nonce: unknown }).nonce);
  return value === undefined ? { kind: 'invalid' } : { kind: 'nonce', value };
}

// ------------------------------------------------------------------------------------------
// The policy

export interface KeyPolicyInput {
  readonly record: Pick<ApiKeyRecord, 'key' | 'ipAllowlist' | 'nonceRequired'>;
  /** The client's address (`request.ip`: the socket's peer, or X-Forwarded-For with TRUST_PROXY). */
  readonly ip: string;
  readonly method: string;
  /** The body bytes exactly as received and signed (empty when there was none). */
  readonly rawBody: Buffer;
  readonly contentType?: string | undefined;
  readonly store: Pick<CredentialStore, 'acceptNonce'>;
  /**
   * Called once the address is allowed, before a nonce is spent: the per-key rate limit (which
   * throws its 429). A request refused there therefore does not use up its nonce, and a caller
   * outside the allow-list cannot use up the key's rate budget. A promise when the limit is
   * shared by several gateways (it asks Redis): the nonce waits for it.
   */
  readonly rateLimit?: () => void | Promise<void>;
}

export type KeyPolicyResult =
  | { readonly ok: true }
  | { readonly ok: false; readonly status: 403; readonly error: typeof ACCESS_DENIED }
  | { readonly ok: false; readonly status: 422; readonly error: typeof INVALID_NONCE }
  | { readonly ok: false; readonly status: 400; readonly error: typeof INVALID_REQUEST };

const OK: KeyPolicyResult = { ok: true };

/**
 * The key's policy for one authenticated request, in this order:
 * 1. the allow-list: a request from elsewhere is 403 Access Denied;
 * 2. `rateLimit`, when given;
 * 3. for a nonce-required key with a body: 400 Invalid request when the body cannot be read (the
 *    route would refuse it too), 422 Invalid Nonce when it has no valid nonce or one not greater
 *    than the last accepted; otherwise the nonce is accepted (durably) and the request goes on.
 * A GET or HEAD passes step 3 without a nonce; any other body-less request is 422 Invalid Nonce.
 * May throw what `rateLimit` throws; a promise only for a nonce or a shared rate limit (it rejects with
 * StoreUnavailableError when the nonce cannot be recorded, RangeError for a non-canonical one).
 */
export function checkKeyPolicy(input: KeyPolicyInput): KeyPolicyResult | Promise<KeyPolicyResult> {
  const { record } = input;
  if (!ipAllowed(record.ipAllowlist, input.ip)) return { ok: false, status: 403, error: ACCESS_DENIED };
  const limited = input.rateLimit?.();
  return limited instanceof Promise ? limited.then(() => checkNonce(input)) : checkNonce(input);
}

/** Step 3 of checkKeyPolicy. */
function checkNonce(input: KeyPolicyInput): KeyPolicyResult | Promise<KeyPolicyResult> {
  const { record } = input;
  if (!record.nonceRequired) return OK;
  const nonce = nonceOfBody(input.method, input.rawBody, input.contentType);
  switch (nonce.kind) {
    case 'no-body':
      return carriesNoBody(input.method) ? OK : { ok: false, status: 422, error: INVALID_NONCE };
    case 'malformed':
      return { ok: false, status: 400, error: INVALID_REQUEST };
    case 'invalid':
      return { ok: false, status: 422, error: INVALID_NONCE };
    case 'nonce':
      // The only read of the store: a promise (every other answer is synchronous).
      return input.store
        .acceptNonce(record.key, nonce.value)
        .then(
          (accepted): KeyPolicyResult => (accepted ? OK : { ok: false, status: 422, error: INVALID_NONCE }),
        );
  }
}
