/**
 * The browser pages, served by the exchange itself on its own port: the trading terminal at `/`
 * and the operator console at `/admin` (web/, built by Vite into dist/web by `npm run build` and
 * the development `npm start`). The API's paths are untouched: pages and their files live at
 * `/`, `/admin`, `/assets/*`, `/favicon.svg` and `/ui/*`.
 *
 * - Caching: the html answers `no-cache` (revalidated on every load, so a new build is picked up
 *   at once); `/assets/*` names carry a content hash and are `immutable` for a year.
 * - CSP on the pages: scripts and styles from this origin only (no inline script, no eval),
 *   connections to this origin only (REST and the WebSocket), no framing.
 * - `/admin` (the page, not the `/admin/v1` API) answers only a local client — see
 *   `isLocalClient` — unless ADMIN_UI=on; in production, only when ADMIN_UI=on. The API itself
 *   still requires the admin token.
 * - `/ui/config.json`: what a page needs to connect (the WebSocket app key, valuation currency).
 * - `/ui/demo-credentials.json`: the demo account's key and secret, in development only, to a
 *   local client only (docs/operations.md, "Web pages").
 */
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import fastifyStatic from '@fastify/static';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';

export interface DemoCredentials {
  readonly userId: number;
  readonly apiKey: string;
  readonly apiSecret: string;
}

export interface PagesOptions {
  /** The built pages (Vite's outDir); default dist/web of the package. */
  readonly webDir?: string;
  /** NODE_ENV=production: the demo credentials are never served. */
  readonly production: boolean;
  /** ADMIN_UI=on: the console page is served to any client, not only local ones. */
  readonly adminUi: boolean;
  /** The WebSocket server's public application key. */
  readonly wsAppKey: string;
  readonly balanceCurrency: string;
  /** The demo account once provisioned (undefined until then, or when the demo is off). */
  readonly demoCredentials: () => DemoCredentials | undefined;
}

/**
 * The pages' Content-Security-Policy. `connect-src 'self'` covers the same-origin `ws:`/`wss:`
 * WebSocket (CSP Level 3). `style-src` has no 'unsafe-inline' either: styles come from the
 * built CSS files, and element styles set from script (CSSOM) are not inline styles.
 */
export const PAGE_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data: blob:",
  "font-src 'self'",
  "connect-src 'self'",
  "manifest-src 'self'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

/**
 * What every page of this origin is sent with: the CSP, no framing, no sniffing, no referrer.
 * The API's browsable documentation (`/docs`, Swagger UI) gets them too: it runs on the origin of
 * the terminal, whose remembered API secrets a script injected there could read.
 */
export const PAGE_SECURITY_HEADERS: Readonly<Record<string, string>> = {
  'content-security-policy': PAGE_CSP,
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'x-frame-options': 'DENY',
  'cross-origin-opener-policy': 'same-origin',
};

const PAGE_HEADERS: Readonly<Record<string, string>> = {
  ...PAGE_SECURITY_HEADERS,
  'cache-control': 'no-cache',
};

/** dist/web of the package, from src/http (tsx) or dist/src/http (built). */
export function defaultWebDir(): string {
  let dir = import.meta.dirname;
  for (let i = 0; i < 6; i += 1) {
    if (existsSync(join(dir, 'package.json'))) return join(dir, 'dist', 'web');
    dir = dirname(dir);
  }
  return join(import.meta.dirname, '..', '..', 'web');
}

const loopbackAddress = (address: string | undefined): boolean =>
  address !== undefined &&
  (address === '::1' || address.startsWith('127.') || address.startsWith('::ffff:127.'));

const loopbackHost = (host: string | undefined): boolean => {
  if (host === undefined) return false;
  const name = host.startsWith('[') ? host.slice(0, host.indexOf(']') + 1) : host.replace(/:\d+$/, '');
  return name === 'localhost' || name === '[::1]' || /^127\.\d+\.\d+\.\d+$/.test(name);
};

/**
 * A client on this machine talking to this server directly: the TCP peer is a loopback address,
 * no proxy header is present (a reverse proxy on the same host would make every client look
 * local), and the Host header names a loopback host (a DNS-rebinding page reaches 127.0.0.1 under
 * its own name). X-Forwarded-For is not trusted here even with TRUST_PROXY.
 */
