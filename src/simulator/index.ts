/** The market simulator and the demo provisioning that feeds it accounts. */
export {
  type AdminApi,
  DEMO_FILE,
  type DemoAccount,
  type DemoOptions,
  type DemoProvision,
  type DemoWebSocket,
  provisionDemo,
  SIMULATOR_FILE,
  websocketEndpoint,
} from './demo.js';
export {
  type Simulator,
  type SimulatorLogger,
  type SimulatorOptions,
  type SimulatorStats,
  type SteppedSimulator,
  startSimulator,
  steppedSimulator,
} from './simulator.js';

/** Reference prices for the default catalogue's markets (rough real-world levels). */
export const DEFAULT_REFERENCE_PRICES: Readonly<Record<string, string>> = {
  'BTC/EUR': '60000',
  'ETH/EUR': '3000',
  'BTC/USD': '65000',
  'ETH/BTC': '0.05',
  'USDT/EUR': '0.92',
};
