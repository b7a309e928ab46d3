/**
 * The audit flags of `mcp-confirm`: `--audit PATH` when serving (one of the serving flags,
 * `servingArgs.ts`), and the `audit verify FILE --key-file PATH` command with its own option table.
 *
 * @module
 */
import { DEFAULT_AUDIENCE } from '../defaults.js';
import { UsageError, type FlagValues } from './common.js';

/** The `parseArgs` option table of the audit flags. */
export const AUDIT_OPTIONS = {
  audit: { type: 'string' },
} as const;

/** Exit code of `audit verify` for a broken trail (also cut, replaced, or not recorded in the store given). */
export const EXIT_AUDIT_BROKEN = 3;
/** Exit code of `audit verify` for an open trail: intact so far, but without its `closed` line. */
export const EXIT_AUDIT_OPEN = 4;
/** Exit code of `audit verify` for a legacy trail: chained intact, but without an opening line. */
export const EXIT_AUDIT_LEGACY = 5;

export const AUDIT_USAGE = `Audit trail:
  --audit PATH           Write one hash-chained, MACed JSON line per decision to a new file
                         PATH.<UTC start time>.<pid>.jsonl (one file per process; needs --key-file,
                         whose keys derive the MAC keys), between an opening line naming the trail
                         and, on a clean stop, a closed line. With --ledger sqlite:… or redis://…
                         the trail's head is recorded in that store too. A line that cannot be
                         written refuses the call (ERR_CONFIRM_AUDIT_UNAVAILABLE).
  mcp-confirm audit verify FILE --key-file PATH [--ledger SPEC [--audience NAME]]
                         Check a trail: exit 0 intact (closed), 4 open (no closed line), 5 legacy
                         (no opening line), 3 broken (the first bad line named; with --ledger also
                         cut, another trail, or no head recorded), 2 on usage errors. Prints the
                         last seq on stdout (except when broken), the trail on stderr.`;

/** `mcp-confirm audit verify FILE --key-file PATH [--ledger SPEC [--audience NAME]]`. */
export interface AuditVerifyCommand {
  kind: 'audit-verify';
  file: string;
  keyFile: string;
  /** The shared store holding the trail's head (`sqlite:PATH`, `redis://…`), or undefined: no comparison. */
  ledger: string | undefined;
  /** The Redis namespace (the server's `--audience`). Defaults to `mcp-confirm`. */
  audience: string;
}

/** The option table of `audit verify`. */
export const AUDIT_VERIFY_OPTIONS = {
  'key-file': { type: 'string' },
  ledger: { type: 'string' },
  audience: { type: 'string' },
} as const;

/** The message for a flag `audit verify` does not take. */
export function auditVerifyForeign(flag: string): string {
  return `audit verify takes only --key-file, --ledger and --audience, not --${flag}`;
}

/**
 * Builds `audit verify` from its flags and the words after `audit verify`.
 *
 * @param words - the positionals after `audit verify`: `[FILE]`.
 * @throws {UsageError} naming what is wrong (exit 2).
 */
export function parseAuditVerify(
  values: FlagValues<typeof AUDIT_VERIFY_OPTIONS>,
  words: readonly string[],
): AuditVerifyCommand {
  const [file] = words;
  if (file === undefined) throw new UsageError('audit verify needs the trail FILE');
  const { 'key-file': keyFile, ledger, audience } = values;
  if (keyFile === undefined)
    throw new UsageError('audit verify needs --key-file PATH (the key file the trail was written with)');
  if (ledger === 'memory')
    throw new UsageError(
      'audit verify --ledger needs a shared store (sqlite:PATH or redis://HOST:PORT[/DB]): a memory ledger lived only in the process that wrote the trail',
    );
  if (audience !== undefined && ledger === undefined)
    throw new UsageError(
      'audit verify takes --audience only with --ledger (it names the Redis namespace the server used)',
    );
  if (audience === '') throw new UsageError('--audience needs a NAME');
  return { kind: 'audit-verify', file, keyFile, ledger, audience: audience ?? DEFAULT_AUDIENCE };
}

/**
 * Validates `--audit` when serving.
 *
 * @returns the trail's path prefix, or undefined without `--audit`.
 * @throws {TypeError} when `--audit` is empty or given without `--key-file`.
 */
export function parseAuditFlag(values: {
  audit?: string | undefined;
  'key-file'?: string | undefined;
}): string | undefined {
  const audit = values.audit;
  if (audit === undefined) return undefined;
  if (audit.length === 0) throw new TypeError('--audit needs a PATH');
  if (values['key-file'] === undefined) {
    throw new TypeError(
      '--audit needs --key-file PATH: the trail is MACed with keys derived from the key file, so that it can be verified later (a random per-process key could never verify it)',
    );
  }
  return audit;
}
