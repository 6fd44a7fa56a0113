// The web pages as a browser and an attacker see them: the html with its CSP and no-cache, the
// hashed assets cached for good, the console and the demo credentials only for local clients.
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import Fastify, { type FastifyInstance } from 'fastify';
import { ConfigError, loadConfig } from '../config/config.js';
import { type PagesOptions, pagesPlugin } from './pages.js';

let webDir: string;
before(() => {
  webDir = mkdtempSync(join(tmpdir(), 'openspot-pages-'));
  mkdirSync(join(webDir, 'terminal'));
  mkdirSync(join(webDir, 'admin'));
  mkdirSync(join(webDir, 'assets'));
  writeFileSync(join(webDir, 'terminal', 'index.html'), '<!doctype html><title>terminal</title>');
  writeFileSync(join(webDir, 'admin', 'index.html'), '<!doctype html><title>console</title>');
  writeFileSync(join(webDir, 'assets', 'terminal-AbC123.js'), 'console.log(1)');
  writeFileSync(join(webDir, 'favicon.svg'), '<svg xmlns="http://www.w3.org/2000/svg"/>');
});
after(() => rmSync(webDir, { recursive: true, force: true }));

const DEMO = { userId: 7, apiKey: 'demo-key', apiSecret: 'c2VjcmV0' };

async function server(overrides: Partial<PagesOptions> = {}): Promise<FastifyInstance> {
  const app = Fastify();
  await app.register(pagesPlugin, {
    webDir,
    production: false,
    adminUi: false,
    wsAppKey: 'openspot-key',
    balanceCurrency: 'EUR',
    demoCredentials: () => DEMO,
    ...overrides,
  });
  await app.ready();
  return app;
}

const LOCAL = { remoteAddress: '127.0.0.1', headers: { host: '127.0.0.1:8080' } };
const REMOTE = { remoteAddress: '203.0.113.9', headers: { host: 'exchange.example.com' } };

/**
 * The pages' whole Content-Security-Policy, directive by directive (docs/operations.md, "Web
 * pages"): written out here rather than taken from the code, so dropping or loosening any one
 * directive — `default-src 'none'` above all, the fallback for every fetch not listed — fails.
 */
const EXPECTED_CSP: ReadonlyArray<readonly [string, string]> = [
  ['default-src', "'none'"],
  ['script-src', "'self'"],
  ['style-src', "'self'"],
  ['img-src', "'self' data: blob:"],
  ['font-src', "'self'"],
  ['connect-src', "'self'"],
  ['manifest-src', "'self'"],
  ['base-uri', "'none'"],
  ['form-action', "'self'"],
  ['frame-ancestors', "'none'"],
];

/** The policy of a response as [directive, sources] pairs, in the order sent. */
function cspDirectives(header: unknown): [string, string][] {
  assert.equal(typeof header, 'string', 'one Content-Security-Policy header');
  return (header as string).split(';').map((directive) => {
    const [name = '', ...sources] = directive.trim().split(/\s+/);
    return [name, sources.join(' ')];
  });
}

describe('the Content-Security-Policy', () => {
  test('is the whole policy on the terminal, the console, its 403 and the not-built page', async () => {
    const app = await server();
    const notBuilt = await server({ webDir: join(webDir, 'missing') });
    const pages = [
      ['/', 200, await app.inject({ url: '/', ...REMOTE })],
      ['/admin', 200, await app.inject({ url: '/admin', ...LOCAL })],
      ['/admin/', 200, await app.inject({ url: '/admin/', ...LOCAL })],
      ['/admin (remote: 403)', 403, await app.inject({ url: '/admin', ...REMOTE })],
      ['/ (not built: 503)', 503, await notBuilt.inject({ url: '/', ...REMOTE })],
    ] as const;
    for (const [page, status, response] of pages) {
      assert.equal(response.statusCode, status, page);
      const sent = cspDirectives(response.headers['content-security-policy']);
      for (const [name, sources] of EXPECTED_CSP) {
        assert.deepEqual(
          sent.filter(([n]) => n === name),
          [[name, sources]],
          `${page}: ${name} must be sent once, as ${sources}`,
        );
      }
      assert.deepEqual(sent, EXPECTED_CSP, `${page}: no other directive, in this order`);
    }
    await app.close();
    await notBuilt.close();
  });
});

