/**
 * Checks and messages shared by the command lines of `mcp-confirm` (serving `delete_file`) and
 * `mcp-confirm proxy`: one implementation, one set of messages.
 *
 * @module
 */

import { DEFAULT_AUDIENCE, MAX_TTL_SECONDS } from '../defaults.js';
import type { KeyRing } from '../state/keyRing.js';

/**
 * The sentence the command line's servers append to an `ERR_CONFIRM_UNKNOWN` refusal from a memory
 * ledger (`createConfirmation`'s `unknownHint`): the library's default sentence, plus the flags that share
 * keys and a ledger between processes.
 */
export const UNKNOWN_HINT =
  'This server keeps its ledger in process memory, so a confirmation asked by one server process cannot be redeemed on another: give every process the same keys and a shared ledger (SqliteLedger on one host, RedisLedger across hosts; with the mcp-confirm command: --key-file PATH and --ledger sqlite:PATH or --ledger redis://HOST:PORT).';

/** A usage error: printed with the usage text, exit code 2. */
export class UsageError extends Error {}

/**
 * A {@link UsageError} for a `node:util` `parseArgs` failure: an unknown option is named plainly
 * (`unknown option --frobnicate`), without Node's advice about positional arguments after `--`
 * (which misleads here: the proxy's `--` starts the upstream command); other failures keep Node's
 * message (a missing value, an unexpected argument).
 */
export function parseArgsUsageError(error: unknown): UsageError {
  const message = error instanceof Error ? error.message : String(error);
  const unknown = (error as { code?: unknown }).code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION' ? /^Unknown option '([^']*)'/.exec(message) : null;
  return new UsageError(unknown ? `unknown option ${unknown[1]}` : message);
}

/**
 * Parses a whole number of seconds from 1 to 86,400 (one day): `--ttl`, `--upstream-timeout`.
 *
 * @throws {UsageError} naming `flag` and the text given.
 */
export function wholeSeconds(flag: string, text: string): number {
  if (!/^[0-9]+$/.test(text)) throw new UsageError(`${flag} must be a whole number of seconds, got ${JSON.stringify(text)}`);
  const n = Number(text);
  if (!Number.isSafeInteger(n) || n <= 0 || n > MAX_TTL_SECONDS) throw new UsageError(`${flag} must be a whole number of seconds from 1 to ${MAX_TTL_SECONDS} (one day), got ${text}`);
  return n;
}

/**
 * Checks `--audience`: 1 to 200 characters, well-formed UTF-16, no `{` `}` (it namespaces Redis
 * keys, whose hash tags use braces) and no control characters.
 *
 * @returns the audience, or the default `mcp-confirm` when none is given.
 * @throws {UsageError} when it is out of bounds.
 */
export function checkAudience(value: string | undefined): string {
  const audience = value ?? DEFAULT_AUDIENCE;
  if (audience.length === 0 || audience.length > 200 || !audience.isWellFormed() || /[{}\p{Cc}]/u.test(audience)) {
    throw new UsageError('--audience must be 1 to 200 characters, without { } or control characters (it also namespaces a Redis ledger)');
  }
  return audience;
}

/**
 * Reads `--key-file PATH` into a key ring (the module loads only when a key file is given). Warns
 * on stderr when the file's mode lets group or others read or write it (`chmod 600` it).
 *
 * @returns the ring, or `undefined` without a key file (one random key per process then).
 * @throws {UsageError} naming `--key-file` and what is wrong (never key material).
 */
export async function readKeyFile(path: string | undefined): Promise<KeyRing | undefined> {
  if (path === undefined) return undefined;
  const { KeyRing } = await import('../state/keyRing.js');
  let ring: KeyRing;
  try {
    ring = await KeyRing.fromFile(path);
  } catch (e) {
    throw new UsageError(`--key-file: ${(e as Error).message}`);
  }
  // The ring seals every state and keys the audit trail's MACs: say so when others can read it.
  const { statSync } = await import('node:fs');
  const mode = statSync(path).mode & 0o777;
  if ((mode & 0o077) !== 0) {
    process.stderr.write(
      `mcp-confirm: warning: --key-file ${path} has mode 0${mode.toString(8)}: group or others can read or change the keys that seal every state and sign the audit trail; chmod 600 it\n`,
    );
  }
  return ring;
}
