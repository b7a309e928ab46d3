/**
 * The audit flags of `mcp-confirm`: `--audit PATH` when serving, and the
 * `audit verify FILE --key-file PATH` command. Kept apart from `args.ts` so
 * that other serving options merge easily.
 *
 * @module
 */

/** The `parseArgs` option table of the audit flags. */
export const AUDIT_OPTIONS = {
  audit: { type: 'string' },
} as const;

/** Exit code of `audit verify` for a broken trail. */
export const EXIT_AUDIT_BROKEN = 3;

export const AUDIT_USAGE = `Audit trail:
  --audit PATH           Write one hash-chained, MACed JSON line per decision to a new file
                         PATH.<UTC start time>.<pid>.jsonl (one file per process; needs --key-file,
                         whose keys derive the MAC keys). A line that cannot be written refuses
                         the call (ERR_CONFIRM_AUDIT_UNAVAILABLE).
  mcp-confirm audit verify FILE --key-file PATH
                         Check a trail: exit 0 printing the last seq when intact, 3 naming the
                         first bad line on stderr, 2 on usage errors.`;

/** `mcp-confirm audit verify FILE --key-file PATH`. */
export interface AuditVerifyCommand {
  kind: 'audit-verify';
  file: string;
  keyFile: string;
}

/**
 * Parses the words after `audit` and the flags given with them.
 *
 * @param words - positionals after `audit`, e.g. `['verify', FILE]`.
 * @param values - every flag given; only `--key-file` may be.
 * @throws {TypeError} naming what is wrong (the caller turns it into a usage error, exit 2).
 */
export function parseAuditCommand(words: readonly string[], values: Record<string, unknown>): AuditVerifyCommand {
  const [verb, file, ...extra] = words;
  if (verb !== 'verify') throw new TypeError(verb === undefined ? 'audit needs a command: audit verify FILE --key-file PATH' : `unknown audit command: ${verb}`);
  if (file === undefined) throw new TypeError('audit verify needs the trail FILE');
  if (extra.length > 0) throw new TypeError(`unexpected argument: ${extra[0]}`);
  const stray = Object.keys(values).find((k) => k !== 'key-file' && values[k] !== undefined);
  if (stray) throw new TypeError(`audit verify takes only --key-file, not --${stray}`);
  const keyFile = values['key-file'];
  if (typeof keyFile !== 'string') throw new TypeError('audit verify needs --key-file PATH (the key file the trail was written with)');
  return { kind: 'audit-verify', file, keyFile };
}

/**
 * Validates `--audit` when serving.
 *
 * @returns the trail's path prefix, or undefined without `--audit`.
 * @throws {TypeError} when `--audit` is empty or given without `--key-file`.
 */
export function parseAuditFlag(values: { audit?: string | undefined; 'key-file'?: string | undefined }): string | undefined {
  const audit = values.audit;
  if (audit === undefined) return undefined;
  if (audit.length === 0) throw new TypeError('--audit needs a PATH');
  if (values['key-file'] === undefined) {
    throw new TypeError('--audit needs --key-file PATH: the trail is MACed with keys derived from the key file, so that it can be verified later (a random per-process key could never verify it)');
  }
  return audit;
}
