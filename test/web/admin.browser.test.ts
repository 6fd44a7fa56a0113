/// <reference lib="dom" />
// (Functions passed to page.evaluate run in the page: they use the DOM's types.)
/**
 * The operator console in headless Chromium against the real server (the harness's venue:
 * development defaults, simulator on): sign in, create a user, issue a key (secret shown once),
 * deposit with a reference (and see a conflicting reuse refused), see the ledger check, the
 * asset-precision refusal and the health figures, revoke the key, sign out — and no console
 * error, failed request or request to another host on the way, except the refusals the test
 * provokes. Screenshots at 1280×800 and a phone's 390×844 go to test-output/screenshots/admin-*.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { BrowserContext, Page } from 'playwright-core';
import {
  browserSkip,
  launchBrowser,
  type PageWatch,
  screenshotPath,
  startWebVenue,
  type WebVenue,
  watchPage,
} from './harness.js';

const skip = browserSkip();
const PHONE = { width: 390, height: 844 };

/** Form controls without an accessible name (no label, aria-label or aria-labelledby). */
const unlabelled = (page: Page): Promise<string[]> =>
  page.evaluate(() =>
    [...document.querySelectorAll<HTMLInputElement>('input, select, textarea')]
      .filter(
        (e) =>
          e.type !== 'hidden' &&
          (e.labels?.length ?? 0) === 0 &&
          !e.getAttribute('aria-label') &&
          !e.getAttribute('aria-labelledby'),
      )
      .map((e) => e.outerHTML),
  );

/** How much wider than the viewport the page is (0 or less: no sideways scrolling). */
const pageOverflow = (page: Page): Promise<number> =>
  page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);

