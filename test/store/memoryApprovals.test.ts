import { MemoryLedger } from '../../src/store/memory.js';
import { approvalStoreContract } from './approvalContract.js';
import { approvalQuorumContract } from './approvalQuorumContract.js';
import { linkStoreContract } from './linkContract.js';

approvalStoreContract('MemoryLedger', () => new MemoryLedger());

approvalQuorumContract('MemoryLedger', async () => [new MemoryLedger()]);

linkStoreContract('MemoryLedger', async () => {
  const store = new MemoryLedger();
  return [store, store];
});
