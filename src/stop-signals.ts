/**
 * How a long-running process (`npm start`, `openspot serve`, `engine`, `gateway`, `test-venue`)
 * meets SIGINT and SIGTERM: the first one starts its clean shutdown, any later one is ignored
 * while that runs. A terminal's Ctrl-C signals the whole foreground process group, so under
 * `npm start` or `npx` the server gets SIGINT twice (once from the terminal, once forwarded by
 * npm): a handler registered with `once` would be gone for the second, whose default action then
 * kills the process half-way through its shutdown (no final commit, -wal and -shm left behind).
 */
import type { Logger } from 'pino';

export function onStopSignal(
  stop: (signal: NodeJS.Signals) => void,
  /** Told of each signal that arrives while the shutdown runs (it is otherwise ignored). */
  onIgnored: (signal: NodeJS.Signals) => void = () => {},
): void {
  let stopping = false;
  const handle = (signal: NodeJS.Signals) => {
    if (stopping) {
      onIgnored(signal);
      return;
    }
    stopping = true;
    stop(signal);
  };
  process.on('SIGINT', handle);
  process.on('SIGTERM', handle);
}

/**
 * The servers' shutdown on a stop signal: logged with `announce`, then `close()`; `stopped
 * cleanly` and exit 0 once it is done, exit 1 when it failed. Repeated signals are logged and
 * ignored (onStopSignal).
 */
export function shutDownOnSignal(
  logger: Pick<Logger, 'info' | 'error'>,
  announce: string,
  close: () => Promise<void>,
): void {
  onStopSignal(
    (signal) => {
      logger.info({ signal }, announce);
      close().then(
        () => {
          logger.info('stopped cleanly');
          process.exit(0);
        },
        (error: unknown) => {
          logger.error({ err: error }, 'error during shutdown');
          process.exit(1);
        },
      );
    },
    (signal) => logger.info({ signal }, 'already shutting down; signal ignored'),
  );
}
