/** The store contract (contract.ts) on embedded SQLite, through its synchronous methods. */
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { tempStore } from '../../src/store/sqlite/test-fixtures.js';
import { storeContract } from './contract.js';

storeContract({
  name: 'SQLite',
  async open(t) {
    const { store, path } = tempStore(t);
    return {
      store,
      async reopen() {
        store.close();
        const reopened = SqliteStore.open({ path });
        t.after(() => reopened.close());
        return reopened;
      },
    };
  },
});
