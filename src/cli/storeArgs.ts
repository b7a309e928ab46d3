/**
 * The command line of `mcp-confirm store init`: its option table, the message for a flag of another
 * command, and the parser (run by `storeCli.ts`). Checked before anything is opened.
 *
 * @module
 */
import { UsageError, type FlagValues } from './common.js';

/** `mcp-confirm store init --ledger postgres://…`. */
export interface StoreInitCommand {
  kind: 'store-init';
  /** `--ledger`: a `postgres://` or `postgresql://` URL (its syntax beyond the scheme is checked when opened). */
  ledger: string;
}

/** The option table of `store init`. */
export const STORE_INIT_OPTIONS = {
  ledger: { type: 'string' },
} as const;

export const STORE_USAGE = `Store (PostgreSQL; docs/postgres.md):
  mcp-confirm store init --ledger postgres://[USER@]HOST[:PORT]/DB[?sslmode=…&schema=NAME]
                         Create the store's schema and tables when missing (changes nothing when they
                         exist), for a deployment whose serving role may not CREATE. The password comes
                         from PGPASSWORD or ~/.pgpass. Exit 0 done, 1 the database unavailable,
                         2 on usage errors (a schema newer than this version knows, no pg package).`;

/** The message for a flag `store init` does not take. */
export function storeForeign(flag: string): string {
  return `store init takes only --ledger, not --${flag}`;
}

/**
 * Parses `store init`.
 *
 * @throws {UsageError} without `--ledger`, or for a `--ledger` that is not a PostgreSQL URL (the other
 *   stores create their tables or keys themselves). The value is never echoed (it may hold a password).
 */
export function parseStoreInit(values: FlagValues<typeof STORE_INIT_OPTIONS>): StoreInitCommand {
  const ledger = values.ledger;
  if (ledger === undefined || ledger === '')
    throw new UsageError('store init needs --ledger postgres://[USER@]HOST[:PORT]/DB');
  if (!ledger.startsWith('postgres://') && !ledger.startsWith('postgresql://'))
    throw new UsageError(
      'store init --ledger takes a postgres:// URL: SQLite and Redis ledgers create what they need when opened',
    );
  return { kind: 'store-init', ledger };
}
