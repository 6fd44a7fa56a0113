/**
 * HTTP rate limits: token buckets per client IP (every request but the health checks) and per API
 * key (private endpoints, after the signature is verified). Over the limit: 429 with
 * `Retry-After` (whole seconds, at least 1) in the route's error shape — `{"error":"Too Many
 * Requests"}` on private endpoints — and the admin API's own shape under /admin.
 *
 * Memory is bounded: each limiter tracks at most `maxEntries` clients. A bucket that has refilled
 * completely is the same as no bucket, so idle entries are dropped as new clients arrive; only
 * when more than `maxEntries` clients are all active within one refill period is the least
 * recently seen one forgotten (it then starts again with a full burst). No timer, no dependency.
 */
import type { FastifyInstance, FastifyPluginCallback, FastifyReply, FastifyRequest } from 'fastify';
import { errorForShape, HttpError, routeErrorShape, statusText } from './errors.js';

export const TOO_MANY_REQUESTS = statusText(429);

/** Clients tracked per limiter by default: about 100 bytes each, so ~10 MB at most. */
export const DEFAULT_MAX_ENTRIES = 100_000;

export interface TokenBucketOptions {
  /** Sustained rate, tokens per second (> 0). */
  readonly ratePerSecond: number;
  /** Bucket size: how many requests may arrive at once after a quiet period (≥ 1). */
  readonly burst: number;
  /** Most clients tracked at once. */
  readonly maxEntries?: number;
  /** Monotonic milliseconds; tests pass their own. */
  readonly now?: () => number;
}

export type TakeResult = { readonly ok: true } | { readonly ok: false; readonly retryAfterSeconds: number };

interface Bucket {
  tokens: number;
  /** When `tokens` was computed (monotonic ms). */
  at: number;
}

const ALLOWED: TakeResult = { ok: true };

/** Token buckets keyed by client id (an IP, an API key), in least-recently-seen order. */
export class TokenBuckets {
  readonly #rate: number;
  readonly #burst: number;
  readonly #max: number;
  readonly #now: () => number;
  /** A Map iterates in insertion order; every take re-inserts, so the first entry is the stalest. */
  readonly #buckets = new Map<string, Bucket>();
  /** Time for an empty bucket to refill completely: an entry older than that is a full bucket. */
  readonly #refillMs: number;

  constructor(options: TokenBucketOptions) {
    const { ratePerSecond, burst } = options;
    if (!(ratePerSecond > 0) || !Number.isFinite(ratePerSecond))
      throw new RangeError(`invalid rate: ${ratePerSecond}`);
    if (!Number.isInteger(burst) || burst < 1) throw new RangeError(`invalid burst: ${burst}`);
    const max = options.maxEntries ?? DEFAULT_MAX_ENTRIES;
    if (!Number.isInteger(max) || max < 1) throw new RangeError(`invalid maxEntries: ${max}`);
    this.#rate = ratePerSecond;
    this.#burst = burst;
    this.#max = max;
    this.#now = options.now ?? (() => performance.now());
    this.#refillMs = (burst / ratePerSecond) * 1000;
  }

