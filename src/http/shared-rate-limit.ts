/**
 * Per-key rate limits shared by every gateway: one token bucket per API key in Redis, spent by an
 * atomic Lua script (one round trip per check, no read-modify-write race between gateways). The
 * bucket's clock is Redis's own (`TIME`), so gateways with skewed clocks still refill it alike.
 *
 * When Redis cannot answer (down, unreachable, slower than `timeoutMs`) the limit FAILS OPEN TO A
 * LOCAL LIMIT: the check is decided by an in-process bucket of the same rate and burst in this
 * gateway (so a key gets at most N times its budget across N gateways while Redis is away, never
 * an unlimited one), counted through `onFallback`, and said once in the log when it starts and
 * when Redis is back (docs/interface-decisions.md, 96). After a failure Redis is not asked
 * again for `retryMs`, so an outage costs no latency per request.
 *
 * A bucket left alone refills and its key expires: Redis holds only keys active within one
 * refill period. Keys are named by a hash of the API key, not the key itself.
 */
import { createHash } from 'node:crypto';
import { createClient, type RedisClientType } from '@redis/client';
import { type TakeResult, TokenBuckets } from './rate-limit.js';

export interface SharedRateLimitOptions {
  /** redis://[user:password@]host:port[/db] (REDIS_URL). */
  readonly url: string;
  /** Sustained rate per key, tokens per second (> 0). */
  readonly ratePerSecond: number;
  /** Bucket size (≥ 1). */
  readonly burst: number;
  /** Prefix of the Redis keys (default `openspot:rl:key:`): one per limit and venue. */
  readonly prefix?: string;
  /** A check not answered within this many milliseconds is decided locally (default 50). */
  readonly timeoutMs?: number;
  /** After a failure, how long checks stay local before Redis is tried again (default 1000 ms). */
  readonly retryMs?: number;
  /** One check decided by the local bucket because Redis could not answer (for a metric). */
  readonly onFallback?: () => void;
  /** Redis stopped answering (`error` says why) or answers again (`undefined`): for the log. */
  readonly onStateChange?: (up: boolean, error?: Error) => void;
  /** Monotonic milliseconds (the local fallback and the retry delay); tests pass their own. */
  readonly now?: () => number;
}

/**
 * KEYS[1]: the bucket. ARGV: rate (tokens/s), burst. Returns {allowed (0|1), retry-after seconds}.
 * Tokens are kept as text (a Lua number is a double): refills are fractions of a token.
 */
const TOKEN_BUCKET_LUA = `
local rate = tonumber(ARGV[1])
local burst = tonumber(ARGV[2])
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local state = redis.call('HMGET', KEYS[1], 'tokens', 'at')
local tokens = tonumber(state[1])
local at = tonumber(state[2])
if tokens == nil or at == nil then
  tokens = burst
  at = now
end
local elapsed = now - at
if elapsed < 0 then elapsed = 0 end
tokens = math.min(burst, tokens + elapsed * rate / 1000)
local allowed = 0
local retry = 0
if tokens >= 1 then
  tokens = tokens - 1
  allowed = 1
else
  retry = math.ceil((1 - tokens) / rate)
  if retry < 1 then retry = 1 end
end
redis.call('HSET', KEYS[1], 'tokens', tostring(tokens), 'at', tostring(now))
redis.call('PEXPIRE', KEYS[1], math.ceil(burst * 1000 / rate) + 1000)
return {allowed, retry}
`;
const TOKEN_BUCKET_SHA1 = createHash('sha1').update(TOKEN_BUCKET_LUA).digest('hex');

const ALLOWED: TakeResult = { ok: true };

export class SharedTokenBuckets {
  readonly #client: RedisClientType;
  readonly #local: TokenBuckets;
  readonly #prefix: string;
  readonly #args: readonly [string, string];
  readonly #retryMs: number;
  readonly #timeoutMs: number;
  readonly #now: () => number;
  readonly #onFallback: (() => void) | undefined;
  readonly #onStateChange: ((up: boolean, error?: Error) => void) | undefined;
  /** Checks stay local until then (monotonic ms); 0: Redis is asked. */
  #localUntil = 0;
  #up = true;
  #closed = false;
  /** The first connection (node-redis retries it until it succeeds or the client is destroyed). */
  readonly #connected: Promise<boolean>;

