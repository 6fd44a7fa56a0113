/** `openspot engine` and `openspot gateway`: configuration from the environment, signals, exit codes. */
import { ConfigError, loadConfig } from '../config/config.js';
import { createLogger } from '../logger.js';
import { shutDownOnSignal } from '../stop-signals.js';

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
  let running: { close(): Promise<void> } | undefined;
  // Listened for before the start: the process says where it listens before the start returns,
  // and a caller may signal it at once. A signal before the start completed (a standby waiting
  // for the writer lock, say) ends the process: nothing was acknowledged yet, and the database
  // session (and any lock it took) ends with it.
  shutDownOnSignal(logger, 'shutting down', async () => await running?.close());
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
}

function portOf(text: string | undefined, fallback: number): number {
  if (text === undefined || text.trim() === '') return fallback;
  const port = Number(text);
  if (!Number.isInteger(port) || port < 0 || port > 65535)
    throw new ConfigError(`ENGINE_PORT must be a port number (0-65535), got ${JSON.stringify(text)}`);
  return port;
}