  /** Spends one token of `id`'s bucket, or says how long until one is available. */
  take(id: string): TakeResult {
    const now = this.#now();
    let bucket = this.#buckets.get(id);
    if (bucket === undefined) {
      this.#makeRoom(now);
      bucket = { tokens: this.#burst, at: now };
    } else {
      this.#buckets.delete(id);
      const elapsed = Math.max(0, now - bucket.at);
      bucket.tokens = Math.min(this.#burst, bucket.tokens + (elapsed * this.#rate) / 1000);
      bucket.at = now;
    }
    this.#buckets.set(id, bucket);
    if (bucket.tokens >= 1) {
      bucket.tokens -= 1;
      return ALLOWED;
    }
    const seconds = Math.ceil((1 - bucket.tokens) / this.#rate);
    return { ok: false, retryAfterSeconds: Math.max(1, seconds) };
  }

  /** Clients currently tracked. */
  get size(): number {
    return this.#buckets.size;
  }

  /**
   * Before adding a client: drops a few entries that have refilled (lossless), and if the map is
   * still full, the least recently seen one (lossy, see the module comment).
   */
  #makeRoom(now: number): void {
    let dropped = 0;
    for (const [id, bucket] of this.#buckets) {
      if (dropped >= 2 || now - bucket.at < this.#refillMs) break;
      this.#buckets.delete(id);
      dropped += 1;
    }
    if (this.#buckets.size < this.#max) return;
    const oldest = this.#buckets.keys().next();
    if (oldest.done !== true) this.#buckets.delete(oldest.value);
  }
}

/**
 * What the per-key limit needs: in-process buckets (TokenBuckets, the default) or buckets shared
 * by every gateway (SharedTokenBuckets in shared-rate-limit.ts, which answers with a promise).
 */
export interface KeyRateLimiter {
  take(id: string): TakeResult | Promise<TakeResult>;
}

export interface RateLimitSettings {
  /** Requests per second per client IP; 0 turns the IP limit off. */
  readonly ipPerSecond: number;
  readonly ipBurst: number;
  /** Requests per second per API key (private endpoints); 0 turns the key limit off. */
  readonly keyPerSecond: number;
  readonly keyBurst: number;
}

export interface HttpRateLimitOptions extends RateLimitSettings {
  /** Route paths never limited (health checks). Default `/healthz`, `/readyz`. */
  readonly exemptRoutes?: readonly string[];
  /** URL prefix of the admin API, answered in its own error shape. Default `/admin/`. */
  readonly adminPrefix?: string;
  readonly maxEntries?: number;
  readonly now?: () => number;
  /**
   * The per-key limiter, when not this process's own buckets (a shared one across gateways).
   * Used only while the key limit is on (keyPerSecond > 0); its rate and burst are its own.
   */
  readonly keyLimiter?: KeyRateLimiter;
  /**
   * Given the per-IP limiter's take when the IP limit is on: for the PublicFront, which answers
   * cached public GETs before this plugin's hook would run (src/http/public-front.ts).
   */
  readonly shareIpLimit?: (take: (ip: string) => TakeResult) => void;
}

/** The per-key limiter of the server that received the request (set by the plugin's hook). */
const keyLimiters = new WeakMap<FastifyRequest, KeyRateLimiter>();

function tooManyRequests(request: FastifyRequest, retryAfterSeconds: number): HttpError {
  const { body } = errorForShape(routeErrorShape(request), 429, TOO_MANY_REQUESTS);
  return new HttpError(429, body, { 'retry-after': String(retryAfterSeconds) });
}

/**
 * The per-key limit, for a request whose signature has just been verified: throws a 429
 * HttpError (with Retry-After) when the key is over its limit. A no-op when the plugin is not
 * registered or the key limit is off. Call it only after verification: a caller who merely knows
 * a key (not its secret) must not be able to use up that key's budget. A promise (rejecting with
 * the 429) only when the limiter is shared and asks Redis.
 */
export function enforceKeyRateLimit(request: FastifyRequest, apiKey: string): void | Promise<void> {
  const limiter = keyLimiters.get(request);
  if (limiter === undefined) return;
  const verdict = limiter.take(apiKey);
  if (verdict instanceof Promise)
    return verdict.then((v) => {
      if (!v.ok) throw tooManyRequests(request, v.retryAfterSeconds);
    });
  if (!verdict.ok) throw tooManyRequests(request, verdict.retryAfterSeconds);
}

function sendTooMany(request: FastifyRequest, reply: FastifyReply, retryAfter: number, admin: boolean): void {
  const body = admin
    ? { error: { code: 'rate_limited', message: 'Too many requests; retry after the Retry-After delay.' } }
    : tooManyRequests(request, retryAfter).body;
  reply
    .code(429)
    .header('retry-after', String(retryAfter))
    .type('application/json')
    .send(JSON.stringify(body));
}

/**
 * The Fastify plugin. It is not encapsulated (like fastify-plugin's), so its onRequest hook runs
 * for every route of the instance it is registered on, whatever was registered before.
 */
export const httpRateLimit: FastifyPluginCallback<HttpRateLimitOptions> = (
  app: FastifyInstance,
  options: HttpRateLimitOptions,
  done: (error?: Error) => void,
) => {
  const common = { maxEntries: options.maxEntries, now: options.now };
  const byIp =
    options.ipPerSecond > 0
      ? new TokenBuckets({ ...common, ratePerSecond: options.ipPerSecond, burst: options.ipBurst })
      : undefined;
  const byKey: KeyRateLimiter | undefined =
    options.keyPerSecond > 0
      ? (options.keyLimiter ??
        new TokenBuckets({ ...common, ratePerSecond: options.keyPerSecond, burst: options.keyBurst }))
      : undefined;
  if (byIp !== undefined) options.shareIpLimit?.((ip) => byIp.take(ip));
  const exempt = new Set(options.exemptRoutes ?? ['/healthz', '/readyz']);
  const adminPrefix = options.adminPrefix ?? '/admin/';

  if (byIp !== undefined || byKey !== undefined) {
    app.addHook('onRequest', (request, reply, next) => {
      if (byKey !== undefined) keyLimiters.set(request, byKey);
      if (byIp === undefined || exempt.has(request.routeOptions.url ?? '')) return next();
      const verdict = byIp.take(request.ip);
      if (verdict.ok) return next();
      sendTooMany(request, reply, verdict.retryAfterSeconds, request.url.startsWith(adminPrefix));
    });
  }
  done();
};
// What fastify-plugin sets: register the hook on the parent instance, not in a child context.
(httpRateLimit as unknown as Record<symbol, unknown>)[Symbol.for('skip-override')] = true;
(httpRateLimit as unknown as Record<symbol, unknown>)[Symbol.for('fastify.display-name')] = 'http-rate-limit';
