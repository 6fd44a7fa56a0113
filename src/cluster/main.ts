/** `openspot engine` and `openspot gateway`: configuration from the environment, signals, exit codes. */
import { ConfigError, loadConfig } from '../config/config.js';
import { createLogger } from '../logger.js';

export type ProcessKind = 'engine' | 'gateway';

export async function runClusterProcess(
  kind: ProcessKind,
  options: { readonly standby?: boolean } = {},
): Promise<void> {
  let config: ReturnType<typeof loadConfig>;
  let enginePort: number;
  try {
    config = loadConfig();
    enginePort = portOf(process.env.ENGINE_PORT, 8081);
  } catch (error) {
    if (error instanceof ConfigError) {
      process.stderr.write(`Configuration error: ${error.message}\n`);
      process.exit(2);
    }
    throw error;
  }
  const logger = createLogger(config.logLevel).child({ process: kind });
  let running: { close(): Promise<void> };
  try {
    running =
      kind === 'engine'
        ? await (await import('./engine-node.js')).startEngine(config, logger, process.env, {
            standby: options.standby === true,
            port: enginePort,
          })
        : await (await import('./gateway-node.js')).startGateway(config, logger, process.env);
  } catch (error) {
    // A setting found unusable only now (the cluster key, the NATS credentials): a configuration error.
    if (error instanceof ConfigError) {
      process.stderr.write(`Configuration error: ${error.message}\n`);
      process.exit(2);
    }
    process.stderr.write(
      `OpenSpot ${kind} failed to start: ${error instanceof Error ? error.message : String(error)}\n`,
    );
    process.exit(1);
  }
  const stop = (signal: string) => {
    logger.info({ signal }, 'shutting down');
    running.close().then(
      () => process.exit(0),
      (error: unknown) => {
        logger.error({ err: error }, 'error during shutdown');
        process.exit(1);
      },
    );
  };
  process.once('SIGINT', () => stop('SIGINT'));
  process.once('SIGTERM', () => stop('SIGTERM'));
}

function portOf(text: string | undefined, fallback: number): number {
  if (text === undefined || text.trim() === '') return fallback;
  const port = Number(text);
  if (!Number.isInteger(port) || port < 0 || port > 65535)
    throw new ConfigError(`ENGINE_PORT must be a port number (0-65535), got ${JSON.stringify(text)}`);
  return port;
}
