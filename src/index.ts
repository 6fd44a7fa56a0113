/** The package's library entry: embed the exchange, or use its pure engine and exact money code. */

export { type Config, loadConfig } from './config/config.js';
export * from './domain/money.js';
export * from './domain/types.js';
export { Engine } from './engine/engine.js';
export type * from './engine/types.js';
export { createLogger } from './logger.js';
export type { Exchange } from './sequencer/ports.js';
/** @deprecated Renamed LocalExchange (the in-process exchange; RemoteExchange is a gateway's). */
export type { LocalExchange as OpenExchange } from './sequencer/sequencer.js';
export { type LocalExchange, openExchange } from './sequencer/sequencer.js';
export { type RunningServer, type ServerOptions, startServer } from './server.js';
export { SqliteStore } from './store/sqlite/sqlite-store.js';
export type { Store } from './store/store.js';
