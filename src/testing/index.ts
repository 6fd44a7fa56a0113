/**
 * `openspot/testing`: a complete OpenSpot venue started inside a bot's own test suite
 * (docs/bot-testing.md).
 */

// Reproducible simulated markets: from a checkpoint, one seed gives the same trades (docs/bot-testing.md).
export {
  type SimulatorLogger,
  type SimulatorOptions,
  type SimulatorStats,
  type SteppedSimulator,
  steppedSimulator,
} from '../simulator/simulator.js';
export type { ChaosFaults, ChaosScope, VenueChaos, VenueChaosState } from './chaos.js';
export {
  type CatalogueFile,
  type LedgerCheck,
  type PusherSettings,
  type RestingOrder,
  type RestingOrderParams,
  startTestVenue,
  type TestAccount,
  type TestAccountSpec,
  type TestVenue,
  TestVenueError,
  type TestVenueOptions,
  type TestVenueSimulatorOptions,
  testVenueInfo,
  type UserRef,
  type VenueAdmin,
  type VenueBalance,
  type VenueCheckpoint,
} from './venue.js';
