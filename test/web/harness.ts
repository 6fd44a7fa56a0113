/**
 * The browser test harness: Debian's chromium driven by playwright-core (no browser download),
 * the web pages built into a temporary directory (so a concurrent `npm start` rebuilding dist/web
 * cannot pull files from under a test), and a real server — simulator and demo account on — on a
 * free loopback port.
 *
 * Without /usr/bin/chromium the suites skip with a visible reason; with TEST_BROWSER=required
 * (set by .ci/run) a missing browser fails instead.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type BrowserContext, chromium, type Page } from 'playwright-core';
import { loadConfig } from '../../src/config/config.js';
import { createLogger } from '../../src/logger.js';
import { type RunningServer, startServer } from '../../src/server.js';

export const CHROMIUM = process.env.TEST_CHROMIUM ?? '/usr/bin/chromium';
const REPO_ROOT = join(import.meta.dirname, '..', '..');
/** Screenshots and measurements for a reviewer (git-ignored). */
export const OUTPUT_DIR = join(REPO_ROOT, 'test-output');

/**
 * `false` when the browser is there; otherwise the reason to skip. Throws when the browser is
 * required (CI) and missing, so the run fails instead of skipping silently.
 */
export function browserSkip(): string | false {
  if (existsSync(CHROMIUM)) return false;
  const reason = `browser tests skipped: no chromium at ${CHROMIUM} (apt-get install chromium)`;
  if (process.env.TEST_BROWSER === 'required') throw new Error(`TEST_BROWSER=required: ${reason}`);
  process.stderr.write(`\n*** ${reason} ***\n\n`);
  return reason;
}

/** Builds web/ into a new temporary directory; returns it. */
export function buildPages(): string {
  const out = mkdtempSync(join(tmpdir(), 'openspot-web-'));
  const result = spawnSync(
    process.execPath,
    [join(REPO_ROOT, 'scripts', 'build.mjs'), '--web-only', '--out-dir', out],
    { cwd: REPO_ROOT, encoding: 'utf8' },
  );
  if (result.status !== 0) throw new Error(`the web build failed:\n${result.stdout}\n${result.stderr}`);
  return out;
}

export interface WebVenue {
  readonly server: RunningServer;
  readonly url: string;
  readonly dataDir: string;
  readonly webDir: string;
  close(): Promise<void>;
}

/** The server as `npm start` runs it in development (demo account, simulator), on a free port. */
export async function startWebVenue(env: Record<string, string> = {}): Promise<WebVenue> {
  const webDir = buildPages();
  const dataDir = mkdtempSync(join(tmpdir(), 'openspot-web-data-'));
  const fullEnv: Record<string, string> = {
    HOST: '127.0.0.1',
    PORT: '0',
    DATA_DIR: dataDir,
    LOG_LEVEL: 'silent',
    DEMO: 'on',
    SIMULATOR: 'on',
    SIMULATOR_RATE: '10',
    SQLITE_SYNCHRONOUS: 'normal',
    RATE_LIMIT_IP_PER_SECOND: '0',
    RATE_LIMIT_KEY_PER_SECOND: '0',
    WS_MAX_FRAMES_PER_SECOND: '0',
    ...env,
  };
  const config = loadConfig(fullEnv);
  const server = await startServer(config, createLogger(config.logLevel, process.stderr), fullEnv, {
    webDir,
  });
  return {
    server,
    url: server.url,
    dataDir,
    webDir,
    async close() {
      await server.close();
      rmSync(dataDir, { recursive: true, force: true });
      rmSync(webDir, { recursive: true, force: true });
    },
  };
}

/** Chromium with a fresh profile, headless, nothing contacted but the pages' own server. */
export async function launchBrowser(): Promise<{ context: BrowserContext; close(): Promise<void> }> {
  const profile = mkdtempSync(join(tmpdir(), 'openspot-chromium-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-background-networking',
      '--disable-component-update',
      '--no-first-run',
    ],
    viewport: { width: 1280, height: 800 },
  });
  return {
    context,
    async close() {
      await context.close();
      rmSync(profile, { recursive: true, force: true });
    },
  };
}

export interface PageWatch {
  /** Console errors, page errors, failed requests, error statuses and requests to other hosts. */
  readonly problems: string[];
  /** Lets the next `count` responses with `status` to a URL containing `path` pass (an expected 422). */
  allow(status: number, path: string, count?: number): void;
}

/** Records everything that would mean the page is broken; a test asserts `problems` is empty. */
export function watchPage(page: Page, origin: string): PageWatch {
  const problems: string[] = [];
  const allowed: { status: number; path: string; count: number }[] = [];
  // Chromium also logs every 4xx answer as a console error ("Failed to load resource"): an
  // allowed answer's line is allowed too, once per answer.
  const consoleAllowed = new Map<number, number>();
  const host = new URL(origin).host;
  page.on('console', (message) => {
    if (message.type() !== 'error') return;
    const status = /Failed to load resource: the server responded with a status of (\d+)/.exec(
      message.text(),
    );
    const budget = status === null ? 0 : (consoleAllowed.get(Number(status[1])) ?? 0);
    if (budget > 0) {
      consoleAllowed.set(Number(status![1]), budget - 1);
      return;
    }
    problems.push(`console error: ${message.text()}`);
  });
  page.on('pageerror', (error) => problems.push(`page error: ${error.message}`));
  page.on('request', (request) => {
    const url = new URL(request.url());
    if (url.protocol !== 'data:' && url.protocol !== 'blob:' && url.host !== host)
      problems.push(`request to another host: ${request.url()}`);
  });
  page.on('requestfailed', (request) => {
    // A navigation away or a closed page aborts what is in flight: not a failure of the page.
    const failure = request.failure()?.errorText ?? '';
    if (failure.includes('ERR_ABORTED')) return;
    problems.push(`request failed: ${request.method()} ${request.url()} ${failure}`);
  });
  page.on('response', (response) => {
    if (response.status() < 400) return;
    const pass = allowed.find((a) => a.status === response.status() && response.url().includes(a.path));
    if (pass !== undefined && pass.count > 0) {
      pass.count -= 1;
      return;
    }
    problems.push(`HTTP ${response.status()}: ${response.request().method()} ${response.url()}`);
  });
  return {
    problems,
    allow: (status, path, count = 1) => {
      allowed.push({ status, path, count });
      consoleAllowed.set(status, (consoleAllowed.get(status) ?? 0) + count);
    },
  };
}

export function screenshotPath(name: string): string {
  const dir = join(OUTPUT_DIR, 'screenshots');
  mkdirSync(dir, { recursive: true });
  return join(dir, name);
}
