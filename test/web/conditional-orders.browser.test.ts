/// <reference lib="dom" />
// (Functions passed to page.evaluate run in the page: they use the DOM's types.)
/**
 * Conditional orders in the trading terminal, in headless Chromium against a real server with the
 * simulator off (so that only this test moves the last price): the form offers the five types with
 * their own fields, a trigger already reached shows its 422 under the trigger field, a stop-loss
 * placed from the form waits in open orders with its condition, its trigger is amended in the
 * table, and a later trade between two
 * other traders fires it — the page sees it leave the open orders and end closed, triggered, in the
 * order history, with no click. Screenshots go to test-output/screenshots/.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { BrowserContext, Page } from 'playwright-core';
import { OpenSpotClient } from '../../src/client/client.js';
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
const pair = 'BTC/EUR';

describe('conditional orders in the trading terminal', { skip, timeout: 180_000 }, () => {
  let venue: WebVenue;
  let browser: Awaited<ReturnType<typeof launchBrowser>>;
  let context: BrowserContext;
  let page: Page;
  let watch: PageWatch;
  /** Two other traders: the maker quotes, the taker trades against the quotes. */
  let maker: OpenSpotClient;
  let taker: OpenSpotClient;

  /** An admin API call in-process, with the server's token. */
  const admin = async (method: 'POST', url: string, payload: unknown): Promise<Record<string, unknown>> => {
    const response = await venue.server.app.inject({
      method,
      url: `/admin/v1${url}`,
      headers: { authorization: `Bearer ${venue.server.adminToken}` },
      payload: payload as Record<string, unknown>,
    });
    assert.ok(response.statusCode < 300, `${method} ${url}: ${response.statusCode} ${response.body}`);
    return response.json() as Record<string, unknown>;
  };
  const trader = async (email: string): Promise<OpenSpotClient> => {
    const user = await admin('POST', '/users', { email });
    const key = await admin('POST', `/users/${user.id}/api-keys`, {});
    await admin('POST', `/users/${user.id}/deposits`, { asset: 'BTC', amount: '1' });
    await admin('POST', `/users/${user.id}/deposits`, { asset: 'EUR', amount: '100000' });
    return new OpenSpotClient({
      baseUrl: `${venue.url}/v1`,
      apiKey: String(key.api_key),
      apiSecret: String(key.api_secret),
    });
  };
  /** One trade at `price` between the two other traders. */
  const tradeAt = async (price: string, takerSide: 'buy' | 'sell') => {
    await maker.createOrder({
      pair,
      direction: takerSide === 'buy' ? 'sell' : 'buy',
      type: 'limit',
      volume: '0.001',
      price,
    });
    await taker.createOrder({ pair, direction: takerSide, type: 'market', volume: '0.001' });
  };

  before(async () => {
    venue = await startWebVenue({ SIMULATOR: 'off' });
    browser = await launchBrowser();
    context = browser.context;
    page = context.pages()[0] ?? (await context.newPage());
    watch = watchPage(page, venue.url);
    maker = await trader('stop-maker@example.test');
    taker = await trader('stop-taker@example.test');
    await tradeAt('60000.0', 'buy'); // the last price: 60000.0
  });

  after(async () => {
    await browser?.close();
    await venue?.close();
  });

  test('the form offers the five conditional types, each with its own fields', async () => {
    await page.goto(`${venue.url}/#${pair}`);
    await page.getByRole('button', { name: 'Use demo account' }).click();
    await page.getByRole('button', { name: 'Sign out' }).waitFor({ timeout: 15_000 });
    const type = page.getByLabel('Order type');
    const options = await type
      .locator('option')
      .evaluateAll((nodes) => nodes.map((n) => (n as HTMLOptionElement).value));
    assert.deepEqual(options, [
      'limit',
      'market',
      'stop-loss',
      'take-profit',
      'stop-loss-limit',
      'take-profit-limit',
      'trailing-stop',
    ]);
    const visible = async () => ({
      trigger: await page.getByLabel('Trigger price (EUR)').isVisible(),
      limit: await page.getByLabel('Limit price (EUR)').isVisible(),
      trailing: await page.getByLabel('Trailing offset', { exact: true }).isVisible(),
      postOnly: await page.getByLabel('Post only').isVisible(),
    });
    await type.selectOption('stop-loss-limit');
    assert.deepEqual(await visible(), { trigger: true, limit: true, trailing: false, postOnly: false });
    // A conditional order waits: good till canceled or till a date, never IOC or FOK.
    const tifs = await page
      .getByLabel('Time in force')
      .locator('option')
      .evaluateAll((nodes) => nodes.map((n) => (n as HTMLOptionElement).value));
    assert.deepEqual(tifs, ['GTC', 'GTD']);
    await type.selectOption('take-profit');
    assert.deepEqual(await visible(), { trigger: true, limit: false, trailing: false, postOnly: false });
    await type.selectOption('trailing-stop');
    assert.deepEqual(await visible(), { trigger: false, limit: false, trailing: true, postOnly: false });
    assert.equal(await page.getByLabel('Trailing offset unit').inputValue(), 'percent');
    await type.selectOption('limit');
    assert.equal(await page.getByLabel('Price (EUR)').isVisible(), true);
    assert.equal(await page.getByLabel('Trigger price (EUR)').count(), 0);
    assert.deepEqual(watch.problems, []);
  });

  test('a trigger the last price already reached: the 422 shows under the trigger field', async () => {
    watch.allow(422, '/v1/orders');
    await page.locator('label.side-option', { hasText: 'Sell' }).click();
    await page.getByLabel('Order type').selectOption('stop-loss');
    await page.getByText('Fires when the last trade price is at or below it.').waitFor();
    await page.getByLabel('Trigger price (EUR)').fill('61000');
    await page.getByLabel('Volume (BTC)').fill('0.01');
    await page.getByRole('button', { name: 'Sell BTC' }).click();
    const error = page.locator('#order-trigger-error');
    await error.waitFor({ timeout: 10_000 });
    assert.match(
      (await error.textContent()) ?? '',
      /The last trade price, 60000\.0, has reached this trigger already/,
    );
    assert.equal(await page.getByLabel('Trigger price (EUR)').getAttribute('aria-invalid'), 'true');
    assert.deepEqual(watch.problems, []);
  });

  let stopId: string;

  test('a stop-loss placed from the form waits in open orders with its condition, not in the book', async () => {
    await page.getByRole('tab', { name: 'Open orders' }).click();
    await page.getByLabel('Trigger price (EUR)').fill('58000');
    await page.getByRole('button', { name: 'Sell BTC' }).click();
    const status = page
      .getByRole('status')
      .filter({ hasText: /Stop-loss sell order placed \(#\d+\)\. Waiting: last price <= 58000\.0\./ });
    await status.waitFor({ timeout: 10_000 });
    stopId = /#(\d+)/.exec((await status.textContent()) ?? '')![1]!;
    const row = page.locator(`tr[data-order-id="${stopId}"]`);
    await row.waitFor({ timeout: 10_000 });
    assert.equal(await row.getByTestId('trigger-condition').textContent(), 'last price <= 58000.0');
    assert.match((await row.textContent()) ?? '', /stop-loss.*market/);
    const [book] = await maker.orderbook({ tickerId: pair });
    assert.deepEqual(book?.asks, [], 'a waiting stop is not in the public book');
    await page.screenshot({ path: screenshotPath('terminal-conditional-waiting.png') });
    assert.deepEqual(watch.problems, []);
  });

  test('Amend moves the waiting stop’s trigger', async () => {
    await page.getByRole('button', { name: `Amend order ${stopId}` }).click();
    await page.getByLabel(`New trigger price of order ${stopId}`).fill('58100.0');
    await page.screenshot({ path: screenshotPath('terminal-conditional-amend.png') });
    await page.getByRole('button', { name: `Save order ${stopId}` }).click();
    const row = page.locator(`tr[data-order-id="${stopId}"]`);
    await row.getByTestId('trigger-condition').filter({ hasText: 'last price <= 58100.0' }).waitFor({
      timeout: 10_000,
    });
    assert.equal((await maker.orderbook({ tickerId: pair }))[0]?.asks.length, 0);
    assert.deepEqual(watch.problems, []);
  });

  test('a later trade through the trigger fires it: the page sees it closed, triggered, with no click', async () => {
    // Liquidity for the stop to sell into, then a trade at 58000.0 (below its trigger, 58100.0)
    // between the two others.
    await maker.createOrder({ pair, direction: 'buy', type: 'limit', volume: '0.02', price: '57000.0' });
    await tradeAt('58000.0', 'sell');
    const open = page.locator(`tr[data-order-id="${stopId}"]`);
    await open.waitFor({ state: 'detached', timeout: 10_000 });
    await page.getByRole('tab', { name: 'Order history' }).click();
    const row = page.locator(`tr[data-order-id="${stopId}"]`);
    await row.waitFor({ timeout: 10_000 });
    assert.equal(
      await row.getByTestId('trigger-condition').textContent(),
      'triggered: last price <= 58100.0',
    );
    assert.match((await row.textContent()) ?? '', /closed/);
    await page.screenshot({ path: screenshotPath('terminal-conditional-triggered.png') });
    const [execution] = (await maker.trades({ pairs: [pair] })).data.filter(
      (t) => t.price.amount === '57000.0',
    );
    assert.equal(execution?.volume.amount, '0.01000000', 'the stop sold its 0.01 BTC into the 57000.0 bid');
    assert.deepEqual(watch.problems, []);
  });
});
