/// <reference lib="dom" />
// (Functions passed to page.evaluate run in the page: they use the DOM's types.)
/**
 * The terminal under a busy book: about 100 order-book updates per second (limit orders placed
 * and canceled through the signed API, away from the touch, on top of the simulator), while the
 * page records every animation frame. The book must be drawn at most once per frame however many
 * updates arrive, and frames must keep coming. The measured frame times go to
 * test-output/book-frames.json (docs/performance.md, "Web terminal", quotes a run).
 */
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { OpenSpotClient } from '../../src/client/client.js';
import {
  browserSkip,
  launchBrowser,
  OUTPUT_DIR,
  screenshotPath,
  startWebVenue,
  type WebVenue,
  watchPage,
} from './harness.js';

const skip = browserSkip();
const RATE = 100;
const SECONDS = 8;

interface Sample {
  readonly frames: number[];
  readonly messages: number;
  readonly draws: number;
  readonly longTasks: number;
}

const percentile = (sorted: readonly number[], p: number): number =>
  sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? Number.NaN;

describe('terminal under a 100 updates/s book', { skip, timeout: 120_000 }, () => {
  let venue: WebVenue;
  let browser: Awaited<ReturnType<typeof launchBrowser>>;

  before(async () => {
    venue = await startWebVenue({ SIMULATOR_RATE: '5' });
    browser = await launchBrowser();
  });
  after(async () => {
    await browser?.close();
    await venue?.close();
  });

  test('draws the book at most once per frame and keeps frames coming', async () => {
    const page = browser.context.pages()[0] ?? (await browser.context.newPage());
    const watch = watchPage(page, venue.url);
    await page.goto(`${venue.url}/#BTC/EUR`);
    await page.waitForFunction(
      () => document.querySelector('.book')?.getAttribute('data-synced') === 'true',
      undefined,
      {
        timeout: 30_000,
      },
    );

    const demo = JSON.parse(readFileSync(join(venue.dataDir, 'demo-credentials.json'), 'utf8')) as {
      api_key: string;
      api_secret: string;
    };
    const client = new OpenSpotClient({
      baseUrl: `${venue.url}/v1`,
      apiKey: demo.api_key,
      apiSecret: demo.api_secret,
    });

    // The page samples frames while the load runs. Sent as source text: tsx would wrap named
    // functions in a helper (`__name`) that does not exist in the page.
    const sampling = page.evaluate(`(async (seconds) => {
      const feed = window.__bookFeed;
      const start = { ...feed.stats };
      let longTasks = 0;
      const observer = new PerformanceObserver((list) => { longTasks += list.getEntries().length; });
      observer.observe({ type: 'longtask', buffered: false });
      const frames = [];
      await new Promise((resolve) => {
        let last = performance.now();
        const end = last + seconds * 1000;
        const tick = (now) => {
          frames.push(now - last);
          last = now;
          if (now < end) requestAnimationFrame(tick);
          else resolve();
        };
        requestAnimationFrame(tick);
      });
      observer.disconnect();
      return { frames, messages: feed.stats.messages - start.messages, draws: feed.stats.draws - start.draws, longTasks };
    })(${SECONDS})`) as Promise<Sample>;

    // ~RATE book updates per second: each placement adds a level, each cancel removes one, all
    // below the touch (they never trade), at most 8 requests in flight.
    const open: number[] = [];
    let done = 0;
    let inFlight = 0;
    let step = 0;
    const started = Date.now();
    while (Date.now() - started < SECONDS * 1000) {
      const due = Math.floor(((Date.now() - started) / 1000) * RATE);
      while (done + inFlight < due && inFlight < 8) {
        inFlight += 1;
        step += 1;
        const cancel = open.length >= 20 && step % 2 === 0;
        const op = cancel
          ? client.cancelOrder(open.shift()!)
          : client
              .createOrder({
                pair: 'BTC/EUR',
                direction: 'buy',
                type: 'limit',
                volume: '0.0001',
                price: (40_000 + (step % 500) * 0.1).toFixed(1),
              })
              .then((created) => {
                if (created.id !== undefined) open.push(created.id);
              });
        op.then(
          () => {
            inFlight -= 1;
            done += 1;
          },
          () => {
            inFlight -= 1;
          },
        );
      }
      await new Promise((r) => setTimeout(r, 2));
    }
    const sample: Sample = await sampling;
    const elapsed = (Date.now() - started) / 1000;
    await page.screenshot({ path: screenshotPath('terminal-busy-book.png') });

    const sorted = [...sample.frames].sort((a, b) => a - b);
    const result = {
      updates_sent_per_second: Math.round(done / elapsed),
      book_messages_per_second: Math.round(sample.messages / SECONDS),
      frames: sample.frames.length,
      draws: sample.draws,
      frame_ms: {
        p50: Number(percentile(sorted, 50).toFixed(1)),
        p95: Number(percentile(sorted, 95).toFixed(1)),
        p99: Number(percentile(sorted, 99).toFixed(1)),
        max: Number((sorted.at(-1) ?? 0).toFixed(1)),
      },
      long_tasks: sample.longTasks,
      chromium: await page.evaluate(() => navigator.userAgent.match(/Chrome\/[\d.]+/)?.[0] ?? ''),
    };
    writeFileSync(join(OUTPUT_DIR, 'book-frames.json'), `${JSON.stringify(result, null, 2)}\n`);
    process.stderr.write(`book frames: ${JSON.stringify(result)}\n`);

    assert.ok(
      result.book_messages_per_second >= RATE * 0.7,
      `a busy book: ${result.book_messages_per_second}/s`,
    );
    // At most one draw per frame, and far fewer draws than messages: updates are coalesced.
    assert.ok(
      sample.draws <= sample.frames.length + 1,
      `${sample.draws} draws in ${sample.frames.length} frames`,
    );
    assert.ok(sample.draws < sample.messages, `${sample.draws} draws for ${sample.messages} messages`);
    // Frames keep coming: no stall of a quarter second or more.
    assert.ok(result.frame_ms.p95 < 100, `frame p95 ${result.frame_ms.p95} ms`);
    assert.deepEqual(watch.problems, []);
    for (const id of open) await client.cancelOrder(id).catch(() => undefined);
  });
});
