import { MemoryLedger } from '../../src/store/memory.js';
import { approvalStoreContract } from './approvalContract.js';
import { approvalQuorumContract } from './approvalQuorumContract.js';

approvalStoreContract('MemoryLedger', () => new MemoryLedger());

approvalQuorumContract('MemoryLedger', async () => [new MemoryLedger()]);
