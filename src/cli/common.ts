/**
 * Checks and messages shared by the command lines of `mcp-confirm` (serving `delete_file`) and
 * `mcp-confirm proxy`: one implementation, one set of messages.
 *
 * @module
 */

import { parseArgs, type ParseArgsConfig } from 'node:util';
import { DEFAULT_AUDIENCE, MAX_TTL_SECONDS } from '../defaults.js';
import { ConfigError } from '../errors.js';
import type { KeyRing } from '../state/keyRing.js';
import type { PasskeyApproval } from '../approval/passkey.js';

/**
 * The sentence the command line's servers append to an `ERR_CONFIRM_UNKNOWN` refusal from a memory
 * ledger (`createConfirmation`'s `unknownHint`): the library's default sentence, plus the flags that share
 * keys and a ledger between processes.
 */
export const UNKNOWN_HINT =
  'This server keeps its ledger in process memory, so a confirmation asked by one server process cannot be redeemed on another: give every process the same keys and a shared ledger (SqliteLedger on one host, RedisLedger across hosts; with the mcp-confirm command: --key-file PATH and --ledger sqlite:PATH or --ledger redis://HOST:PORT).';

/** A usage error: printed with the usage text, exit code 2. */
export class UsageError extends Error {}

/** Exit code for a usage or start-up configuration error. */
export const EXIT_USAGE = 2;

/** The flag that gives the setting a {@link ConfigError}'s `subject` names, by code. */
const FLAG_OF: Partial<Record<ConfigError['code'], string>> = {
  ERR_CONFIG_PUBLIC_URL: '--public-url',
  ERR_CONFIG_BIND_ADDRESS: '--http',
  ERR_CONFIG_ALLOWED_HOSTS: '--allowed-hosts',
  ERR_CONFIG_JWKS: '--auth-jwks',
  ERR_CONFIG_NOTIFY: '--notify',
};

/**
 * The command line's sentence for a {@link ConfigError}: the library's sentence, which never names a
 * flag or a command, with the flag in place of its subject (`--public-url must be …`), and the
 * command that helps where there is one (enrolling an approver, `--replace`, `--public-url`).
 *
 * @param publicUrl - the `--public-url` given, if any (named by an `ERR_CONFIG_RP_ID` refusal).
 */
export function configMessage(error: ConfigError, publicUrl?: URL): string {
  const { code, message, subject, value } = error;
  const flag = FLAG_OF[code];
  if (flag !== undefined && subject !== undefined && message.startsWith(subject)) {
    const said = `${flag}${message.slice(subject.length)}`;
    // A standard channel's default secret file is the command line's --notify-secret-file.
    return code === 'ERR_CONFIG_NOTIFY' ? said.replace(', or a default)', ', or --notify-secret-file PATH)') : said;
  }
  switch (code) {
    case 'ERR_CONFIG_APPROVERS_MISSING':
      return `${message} (enrol one with: mcp-confirm approvers enroll --approvers ${value} --name NAME)`;
    case 'ERR_CONFIG_APPROVER_EXISTS':
      return `${message}; use --replace to replace it`;
    case 'ERR_CONFIG_RP_ID': {
      const origin = publicUrl?.origin;
      const fromUrl = ` (from the public URL ${origin})`;
      // Enrolment (it names the approvers file, its value): the public URL is the flag's.
      if (value !== undefined)
        return origin === undefined ? message : message.replace(fromUrl, ` (from --public-url ${origin})`);
      // The approval page: how to enrol them again for this server.
      return origin === undefined
        ? `${message}; enrol them again without --public-url`
        : `${message}; enrol them again with: mcp-confirm approvers enroll --public-url ${origin} …`;
    }
    case 'ERR_CONFIG_STORE_DRIVER':
      // The command line is installed globally or run by npx: say how to add the driver there.
      return message.replace(
        `(npm install ${value})`,
        `(npm install -g mcp-confirm ${value}, or npx -p mcp-confirm -p ${value} mcp-confirm …)`,
      );
    default:
      return message;
  }
}

/**
 * A {@link ConfigError} as the {@link UsageError} the command line reports (exit 2), in its own
 * wording ({@link configMessage}) after `prefix`; anything else as it is.
 */
