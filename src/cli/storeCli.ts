/**
 * `mcp-confirm store init`: creates the PostgreSQL store's schema and tables (see
 * `PostgresStore.init`), for a deployment whose serving role may not `CREATE`.
 *
 * @module
 */
import { ConfigError, ConfirmLedgerUnavailableError } from '../errors.js';
import { UsageError } from './common.js';
import { postgresSpec } from './ledgerSpec.js';
import type { StoreInitCommand } from './storeArgs.js';

/**
 * Runs `store init`: prints one line naming the schema, its version and the database (host, port and
 * name only) to stdout.
 *
 * @returns the exit code: 0 done, 1 the database unavailable (said on stderr).
 * @throws {UsageError} (exit 2) for a malformed URL, a missing `pg` package, a schema newer than this
 *   version knows, or a role that may not create it.
 */
export async function runStoreInit(
  command: StoreInitCommand,
  io: { out: (line: string) => void; err: (line: string) => void } = {
    out: (line) => process.stdout.write(`${line}\n`),
    err: (line) => process.stderr.write(`${line}\n`),
  },
): Promise<number> {
  const { url, schema, shown } = postgresSpec(command.ledger);
  const { PostgresStore, DEFAULT_POSTGRES_SCHEMA } = await import('../store/postgres.js');
  try {
    const version = await PostgresStore.init({ url, ...(schema !== undefined ? { schema } : {}) });
    io.out(`schema ${schema ?? DEFAULT_POSTGRES_SCHEMA} at version ${version} in ${shown}`);
    return 0;
  } catch (e) {
    if (e instanceof ConfigError) throw new UsageError(`--ledger: PostgreSQL at ${shown}: ${e.message}`);
    if (e instanceof ConfirmLedgerUnavailableError) {
      const cause = e.cause instanceof Error ? `: ${e.cause.message}` : '';
      io.err(`mcp-confirm: store init: PostgreSQL at ${shown} is unavailable${cause}`);
      return 1;
    }
    if (e instanceof TypeError || e instanceof RangeError) throw new UsageError(`--ledger: ${e.message}`);
    throw e;
  }
}
