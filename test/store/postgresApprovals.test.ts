import { PostgresStore } from '../../src/store/postgres.js';
import { approvalStoreContract } from './approvalContract.js';
import { approvalQuorumContract } from './approvalQuorumContract.js';
import { linkStoreContract } from './linkContract.js';
import { freshSchema, openStore, pgUrl } from './postgresServer.js';

approvalStoreContract('PostgresStore', () => openStore());

// Two stores (two connection pools) on one schema: concurrent steps spread over both.
approvalQuorumContract('PostgresStore', async () => {
  const schema = freshSchema();
  const first = await openStore({ schema });
  return [first, await PostgresStore.open({ url: pgUrl(), schema })];
});

linkStoreContract('PostgresStore', async () => {
  const schema = freshSchema();
  const first = await openStore({ schema });
  return [first, await PostgresStore.open({ url: pgUrl(), schema })];
});
