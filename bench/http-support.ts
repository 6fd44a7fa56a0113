/** What bench/http.ts and bench/ab-orders.ts share: the target servers, the signed order pair, CPU readings. */
import { type ChildProcess, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import type autocannon from 'autocannon';
import { signRequest } from '../src/client/sign.js';

export interface Trader {
  apiKey: string;
  apiSecret: string;
}

/**
 * Starts bench/http-target.ts of the checkout at `root` (this one by default) in its own process;
 * resolves with its first line of output (its address, and the funded traders of `openspot`).
 */
export function startTarget(
  mode: 'bare' | 'openspot' | 'openspot-normal' | 'openspot-uncommitted' | 'openspot-postgres',
  root: string = join(import.meta.dirname, '..'),
  env: Record<string, string> = {},
): Promise<{
  child: ChildProcess;
  info: { url: string; traders?: Trader[]; adminToken?: string; database?: string };
}> {
  return new Promise((resolve, reject) => {
    const child = spawn(
      process.execPath,
      ['--max-semi-space-size=64', '--import', 'tsx', join(root, 'bench', 'http-target.ts'), mode],
      { cwd: root, stdio: ['ignore', 'pipe', 'inherit'], env: { ...process.env, ...env } },
    );
    child.on('error', reject);
    child.once('exit', (code) =>
      reject(new Error(`bench target ${mode} exited (${code}) before it was ready`)),
    );
    createInterface({ input: child.stdout! }).once('line', (line) =>
      resolve({ child, info: JSON.parse(line) }),
    );
  });
}

/** Signed with the client library's signer (independent of the server's code); an empty body signs as `{}`. */
const sign = signRequest;

/** CPU time (user + system) a process has used so far, in µs; undefined where /proc is not there. */
export function processCpuMicros(pid: number | undefined): number | undefined {
  if (pid === undefined) return undefined;
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    // utime and stime, in clock ticks (USER_HZ, 100 on Linux).
    return (Number(fields[11]) + Number(fields[12])) * 10_000;
  } catch {
    return undefined;
  }
}

export const median = (values: number[]): number =>
  [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

interface OrderContext {
  trader?: Trader;
  orderPath?: string;
}

/** POST a resting bid, then DELETE it, each request freshly signed, trader after trader. */
export function orderRequests(traders: Trader[]): autocannon.Request[] {
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

export interface Measurement {
  readonly result: autocannon.Result;
  /** Server CPU per request (µs), undefined when unknown. */
  readonly serverCpu: number | undefined;
  /** Load generator CPU per request (µs): this process. */
  readonly loadCpu: number;
}

/** Runs one measurement and divides the CPU time the server (pid) and this process used by its requests. */
export async function measureCpu(
  pid: number | undefined,
  run: () => Promise<autocannon.Result>,
): Promise<Measurement> {
  const server0 = processCpuMicros(pid);
  const load0 = process.cpuUsage();
  const result = await run();
  const load = process.cpuUsage(load0);
  const server1 = processCpuMicros(pid);
  const requests = Math.max(1, result.requests.total);
  return {
    result,
    serverCpu: server0 === undefined || server1 === undefined ? undefined : (server1 - server0) / requests,
    loadCpu: (load.user + load.system) / requests,
  };
}

/** The median of the known figures, one decimal; n/a when none is known. */
export const cpuFigure = (values: ReadonlyArray<number | undefined>): string => {
  const known = values.filter((v): v is number => v !== undefined);
  return known.length === 0 ? 'n/a' : median(known).toFixed(1);
};