  constructor(options: SharedRateLimitOptions) {
    const { ratePerSecond, burst } = options;
    // The same checks and the same answers as the in-process limiter, which is also the fallback.
    this.#local = new TokenBuckets({
      ratePerSecond,
      burst,
      ...(options.now === undefined ? {} : { now: options.now }),
    });
    const timeoutMs = options.timeoutMs ?? 50;
    const retryMs = options.retryMs ?? 1000;
    if (!(timeoutMs > 0)) throw new RangeError(`invalid timeoutMs: ${timeoutMs}`);
    if (!(retryMs >= 0)) throw new RangeError(`invalid retryMs: ${retryMs}`);
    this.#prefix = options.prefix ?? 'openspot:rl:key:';
    this.#args = [String(ratePerSecond), String(burst)];
    this.#retryMs = retryMs;
    this.#timeoutMs = timeoutMs;
    this.#now = options.now ?? (() => performance.now());
    this.#onFallback = options.onFallback;
    this.#onStateChange = options.onStateChange;
    this.#client = createClient({
      url: options.url,
      // Commands are refused at once while disconnected, instead of queued until a reconnect:
      // a check must be answered now, by Redis or locally.
      disableOfflineQueue: true,
      socket: {
        connectTimeout: 2000,
        keepAlive: true,
        noDelay: true,
        // Forever, backing off to one attempt a second: a gateway outlives a Redis outage.
        reconnectStrategy: (retries: number) => Math.min(50 * 2 ** retries, 1000),
      },
    }) as RedisClientType;
    // Connection errors are reported through failed checks; without a listener they would throw.
    this.#client.on('error', () => undefined);
    // Not awaited here: a gateway starts (and limits locally) while Redis is unreachable.
    this.#connected = this.#client.connect().then(
      () => true,
      () => false,
    );
  }

  /**
   * Waits for the first connection, at most `timeoutMs` (default 2000). False when Redis was not
   * reached in time: that is reported as the start of an outage (checks are local until Redis
   * answers). For a start-up that begins shared rather than with a burst of local decisions.
   */
  async ready(timeoutMs = 2000): Promise<boolean> {
    let timer: NodeJS.Timeout | undefined;
    const connected = await Promise.race([
      this.#connected,
      new Promise<false>((resolve) => {
        timer = setTimeout(resolve, timeoutMs, false);
      }),
    ]);
    clearTimeout(timer);
    if (!connected) this.#down(new Error(`no connection to Redis within ${timeoutMs} ms`));
    return connected;
  }

  /** Spends one token of `id`'s shared bucket, or decides locally when Redis cannot answer. */
  take(id: string): TakeResult | Promise<TakeResult> {
    if (this.#closed || this.#now() < this.#localUntil) return this.#fallback(id);
    return this.#answerInTime(this.#takeShared(id)).then(
      (result) => {
        if (!this.#up) {
          this.#up = true;
          this.#onStateChange?.(true);
        }
        return result;
      },
      (error: unknown) => {
        this.#localUntil = this.#now() + this.#retryMs;
        this.#down(error instanceof Error ? error : new Error(String(error)));
        return this.#fallback(id);
      },
    );
  }

  /**
   * The shared answer, or a rejection after `timeoutMs`. node-redis's own command timeout stops at
   * the socket write: a command written to a server that stopped answering would wait for ever.
   * A late answer is dropped (its token is spent in Redis: the limit errs on the strict side).
   */
  #answerInTime(answer: Promise<TakeResult>): Promise<TakeResult> {
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new Error(`Redis did not answer within ${this.#timeoutMs} ms`)),
        this.#timeoutMs,
      );
    });
    answer.catch(() => undefined);
    return Promise.race([answer, late]).finally(() => clearTimeout(timer));
  }

  #down(error: Error): void {
    if (!this.#up) return;
    this.#up = false;
    this.#onStateChange?.(false, error);
  }

  /** Ends the connection to Redis; later checks are local. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#client.destroy();
  }

  #fallback(id: string): TakeResult {
    this.#onFallback?.();
    return this.#local.take(id);
  }

  async #takeShared(id: string): Promise<TakeResult> {
    const key = this.#prefix + createHash('sha256').update(id).digest('base64url').slice(0, 22);
    const options = { keys: [key], arguments: [...this.#args] };
    let reply: unknown;
    try {
      reply = await this.#client.evalSha(TOKEN_BUCKET_SHA1, options);
    } catch (error) {
      // Redis forgets scripts on restart: the first check after one loads it again.
      if (!(error instanceof Error) || !error.message.startsWith('NOSCRIPT')) throw error;
      reply = await this.#client.eval(TOKEN_BUCKET_LUA, options);
    }
    if (!Array.isArray(reply) || reply.length !== 2) throw new Error('unexpected token bucket reply');
    const [allowed, retry] = reply as [unknown, unknown];
    if (allowed === 1) return ALLOWED;
    return { ok: false, retryAfterSeconds: Math.max(1, Number(retry)) };
  }
}