describe('operator console in a browser', { skip, timeout: 180_000 }, () => {
  let venue: WebVenue;
  let browser: Awaited<ReturnType<typeof launchBrowser>>;
  let context: BrowserContext;

  before(async () => {
    venue = await startWebVenue();
    browser = await launchBrowser();
    context = browser.context;
    await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: venue.url });
  });
  after(async () => {
    await browser?.close();
    await venue?.close();
  });

  /** A new tab (its own sessionStorage), watched for problems. */
  const openTab = async (viewport?: {
    width: number;
    height: number;
  }): Promise<{ page: Page; watch: PageWatch }> => {
    const page = await context.newPage();
    page.setDefaultTimeout(15_000);
    if (viewport !== undefined) await page.setViewportSize(viewport);
    return { page, watch: watchPage(page, venue.url) };
  };

  /** The admin API, straight (setting up what a test then looks at). */
  const admin = async (method: string, path: string, body?: unknown): Promise<unknown> => {
    const response = await fetch(`${venue.url}/admin/v1${path}`, {
      method,
      headers: {
        authorization: `Bearer ${venue.server.adminToken}`,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    assert.ok(response.ok, `${method} ${path}: ${response.status}`);
    return response.json();
  };

  const signIn = async (page: Page) => {
    await page.goto(`${venue.url}/admin`);
    await page.getByLabel('Admin token').fill(venue.server.adminToken);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('navigation', { name: 'Sections' }).waitFor();
  };

  test('sign in, create a user and a key, deposit, see the ledger check; desktop screenshots', async () => {
    const { page, watch } = await openTab();

    // A wrong token is refused where it was typed, and nothing is kept.
    await page.goto(`${venue.url}/admin`);
    await page.screenshot({ path: screenshotPath('admin-desktop-sign-in.png') });
    watch.allow(401, '/admin/v1/health');
    await page.getByLabel('Admin token').fill('not-the-token');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByText('The server refused this token.').waitFor();
    await page.getByLabel('Admin token').fill(venue.server.adminToken);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('navigation', { name: 'Sections' }).waitFor();

    // The token lives in sessionStorage only: no cookie, nothing in localStorage; a reload keeps it.
    const stored = () => page.evaluate(() => sessionStorage.getItem('openspot.admin-token'));
    assert.equal(await stored(), venue.server.adminToken);
    assert.equal(await page.evaluate(() => localStorage.length), 0);
    assert.deepEqual(await context.cookies(), []);
    await page.reload();
    await page.getByRole('navigation', { name: 'Sections' }).waitFor();

    // A user: created, listed, selected.
    await page.getByLabel('Email (optional)').fill('e2e-operator@example.org');
    await page.getByRole('button', { name: 'Create user' }).click();
    await page.getByText(/Created user \d+ \(e2e-operator@example.org\)/).waitFor();
    // The console says so first, then reloads the list and selects the user (the address follows).
    await page.waitForURL(/#\/users\/\d+$/);
    const userId = Number(/#\/users\/(\d+)/.exec(page.url())?.[1]);
    assert.ok(userId > 0, `the new user is selected (${page.url()})`);
    await page.getByRole('heading', { name: `User ${userId} e2e-operator@example.org` }).waitFor();

    // A key: the secret shown once, with copy buttons; then listed without it.
    await page.getByRole('button', { name: 'Issue key' }).click();
    const secret = await page.getByLabel('API secret', { exact: true }).inputValue();
    const apiKey = await page.getByLabel('API key', { exact: true }).inputValue();
    assert.ok(secret.length >= 32 && apiKey.length >= 16, 'key and secret are shown');
    await page.screenshot({ path: screenshotPath('admin-desktop-key-issued.png') });
    await page.getByRole('button', { name: 'Copy the API secret' }).click();
    await page.getByRole('button', { name: 'Copy the API secret' }).getByText('Copied').waitFor();
    assert.equal(await page.evaluate(() => navigator.clipboard.readText()), secret);
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
    watch.allow(409, `/admin/v1/users/${userId}/deposits`);
    await page.getByLabel('Amount').fill('999');
    await page.getByRole('button', { name: 'Deposit', exact: true }).click();
    await page.getByText('Reference conflict.').waitFor();
    await page.getByText(/deposit of 250\.0000 EUR/).waitFor();
    await page.screenshot({ path: screenshotPath('admin-desktop-user.png'), fullPage: true });
    assert.deepEqual(await unlabelled(page), [], 'every input of the user view has a label');

    // The ledger check.
    await page.getByRole('link', { name: 'Ledger check' }).click();
    await page.getByText('The books balance.').waitFor();
    await page.getByRole('row', { name: /EUR/ }).getByText('ok').waitFor();
    await page.screenshot({ path: screenshotPath('admin-desktop-ledger.png'), fullPage: true });

    // The catalogue: a token's real precision is refused with the server's reason, on the field.
    await page.getByRole('link', { name: 'Markets & assets' }).click();
    watch.allow(422, '/admin/v1/assets');
    await page.getByLabel('Code', { exact: true }).fill('WEI');
    await page.getByLabel('Name', { exact: true }).fill('Wei token');
    await page.getByLabel('Decimals', { exact: true }).fill('18');
    await page.getByRole('button', { name: 'Create asset' }).click();
    await page.getByText(/it may have at most 10 decimals/).waitFor();
    assert.equal(await page.getByLabel('Decimals', { exact: true }).getAttribute('aria-invalid'), 'true');
    await page.screenshot({ path: screenshotPath('admin-desktop-asset-refused.png') });
    await page.getByLabel('Decimals', { exact: true }).fill('9');
    await page.getByRole('button', { name: 'Create asset' }).click();
    await page.getByText('Created WEI (9 decimals).').waitFor();
    await page.getByRole('row', { name: /WEI\s+Wei token/ }).waitFor();
    await page.screenshot({ path: screenshotPath('admin-desktop-catalogue.png'), fullPage: true });
    assert.deepEqual(await unlabelled(page), [], 'every input of the catalogue has a label');

    // Health: /readyz, commit latency and WebSocket connections.
    await page.getByRole('link', { name: 'Health' }).click();
    await page.getByText('Readiness (/readyz)').waitFor();
    await page.locator('.card', { hasText: 'Readiness' }).getByText('ready', { exact: true }).waitFor();
    await page.getByText('WebSocket connections').first().waitFor();
    // The last-interval latency appears after the first short interval (the simulator commits).
    await page
      .locator('.card', { hasText: 'Commit latency p95' })
      .getByText(/p50 [\d.]+ ms · p99 [\d.]+ ms · \d+ commits|no commits in this interval/)
      .waitFor();
    const commits = await page.locator('.card', { hasText: 'Commit failures' }).innerText();
    assert.match(commits, /[1-9]\d* commits since start/);
    await page.screenshot({ path: screenshotPath('admin-desktop-health.png'), fullPage: true });

    // Revoke the key (two steps), then sign out: the token is forgotten.
    await page.goto(`${venue.url}/admin#/users/${userId}`);
    await page.getByRole('button', { name: `Revoke key ${apiKey}` }).click();
    await page.getByRole('button', { name: 'Confirm revoke' }).click();
    await keys.getByText(/revoked/).waitFor();
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByLabel('Admin token').waitFor();
    assert.equal(await stored(), null);

    assert.deepEqual(watch.problems, []);
    await page.close();
  });

  test('usable at phone width: one column, every view reachable; phone screenshots', async () => {
    const { page, watch } = await openTab(PHONE);
    await signIn(page);
    const user = (await admin('POST', '/users', { email: 'phone@example.org' })) as { id: number };
    await admin('POST', `/users/${user.id}/deposits`, { asset: 'BTC', amount: '0.5' });
    await page.goto(`${venue.url}/admin#/users/${user.id}`);
    await page.getByRole('heading', { name: `User ${user.id} phone@example.org` }).waitFor();
    await page.getByRole('row', { name: /BTC\s+0\.5000000000/ }).waitFor();
    // Nothing wider than the screen: no sideways scrolling of the page itself.
    const overflow = await pageOverflow(page);
    assert.ok(overflow <= 0, `the page is ${overflow}px wider than the phone`);
    await page.screenshot({ path: screenshotPath('admin-phone-user.png'), fullPage: true });
    await page.getByRole('link', { name: /All users/ }).click();
    await page.getByLabel('Find a user').fill('phone@');
    await page.getByRole('link', { name: 'phone@example.org' }).waitFor();
    await page.screenshot({ path: screenshotPath('admin-phone-users.png'), fullPage: true });
    for (const [tab, text, file] of [
      ['Ledger', 'The books balance.', 'ledger'],
      ['Health', 'Readiness (/readyz)', 'health'],
      ['Markets', 'New market', 'catalogue'],
    ] as const) {
      await page.getByRole('link', { name: tab, exact: true }).click();
      await page.getByText(text).first().waitFor();
      const wide = await pageOverflow(page);
      assert.ok(wide <= 0, `${tab}: the page is ${wide}px wider than the phone`);
      await page.screenshot({ path: screenshotPath(`admin-phone-${file}.png`), fullPage: true });
    }
    assert.deepEqual(watch.problems, []);
    await page.close();
  });
});
