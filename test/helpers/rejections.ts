/** Small assertions shared by the store tests. */
import { expect } from 'vitest';
import { ConfirmLedgerUnavailableError } from '../../src/errors.js';

/** The rejection reason of a promise, or `undefined` when it resolves. */
export async function rejection(p: Promise<unknown>): Promise<unknown> {
  return p.then(
    () => undefined,
    (e: unknown) => e,
  );
}

/** Asserts a refusal of the ledger itself: `ERR_CONFIRM_LEDGER_UNAVAILABLE`. */
export function expectUnavailable(error: unknown): void {
  expect(error).toBeInstanceOf(ConfirmLedgerUnavailableError);
  expect((error as ConfirmLedgerUnavailableError).code).toBe('ERR_CONFIRM_LEDGER_UNAVAILABLE');
}