export function isLocalClient(request: FastifyRequest): boolean {
  const h = request.headers;
  if (h.forwarded !== undefined || h['x-forwarded-for'] !== undefined || h['x-real-ip'] !== undefined)
    return false;
  return loopbackAddress(request.socket.remoteAddress) && loopbackHost(h.host);
}

const NOT_BUILT = `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>OpenSpot</title></head>
<body><h1>The web pages are not built</h1><p>Run <code>npm run build</code> (or start with <code>npm start</code> in development). The API answers at <a href="/docs">/docs</a>.</p></body></html>`;

export async function pagesPlugin(app: FastifyInstance, options: PagesOptions): Promise<void> {
  const webDir = options.webDir ?? defaultWebDir();

  const sendPage = async (reply: FastifyReply, page: 'terminal' | 'admin') => {
    reply.headers(PAGE_HEADERS).type('text/html; charset=utf-8');
    try {
      // Read per request: a rebuild is served at once, and the file is a few hundred bytes.
      return reply.send(await readFile(join(webDir, page, 'index.html')));
    } catch {
      return reply.code(503).send(NOT_BUILT);
    }
  };

  app.get('/', { schema: { hide: true } }, (_request, reply) => sendPage(reply, 'terminal'));

  // In production the peer address proves nothing: a proxy on the same host that adds no
  // X-Forwarded-For (nginx's plain proxy_pass) makes every client look local. There the console is
  // served only when the operator asked for it.
  const adminRefusal = (request: FastifyRequest): string | undefined => {
    if (options.adminUi) return undefined;
    if (options.production)
      return 'The operator console is off in production. Set ADMIN_UI=on to serve it (the admin API needs its token either way).\n';
    if (isLocalClient(request)) return undefined;
    return 'The operator console answers only on this machine (http://127.0.0.1). Set ADMIN_UI=on to serve it to other clients.\n';
  };
  const adminPage = (request: FastifyRequest, reply: FastifyReply) => {
    const refusal = adminRefusal(request);
    if (refusal !== undefined)
      return reply.code(403).headers(PAGE_HEADERS).type('text/plain; charset=utf-8').send(refusal);
    return sendPage(reply, 'admin');
  };
  app.get('/admin', { schema: { hide: true } }, adminPage);
  app.get('/admin/', { schema: { hide: true } }, adminPage);

  app.get('/favicon.svg', { schema: { hide: true } }, async (_request, reply) => {
    try {
      const svg = await readFile(join(webDir, 'favicon.svg'));
      return reply.header('cache-control', 'public, max-age=86400').type('image/svg+xml').send(svg);
    } catch {
      return reply.callNotFound();
    }
  });

  app.get('/ui/config.json', { schema: { hide: true } }, async (request, reply) => {
    reply.header('cache-control', 'no-store');
    return {
      ws_app_key: options.wsAppKey,
      balance_currency: options.balanceCurrency,
      demo_available: demoFor(request) !== undefined,
    };
  });

  const demoFor = (request: FastifyRequest): DemoCredentials | undefined =>
    !options.production && isLocalClient(request) ? options.demoCredentials() : undefined;

  app.get('/ui/demo-credentials.json', { schema: { hide: true } }, async (request, reply) => {
    reply.header('cache-control', 'no-store');
    if (options.production || options.demoCredentials() === undefined)
      return reply.code(404).send({ error: 'Not Found' });
    const demo = demoFor(request);
    if (demo === undefined) return reply.code(403).send({ error: 'Access Denied' });
    return { api_key: demo.apiKey, api_secret: demo.apiSecret, user_id: demo.userId };
  });

  // Content-hashed names (Vite): a file never changes under its name, so clients keep it a year.
  await app.register(fastifyStatic, {
    root: join(webDir, 'assets'),
    prefix: '/assets/',
    decorateReply: false,
    index: false,
    list: false,
    dotfiles: 'deny',
    immutable: true,
    maxAge: '365d',
    // The directory appears with the first build; until then every asset is a 404.
    allowedPath: () => existsSync(join(webDir, 'assets')),
    setHeaders: (reply) => {
      reply.header('x-content-type-options', 'nosniff');
    },
    schemaHide: true,
  });
}
