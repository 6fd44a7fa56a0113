import { createRequire } from 'node:module';
import { type DestinationStream, type Logger, pino } from 'pino';

/** Headers and fields that carry credentials; pino replaces them before anything is written. */
export const REDACTED_PATHS = [
  'req.headers.authorization',
  'req.headers["x-api-sign"]',
  'req.headers.cookie',
  'api_secret',
  'apiSecret',
  '*.api_secret',
  '*.apiSecret',
  'sealedSecret',
  '*.sealedSecret',
];

/**
 * Readable lines for a person at a terminal in development; JSON lines everywhere else (a file, a
 * pipe, journald, a log shipper, production), which is what tools read.
 */
export function wantsReadableLogs(output: { readonly isTTY?: boolean }, env = process.env): boolean {
  return output.isTTY === true && env.NODE_ENV !== 'production';
}

/**
 * The logger. Without a destination it writes to stdout: readable (pino-pretty, in this process
 * and synchronous, so the last lines before an exit are not lost in a worker thread) when
 * `wantsReadableLogs`, JSON otherwise. Redaction applies before either.
 */
export function createLogger(level: string, destination?: NodeJS.WritableStream): Logger {
  const options = { level, redact: { paths: REDACTED_PATHS, censor: '[redacted]' } };
  if (destination === undefined && wantsReadableLogs(process.stdout)) {
    return pino(options, readableStdout());
  }
  return pino(options, destination ?? process.stdout);
}

function readableStdout(): DestinationStream {
  // Loaded only here: a production start, or output to a pipe, never pays for it.
  const pretty = createRequire(import.meta.url)('pino-pretty') as (options: object) => DestinationStream;
  return pretty({ colorize: true, sync: true, translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid,hostname' });
}
