/**
 * bench:http — requests per second and latency with autocannon, in one run, against:
 *   baseline: a bare Fastify route;
 *   GET /v1/orderbook, GET /v1/tickers;
 *   signed POST /v1/orders + DELETE /v1/orders/:id (each request freshly signed; the order is
 *   durable — committed and fsynced — before its 201).
 * Each target server runs in its own process. Prints a table with the ratio to the baseline.
 * Options: --seconds N (per measurement, default 10), --connections N (default 64), --runs N (default 3; medians).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { createHash, createHmac } from 'node:crypto';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import autocannon from 'autocannon';

const arg = (name: string, fallback: number): number => {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? Number(process.argv[i + 1]) : fallback;
};
const SECONDS = arg('seconds', 10);
const CONNECTIONS = arg('connections', 64);
const RUNS = arg('runs', 3);

interface Trader {
  apiKey: string;
  apiSecret: string;
}

function startTarget(
  mode: 'bare' | 'openspot',
): Promise<{ child: ChildProcess; info: { url: string; traders?: Trader[] } }> {
  return new Promise((resolve, reject) => {
    const child = spawn(
      process.execPath,
      ['--max-semi-space-size=64', '--import', 'tsx', join(import.meta.dirname, 'http-target.ts'), mode],
      {
        stdio: ['ignore', 'pipe', 'inherit'],
      },
    );
    child.on('error', reject);
    createInterface({ input: child.stdout! }).once('line', (line) =>
      resolve({ child, info: JSON.parse(line) }),
    );
  });
}

/** The interface's signature rule, written out independently of the server's code. An empty body signs as `{}`. */
const sign = (method: string, body: string, secret: string): string =>
  createHmac('sha512', Buffer.from(secret, 'base64'))
    .update(
      method +
        createHash('sha256')
          .update(body === '' ? '{}' : body)
          .digest('hex'),
    )
    .digest('base64');

interface Measure {
  name: string;
  rps: number;
  p50: number;
  p99: number;
  non2xx: number;
  errors: number;
}

async function measure(name: string, options: autocannon.Options): Promise<Measure> {
  const runs: autocannon.Result[] = [];
  for (let i = 0; i < RUNS; i++)
    runs.push(await autocannon({ connections: CONNECTIONS, duration: SECONDS, ...options }));
  const median = (values: number[]) => values.sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
  return {
    name,
    rps: median(runs.map((r) => r.requests.average)),
    p50: median(runs.map((r) => r.latency.p50)),
    p99: median(runs.map((r) => r.latency.p99)),
    non2xx: runs.reduce((s, r) => s + r.non2xx, 0),
    errors: runs.reduce((s, r) => s + r.errors, 0),
  };
}

interface OrderContext {
  trader?: Trader;
  orderPath?: string;
}

function orderRequests(traders: Trader[]): autocannon.Request[] {
  let n = 0;
  return [
    {
      method: 'POST',
      path: '/v1/orders',
      setupRequest: (request, raw) => {
        const context = raw as OrderContext;
        const trader = traders[n++ % traders.length]!;
        context.trader = trader;
        // A resting bid far below the asks: placed and then canceled, never matched.
        const body = JSON.stringify({
          order_direction: 'buy',
          order_type: 'limit',
          pair: 'BTC/EUR',
          volume: '0.001',
          price: `${20000 + (n % 1000)}`,
        });
        return {
          ...request,
          body,
          headers: {
            'content-type': 'application/json',
            'x-api-key': trader.apiKey,
            'x-api-sign': sign('POST', body, trader.apiSecret),
          },
        };
      },
      onResponse: (_status, _body, raw, headers) => {
        (raw as OrderContext).orderPath = (headers as Record<string, string> | undefined)?.location ?? '';
      },
    },
    {
      method: 'DELETE',
      setupRequest: (request, raw) => {
        const context = raw as OrderContext;
        const trader = context.trader;
        // No order id (the POST failed): returning nothing restarts the pipeline with a new POST.
        if (trader === undefined || context.orderPath === undefined || context.orderPath === '')
          return undefined as never;
        return {
          ...request,
          path: context.orderPath,
          headers: { 'x-api-key': trader.apiKey, 'x-api-sign': sign('DELETE', '', trader.apiSecret) },
        };
      },
    },
  ];
}

async function main(): Promise<void> {
  process.stdout.write(
    `bench:http — ${CONNECTIONS} connections, ${SECONDS} s per measurement, median of ${RUNS} runs\n`,
  );
  const bare = await startTarget('bare');
  const baseline = await measure('bare Fastify route (baseline)', { url: `${bare.info.url}/bare` });
  bare.child.kill();
  const openspot = await startTarget('openspot');
  const url = openspot.info.url;
  const results = [
    baseline,
    await measure('GET /v1/orderbook', { url: `${url}/v1/orderbook?ticker_id=BTC/EUR&depth=100` }),
    await measure('GET /v1/tickers', { url: `${url}/v1/tickers` }),
    await measure('signed POST /v1/orders + DELETE', {
      url,
      requests: orderRequests(openspot.info.traders ?? []),
    }),
  ];
  openspot.child.kill();
  const rows = results.map((r) => ({
    measurement: r.name,
    'req/s': Math.round(r.rps),
    'p50 ms': r.p50,
    'p99 ms': r.p99,
    'vs baseline': (r.rps / baseline.rps).toFixed(2),
    'non-2xx': r.non2xx,
    errors: r.errors,
  }));
  console.table(rows);
  process.stdout.write(
    'Targets: public GETs >= 0.70 of the baseline; signed order placement + cancel >= 0.40 with p99 < 20 ms at 64 connections.\n',
  );
}

await main();
