/// <reference lib="dom" />
// (Functions passed to page.evaluate run in the page: they use the DOM's types.)
/**
 * The trading terminal in headless Chromium against a real server with the simulator running:
 * market data fills, the demo account signs in, a limit order rests (open orders and the book),
 * is canceled, a crossing order fills (trade tape and balances), a 422 lands next to its field —
 * and no console error, failed request or request to another host happens on the way.
 * Screenshots (1280×800 and a phone's 390×844) go to test-output/screenshots/.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { BrowserContext, Page } from 'playwright-core';
import { OpenSpotClient } from '../../src/client/client.js';
import { formatUnits, parseUnits, subtractDecimal } from '../../src/client/decimal.js';
import { trimZeros } from '../../web/shared/decimal.js';
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

describe('trading terminal in a browser', { skip, timeout: 180_000 }, () => {
  let venue: WebVenue;
  let browser: Awaited<ReturnType<typeof launchBrowser>>;
  let context: BrowserContext;
  let page: Page;
  let watch: PageWatch;

  before(async () => {
    venue = await startWebVenue();
    browser = await launchBrowser();
    context = browser.context;
    page = context.pages()[0] ?? (await context.newPage());
    watch = watchPage(page, venue.url);
  });

  after(async () => {
    await browser?.close();
    await venue?.close();
  });

  /** The text of the book's best row on a side (asks: the row next to the spread). */
  const bestPrice = async (side: 'asks' | 'bids'): Promise<string> =>
    page.evaluate((s) => {
      const rows = [...document.querySelectorAll(`.book-table tbody.${s} tr`)];
      const row = s === 'asks' ? rows.at(-1) : rows[0];
      return row?.querySelector('td')?.textContent?.replace(/,/g, '') ?? '';
    }, side);

  /** An admin API call in-process, with the server's token. */
  const admin = async (
    method: 'GET' | 'POST',
    url: string,
    payload?: unknown,
  ): Promise<Record<string, unknown>> => {
    const response = await venue.server.app.inject({
      method,
      url: `/admin/v1${url}`,
      headers: { authorization: `Bearer ${venue.server.adminToken}` },
      ...(payload === undefined ? {} : { payload: payload as Record<string, unknown> }),
    });
    assert.ok(response.statusCode < 300, `${method} ${url}: ${response.statusCode} ${response.body}`);
    return response.json() as Record<string, unknown>;
  };

  const balanceOf = async (asset: string): Promise<string> => {
    await page.getByRole('tab', { name: 'Balances' }).click();
    const cell = page.locator(`tr[data-asset="${asset}"] .balance-total`);
    await cell.waitFor();
    return (await cell.textContent())!.replace(/,/g, '');
  };

  test('/ shows the simulator book, candles, trades and ticker filling in', async () => {
    await page.goto(`${venue.url}/`);
    await page.waitForFunction(
      () => {
        const book = document.querySelector('.book');
        return book?.getAttribute('data-synced') === 'true' && Number(book.getAttribute('data-levels')) >= 4;
      },
      undefined,
      { timeout: 30_000 },
    );
    await page.waitForFunction(
      () => Number(document.querySelector('.candles')?.getAttribute('data-bars')) > 0,
      undefined,
      {
        timeout: 30_000,
      },
    );
    await page.waitForFunction(
      () => Number(document.querySelector('.tape')?.getAttribute('data-trades')) > 0,
      undefined,
      {
        timeout: 30_000,
      },
    );
    await page.waitForFunction(
      () => (document.querySelector('.ticker')?.getAttribute('data-last') ?? '') !== '',
      undefined,
      {
        timeout: 30_000,
      },
    );
    assert.match((await page.locator('.connection').textContent()) ?? '', /connected/);
    assert.match((await page.getByTestId('spread').textContent()) ?? '', /Spread \d/);
    // The market is in the address, so a reload keeps it.
    assert.equal(new URL(page.url()).hash, '#BTC/EUR');
    await page.screenshot({ path: screenshotPath('terminal-desktop-market.png') });
    assert.deepEqual(watch.problems, []);
  });

  test('every input has a label', async () => {
    const unlabelled = await page.evaluate(() =>
      [...document.querySelectorAll('input, select')]
        .filter((el) => {
          const input = el as HTMLInputElement;
          if (input.getAttribute('aria-label')) return false;
          if (input.labels !== null && input.labels.length > 0) return false;
          return true;
        })
        .map((el) => el.outerHTML),
    );
    assert.deepEqual(unlabelled, []);
  });

  test('the demo account signs in with one click; the secret is kept in sessionStorage only', async () => {
    await page.getByRole('button', { name: 'Use demo account' }).click();
    await page.getByRole('button', { name: 'Sign out' }).waitFor({ timeout: 15_000 });
    const stored = await page.evaluate(() => ({
      session: sessionStorage.getItem('openspot.terminal.credentials'),
      local: localStorage.getItem('openspot.terminal.credentials'),
    }));
    assert.ok(stored.session?.includes('apiSecret'), 'kept for this tab');
    assert.equal(stored.local, null, 'not remembered without the checkbox');
    assert.match(await balanceOf('EUR'), /^\d+\.\d+$/);
    assert.deepEqual(watch.problems, []);
  });

  test('the market precision applies as the user types; the minimum volume is checked', async () => {
    const price = page.getByLabel('Price (EUR)');
    await price.fill('');
    await price.pressSequentially('123.456a');
    assert.equal(await price.inputValue(), '123.4', 'BTC/EUR prices have 1 decimal');
    const volume = page.getByLabel('Volume (BTC)');
    await volume.fill('');
    await volume.pressSequentially('0.0000123456');
    assert.equal(await volume.inputValue(), '0.00001234', 'volumes have 8 decimals');
    await page.getByText('The minimum is 0.00005 BTC.').waitFor();
    await price.fill('');
    await volume.fill('');
  });

  let restingId: string;
  const RESTING_VOLUME = '0.12345';

  test('a limit order appears under open orders and in the book', async () => {
    const bid = await bestPrice('bids');
    const ask = await bestPrice('asks');
    assert.ok(bid !== '' && ask !== '', `a two-sided book (bid ${bid}, ask ${ask})`);
    // One tick above the best bid when the spread allows (our own best level), else join it.
    const tick = 0.1;
    const inside = Number(ask) - Number(bid) > tick * 1.5 ? (Number(bid) + tick).toFixed(1) : bid;
    await page.getByRole('tab', { name: 'Open orders' }).click();
    await page.getByLabel('Price (EUR)').fill(inside);
    await page.getByLabel('Volume (BTC)').fill(RESTING_VOLUME);
    assert.match((await page.getByLabel('Order total').textContent()) ?? '', /EUR/);
    await page.getByRole('button', { name: 'Buy BTC' }).click();
    await page
      .getByRole('status')
      .filter({ hasText: /Buy order placed \(#\d+\)/ })
      .waitFor({ timeout: 10_000 });
    restingId = /#(\d+)/.exec((await page.locator('.order-form .status').textContent()) ?? '')![1]!;

    const row = page.locator(`tr[data-order-id="${restingId}"]`);
    await row.waitFor({ timeout: 10_000 });
    assert.match((await row.textContent()) ?? '', /0\.12345/);
    // The book shows our level: at least 0.1 BTC at our price (our 0.12345, less what a simulator
    // taker, trading thousandths, may already have taken; the simulator's own orders are smaller).
    await page.waitForFunction(
      (price) =>
        [...document.querySelectorAll('.book-table tbody.bids tr')].some((tr) => {
          const cells = tr.querySelectorAll('td');
          return cells[0]?.textContent?.replace(/,/g, '') === price && Number(cells[1]?.textContent) >= 0.1;
        }),
      inside,
      { timeout: 10_000 },
    );
    await page.screenshot({ path: screenshotPath('terminal-desktop-open-order.png') });
    assert.deepEqual(watch.problems, []);
  });

  test('cancel removes it from open orders and lets it show in the order history', async () => {
    await page.getByRole('button', { name: `Cancel order ${restingId}` }).click();
    await page.locator(`tr[data-order-id="${restingId}"]`).waitFor({ state: 'detached', timeout: 10_000 });
    await page.getByRole('tab', { name: 'Order history' }).click();
    const row = page.locator(`tr[data-order-id="${restingId}"]`);
    await row.waitFor({ timeout: 10_000 });
    assert.match((await row.textContent()) ?? '', /canceled/);
    assert.deepEqual(watch.problems, []);
  });

  test('a crossing order fills: the trade is on the tape and the balances change', async () => {
    const btcBefore = await balanceOf('BTC');
    // A volume no simulator order uses (they trade in multiples of 0.00005), so its trade is ours;
    // it must fit in the best ask, or the fill splits into two trades of other sizes.
    const bestAskQty = await page.evaluate(() => {
      const rows = [...document.querySelectorAll('.book-table tbody.asks tr.level')];
      return Number(rows.at(-1)?.querySelectorAll('td')[1]?.textContent ?? '0');
    });
    const volume = bestAskQty >= 0.00007 ? '0.00007' : '0.00005';
    const tapeQty = `${volume}000`;
    await page.getByLabel('Order type').selectOption('market');
    await page.getByLabel('Volume (BTC)').fill(volume);
    await page.getByRole('button', { name: 'Buy BTC' }).click();
    await page
      .getByRole('status')
      .filter({ hasText: /Buy order placed/ })
      .waitFor({ timeout: 10_000 });
    await page.locator('.tape tr', { hasText: tapeQty }).first().waitFor({ timeout: 10_000 });
    await page.waitForFunction(
      (before) => {
        const cell = document.querySelector('tr[data-asset="BTC"] .balance-total');
        return cell !== null && cell.textContent?.replace(/,/g, '') !== before;
      },
      btcBefore,
      { timeout: 10_000 },
    );
    const btcAfter = await balanceOf('BTC');
    assert.ok(Number(btcAfter) > Number(btcBefore), `BTC ${btcBefore} → ${btcAfter}`);
    await page.getByRole('tab', { name: 'Trade history' }).click();
    await page.locator('.account tr', { hasText: volume }).first().waitFor({ timeout: 10_000 });
    await page.getByLabel('Order type').selectOption('limit');
    await page.screenshot({ path: screenshotPath('terminal-desktop-filled.png') });
    assert.deepEqual(watch.problems, []);
  });

  test('a fill by someone else reaches the page through the private channel, with no click', async () => {
    // Another trader, funded through the admin API, will sell into our bid.
    const user = await admin('POST', '/users', { email: 'other-trader@example.test' });
    const key = await admin('POST', `/users/${user.id}/api-keys`, {});
    await admin('POST', `/users/${user.id}/deposits`, { asset: 'BTC', amount: '1' });
    const other = new OpenSpotClient({
      baseUrl: `${venue.url}/v1`,
      apiKey: String(key.api_key),
      apiSecret: String(key.api_secret),
    });

    await page.getByRole('tab', { name: 'Open orders' }).click();
    // Our bid at the best bid or one tick above it: a sell at that price reaches it.
    const bid = await bestPrice('bids');
    const ask = await bestPrice('asks');
    const price = Number(ask) - Number(bid) > 0.15 ? (Number(bid) + 0.1).toFixed(1) : bid;
    await page.getByLabel('Price (EUR)').fill(price);
    await page.getByLabel('Volume (BTC)').fill('0.00321');
    await page.getByRole('button', { name: 'Buy BTC' }).click();
    await page
      .getByRole('status')
      .filter({ hasText: /Buy order placed \(#\d+\)/ })
      .waitFor({ timeout: 10_000 });
    const id = /#(\d+)/.exec((await page.locator('.order-form .status').textContent()) ?? '')![1]!;
    await page.locator(`tr[data-order-id="${id}"]`).waitFor({ timeout: 10_000 });

    // The other trader sells at our price more than the bids there and above hold: our order fills
    // whole (the rest of the sell rests as an ask).
    await other.createOrder({ pair: 'BTC/EUR', direction: 'sell', type: 'limit', volume: '0.05', price });
    await page.locator(`tr[data-order-id="${id}"]`).waitFor({ state: 'detached', timeout: 10_000 });
    await page.getByRole('tab', { name: 'Order history' }).click();
    const row = page.locator(`tr[data-order-id="${id}"]`);
    await row.waitFor({ timeout: 10_000 });
    assert.match((await row.textContent()) ?? '', /closed/);
    assert.deepEqual(watch.problems, []);
  });

  test("a 422 shows Laravel's message next to the field it names", async () => {
    watch.allow(422, '/v1/orders');
    // The radio itself is visually hidden under its label (the segmented control): click the label.
    await page.locator('label.side-option', { hasText: 'Sell' }).click();
    assert.ok(await page.getByRole('radio', { name: 'Sell' }).isChecked());
    await page.getByLabel('Price (EUR)').fill('90000');
    await page.getByLabel('Volume (BTC)').fill('100000');
    await page.getByRole('button', { name: 'Sell BTC' }).click();
    const error = page.locator('#order-volume-error');
    await error.waitFor({ timeout: 10_000 });
    assert.equal(await error.textContent(), 'Insufficient funds.');
    assert.equal(await page.getByLabel('Volume (BTC)').getAttribute('aria-invalid'), 'true');
    await page.locator('label.side-option', { hasText: 'Buy' }).click();
    await page.getByLabel('Volume (BTC)').fill('');
    await page.getByLabel('Price (EUR)').fill('');
    assert.deepEqual(watch.problems, []);
  });

  /** The demo account's client, for what a test sets up or checks beside the page. */
  const demoClient = () => {
    const demo = JSON.parse(readFileSync(join(venue.dataDir, 'demo-credentials.json'), 'utf8')) as {
      api_key: string;
      api_secret: string;
    };
    return new OpenSpotClient({
      baseUrl: `${venue.url}/v1`,
      apiKey: demo.api_key,
      apiSecret: demo.api_secret,
    });
  };
  /** The demo account's available balance of an asset (total − pending), from the API. */
  const availableOf = async (asset: string): Promise<string> => {
    const entry = (await demoClient().spotWallet()).data.find((w) => w.asset_id === asset)!;
    return subtractDecimal(entry.balance.balance_total, entry.pending.balance_pending);
  };
  const shownAvailable = async () => (await page.getByTestId('available').textContent())!.replace(/,/g, '');

  test('the form shows the AVAILABLE balance; 25/50/75/100 % size the order from it', async () => {
    const client = demoClient();
    await page.getByRole('tab', { name: 'Open orders' }).click();
    // A resting sell holds 0.5 BTC: the form's line must leave it out.
    const held = await client.createOrder({
      pair: 'BTC/EUR',
      direction: 'sell',
      type: 'limit',
      volume: '0.5',
      price: '500000.0',
    });
    await page.locator(`tr[data-order-id="${held.id}"]`).waitFor({ timeout: 10_000 });
    await page.locator('label.side-option', { hasText: 'Sell' }).click();
    const btc = await availableOf('BTC');
    await page.waitForFunction(
      (want) => document.querySelector('[data-testid="available"]')?.textContent?.replace(/,/g, '') === want,
      `${btc} BTC`,
      { timeout: 10_000 },
    );
    const units = parseUnits(btc, 10);
    await page.getByRole('button', { name: '50 % of available BTC' }).click();
    // Half of the available BTC, cut (never rounded up) to the 8 decimals of a BTC/EUR volume.
    assert.equal(
      await page.getByLabel('Volume (BTC)').inputValue(),
      trimZeros(formatUnits(units / 2n / 100n, 8)),
    );
    await page.getByRole('button', { name: '100 % of available BTC' }).click();
    assert.equal(await page.getByLabel('Volume (BTC)').inputValue(), trimZeros(formatUnits(units / 100n, 8)));

    // A buy spends EUR at the typed price, with room for the fee (0.5 %).
    await page.locator('label.side-option', { hasText: 'Buy' }).click();
    const eur = await availableOf('EUR');
    assert.equal(await shownAvailable(), `${eur} EUR`);
    await page.getByLabel('Price (EUR)').fill('50000.0');
    await page.getByRole('button', { name: '25 % of available EUR' }).click();
    // volume = eur × 25 % / 50000 / 1.005, in 10^-8 BTC: eur units are 10^-4 EUR.
    const lots = (parseUnits(eur, 4) * 25n * 10n ** 8n * 10_000n) / (100n * 10n ** 4n * 50_000n * 10_050n);
    assert.equal(await page.getByLabel('Volume (BTC)').inputValue(), trimZeros(formatUnits(lots, 8)));
    await client.cancelOrder(held.id!);
    await page.getByLabel('Volume (BTC)').fill('');
    await page.getByLabel('Price (EUR)').fill('');
    assert.deepEqual(watch.problems, []);
  });

  test('order controls: post-only and IOC end on arrival with their reason, GTD rests, amend, cancel-all', async () => {
    await page.getByRole('tab', { name: 'Open orders' }).click();
    // Post-only well above the best ask would take (even if the simulator's quotes move meanwhile):
    // it ends canceled, and the form says why.
    const above = (Number(await bestPrice('asks')) * 1.05).toFixed(1);
    await page.getByLabel('Price (EUR)').fill(above);
    await page.getByLabel('Volume (BTC)').fill('0.0001');
    await page.getByLabel('Post only').check();
    await page.getByRole('button', { name: 'Buy BTC' }).click();
    await page
      .getByRole('status')
      .filter({ hasText: /Buy order placed \(#\d+\)\. It is canceled: .+\./ })
      .waitFor({ timeout: 10_000 });
    await page.getByLabel('Post only').uncheck();

    // IOC far below the market: nothing trades, nothing rests; post-only is not offered with it.
    await page.getByLabel('Time in force').selectOption('IOC');
    assert.equal(await page.getByLabel('Post only').isDisabled(), true);
    await page.getByLabel('Price (EUR)').fill('20000.0');
    await page.getByRole('button', { name: 'Buy BTC' }).click();
    await page
      .getByRole('status')
      .filter({ hasText: /It is canceled/ })
      .waitFor({ timeout: 10_000 });
    const iocId = /#(\d+)/.exec((await page.locator('.order-form .status').textContent()) ?? '')![1]!;
    await page.getByRole('tab', { name: 'Order history' }).click();
    await page.locator(`tr[data-order-id="${iocId}"]`, { hasText: 'canceled' }).waitFor({ timeout: 10_000 });

    // GTD an hour from now: it rests, with its expiry.
    await page.getByRole('tab', { name: 'Open orders' }).click();
    await page.getByLabel('Time in force').selectOption('GTD');
    const inAnHour = await page.evaluate(() => {
      const d = new Date(Date.now() + 3_600_000 - new Date().getTimezoneOffset() * 60_000);
      return d.toISOString().slice(0, 16);
    });
    await page.getByLabel('Expires (your local time)').fill(inAnHour);
    await page.getByRole('button', { name: 'Buy BTC' }).click();
    await page
      .getByRole('status')
      .filter({ hasText: /Buy order placed \(#\d+\)\.$/ })
      .waitFor({ timeout: 10_000 });
    const gtdId = /#(\d+)/.exec((await page.locator('.order-form .status').textContent()) ?? '')![1]!;
    const gtd = (await demoClient().order(Number(gtdId))).data;
    const expires = Number(gtd.expire_time.split('.')[0]);
    assert.ok(Math.abs(expires - (Date.now() / 1000 + 3600)) < 120, `expires at ${gtd.expire_time}`);
    await page.getByLabel('Time in force').selectOption('GTC');

    // Amend it in the table: a new price and a larger volume.
    const row = page.locator(`tr[data-order-id="${gtdId}"]`);
    await row.waitFor({ timeout: 10_000 });
    await page.getByRole('button', { name: `Amend order ${gtdId}` }).click();
    await page.getByLabel(`New price of order ${gtdId}`).fill('20001.5');
    await page.getByLabel(`New total volume of order ${gtdId}`).fill('0.0003');
    await page.screenshot({ path: screenshotPath('terminal-desktop-amend.png') });
    await page.getByRole('button', { name: `Save order ${gtdId}` }).click();
    await row.filter({ hasText: '20,001.5' }).filter({ hasText: '0.0003' }).waitFor({ timeout: 10_000 });
    const amended = (await demoClient().order(Number(gtdId))).data;
    assert.equal(amended.price.amount, '20001.5');
    assert.equal(amended.volume.amount, '0.00030000');

    // One more resting order, then cancel-all (asked to confirm first) empties the list.
    await page.getByLabel('Price (EUR)').fill('20000.0');
    await page.getByRole('button', { name: 'Buy BTC' }).click();
    await page.locator('.account tbody tr').nth(1).waitFor({ timeout: 10_000 });
    await page.getByRole('button', { name: 'Cancel all' }).click();
    await page.getByText(/Cancel \d+ open orders \(all markets\)\?/).waitFor();
    await page.screenshot({ path: screenshotPath('terminal-desktop-cancel-all.png') });
    await page.getByRole('button', { name: 'Yes, cancel all' }).click();
    await page.getByText('No open orders.').waitFor({ timeout: 10_000 });
    assert.deepEqual((await demoClient().openOrders()).data, []);
    await page.getByLabel('Volume (BTC)').fill('');
    await page.getByLabel('Price (EUR)').fill('');
    assert.deepEqual(watch.problems, []);
  });

  test('open orders are paginated: ten a page, the pager moves to the next', async () => {
    const demo = JSON.parse(readFileSync(join(venue.dataDir, 'demo-credentials.json'), 'utf8')) as {
      api_key: string;
      api_secret: string;
    };
    const client = new OpenSpotClient({
      baseUrl: `${venue.url}/v1`,
      apiKey: demo.api_key,
      apiSecret: demo.api_secret,
    });
    const ids: number[] = [];
    // Far below the market: they rest. The page learns of them through the private channel.
    for (let i = 0; i < 12; i += 1) {
      const created = await client.createOrder({
        pair: 'BTC/EUR',
        direction: 'buy',
        type: 'limit',
        volume: '0.0001',
        price: (20_000 + i).toFixed(1),
      });
      ids.push(created.id!);
    }
    await page.getByRole('tab', { name: 'Open orders' }).click();
    const pager = page.getByRole('navigation', { name: 'Pages' });
    await pager.getByText(/Page 1 of 2/).waitFor({ timeout: 10_000 });
    assert.equal(await page.locator('.account tbody tr').count(), 10);
    await pager.getByRole('button', { name: 'Next' }).click();
    await pager.getByText(/Page 2 of 2/).waitFor({ timeout: 10_000 });
    assert.ok((await page.locator('.account tbody tr').count()) >= 2);
    for (const id of ids) await client.cancelOrder(id);
    // All canceled while page 2 is shown: the page goes back to the last page there is, empty.
    await page.getByText('No open orders.').waitFor({ timeout: 10_000 });
    assert.equal(await pager.count(), 0, 'no pager for a single page');
    assert.deepEqual(watch.problems, []);
  });

  test('another market and another interval load their own book, candles and trades', async () => {
    await page.getByLabel('Market', { exact: true }).selectOption('ETH/EUR');
    await page.waitForFunction(() => location.hash === '#ETH/EUR');
    await page.getByLabel('Price (EUR)').waitFor();
    await page.getByText('Amount (ETH)').first().waitFor();
    await page.waitForFunction(
      () => {
        const book = document.querySelector('.book');
        return book?.getAttribute('data-synced') === 'true' && Number(book.getAttribute('data-levels')) >= 2;
      },
      undefined,
      { timeout: 20_000 },
    );
    await page.getByRole('button', { name: '5-minute candles', exact: true }).click();
    assert.equal(
      await page.getByRole('button', { name: '5-minute candles', exact: true }).getAttribute('aria-pressed'),
      'true',
    );
    await page.waitForFunction(
      () => Number(document.querySelector('.candles')?.getAttribute('data-bars')) > 0,
      undefined,
      {
        timeout: 20_000,
      },
    );
    await page.screenshot({ path: screenshotPath('terminal-desktop-eth-5m.png') });
    await page.getByRole('button', { name: '1-minute candles', exact: true }).click();
    await page.getByLabel('Market', { exact: true }).selectOption('BTC/EUR');
    await page.waitForFunction(() => location.hash === '#BTC/EUR');
    assert.deepEqual(watch.problems, []);
  });

  test('the depth chart draws; the phone layout has everything in one column', async () => {
    await page.getByRole('button', { name: 'Depth' }).click();
    await page.waitForTimeout(300);
    await page.screenshot({ path: screenshotPath('terminal-desktop-depth.png') });
    await page.getByRole('button', { name: 'Candles' }).click();
    await page.setViewportSize({ width: 1024, height: 768 });
    await page.waitForTimeout(300);
    const narrow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
    assert.ok(narrow <= 0, `no sideways scrolling at 1024 px (${narrow}px too wide)`);
    await page.screenshot({ path: screenshotPath('terminal-1024.png') });
    await page.setViewportSize({ width: 390, height: 844 });
    await page.waitForTimeout(500);
    const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
    assert.ok(overflow <= 0, `no sideways scrolling at phone width (${overflow}px too wide)`);
    await page.screenshot({ path: screenshotPath('terminal-phone.png'), fullPage: true });
    await page.setViewportSize({ width: 1280, height: 800 });
    await page.getByRole('tab', { name: 'Open orders' }).click();
    await page.waitForTimeout(300);
    await page.screenshot({ path: screenshotPath('terminal-desktop.png') });
    assert.deepEqual(watch.problems, []);
  });

  test('a key typed in by hand (a wrong secret refused first), created with nonce_required, trades and cancels', async () => {
    const user = await admin('POST', '/users', { email: 'nonce-trader@example.test' });
    const key = await admin('POST', `/users/${user.id}/api-keys`, { nonce_required: true });
    await admin('POST', `/users/${user.id}/deposits`, { asset: 'EUR', amount: '1000' });
    await page.getByRole('button', { name: 'Sign out' }).click();
    // A wrong secret is refused with the server's words, and nothing is kept.
    watch.allow(422, '/v1/spot-wallet');
    await page.getByLabel('API key', { exact: true }).fill(String(key.api_key));
    await page.getByLabel('API secret', { exact: true }).fill(btoa('not the secret'));
    await page.getByRole('button', { name: 'Sign in', exact: true }).click();
    await page
      .getByRole('alert')
      .filter({ hasText: 'Invalid Signature (HTTP 422)' })
      .waitFor({ timeout: 10_000 });
    assert.equal(await page.evaluate(() => sessionStorage.getItem('openspot.terminal.credentials')), null);
    await page.getByLabel('API secret', { exact: true }).fill(String(key.api_secret));
    await page.getByRole('button', { name: 'Sign in', exact: true }).click();
    await page.getByRole('button', { name: 'Sign out' }).waitFor({ timeout: 10_000 });
    assert.equal(await balanceOf('EUR'), '1000.0000');

    await page.getByRole('tab', { name: 'Open orders' }).click();
    await page.getByLabel('Price (EUR)').fill('20000');
    await page.getByLabel('Volume (BTC)').fill('0.001');
    await page.getByRole('button', { name: 'Buy BTC' }).click();
    await page
      .getByRole('status')
      .filter({ hasText: /Buy order placed \(#\d+\)/ })
      .waitFor({ timeout: 10_000 });
    const id = /#(\d+)/.exec((await page.locator('.order-form .status').textContent()) ?? '')![1]!;
    await page.locator(`tr[data-order-id="${id}"]`).waitFor({ timeout: 10_000 });
    await page.getByRole('button', { name: `Cancel order ${id}` }).click();
    await page.locator(`tr[data-order-id="${id}"]`).waitFor({ state: 'detached', timeout: 10_000 });
    assert.equal(await balanceOf('EUR'), '1000.0000', 'nothing spent, nothing reserved');
    assert.deepEqual(watch.problems, []);
  });

  test('"Remember on this device" keeps the account across a reload; sign out forgets it', async () => {
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByLabel('Remember on this device').check();
    await page.getByRole('button', { name: 'Use demo account' }).click();
    await page.getByRole('button', { name: 'Sign out' }).waitFor({ timeout: 10_000 });
    await page.reload();
    await page.getByRole('button', { name: 'Sign out' }).waitFor({ timeout: 10_000 });
    assert.ok(await page.evaluate(() => localStorage.getItem('openspot.terminal.credentials') !== null));
    await page.getByRole('button', { name: 'Sign out' }).click();
    assert.deepEqual(
      await page.evaluate(() => [
        localStorage.getItem('openspot.terminal.credentials'),
        sessionStorage.getItem('openspot.terminal.credentials'),
      ]),
      [null, null],
    );
    assert.deepEqual(watch.problems, []);
  });
});
