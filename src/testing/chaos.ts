/**
 * `venue.chaos`: the test venue's fault injection (docs/chaos.md), through the admin API
 * `/admin/v1/chaos` like every other helper, so a bot's test can rehearse failures.
 */
import type { ChaosState, FaultSetInput } from '../chaos/index.js';

export type { FaultSetInput as ChaosFaults } from '../chaos/index.js';

/** The faults in force: everyone's, and each key's own. */
export interface VenueChaosState extends ChaosState {
  /** False when the venue's configuration refuses faults (NODE_ENV=production without CHAOS=on). */
  readonly allowed: boolean;
}

export interface ChaosScope {
  /** Only requests and connections of this API key (an account's `apiKey`). Default: everyone. */
  readonly apiKey?: string;
  /** Replace the scope's faults instead of adding to them. Default false. */
  readonly replace?: boolean;
}

export interface VenueChaos {
  /** Sets faults (added to the scope's others unless `replace`); answers the state after. */
  set(faults: FaultSetInput, scope?: ChaosScope): Promise<VenueChaosState>;
  /** Clears one key's faults, or every fault. */
  clear(apiKey?: string): Promise<VenueChaosState>;
  state(): Promise<VenueChaosState>;
}

type AdminCall = (method: string, path: string, body?: unknown) => Promise<unknown>;

export function venueChaos(call: AdminCall): VenueChaos {
  return {
    async set(faults, scope = {}) {
      const body = { faults, ...(scope.apiKey === undefined ? {} : { api_key: scope.apiKey }) };
      return (await call(scope.replace === true ? 'PUT' : 'POST', '/chaos', body)) as VenueChaosState;
    },
    async clear(apiKey) {
      const query = apiKey === undefined ? '' : `?api_key=${encodeURIComponent(apiKey)}`;
      return (await call('DELETE', `/chaos${query}`)) as VenueChaosState;
    },
    async state() {
      return (await call('GET', '/chaos')) as VenueChaosState;
    },
  };
}