describe('the terminal page', () => {
  test('/ is the terminal, with a CSP that allows no inline script and a no-cache html', async () => {
    const app = await server();
    const response = await app.inject({ url: '/', ...REMOTE });
    assert.equal(response.statusCode, 200);
    assert.match(response.body, /<title>terminal<\/title>/);
    assert.match(String(response.headers['content-type']), /^text\/html/);
    assert.equal(response.headers['cache-control'], 'no-cache');
    const csp = String(response.headers['content-security-policy']);
    const scriptSrc = csp.split(';').find((d) => d.trim().startsWith('script-src'));
    assert.equal(scriptSrc?.trim(), "script-src 'self'");
    assert.doesNotMatch(csp, /unsafe-inline|unsafe-eval/);
    assert.match(csp, /frame-ancestors 'none'/);
    assert.match(csp, /connect-src 'self'/);
    assert.equal(response.headers['x-content-type-options'], 'nosniff');
    await app.close();
  });

  test('hashed assets are immutable for a year; an unknown asset is a 404', async () => {
    const app = await server();
    const asset = await app.inject({ url: '/assets/terminal-AbC123.js', ...REMOTE });
    assert.equal(asset.statusCode, 200);
    assert.equal(asset.body, 'console.log(1)');
    assert.match(String(asset.headers['cache-control']), /max-age=31536000/);
    assert.match(String(asset.headers['cache-control']), /immutable/);
    assert.equal((await app.inject({ url: '/assets/nope.js', ...REMOTE })).statusCode, 404);
    assert.equal((await app.inject({ url: '/assets/../terminal/index.html', ...REMOTE })).statusCode, 404);
    assert.equal((await app.inject({ url: '/favicon.svg', ...REMOTE })).statusCode, 200);
    await app.close();
  });

  test('without a build the page says how to build it (503), instead of a blank 404', async () => {
    const app = await server({ webDir: join(webDir, 'missing') });
    const response = await app.inject({ url: '/', ...LOCAL });
    assert.equal(response.statusCode, 503);
    assert.match(response.body, /npm run build/);
    await app.close();
  });

  test('/ui/config.json gives the WebSocket app key and valuation currency', async () => {
    const app = await server();
    const response = await app.inject({ url: '/ui/config.json', ...REMOTE });
    assert.equal(response.statusCode, 200);
    assert.deepEqual(response.json(), {
      ws_app_key: 'openspot-key',
      balance_currency: 'EUR',
      demo_available: false,
    });
    await app.close();
  });
});

