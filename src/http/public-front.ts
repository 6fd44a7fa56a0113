/**
 * Answers the cached public market-data GETs before Fastify routes them (issue 25: public GETs
 * at 85 % of a bare Fastify GET).
 *
 * A cached answer (src/http/v1/public-cache.ts) already costs no state reads and no serialization;
 * what remained per request was Fastify's: routing and the query string's parse, the request and
 * reply objects, the child logger, the onRequest hooks (Host check, chaos), the reply's
 * content-type parse, the onSend hook runner, the response listeners and the onResponse hooks.
 * The front is the HTTP server's `request` listener in front of Fastify's: a GET whose URL
 * exactly matches a current entry filed with its route is written here, with the status, headers
 * and body Fastify would have sent (200, `content-type: application/json; charset=utf-8`,
 * `content-length`; Node adds `Date` and the connection headers on both paths alike), and the
 * request is counted in the HTTP metrics under its route like any other. Anything else goes to
 * Fastify untouched.
 *
 * It steps aside (Fastify answers, as before) whenever one of Fastify's root hooks could answer
 * differently or needs to see the request:
 * - not a GET (HEAD, and everything else), or the URL is not a current cached answer;
 * - the server is closing (Fastify answers 503 with `Connection: close`);
 * - an HTTP/1.1 request without Host (app.ts answers 400);
 * - a gate says so (`stepAsideWhen`: chaos faults set on the REST API, request logging);
 * - the per-IP rate limit is on and refuses the request (Fastify's hook then answers the 429), or
 *   is on behind a trusted proxy (the client's address is the forwarded one: Fastify's to tell).
 * A request the front answers spends one token of the per-IP limit, as Fastify's hook would.
 */
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { CachedAnswer } from './v1/public-cache.js';

/** Where the front finds answers: PublicResponseCache. */
export interface AnswerSource {
  answer(url: string): CachedAnswer | undefined;
}

/** The per-IP limiter's verdict for one request (rate-limit.ts's TokenBuckets.take). */
export type IpTake = (ip: string) => { readonly ok: boolean };

export interface PublicFrontOptions {
  /** X-Forwarded-For is trusted: the client's address is not the socket's. */
  readonly trustProxy?: boolean;
}

type RequestListener = (request: IncomingMessage, response: ServerResponse) => void;

const JSON_HEADERS_TYPE = 'application/json; charset=utf-8';

export class PublicFront {
  readonly #sources = new Set<AnswerSource>();
  readonly #gates: Array<() => boolean> = [];
  readonly #trustProxy: boolean;
  #takeIp: IpTake | undefined;
  #observe: ((route: string, seconds: number) => void) | undefined;
  #closing = false;

  constructor(options: PublicFrontOptions = {}) {
    this.#trustProxy = options.trustProxy ?? false;
  }

  /** Answers from `source` too; returns the function that stops it (the plugin's onClose). */
  serve(source: AnswerSource): () => void {
    this.#sources.add(source);
    return () => this.#sources.delete(source);
  }

  /** While `condition()` is true, every request goes to Fastify. */
  stepAsideWhen(condition: () => boolean): void {
    this.#gates.push(condition);
  }

  /** The per-IP rate limit Fastify's onRequest hook enforces (rate-limit.ts). */
  limitByIp(take: IpTake): void {
    this.#takeIp = take;
  }

  /** Records each answered request (the HTTP duration metric: GET, route, 200). */
  observeWith(observe: (route: string, seconds: number) => void): void {
    this.#observe = observe;
  }

  /** From now on Fastify answers everything (it refuses new requests while closing). */
  close(): void {
    this.#closing = true;
  }

  /**
   * Puts the front before the server's only `request` listener (Fastify's handler). Call once,
   * right after the Fastify instance is made.
   */
  install(server: Server): void {
    const listeners = server.listeners('request') as RequestListener[];
    const fastify = listeners[0];
    if (listeners.length !== 1 || fastify === undefined)
      throw new Error(`PublicFront: expected one request listener, found ${listeners.length}`);
    server.removeListener('request', fastify);
    server.on('request', (request: IncomingMessage, response: ServerResponse) => {
      if (!this.answer(request, response)) fastify.call(server, request, response);
    });
  }

  /** Writes the cached answer and returns true, or returns false for Fastify to answer. */
  answer(request: IncomingMessage, response: ServerResponse): boolean {
    if (request.method !== 'GET' || this.#closing || this.#sources.size === 0) return false;
    const url = request.url;
    if (url === undefined) return false;
    let found: CachedAnswer | undefined;
    for (const source of this.#sources) {
      found = source.answer(url);
      if (found !== undefined) break;
    }
    if (found === undefined) return false;
    if (request.headers.host === undefined && request.httpVersionMajor === 1 && request.httpVersionMinor >= 1)
      return false;
    for (const gate of this.#gates) if (gate()) return false;
    if (this.#takeIp !== undefined) {
      const ip = request.socket.remoteAddress;
      if (this.#trustProxy || ip === undefined || !this.#takeIp(ip).ok) return false;
    }
    const start = performance.now();
    const { body } = found;
    response.writeHead(200, { 'content-type': JSON_HEADERS_TYPE, 'content-length': String(body.length) });
    response.end(body);
    this.#observe?.(found.route, (performance.now() - start) / 1000);
    return true;
  }
}
