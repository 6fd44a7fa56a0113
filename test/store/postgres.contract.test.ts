/**
 * The store contract (contract.ts) on PostgreSQL: a fresh database per test on the server that
 * TEST_DATABASE_URL names; skipped, visibly, when it is unset (test/support/postgres.ts).
 */
import { PostgresStore } from '../../src/store/postgres/postgres-store.js';
import { freshDatabase, postgresSuite } from '../support/postgres.js';
import { storeContract } from './contract.js';

const skip = postgresSuite().skip;

storeContract({
  name: 'PostgreSQL',
  ...(skip === undefined ? {} : { skip }),
  async open(t) {
    const url = await freshDatabase(t);
    let store = await PostgresStore.open({ url });
    // Registered after the database's drop, so it runs first (after-hooks run in reverse order).
    t.after(() => store.close());
    return {
      store,
      async reopen() {
        await store.close();
        store = await PostgresStore.open({ url });
        return store;
      },
    };
  },
});