export function asUsageError(error: unknown, prefix = '', publicUrl?: URL): unknown {
  return error instanceof ConfigError ? new UsageError(`${prefix}${configMessage(error, publicUrl)}`) : error;
}

/** Any error as a {@link UsageError} (exit 2): a {@link ConfigError} in the command line's wording, anything else by its message. */
export function toUsageError(error: unknown): UsageError {
  const usage = asUsageError(error);
  return usage instanceof UsageError ? usage : new UsageError(error instanceof Error ? error.message : String(error));
}

/**
 * A {@link UsageError} for a `node:util` `parseArgs` failure: an unknown option is named plainly
 * (`unknown option --frobnicate`), without Node's advice about positional arguments after `--`
 * (which misleads here: the proxy's `--` starts the upstream command); other failures keep Node's
 * message (a missing value, an unexpected argument).
 */
export function parseArgsUsageError(error: unknown): UsageError {
  const message = error instanceof Error ? error.message : String(error);
  const unknown =
    (error as { code?: unknown }).code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION'
      ? /^Unknown option '([^']*)'/.exec(message)
      : null;
  return new UsageError(unknown ? `unknown option ${unknown[1]}` : message);
}

/** A `parseArgs` option table: one per command (`args.ts`, `approversArgs.ts`, `auditArgs.ts`, `proxyArgs.ts`). */
export type OptionTable = NonNullable<ParseArgsConfig['options']>;

/** What `parseArgs` gives for a table's options: a boolean, a string or (repeatable) strings, each absent when not given. */
export type FlagValues<O extends OptionTable> = {
  [K in keyof O]?: O[K] extends { type: 'boolean' } ? boolean : O[K] extends { multiple: true } ? string[] : string;
};

/** One token of `parseArgs` (`tokens: true`). */
export type ArgToken = NonNullable<ReturnType<typeof parseArgs>['tokens']>[number];

/**
 * Parses `argv` strictly against one option table, positionals allowed.
 *
 * @param foreign - the message for an option the table does not have, given its name without `--`
 *   (a flag of another command). Without it, or when it returns undefined, the option is refused
 *   as unknown ({@link parseArgsUsageError}).
 * @throws {UsageError} for an option not in the table, a missing value, or a value given to a boolean.
 */
export function parseFlags<O extends OptionTable>(
  argv: readonly string[],
  options: O,
  foreign?: (flag: string) => string | undefined,
): { values: FlagValues<O>; tokens: ArgToken[] } {
  try {
    const { values, tokens } = parseArgs({
      args: [...argv],
      options,
      strict: true,
      allowPositionals: true,
      tokens: true,
    });
    return { values: values as FlagValues<O>, tokens };
  } catch (e) {
    const name =
      (e as { code?: unknown }).code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION'
        ? /^Unknown option '--([^']*)'/.exec((e as Error).message)?.[1]
        : undefined;
    const message = name === undefined ? undefined : foreign?.(name);
    throw message === undefined ? parseArgsUsageError(e) : new UsageError(message);
  }
}

/**
 * Parses a whole number of seconds from 1 to 86,400 (one day): `--ttl`, `--upstream-timeout`.
 *
 * @throws {UsageError} naming `flag` and the text given.
 */
export function wholeSeconds(flag: string, text: string): number {
  if (!/^[0-9]+$/.test(text))
    throw new UsageError(`${flag} must be a whole number of seconds, got ${JSON.stringify(text)}`);
  const n = Number(text);
  if (!Number.isSafeInteger(n) || n <= 0 || n > MAX_TTL_SECONDS)
    throw new UsageError(
      `${flag} must be a whole number of seconds from 1 to ${MAX_TTL_SECONDS} (one day), got ${text}`,
    );
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
    throw new UsageError(
      '--audience must be 1 to 200 characters, without { } or control characters (it also namespaces a Redis ledger)',
    );
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

/**
 * The serving line's words for notifications (`, notify 2 channels`), after the approval's; `''`
 * without `--notify`. Counts only: a channel's URL is a secret.
 */
export function notifyWords(approval: Pick<PasskeyApproval, 'notifier'> | undefined): string {
  const n = approval?.notifier?.channels.length ?? 0;
  return n === 0 ? '' : `, notify ${n} channel${n === 1 ? '' : 's'}`;
}
