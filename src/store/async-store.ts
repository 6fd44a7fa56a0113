/**
 * A synchronous `Store` (embedded SQLite) seen through the asynchronous ports (ports.ts). Each
 * call runs at once, inside the store, and its outcome is handed back as a settled promise: the
 * write is durable before `commit` returns its promise, so SQLite keeps its speed (no thread hop,
 * no extra turn of the event loop) while the sequencer and the readers are written for any adapter.
 */
import type { AsyncStore } from './ports.js';
import type { Store } from './store.js';

/** Runs `call` now; its value or its exception as a settled promise (never a synchronous throw). */
function settled<T>(call: () => T): Promise<T> {
  try {
    return Promise.resolve(call());
  } catch (error) {
    return Promise.reject(error);
  }
}

export function asyncStore(store: Store): AsyncStore {
  return {
    capabilities: { checkpoints: true },
    loadSnapshot: () => settled(() => store.loadSnapshot()),
    loadLedgerReferences: () => settled(() => store.loadLedgerReferences()),
    loadBookSequences: () => settled(() => store.loadBookSequences()),
    commit: (batch) => settled(() => store.commit(batch)),
    findIdempotencyRecord: (userId, key) => settled(() => store.findIdempotencyRecord(userId, key)),
    loadCommandReceipts: (notBefore) => settled(() => store.loadCommandReceipts(notBefore)),

    getOrder: (id) => settled(() => store.getOrder(id)),
    findOrderByClientId: (userId, clientOrderId) =>
      settled(() => store.findOrderByClientId(userId, clientOrderId)),
    listOrders: (filter, page) => settled(() => store.listOrders(filter, page)),
    countOrders: (filter) => settled(() => store.countOrders(filter)),
    tradesOfOrders: (ids) => settled(() => store.tradesOfOrders(ids)),
    getUserTrade: (userId, id) => settled(() => store.getUserTrade(userId, id)),
    listUserTrades: (filter, page) => settled(() => store.listUserTrades(filter, page)),
    countUserTrades: (filter) => settled(() => store.countUserTrades(filter)),
    listPublicTrades: (filter) => settled(() => store.listPublicTrades(filter)),
    listCandles: (marketId, interval, since, limit, keep) =>
      settled(() => store.listCandles(marketId, interval, since, limit, keep)),
    latestCandles: (marketId) => settled(() => store.latestCandles(marketId)),
    findLedgerEntry: (userId, kind, reference) =>
      settled(() => store.findLedgerEntry(userId, kind, reference)),

    createUser: (email, time) => settled(() => store.createUser(email, time)),
    getUser: (id) => settled(() => store.getUser(id)),
    listUsers: () => settled(() => store.listUsers()),
    createApiKey: (record) => settled(() => store.createApiKey(record)),
    getApiKey: (key) => settled(() => store.getApiKey(key)),
    cachedApiKey: (key) => store.cachedApiKey?.(key),
    listApiKeys: (userId) => settled(() => store.listApiKeys(userId)),
    revokeApiKey: (key, time) => settled(() => store.revokeApiKey(key, time)),
    acceptNonce: (key, nonce) => settled(() => store.acceptNonce(key, nonce)),

    saveCheckpoint: (name, time) => settled(() => store.saveCheckpoint(name, time)),
    restoreCheckpoint: (name) => settled(() => store.restoreCheckpoint(name)),
    listCheckpoints: () => settled(() => store.listCheckpoints()),
    deleteCheckpoint: (name) => settled(() => store.deleteCheckpoint(name)),

    close: () => settled(() => store.close()),
  };
}
