/** `npm start`: run the exchange with configuration from the environment. */
import { ConfigError, loadConfig } from './config/config.js';
import { createLogger } from './logger.js';
import { startServer } from './server.js';
import { shutDownOnSignal } from './stop-signals.js';

async function main(): Promise<void> {
  let config: ReturnType<typeof loadConfig>;
  try {
    config = loadConfig();
  } catch (error) {
    if (error instanceof ConfigError) {
      process.stderr.write(`Configuration error: ${error.message}\n`);
      process.exit(2);
    }
    throw error;
  }
  const logger = createLogger(config.logLevel);
  // Listened for before the start: a Ctrl-C while it runs (the port may already answer) waits
  // for the start to finish, then shuts down as cleanly as any other.
  const starting = startServer(config, logger);
  shutDownOnSignal(logger, 'shutting down: no new requests, finishing and committing in-flight work', () =>
    starting.then((server) => server.close()),
  );
  await starting;
}

main().catch((error: unknown) => {
  // A configuration problem only the start could see (loadConfig finds the others): exit 2 too.
  if (error instanceof ConfigError) {
    process.stderr.write(`Configuration error: ${error.message}\n`);
    process.exit(2);
  }
  process.stderr.write(
    `OpenSpot failed to start: ${error instanceof Error ? error.message : String(error)}\n`,
  );
  process.exit(1);
});
