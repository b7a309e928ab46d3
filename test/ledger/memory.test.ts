import { MemoryLedger } from '../../src/ledger/memoryLedger.js';
import { ledgerContract } from './contract.js';

ledgerContract('MemoryLedger', (bounds) => new MemoryLedger(bounds));
