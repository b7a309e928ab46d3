/**
 * `--ledger SPEC` → a {@link Ledger}.
 *
 * @module
 */
import type { Ledger } from '../ledger/ledger.js';
import { MemoryLedger } from '../ledger/memoryLedger.js';
import { UsageError } from './args.js';

/**
 * Opens the ledger a `--ledger` value names.
 *
 * @param spec - `memory`.
 * @param _audience - the server's audience (namespaces shared stores).
 * @throws {UsageError} for a spec this build cannot open.
 */
export async function openLedger(spec: string, _audience: string): Promise<Ledger> {
  if (spec === 'memory') return new MemoryLedger();
  throw new UsageError(`--ledger: unsupported ledger ${JSON.stringify(spec)} (use memory)`);
}
