import { type Logger, pino } from 'pino';

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

export function createLogger(level: string, destination?: NodeJS.WritableStream): Logger {
  return pino(
    { level, redact: { paths: REDACTED_PATHS, censor: '[redacted]' } },
    destination ?? process.stdout,
  );
}