describe('the operator console page', () => {
  test('answers a local client, refuses a remote one with 403', async () => {
    const app = await server();
    const local = await app.inject({ url: '/admin', ...LOCAL });
    assert.equal(local.statusCode, 200);
    assert.match(local.body, /console/);
    assert.ok(local.headers['content-security-policy']);
    const remote = await app.inject({ url: '/admin', ...REMOTE });
    assert.equal(remote.statusCode, 403);
    assert.match(remote.body, /ADMIN_UI=on/);
    assert.equal((await app.inject({ url: '/admin/', ...REMOTE })).statusCode, 403);
    await app.close();
  });

  test('a loopback peer behind a proxy header, or under a foreign Host (DNS rebinding), is not local', async () => {
    const app = await server();
    const proxied = await app.inject({
      url: '/admin',
      remoteAddress: '127.0.0.1',
      headers: { host: '127.0.0.1:8080', 'x-forwarded-for': '203.0.113.9' },
    });
    assert.equal(proxied.statusCode, 403);
    const rebound = await app.inject({
      url: '/admin',
      remoteAddress: '127.0.0.1',
      headers: { host: 'attacker.example:8080' },
    });
    assert.equal(rebound.statusCode, 403);
    for (const host of ['localhost:8080', '[::1]:8080', '127.0.0.1']) {
      const ok = await app.inject({ url: '/admin', remoteAddress: '::1', headers: { host } });
      assert.equal(ok.statusCode, 200, host);
    }
    await app.close();
  });

  test('in production it is served only with ADMIN_UI=on, even to a client that looks local', async () => {
    const off = await server({ production: true });
    for (const request of [LOCAL, REMOTE]) {
      const refused = await off.inject({ url: '/admin', ...request });
      assert.equal(refused.statusCode, 403, request.remoteAddress);
      assert.match(refused.body, /off in production\. Set ADMIN_UI=on/);
    }
    await off.close();
    const on = await server({ production: true, adminUi: true });
    for (const request of [LOCAL, REMOTE]) {
      const served = await on.inject({ url: '/admin', ...request });
      assert.equal(served.statusCode, 200, request.remoteAddress);
      assert.match(served.body, /console/);
    }
    await on.close();
  });

  test('ADMIN_UI=on serves it to any client', async () => {
    const app = await server({ adminUi: true });
    assert.equal((await app.inject({ url: '/admin', ...REMOTE })).statusCode, 200);
    await app.close();
  });
});

describe('the demo credentials', () => {
  test('a local client in development gets them, and the page is told they exist', async () => {
    const app = await server();
    const response = await app.inject({ url: '/ui/demo-credentials.json', ...LOCAL });
    assert.equal(response.statusCode, 200);
    assert.equal(response.headers['cache-control'], 'no-store');
    assert.deepEqual(response.json(), { api_key: 'demo-key', api_secret: 'c2VjcmV0', user_id: 7 });
    const config = await app.inject({ url: '/ui/config.json', ...LOCAL });
    assert.equal(config.json().demo_available, true);
    await app.close();
  });

  test('a remote client is refused (403); a proxied loopback peer too', async () => {
    const app = await server();
    const remote = await app.inject({ url: '/ui/demo-credentials.json', ...REMOTE });
    assert.equal(remote.statusCode, 403);
    assert.doesNotMatch(remote.body, /demo-key|c2VjcmV0/);
    const proxied = await app.inject({
      url: '/ui/demo-credentials.json',
      remoteAddress: '127.0.0.1',
      headers: { host: 'localhost', forwarded: 'for=203.0.113.9' },
    });
    assert.equal(proxied.statusCode, 403);
    await app.close();
  });

  test('in production (or with no demo account) they do not exist, even locally', async () => {
    for (const overrides of [{ production: true }, { demoCredentials: () => undefined }]) {
      const app = await server(overrides);
      const response = await app.inject({ url: '/ui/demo-credentials.json', ...LOCAL });
      assert.equal(response.statusCode, 404);
      assert.doesNotMatch(response.body, /demo-key|c2VjcmV0/);
      assert.equal((await app.inject({ url: '/ui/config.json', ...LOCAL })).json().demo_available, false);
      await app.close();
    }
  });
});

describe('ADMIN_UI', () => {
  test('is off unless set to on; any other value stops the start with a message naming it', () => {
    assert.equal(loadConfig({}).adminUi, false);
    assert.equal(loadConfig({ ADMIN_UI: 'on' }).adminUi, true);
    assert.equal(loadConfig({ ADMIN_UI: 'off' }).adminUi, false);
    assert.throws(
      () => loadConfig({ ADMIN_UI: 'yes' }),
      (error: unknown) => {
        assert.ok(error instanceof ConfigError);
        assert.match(error.message, /ADMIN_UI/);
        return true;
      },
    );
  });
});
