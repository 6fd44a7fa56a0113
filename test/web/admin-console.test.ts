/**
 * The operator console in headless Chromium (playwright-core + Debian's `chromium`), against the
 * real server with freshly built pages: sign in, create a user, issue a key (secret shown once),
 * deposit with a reference (and see a conflicting reuse refused), see the ledger check, the
 * asset-precision refusal and the health figures, revoke the key, sign out. Any console error or
 * failed request fails the test, except the refusals the test provokes on purpose.
 * Screenshots at desktop and phone width go to test-output/screenshots/ (ignored by git).
 *
 * Without Chromium the suite is skipped with a message (set CHROMIUM_PATH if it lives elsewhere);
 * under CI a missing browser fails.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { type Browser, type BrowserContext, chromium, type Page } from 'playwright-core';
import { startTestServer, type TestServer } from '../support/server-fixture.js';

const ROOT = join(import.meta.dirname, '..', '..');
const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const SHOTS = join(ROOT, 'test-output', 'screenshots');
const DESKTOP = { width: 1280, height: 800 };
const PHONE = { width: 390, height: 844 };

const missing = !existsSync(CHROMIUM);
if (missing && process.env.CI) throw new Error(`Chromium is required in CI and was not found at ${CHROMIUM}`);
const skip = missing
  ? `Chromium not found at ${CHROMIUM} (apt-get install chromium, or set CHROMIUM_PATH)`
  : false;
if (missing) process.stderr.write(`admin console browser tests skipped: ${skip}\n`);

/** An admin answer the test provokes on purpose: allowed to fail, and its console line with it. */
interface Expected {
  readonly method: string;
  readonly path: string;
  readonly status: number;
}

/** Records console errors, page errors, failed requests and 4xx/5xx answers of one page. */
function watch(page: Page) {
  const problems: string[] = [];
  const refusals: (Expected & { seen: boolean })[] = [];
  const expected: Expected[] = [];
  page.on('console', (message) => {
    if (message.type() === 'error') problems.push(`console: ${message.text()}`);
  });
  page.on('pageerror', (error) => problems.push(`page error: ${error.message}`));
  page.on('requestfailed', (request) => {
    // A poll cut short by navigation or the end of the test is not a failure of the page.
    if (request.failure()?.errorText === 'net::ERR_ABORTED') return;
    problems.push(`request failed: ${request.method()} ${request.url()} ${request.failure()?.errorText}`);
  });
  page.on('response', (response) => {
    if (response.status() < 400) return;
    const { pathname } = new URL(response.url());
    refusals.push({
      method: response.request().method(),
      path: pathname,
      status: response.status(),
      seen: false,
    });
  });
  return {
    expect(method: string, path: string, status: number) {
      expected.push({ method, path, status });
    },
    /** Every problem, less the provoked refusals (and Chromium's console line for each). */
    check() {
      const unexpected = refusals.filter(
        (r) => !expected.some((e) => e.method === r.method && e.path === r.path && e.status === r.status),
      );
      const consoleLines = problems.filter((p) => {
        const status = /Failed to load resource: the server responded with a status of (\d+)/.exec(p)?.[1];
        return status === undefined || !expected.some((e) => e.status === Number(status));
      });
      assert.deepEqual(
        [...unexpected.map((r) => `answer: ${r.method} ${r.path} ${r.status}`), ...consoleLines],
        [],
      );
    },
  };
}

/** Form controls without an accessible name (no label, aria-label or aria-labelledby). */
const unlabelled = async (page: Page): Promise<string[]> =>
  (await page.evaluate(`[...document.querySelectorAll('input, select, textarea')]
    .filter((e) => e.type !== 'hidden' && e.labels.length === 0 && !e.getAttribute('aria-label') && !e.getAttribute('aria-labelledby'))
    .map((e) => e.outerHTML)`)) as string[];

/** How much wider than the viewport the page is (0 or less: no sideways scrolling). */
const pageOverflow = async (page: Page): Promise<number> =>
  Number(await page.evaluate('document.documentElement.scrollWidth - window.innerWidth'));

