/**
 * The command lines of `mcp-confirm grants list|revoke`: one option table per command, the message
 * for a flag of another command, and the parsers (run by `grantsCli.ts`). Everything here is checked
 * before any store is opened: a malformed grant id or a `--ledger` that names no shared store is a
 * usage error (exit 2) with nothing opened.
 *
 * @module
 */
import { parseAuditFlag } from './auditArgs.js';
import { checkAudience, UsageError, type FlagValues } from './common.js';

/** `mcp-confirm grants list` and `grants revoke`. */
export type GrantsCommand =
  | {
      kind: 'grants-list';
      /** `--ledger`: `sqlite:PATH`, `redis://…` or `rediss://…` (its syntax beyond the scheme is checked when opened). */
      ledger: string;
      /** `--audience NAME`: only the grants of that audience (and the Redis namespace); undefined: every grant of the store (Redis: of the namespace `mcp-confirm`). */
      audience: string | undefined;
      /** `--json`: the `Grant` records as a JSON array instead of one line per grant. */
      json: boolean;
    }
  | {
      kind: 'grants-revoke';
      /** The grant's id: 22 base64url characters. */
      id: string;
      ledger: string;
      /** `--audience NAME`: revoke only a grant of that audience (and the Redis namespace); undefined: any (Redis: the namespace `mcp-confirm`). */
      audience: string | undefined;
      /**
       * `--audit PATH` with `--key-file PATH`, as the servers were given them: the revocation's
       * `grant-revoked` line goes to a trail of this process under that prefix. Undefined: no line.
       */
      audit: { prefix: string; keyFile: string } | undefined;
    };

/** The option table of `grants list`. */
export const GRANTS_LIST_OPTIONS = {
  ledger: { type: 'string' },
  audience: { type: 'string' },
  json: { type: 'boolean' },
} as const;

/** The option table of `grants revoke`. */
export const GRANTS_REVOKE_OPTIONS = {
  ledger: { type: 'string' },
  audience: { type: 'string' },
  audit: { type: 'string' },
  'key-file': { type: 'string' },
} as const;

export const GRANTS_USAGE = `Grants (in a shared store; a memory ledger's grants live and end inside its serving process):
  mcp-confirm grants list --ledger sqlite:PATH|redis://HOST:PORT[/DB] [--audience NAME] [--json]
                         Print the live grants, oldest first, one line each (id, tool, principal tag,
                         binding (over stdio the serving process), approver, uses left, expiry,
                         creation, audience, summary), or with --json their records as a JSON
                         array. --audience: only that audience's grants (with Redis also the
                         namespace; default mcp-confirm).
  mcp-confirm grants revoke ID --ledger sqlite:PATH|redis://HOST:PORT[/DB] [--audience NAME] [--audit PATH --key-file PATH]
                         Revoke grant ID (22 base64url characters; one starting with - is read as
                         the ID too, or put -- before it): no use is taken after it. With
                         the servers' --audit and --key-file, a grant-revoked line is written to a
                         trail of its own under that PATH. Exit 0 revoked, 1 no such live grant, the
                         store unavailable or the line not written, 2 on usage errors.`;

/** The message for a flag `grants ACTION` does not take. */
export function grantsForeign(action: 'list' | 'revoke'): (flag: string) => string {
  return (flag) =>
    action === 'revoke' && flag === 'json'
      ? '--json belongs to grants list'
      : `grants ${action} takes only --ledger, --audience${action === 'list' ? ' and --json' : ', --audit and --key-file'}, not --${flag}`;
}

/** A grant id as the store makes them: unpadded base64url of 16 bytes. */
const GRANT_ID = /^[A-Za-z0-9_-]{22}$/;

/**
 * Checks `--ledger` of a grants command: a shared store, by its scheme.
 *
 * @throws {UsageError} without `--ledger`, for `memory` (its grants live only inside the serving
 *   process), an empty `sqlite:` path, or another scheme. A value is never echoed (it may hold a
 *   Redis password).
 */
function sharedLedger(command: string, ledger: string | undefined): string {
  const why =
    "a memory ledger's grants live only inside the serving process and end with it, so there is nothing to list or revoke from outside";
  if (ledger === undefined || ledger === '')
    throw new UsageError(
      `${command} needs --ledger sqlite:PATH or redis://HOST:PORT[/DB], the store the servers share (${why})`,
    );
  if (ledger === 'memory')
    throw new UsageError(`${command} --ledger needs a shared store (sqlite:PATH or redis://HOST:PORT[/DB]): ${why}`);
  if (ledger === 'sqlite:') throw new UsageError('--ledger sqlite:PATH needs a file path');
  if (
    !ledger.startsWith('sqlite:') &&
    !ledger.startsWith('redis://') &&
    !ledger.startsWith('rediss://') &&
    !ledger.startsWith('postgres://') &&
    !ledger.startsWith('postgresql://')
  )
    throw new UsageError(
      '--ledger: unknown ledger (use sqlite:PATH, redis://HOST:PORT[/DB] or postgres://HOST[:PORT]/DB)',
    );
  return ledger;
}

/** `--audience` checked when given (undefined when not). @throws {UsageError} as {@link checkAudience}. */
function audienceOf(value: string | undefined): string | undefined {
  return value === undefined ? undefined : checkAudience(value);
}

/** Builds `grants list`. @throws {UsageError} for a missing or memory `--ledger`, a bad `--audience`. */
export function parseGrantsList(values: FlagValues<typeof GRANTS_LIST_OPTIONS>): GrantsCommand {
  return {
    kind: 'grants-list',
    ledger: sharedLedger('grants list', values.ledger),
    audience: audienceOf(values.audience),
    json: values.json ?? false,
  };
}

/**
 * Builds `grants revoke`.
 *
 * @param words - the positionals after `grants revoke`: `[ID]`.
 * @throws {UsageError} without ID, for an ID that is not 22 base64url characters (named), a missing
 *   or memory `--ledger`, a bad `--audience`, an empty `--audit`, `--audit` without `--key-file` or
 *   `--key-file` without `--audit`.
 */
export function parseGrantsRevoke(
  values: FlagValues<typeof GRANTS_REVOKE_OPTIONS>,
  words: readonly string[],
): GrantsCommand {
  const [id] = words;
  if (id === undefined) throw new UsageError('grants revoke needs the grant ID (as grants list prints it)');
  if (!GRANT_ID.test(id))
    throw new UsageError(`grants revoke: ${JSON.stringify(id)} is not a grant id (22 characters of A-Z a-z 0-9 - _)`);
  let prefix: string | undefined;
  try {
    prefix = parseAuditFlag(values);
  } catch (e) {
    throw new UsageError((e as Error).message);
  }
  const keyFile = values['key-file'];
  if (prefix === undefined && keyFile !== undefined)
    throw new UsageError('grants revoke takes --key-file only with --audit (the keys of the audit trail)');
  return {
    kind: 'grants-revoke',
    id,
    ledger: sharedLedger('grants revoke', values.ledger),
    audience: audienceOf(values.audience),
    audit: prefix === undefined || keyFile === undefined ? undefined : { prefix, keyFile },
  };
}
