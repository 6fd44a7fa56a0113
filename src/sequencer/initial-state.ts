/**
 * The freshly seeded state, kept as the checkpoint `initial`: what `openspot reset` and
 * `POST /admin/v1/reset` return the venue to. Saved once, at the first start of a data directory
 * (catalogue seeded, demo and simulator accounts funded, no order ever placed); a data directory
 * with history and no such checkpoint (written by an earlier release) has no fresh state to go
 * back to, and a reset says so rather than guess one.
 */
import type { LocalExchange } from './sequencer.js';

export const INITIAL_CHECKPOINT = 'initial';

/**
 * Saves `initial` when the store is fresh (no order was ever placed) and has none yet; with
 * `replace`, saves it again (the test venue, after funding its accounts on a fresh store).
 * True when it saved; false, without trying, on a store that keeps no checkpoints (PostgreSQL:
 * the caller says so from `store.capabilities`).
 */
export async function keepInitialState(
  exchange: Pick<LocalExchange, 'store' | 'saveCheckpoint' | 'listCheckpoints' | 'commitLog'>,
  options: { readonly replace?: boolean } = {},
): Promise<boolean> {
  if (!exchange.store.capabilities.checkpoints) return false;
  if (options.replace === true) {
    await exchange.saveCheckpoint(INITIAL_CHECKPOINT);
    return true;
  }
  if ((await exchange.listCheckpoints()).some((c) => c.name === INITIAL_CHECKPOINT)) return false;
  if ((await exchange.commitLog.loadSnapshot()).sequences.nextOrderId !== 1) return false;
  await exchange.saveCheckpoint(INITIAL_CHECKPOINT);
  return true;
}