describe('operator console in Chromium', { skip }, () => {
  let server: TestServer;
  let browser: Browser;
  let webDir: string;

  before(async () => {
    webDir = mkdtempSync(join(tmpdir(), 'openspot-web-'));
    const build = spawnSync(process.execPath, ['scripts/build.mjs', '--web-only', '--out-dir', webDir], {
      cwd: ROOT,
      encoding: 'utf8',
    });
    assert.equal(build.status, 0, `the pages did not build: ${build.stderr}`);
    server = await startTestServer({}, undefined, { webDir });
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
    mkdirSync(SHOTS, { recursive: true });
  });
  after(async () => {
    await browser?.close();
    await server?.close();
    rmSync(webDir, { recursive: true, force: true });
  });

  const signIn = async (context: BrowserContext) => {
    const page = await context.newPage();
    page.setDefaultTimeout(10_000);
    const seen = watch(page);
    await page.goto(`${server.url}/admin`);
    await page.getByLabel('Admin token').fill(server.server.adminToken);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('navigation', { name: 'Sections' }).waitFor();
    return { page, seen };
  };

  test('sign in, create a user and a key, deposit, see the ledger check; desktop screenshots', async () => {
    const context = await browser.newContext({ viewport: DESKTOP });
    await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: server.url });
    const page = await context.newPage();
    page.setDefaultTimeout(10_000);
    const seen = watch(page);

    // A wrong token is refused where it was typed, and nothing is kept.
    await page.goto(`${server.url}/admin`);
    await page.screenshot({ path: join(SHOTS, 'admin-desktop-sign-in.png') });
    seen.expect('GET', '/admin/v1/health', 401);
    await page.getByLabel('Admin token').fill('not-the-token');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByText('The server refused this token.').waitFor();
    await page.getByLabel('Admin token').fill(server.server.adminToken);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('navigation', { name: 'Sections' }).waitFor();

    // The token lives in sessionStorage only: no cookie, nothing in localStorage; a reload keeps it.
    assert.equal(
      await page.evaluate("sessionStorage.getItem('openspot.admin-token')"),
      server.server.adminToken,
    );
    assert.equal(await page.evaluate('localStorage.length'), 0);
    assert.deepEqual(await context.cookies(), []);
    await page.reload();
    await page.getByRole('navigation', { name: 'Sections' }).waitFor();

    // A user: created, listed, selected.
    await page.getByLabel('Email (optional)').fill('e2e-operator@example.org');
    await page.getByRole('button', { name: 'Create user' }).click();
    await page.getByText(/Created user \d+ \(e2e-operator@example.org\)/).waitFor();
    const userId = Number(/#\/users\/(\d+)/.exec(page.url())?.[1]);
    assert.ok(userId > 0, `the new user is selected (${page.url()})`);
    await page.getByRole('heading', { name: `User ${userId} e2e-operator@example.org` }).waitFor();

    // A key: the secret shown once, with copy buttons; then listed without it.
    await page.getByRole('button', { name: 'Issue key' }).click();
    const secret = await page.getByLabel('API secret', { exact: true }).inputValue();
    const apiKey = await page.getByLabel('API key', { exact: true }).inputValue();
    assert.ok(secret.length >= 32 && apiKey.length >= 16, 'key and secret are shown');
    await page.screenshot({ path: join(SHOTS, 'admin-desktop-key-issued.png') });
    await page.getByRole('button', { name: 'Copy the API secret' }).click();
    await page.getByRole('button', { name: 'Copy the API secret' }).getByText('Copied').waitFor();
    assert.equal(await page.evaluate('navigator.clipboard.readText()'), secret);
    await page.getByRole('button', { name: /I have stored it/ }).click();
    assert.equal(
      await page.getByLabel('API secret', { exact: true }).count(),
      0,
      'the secret is gone once hidden',
    );
    const keys = page.getByRole('table', { name: `API keys of user ${userId}` });
    await keys.getByText(apiKey).waitFor();
    assert.equal(await page.getByText(secret).count(), 0);

    // A deposit with a reference; the balance follows.
    await page.getByLabel('Asset', { exact: true }).selectOption('EUR');
    await page.getByLabel('Amount').fill('250');
    await page.getByLabel('Reference (optional)').fill('e2e-wire-1');
    await page.getByRole('button', { name: 'Deposit', exact: true }).click();
    await page
      .getByText('Deposited 250.0000 EUR (reference e2e-wire-1). Balance now 250.0000 EUR.')
      .waitFor();
    const balances = page.getByRole('table', { name: `Balances of user ${userId}` });
    await balances
      .getByRole('row', { name: /EUR\s+250\.0000/ })
      .first()
      .waitFor();

    // The same reference with another amount: refused clearly, nothing changed.
    seen.expect('POST', `/admin/v1/users/${userId}/deposits`, 409);
    await page.getByLabel('Amount').fill('999');
    await page.getByRole('button', { name: 'Deposit', exact: true }).click();
    await page.getByText('Reference conflict.').waitFor();
    await page.getByText(/deposit of 250\.0000 EUR/).waitFor();
    await page.screenshot({ path: join(SHOTS, 'admin-desktop-user.png'), fullPage: true });
    assert.deepEqual(await unlabelled(page), [], 'every input of the user view has a label');

    // The ledger check.
    await page.getByRole('link', { name: 'Ledger check' }).click();
    await page.getByText('The books balance.').waitFor();
    await page.getByRole('row', { name: /EUR/ }).getByText('ok').waitFor();
    await page.screenshot({ path: join(SHOTS, 'admin-desktop-ledger.png'), fullPage: true });

    // The catalogue: a token's real precision is refused with the server's reason, on the field.
    await page.getByRole('link', { name: 'Markets & assets' }).click();
    seen.expect('POST', '/admin/v1/assets', 422);
    await page.getByLabel('Code', { exact: true }).fill('WEI');
    await page.getByLabel('Name', { exact: true }).fill('Wei token');
    await page.getByLabel('Decimals', { exact: true }).fill('18');
    await page.getByRole('button', { name: 'Create asset' }).click();
    await page.getByText(/it may have at most 10 decimals/).waitFor();
    assert.equal(await page.getByLabel('Decimals', { exact: true }).getAttribute('aria-invalid'), 'true');
    await page.screenshot({ path: join(SHOTS, 'admin-desktop-asset-refused.png') });
    await page.getByLabel('Decimals', { exact: true }).fill('9');
    await page.getByRole('button', { name: 'Create asset' }).click();
    await page.getByText('Created WEI (9 decimals).').waitFor();
    await page.getByRole('row', { name: /WEI\s+Wei token/ }).waitFor();
    await page.screenshot({ path: join(SHOTS, 'admin-desktop-catalogue.png'), fullPage: true });
    assert.deepEqual(await unlabelled(page), [], 'every input of the catalogue has a label');

    // Health: /readyz, commit latency and WebSocket connections.
    await page.getByRole('link', { name: 'Health' }).click();
    await page.getByText('Readiness (/readyz)').waitFor();
    await page.locator('.card', { hasText: 'Readiness' }).getByText('ready', { exact: true }).waitFor();
    await page.getByText('WebSocket connections').first().waitFor();
    const commits = await page.locator('.card', { hasText: 'Commit failures' }).innerText();
    assert.match(commits, /[1-9]\d* commits since start/);
    await page.screenshot({ path: join(SHOTS, 'admin-desktop-health.png'), fullPage: true });

    // Revoke the key (two steps), then sign out: the token is forgotten.
    await page.goto(`${server.url}/admin#/users/${userId}`);
    await page.getByRole('button', { name: `Revoke key ${apiKey}` }).click();
    await page.getByRole('button', { name: 'Confirm revoke' }).click();
    await keys.getByText(/revoked/).waitFor();
    assert.equal((await server.admin('GET', `/users/${userId}/api-keys`)).status, 200);
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByLabel('Admin token').waitFor();
    assert.equal(await page.evaluate("sessionStorage.getItem('openspot.admin-token')"), null);

    seen.check();
    await context.close();
  });

  test('usable at phone width: one column, every view reachable; phone screenshots', async () => {
    const context = await browser.newContext({ viewport: PHONE, isMobile: true, hasTouch: true });
    const { page, seen } = await signIn(context);
    const user = (await server.admin('POST', '/users', { email: 'phone@example.org' })).body as {
      id: number;
    };
    await server.admin('POST', `/users/${user.id}/deposits`, { asset: 'BTC', amount: '0.5' });
    await page.goto(`${server.url}/admin#/users/${user.id}`);
    await page.getByRole('heading', { name: `User ${user.id} phone@example.org` }).waitFor();
    await page.getByRole('row', { name: /BTC\s+0\.5000000000/ }).waitFor();
    // Nothing wider than the screen: no sideways scrolling of the page itself.
    const overflow = await pageOverflow(page);
    assert.ok(overflow <= 0, `the page is ${overflow}px wider than the phone`);
    await page.screenshot({ path: join(SHOTS, 'admin-phone-user.png'), fullPage: true });
    await page.getByRole('link', { name: /All users/ }).click();
    await page.getByLabel('Find a user').fill('phone@');
    await page.getByRole('link', { name: 'phone@example.org' }).waitFor();
    await page.screenshot({ path: join(SHOTS, 'admin-phone-users.png'), fullPage: true });
    for (const [tab, text, file] of [
      ['Ledger', 'The books balance.', 'ledger'],
      ['Health', 'Readiness (/readyz)', 'health'],
      ['Markets', 'New market', 'catalogue'],
    ] as const) {
      await page.getByRole('link', { name: tab, exact: true }).click();
      await page.getByText(text).first().waitFor();
      const wide = await pageOverflow(page);
      assert.ok(wide <= 0, `${tab}: the page is ${wide}px wider than the phone`);
      await page.screenshot({ path: join(SHOTS, `admin-phone-${file}.png`), fullPage: true });
    }
    seen.check();
    await context.close();
  });
});
