/**
 * Fault injection for rehearsing failures (docs/chaos.md): one call for the composition root.
 * It adds the admin routes (always, so GET can say it is off) and, when the configuration allows
 * faults, the REST hooks and the WebSocket hook to hand to the realtime server.
 */
import type { FastifyInstance } from 'fastify';
import type { WsFaults } from '../ws/faults.js';
import { chaosAdminRoutes } from './admin-routes.js';
import { Chaos, type InjectedEvent } from './controller.js';
import { chaosHttp } from './http-hook.js';
import { seededRandom } from './random.js';
import { WsChaos } from './ws-hook.js';

export { Chaos, type ChaosState, type InjectedEvent } from './controller.js';
export type { FaultSet, FaultSetInput, InjectedFault } from './faults.js';

export interface InstallChaosOptions {
  /** Config CHAOS: whether faults may be set at all. */
  readonly allowed: boolean;
  readonly adminToken: string;
  readonly isKnownKey: (apiKey: string) => boolean | Promise<boolean>;
  /** The keys that authorized private channels on a WebSocket connection. */
  readonly keysOf: (socketId: string) => readonly string[];
  /** Every injected fault (metrics, log). */
  readonly onInjected: (event: InjectedEvent) => void;
  /** Seeds the decisions' random source; undefined: Math.random. */
  readonly seed?: number | undefined;
}

export interface InstalledChaos {
  readonly chaos: Chaos;
  /** For the realtime server; undefined when faults are not allowed. */
  readonly ws: WsFaults | undefined;
  /** Stops the WebSocket hook's timers. */
  close(): void;
}

export async function installChaos(
  app: FastifyInstance,
  options: InstallChaosOptions,
): Promise<InstalledChaos> {
  const chaos = new Chaos({
    onInjected: options.onInjected,
    ...(options.seed === undefined ? {} : { random: seededRandom(options.seed) }),
  });
  await app.register(chaosAdminRoutes, {
    prefix: '/admin/v1/chaos',
    chaos,
    token: options.adminToken,
    allowed: options.allowed,
    isKnownKey: options.isKnownKey,
  });
  if (!options.allowed) return { chaos, ws: undefined, close() {} };
  await app.register(chaosHttp, { chaos });
  const ws = new WsChaos({ chaos, keysOf: options.keysOf });
  return { chaos, ws, close: () => ws.close() };
}
