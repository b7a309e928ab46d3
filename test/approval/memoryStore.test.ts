import { MemoryLedger } from '../../src/ledger/memoryLedger.js';
import { approvalStoreContract } from './storeContract.js';

approvalStoreContract('MemoryLedger', () => new MemoryLedger());
