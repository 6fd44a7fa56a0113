/** The logging the WebSocket server needs; a pino logger fits it as is. */
export interface WsLogger {
  info(obj: object, msg?: string): void;
  warn(obj: object, msg?: string): void;
  error(obj: object, msg?: string): void;
  debug(obj: object, msg?: string): void;
}

const ignore = (): void => {};
export const silentLogger: WsLogger = { info: ignore, warn: ignore, error: ignore, debug: ignore };
