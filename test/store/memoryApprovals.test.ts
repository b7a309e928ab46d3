import { MemoryLedger } from '../../src/store/memory.js';
import { approvalStoreContract } from './approvalContract.js';

approvalStoreContract('MemoryLedger', () => new MemoryLedger());
