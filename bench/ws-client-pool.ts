/**
 * The WebSocket client workers of bench:ws (bench/ws.ts, one server; bench/ws-cluster.ts, the
 * split cluster's gateways): C raw-`ws` clients spread over W worker threads
 * (bench/ws-clients.ts), each counting the data frames it receives in 100 ms buckets.
 */
import { Worker } from 'node:worker_threads';
import { absNow, withTimeout } from './measure.js';
import type { ClientsConfig, ClientsReport } from './ws-clients.js';

/**
 * A worker thread running the TypeScript module `file` (next to this one). Node 20 does not apply
 * the main thread's module hooks (tsx) to a worker's entry module, even with `--import tsx` in its
 * execArgv: the worker registers tsx itself, then imports the TS file.
 */
export function startTsWorker(file: string, workerData: unknown): Worker {
  const bootstrap = `import('tsx/esm/api').then(({ register }) => {
  register();
  return import(${JSON.stringify(new URL(file, import.meta.url).href)});
});`;
  return new Worker(bootstrap, { eval: true, workerData });
}

/** Asks each worker to close its clients and waits for it to exit (terminated after 5 s). */
export async function closeWorkers(workers: readonly Worker[]): Promise<void> {
  await Promise.all(
    workers.map(async (worker) => {
      worker.postMessage({ type: 'close' });
      const timer = setTimeout(() => void worker.terminate(), 5_000);
      await new Promise((resolve) => worker.once('exit', resolve));
      clearTimeout(timer);
    }),
  );
}

/** Worker `w`'s share of `total` clients spread over `workers` workers. */
export const shareOf = (total: number, workers: number, w: number): number =>
  Math.floor(total / workers) + (w < total % workers ? 1 : 0);

export interface ClientPoolOptions {
  /** Worker w connects its clients to `urls[w % urls.length]`. */
  urls: string[];
  clients: number;
  workers: number;
  channels: string[];
  awaitSubscriptions: boolean;
  /** How long the setup may take (also the first part of the bucket span). */
  setupTimeoutMs: number;
  /** The measured phase, in seconds (the bucket span covers setup + phase + 60 s of drain). */
  seconds: number;
  tagBase: number;
}

export class ClientPool {
  private constructor(
    private readonly workers: Worker[],
    readonly connected: number,
    readonly failed: number,
    readonly epoch: number,
  ) {}

  static async start(options: ClientPoolOptions): Promise<ClientPool> {
    const { clients, workers: workerCount } = options;
    const epoch = absNow();
    const workers: Worker[] = [];
    const ready: Promise<{ connected: number; failed: number }>[] = [];
    for (let w = 0; w < workerCount; w++) {
      const config: ClientsConfig = {
        url: options.urls[w % options.urls.length]!,
        count: shareOf(clients, workerCount, w),
        channels: options.channels,
        awaitSubscriptions: options.awaitSubscriptions,
        epoch,
        // The setup, the phase and the drain, in 100 ms buckets.
        buckets: Math.ceil((options.setupTimeoutMs / 1000 + options.seconds + 60) * 10),
        tagBase: options.tagBase,
      };
      const worker = startTsWorker('./ws-clients.ts', config);
      workers.push(worker);
      ready.push(
        new Promise((resolve, reject) => {
          worker.once('error', reject);
          worker.once('message', (message: { type: string; connected: number; failed: number }) =>
            resolve(message),
          );
        }),
      );
    }
    const counts = await withTimeout(Promise.all(ready), options.setupTimeoutMs, 'clients connecting');
    const connected = counts.reduce((sum, c) => sum + c.connected, 0);
    const failed = counts.reduce((sum, c) => sum + c.failed, 0);
    return new ClientPool(workers, connected, failed, epoch);
  }

  async report(): Promise<ClientsReport[]> {
    return withTimeout(
      Promise.all(
        this.workers.map(
          (worker) =>
            new Promise<ClientsReport>((resolve) => {
              const onMessage = (message: { type: string; report: ClientsReport }) => {
                if (message.type !== 'report') return;
                worker.off('message', onMessage);
                resolve(message.report);
              };
              worker.on('message', onMessage);
              worker.postMessage({ type: 'report' });
            }),
        ),
      ),
      30_000,
      'client reports',
    );
  }

  close(): Promise<void> {
    return closeWorkers(this.workers);
  }
}

/** Data frames delivered per second, over whole 100 ms buckets inside [start, end]. */
export function deliveredPerSecond(
  reports: ClientsReport[],
  epoch: number,
  start: number,
  end: number,
): number {
  const first = Math.ceil((start - epoch) / 100);
  const last = Math.floor((end - epoch) / 100);
  let total = 0;
  for (const report of reports) for (let b = first; b < last; b++) total += report.buckets[b] ?? 0;
  return total / ((last - first) / 10);
}
