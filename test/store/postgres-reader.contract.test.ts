/**
 * The store contract (contract.ts) with every read and credential call going through a gateway's
 * reader (its own pool, no lock) while the engine's store commits: the reader answers exactly as
 * the writer's store would, right after each commit. Skipped, visibly, without TEST_DATABASE_URL.
 */
import type { AsyncStore } from '../../src/store/ports.js';
import { PostgresStore } from '../../src/store/postgres/postgres-store.js';
import { PostgresReader } from '../../src/store/postgres/reader.js';
import { freshDatabase, postgresSuite } from '../support/postgres.js';
import { storeContract } from './contract.js';

const skip = postgresSuite().skip;

/** The engine's CommitLog and checkpoints; everything else from the reader. */
function throughReader(writer: PostgresStore, reader: PostgresReader): AsyncStore {
  return {
    capabilities: writer.capabilities,
    loadSnapshot: () => writer.loadSnapshot(),
    loadLedgerReferences: () => writer.loadLedgerReferences(),
    loadBookSequences: () => writer.loadBookSequences(),
    commit: (batch) => writer.commit(batch),
    findIdempotencyRecord: (userId, key) => writer.findIdempotencyRecord(userId, key),
    loadCommandReceipts: (notBefore) => writer.loadCommandReceipts(notBefore),
    saveCheckpoint: (name, time) => writer.saveCheckpoint(name, time),
    restoreCheckpoint: (name) => writer.restoreCheckpoint(name),
    listCheckpoints: () => writer.listCheckpoints(),
    deleteCheckpoint: (name) => writer.deleteCheckpoint(name),

    getOrder: (id) => reader.getOrder(id),
    findOrderByClientId: (userId, clientOrderId) => reader.findOrderByClientId(userId, clientOrderId),
    listOrders: (filter, page) => reader.listOrders(filter, page),
    countOrders: (filter) => reader.countOrders(filter),
    tradesOfOrders: (ids) => reader.tradesOfOrders(ids),
    getUserTrade: (userId, id) => reader.getUserTrade(userId, id),
    listUserTrades: (filter, page) => reader.listUserTrades(filter, page),
    countUserTrades: (filter) => reader.countUserTrades(filter),
    listPublicTrades: (filter) => reader.listPublicTrades(filter),
    listCandles: (marketId, interval, since, limit, keep) =>
      reader.listCandles(marketId, interval, since, limit, keep),
    latestCandles: (marketId) => reader.latestCandles(marketId),
    findLedgerEntry: (userId, kind, reference) => reader.findLedgerEntry(userId, kind, reference),
    createUser: (email, time) => reader.createUser(email, time),
    getUser: (id) => reader.getUser(id),
    listUsers: () => reader.listUsers(),
    createApiKey: (record) => reader.createApiKey(record),
    getApiKey: (key) => reader.getApiKey(key),
    cachedApiKey: (key) => reader.cachedApiKey(key),
    listApiKeys: (userId) => reader.listApiKeys(userId),
    revokeApiKey: (key, time) => reader.revokeApiKey(key, time),
    acceptNonce: (key, nonce) => reader.acceptNonce(key, nonce),

    close: async () => {
      await reader.close();
      await writer.close();
    },
  };
}

storeContract({
  name: 'PostgreSQL, read through a gateway reader',
  ...(skip === undefined ? {} : { skip }),
  async open(t) {
    const url = await freshDatabase(t);
    // The writer first: it migrates, and a reader opens only a migrated schema.
    let store = throughReader(await PostgresStore.open({ url }), await PostgresReader.open({ url }));
    // Registered after the database's drop, so it runs first (after-hooks run in reverse order).
    t.after(() => store.close());
    return {
      store,
      async reopen() {
        await store.close();
        store = throughReader(await PostgresStore.open({ url }), await PostgresReader.open({ url }));
        return store;
      },
    };
  },
});
